"""Exception hierarchy and fsck(8)-style exit codes.

Exit codes combine with OR: 0 clean, 1 found and fixed, 4 found and left unfixed,
8 operational error (I/O, lock held, missing codec), 16 usage error, 32 interrupted.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FIXED = 1
EXIT_UNFIXED = 4
EXIT_OPERATIONAL = 8
EXIT_USAGE = 16
EXIT_INTERRUPTED = 32


class KafkalogError(Exception):
    """Base of every error kafkalog raises on purpose."""

    exit_code = EXIT_OPERATIONAL


class UsageError(KafkalogError):
    exit_code = EXIT_USAGE


class CorruptDataError(KafkalogError):
    """Bytes that do not decode. `str()` is `file:pos: reason`, grep-able."""

    exit_code = EXIT_UNFIXED

    def __init__(self, reason: str, path: str | None = None, pos: int | None = None) -> None:
        self.reason = reason
        self.path = path
        self.pos = pos
        super().__init__(reason)

    def located(self, path: str | None = None, pos: int | None = None) -> CorruptDataError:
        """Fill in the file and byte position if a lower layer did not know them."""
        if self.path is None:
            self.path = path
        if self.pos is None:
            self.pos = pos
        return self

    def __str__(self) -> str:
        where = self.path or "<bytes>"
        if self.pos is not None:
            where = f"{where}:{self.pos}"
        return f"{where}: {self.reason}"


class CorruptBatch(CorruptDataError):
    pass


class CorruptIndex(CorruptDataError):
    pass


class BadFileName(CorruptDataError):
    pass


class DecompressionLimit(CorruptBatch):
    """Decompressed data would exceed the configured cap (hostile or broken input)."""


class CodecUnavailable(KafkalogError):
    pass


class LockHeld(KafkalogError):
    pass


class LogDirIOError(KafkalogError):
    pass
