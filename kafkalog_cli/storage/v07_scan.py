"""Streaming the entries of a Kafka 0.7 `.kafka` segment, with damage reports.

Framing and validation are 0.7's FileMessageSet.recover/validateMessage: a size, then that
many message bytes, whose payload CRC must match (codec/v07.py has the layout).

Scanner stop reasons (Damage codes), each at the entry's position in its file:
  torn-tail      fewer than 4 bytes left, or an entry running past the end of the file with
                 nothing valid after it: a writer died mid-append
  size-past-end  an entry running past the end of the file, with valid entries after it
  bad-size       size below 5 (magic 0) or 6 (magic 1): 0.7's readers stop there
  zero-tail      only zero bytes from here to the end (lost writes)
  bad-magic      a magic byte other than 0 or 1
  crc-mismatch   the payload's CRC-32 differs from the stored one
  entry-too-big  an entry larger than the scanner's cap
After damage, a bounded probe looks for the next entry whose CRC checks out; with
`resync=True` the scan goes on from there (so a checker sees what follows), otherwise it
stops, as 0.7's recovery does.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO, Final

from kafkalog_cli.codec.checksum import crc32
from kafkalog_cli.codec.model import Damage
from kafkalog_cli.codec.v07 import (
    HEAD_SIZE,
    MIN_MESSAGE_SIZE,
    SIZE,
    SIZE_LEN,
    Message07,
    decode_message,
)
from kafkalog_cli.errors import CorruptBatch, LogDirIOError

DEFAULT_CHUNK: Final = 4 * 1024 * 1024
DEFAULT_MAX_ENTRY: Final = 256 * 1024 * 1024
PROBE_WINDOW: Final = 4 * 1024 * 1024  # how far past damage the probe looks for an entry start
PROBE_MAX_ENTRY: Final = 1024 * 1024  # largest entry the probe can recognise
_ZERO_PROBE: Final = 1024 * 1024
# a plausible entry start: size 5 .. 16 MiB (high byte 0, not 0..4), then magic 0 or 1
_CANDIDATE = re.compile(rb"(?=\x00(?!\x00\x00[\x00-\x04])[\x00-\xff]{3}[\x00\x01])", re.S)

DamageReporter = Callable[[Damage], None]


class _Reader:
    """A window of a file: bytes [start, start + len(buf)) kept in memory."""

    def __init__(self, f: BinaryIO, file_size: int, chunk: int) -> None:
        self.f = f
        self.file_size = file_size
        self.chunk = chunk
        self.start = 0
        self.buf = b""

    def view(self, pos: int, n: int) -> memoryview:
        """Bytes [pos, pos + n); the caller made sure they are inside the file."""
        if pos < self.start or pos + n > self.start + len(self.buf):
            self.f.seek(pos)
            self.buf = self.f.read(max(n, self.chunk))
            self.start = pos
            if len(self.buf) < n:  # the file shrank under us
                raise LogDirIOError(f"{getattr(self.f, 'name', '?')}: file changed while "
                                    "being read")
        rel = pos - self.start
        return memoryview(self.buf)[rel:rel + n]


def _check(r: _Reader, pos: int, max_entry: int) -> tuple[str, str, int] | Message07:
    """The message of the entry at `pos`, or (damage code, reason, size) why it is not one."""
    left = r.file_size - pos
    if left < SIZE_LEN:
        return "torn-tail", f"{left} bytes at the end of the file: not even an entry size", 0
    (n,) = SIZE.unpack_from(r.view(pos, SIZE_LEN))
    if n < MIN_MESSAGE_SIZE:
        return "bad-size", f"entry size {n} is below the minimum {MIN_MESSAGE_SIZE}", n
    if SIZE_LEN + n > left:
        return ("size-past-end", f"entry declares {n} bytes; only {left - SIZE_LEN} remain in "
                "the file", n)
    if n > max_entry:
        return "entry-too-big", f"entry of {n} bytes is larger than the cap of {max_entry}", n
    data = r.view(pos + SIZE_LEN, n)
    magic = data[0]
    if magic not in HEAD_SIZE:
        return "bad-magic", f"unknown magic byte {magic} (0.7 knows 0 and 1)", n
    try:
        msg = decode_message(data)
    except CorruptBatch as e:
        return "bad-size", e.reason, n
    if not msg.is_valid():
        return ("crc-mismatch", f"payload CRC-32 {msg.compute_crc()} does not match the stored "
                f"{msg.crc}", n)
    return msg


def _plausible(data: bytes | memoryview, q: int, room: int) -> int | None:
    """Entry size at data[q] if a header there frames within `room` bytes, else None."""
    (n,) = SIZE.unpack_from(data, q)
    if n < MIN_MESSAGE_SIZE or SIZE_LEN + n > room:
        return None
    magic = data[q + SIZE_LEN]
    if magic > 1 or n < HEAD_SIZE[magic]:
        return None
    return int(n)


def _valid_at(data: bytes, q: int, n: int) -> bool:
    magic = data[q + SIZE_LEN]
    head = q + SIZE_LEN + HEAD_SIZE[magic]
    crc = int.from_bytes(data[head - 4:head], "big")
    return crc32(memoryview(data)[head:q + SIZE_LEN + n]) == crc


def _frames_at(f: BinaryIO, q: int, file_size: int) -> int | None:
    """Size of a valid entry (CRC checked) at file position `q` whose successor frames or
    which ends the file; None otherwise. Reads the file, so large entries count too."""
    if file_size - q < SIZE_LEN + MIN_MESSAGE_SIZE:
        return None
    f.seek(q)
    head = f.read(SIZE_LEN + 1)
    n = _plausible(head + bytes(MIN_MESSAGE_SIZE), 0, file_size - q)
    if n is None or n > DEFAULT_MAX_ENTRY:
        return None
    f.seek(q)
    data = f.read(SIZE_LEN + n + SIZE_LEN + 1)
    if not _valid_at(data, 0, n):
        return None
    after = SIZE_LEN + n
    if q + after == file_size:
        return n
    if len(data) >= after + SIZE_LEN + 1 and _plausible(data, after, file_size - q - after):
        return n
    return None


def probe_next(f: BinaryIO, pos: int, size: int, file_size: int) -> int | None:
    """Position of the next entry after damage at `pos` whose CRC checks out and whose
    successor frames (or which ends the file); None within the probe window."""
    if pos + 1 >= file_size:
        return None
    # the declared size is only a hint: try where it points first, without trusting it
    hint = pos + SIZE_LEN + size
    if size >= MIN_MESSAGE_SIZE and hint < file_size and _frames_at(f, hint, file_size):
        return hint
    f.seek(pos + 1)
    data = f.read(PROBE_WINDOW + PROBE_MAX_ENTRY)
    base = pos + 1
    room = len(data)
    for m in _CANDIDATE.finditer(data, 0, PROBE_WINDOW + SIZE_LEN + 1):
        q = m.start()
        n = _plausible(data, q, room - q)
        if n is None or not _valid_at(data, q, n):
            continue
        after = q + SIZE_LEN + n
        if base + after == file_size:
            return base + q
        if after + SIZE_LEN + 1 > room:
            return base + q  # its successor lies past what was read: the CRC has to do
        if _plausible(data, after, file_size - base - after):
            return base + q
    return None


def _zero_tail(f: BinaryIO, pos: int, file_size: int) -> bool:
    if file_size - pos > _ZERO_PROBE:
        return False
    f.seek(pos)
    return not f.read(file_size - pos).strip(b"\x00")


def iter_entries(path: Path, *, on_damage: DamageReporter | None = None, start: int = 0,
                 resync: bool = False, max_entry: int = DEFAULT_MAX_ENTRY,
                 chunk: int = DEFAULT_CHUNK) -> Iterator[tuple[int, Message07]]:
    """(position, message) of each valid entry of a `.kafka` file, from `start`.

    The message's payload is a view that is valid until the next entry is requested
    (`detach()` keeps it). Damage goes to `on_damage`; see the module doc for the codes."""
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed in finally; a generator holds it
    except OSError as e:
        raise LogDirIOError(f"{path}: cannot open: {e.strerror}") from None
    try:
        file_size = os.fstat(f.fileno()).st_size
        r = _Reader(f, file_size, chunk)
        pos = start
        while pos < file_size:
            got = _check(r, pos, max_entry)
            if isinstance(got, Message07):
                yield pos, got
                pos += SIZE_LEN + got.size
                continue
            code, reason, size = got
            nxt = probe_next(f, pos, size, file_size)
            if nxt is None:
                if code == "size-past-end":
                    code = "torn-tail"
                    reason += " (the tail of an append that did not finish)"
                elif code == "bad-size" and _zero_tail(f, pos, file_size):
                    code, reason = "zero-tail", "only zero bytes from here to the end"
            if on_damage is not None:
                on_damage(Damage(pos, code, reason, (nxt if nxt is not None else file_size)
                                 - pos))
            if nxt is None or not resync:
                return
            pos = nxt
    except OSError as e:
        raise LogDirIOError(f"{path}: read failed: {e.strerror}") from None
    finally:
        f.close()
