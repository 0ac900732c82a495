"""Stream the entries of a `.log` file with flat memory, and say where and why it stops.

Framing follows FileLogInputStream.nextBatch (see codec/entry.py). The scanner reuses one
buffer (readinto), so a yielded view is only valid until the next entry is requested;
callers that keep a batch call `detach()` on it. It never trusts a length it cannot
frame: after a bad size field it stops and reports, as LevelDB's reader does.

Stop reasons, reported as one Damage in `scanner.damage`:
  torn-tail     the last entry (or its header) is cut short: a writer died mid-append
  garbage-tail  bytes after the last whole entry that do not even frame as a header
  zero-tail     only zero bytes follow the last whole entry (preallocation, lost writes)
  bad-size      a size field below 14: the framing cannot continue
  entry-too-big an entry larger than the configured cap
When framing breaks, a bounded probe looks for the next entry whose CRC checks out. If
one exists the damage is mid-file ("corrupt", its size = bytes skipped) and, with
`resync=True`, the scan goes on from there, so a checker sees everything after it too.
"""

from __future__ import annotations

import os
import re
from collections.abc import Generator, Iterator
from typing import Protocol

from kafkalog_cli.codec.checksum import crc32, crc32c
from kafkalog_cli.codec.layout import (
    HEADER_SIZE_UP_TO_MAGIC,
    LOG_OVERHEAD,
    LOG_OVERHEAD_SIZE,
    MAGIC_POS,
    MIN_ENTRY_SIZE,
    V2_ATTRIBUTES_POS,
    V2_HEADER_SIZE,
)
from kafkalog_cli.codec.model import Damage

DEFAULT_CHUNK = 4 * 1024 * 1024
DEFAULT_MAX_ENTRY = 256 * 1024 * 1024
DEFAULT_RESYNC_WINDOW = 4 * 1024 * 1024
_ZERO_PROBE = 1024 * 1024
_unpack_overhead = LOG_OVERHEAD.unpack_from


class ReadableFile(Protocol):
    """What the scanner needs of a file: an unbuffered `open(path, "rb", buffering=0)` fits."""

    def fileno(self) -> int: ...

    def seek(self, pos: int, whence: int = ..., /) -> int: ...

    def read(self, size: int = ..., /) -> bytes: ...

    def readinto(self, buffer: bytearray | memoryview, /) -> int | None: ...


class EntryScanner:
    """Iterate `(position, view)` over whole entries of `f` in [start, end)."""

    def __init__(self, f: ReadableFile, start: int = 0, end: int | None = None, *,
                 chunk_size: int = DEFAULT_CHUNK, max_entry: int = DEFAULT_MAX_ENTRY,
                 resync: bool = False, resync_window: int = DEFAULT_RESYNC_WINDOW) -> None:
        self._f = f
        self.start = start
        self.end = os.fstat(f.fileno()).st_size if end is None else end
        self._chunk = chunk_size
        self._max_entry = max_entry
        self._resync = resync
        self._window = resync_window
        self.damage: Damage | None = None  # the first damage
        self.damages: list[Damage] = []
        self.valid_end = start  # position just after the last whole entry before damage

    @property
    def _stopped(self) -> bool:
        return self.damage is not None

    def __iter__(self) -> Iterator[tuple[int, memoryview]]:
        pos = self.start
        while True:
            resume = yield from self._run(pos)
            if resume is None:
                return
            pos = resume

    def _run(self, start: int) -> Generator[tuple[int, memoryview], None, int | None]:
        """Scan from `start`; returns where to resume after mid-file damage, or None."""
        f = self._f
        end = self.end
        f.seek(start)
        buf = bytearray(self._chunk)
        mv = memoryview(buf)
        base = start  # file position of buf[0]
        filled = 0
        p = 0
        unpack = _unpack_overhead
        while True:
            pos = base + p
            left = end - pos
            if left <= HEADER_SIZE_UP_TO_MAGIC:
                self._mark_end(pos)
                if left > 0:
                    self._tail(pos, left, "torn-tail",
                               f"{left} bytes after the last whole batch are too few for a header")
                return None
            if filled - p < HEADER_SIZE_UP_TO_MAGIC:
                base, filled, p = self._refill(buf, mv, base, filled, p)
            _off, size = unpack(buf, p)
            total = size + LOG_OVERHEAD_SIZE
            if size < MIN_ENTRY_SIZE or total > left or total > self._max_entry:
                self._mark_end(pos)
                nxt = self._probe(pos + 1)
                if nxt is not None:
                    why = (f"size field {size} is below the minimum {MIN_ENTRY_SIZE}"
                           if size < MIN_ENTRY_SIZE else f"size field {size} does not fit")
                    self._add(Damage(pos, "corrupt", f"framing breaks ({why}); {nxt - pos} bytes "
                                     f"are skipped to the next valid batch at byte {nxt}",
                                     nxt - pos))
                    return nxt if self._resync else None
                if total > self._max_entry and size >= MIN_ENTRY_SIZE and total <= left:
                    self._add(Damage(pos, "entry-too-big", f"batch of {total} bytes exceeds "
                                     f"the {self._max_entry}-byte cap", left))
                elif size < MIN_ENTRY_SIZE:
                    self._tail(pos, left, "garbage-tail",
                               f"batch size field {size} is below the minimum {MIN_ENTRY_SIZE}; "
                               "no valid batch follows")
                else:
                    self._tail(pos, left, "torn-tail",
                               f"batch declares {total} bytes but only {left} remain in the file")
                return None
            if filled - p < total:
                if total > len(buf):
                    big = bytearray(total)
                    have = filled - p
                    big[:have] = buf[p:filled]
                    f.seek(pos + have)
                    if f.readinto(memoryview(big)[have:]) != total - have:
                        self._mark_end(pos)
                        self._add(Damage(pos, "torn-tail", "file shrank while reading", left))
                        return None
                    yield pos, memoryview(big)
                    base, filled, p = pos + total, 0, 0
                    f.seek(base)
                    continue
                base, filled, p = self._refill(buf, mv, base, filled, p)
            yield pos, mv[p:p + total]
            p += total

    def _refill(self, buf: bytearray, mv: memoryview, base: int, filled: int,
                p: int) -> tuple[int, int, int]:
        """Move the unread bytes to the front and read more; same-size copies keep views legal."""
        rest = filled - p
        if rest:
            buf[:rest] = buf[p:filled]
        base += p
        want = min(len(buf), self.end - base) - rest
        n = self._f.readinto(mv[rest:rest + want]) if want > 0 else 0
        return base, rest + (n or 0), 0

    def _mark_end(self, pos: int) -> None:
        if self.damage is None:
            self.valid_end = pos

    def _add(self, d: Damage) -> None:
        if self.damage is None:
            self.damage = d
        self.damages.append(d)

    def _tail(self, pos: int, left: int, code: str, reason: str) -> None:
        if self._all_zero(pos, left):
            code = "zero-tail"
            reason = f"{left} zero bytes follow the last whole batch"
        elif code == "torn-tail" and not self._plausible_header(pos, left):
            code = "garbage-tail"
            reason = f"{left} bytes that are not a batch header follow the last whole batch"
        self._add(Damage(pos, code, reason, left))

    def _plausible_header(self, pos: int, left: int) -> bool:
        """A torn batch still has a sane header; anything else is garbage."""
        if left <= HEADER_SIZE_UP_TO_MAGIC:
            return False
        self._f.seek(pos)
        head = self._f.read(HEADER_SIZE_UP_TO_MAGIC)
        _off, size = _unpack_overhead(head, 0)
        return _off >= 0 and size >= MIN_ENTRY_SIZE and head[16] in (0, 1, 2)

    def _all_zero(self, pos: int, n: int) -> bool:
        f = self._f
        f.seek(pos)
        while n > 0:
            block = f.read(min(n, _ZERO_PROBE))
            if not block or block.count(0) != len(block):
                return False
            n -= len(block)
        return True

    def _probe(self, pos: int) -> int | None:
        """The next position (within the window) where an entry frames and its CRC checks.

        Candidates are found by regex jumps, not a byte loop: the magic byte must be 0..2,
        and a run of zeros can only end in a size field, so zero runs are skipped whole.
        """
        f = self._f
        f.seek(pos)
        n = min(self.end - pos, self._window)
        if n <= HEADER_SIZE_UP_TO_MAGIC:
            return None
        data = f.read(n)
        limit = len(data) - HEADER_SIZE_UP_TO_MAGIC
        i = 0
        while i < limit:
            m = _MAGIC_CANDIDATE.search(data, i + MAGIC_POS)
            if m is None:
                return None
            i = m.start() - MAGIC_POS
            if i >= limit:
                return None
            if data[i + 8:i + 12] == b"\0\0\0\0":
                nz = _NON_ZERO.search(data, i + 8)
                if nz is None:
                    return None
                i = max(i + 1, nz.start() - 11)
                continue
            off, size = _unpack_overhead(data, i)
            total = size + LOG_OVERHEAD_SIZE
            if off >= 0 and size >= MIN_ENTRY_SIZE and pos + i + total <= self.end and \
                    i + total <= len(data) and _crc_ok(data, i, total, data[i + MAGIC_POS]):
                return pos + i
            i += 1
        return None


_MAGIC_CANDIDATE = re.compile(rb"[\x00-\x02]")
_NON_ZERO = re.compile(rb"[^\x00]")


def _crc_ok(data: bytes, i: int, total: int, magic: int) -> bool:
    if magic == 2:
        if total < V2_HEADER_SIZE:
            return False
        stored = int.from_bytes(data[i + 17:i + 21], "big")
        return crc32c(memoryview(data)[i + V2_ATTRIBUTES_POS:i + total]) == stored
    stored = int.from_bytes(data[i + 12:i + 16], "big")
    return crc32(memoryview(data)[i + MAGIC_POS:i + total]) == stored
