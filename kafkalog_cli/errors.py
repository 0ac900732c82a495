"""Exception hierarchy and fsck(8)-style exit codes.

Exit codes combine with OR: 0 clean, 1 found and fixed, 4 found and left unfixed,
8 operational error (I/O, lock held, missing codec), 16 usage error, 32 interrupted.
Outside the OR: 141 when stdout's reader went away (`| head`) before the output ended, what a
shell reports for cat or grep killed by SIGPIPE (128 + 13): the run is incomplete, so not 0.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

EXIT_OK = 0
EXIT_FIXED = 1
EXIT_UNFIXED = 4
EXIT_OPERATIONAL = 8
EXIT_USAGE = 16
EXIT_INTERRUPTED = 32
EXIT_READER_GONE = 141  # 128 + SIGPIPE, as a shell reports it for cat


def repair_exit(changed: bool, left: bool, dry_run: bool) -> int:
    """A repairing command's code, OR-ed as fsck's: 1 when it changed files, 4 when
    problems are left, or when a dry run found changes to make (so 5 for both)."""
    return (EXIT_FIXED if changed and not dry_run else 0) | (
        EXIT_UNFIXED if left or (changed and dry_run) else 0)


class KafkalogError(Exception):
    """Base of every error kafkalog raises on purpose."""

    exit_code = EXIT_OPERATIONAL


class UsageError(KafkalogError):
    exit_code = EXIT_USAGE


class CorruptDataError(KafkalogError):
    """Bytes that do not decode. `str()` is `file:pos: reason`, grep-able.

    A codec sees only the buffer it parses: it gives no path, and a `pos` relative to that
    buffer. Whoever knows where the buffer sits calls `located`, up to the layer that read
    it from a file; an error that names its file is final.
    """

    exit_code = EXIT_UNFIXED

    def __init__(self, reason: str, path: str | None = None, pos: int | None = None) -> None:
        self.reason = reason
        self.path = path
        self.pos = pos
        super().__init__(reason)

    def located(self, path: str | None = None, pos: int | None = None) -> CorruptDataError:
        """Say where the parsed buffer starts (`pos`: added to a position the lower layer
        gave) and, once known, in which file."""
        if self.path is None:
            if pos is not None:
                self.pos = pos + (self.pos or 0)
            self.path = path
        return self

    def nested(self, what: str) -> CorruptDataError:
        """The error came from bytes that are not the file's own (decompressed data): its
        position goes into the reason, and the caller locates the structure holding them."""
        if self.path is None and self.pos is not None:
            self.reason = f"{self.reason} (at byte {self.pos} of {what})"
            self.pos = None
        return self

    def __str__(self) -> str:
        where = self.path or "<bytes>"
        if self.pos is not None:
            where = f"{where}:{self.pos}"
        return f"{where}: {self.reason}"


@contextmanager
def locating(path: object, pos: int | None = None) -> Iterator[None]:
    """Data errors raised inside come from `path`, in a structure starting at `pos`."""
    try:
        yield
    except CorruptDataError as e:
        raise e.located(str(path), pos) from None


class CorruptBatch(CorruptDataError):
    pass


class DecompressionLimit(CorruptBatch):
    """Decompressed data would exceed the configured cap (hostile or broken input)."""


class CodecUnavailable(KafkalogError):
    pass


class LockHeld(KafkalogError):
    pass


class LogDirIOError(KafkalogError):
    pass


_LINE_BREAKERS = {c: f"\\x{c:02x}" for c in [*range(0x20), 0x7f]}


def one_line(s: str) -> str:
    """`s` with control characters, newline included, as \\xNN: a file name that holds one
    cannot split an error line or a finding in two, nor reach the terminal as an escape."""
    return s.translate(_LINE_BREAKERS)
