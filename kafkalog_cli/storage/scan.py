"""Stream the entries of a `.log` file with flat memory, and say where and why it stops.

Framing follows FileLogInputStream.nextBatch (see codec/entry.py). The scanner reuses one
buffer (readinto), so a yielded view is only valid until the next entry is requested;
callers that keep a batch call `detach()` on it. It never trusts a length it cannot
frame: after a bad size field it stops and reports, as LevelDB's reader does.

Stop reasons, reported as one Damage in `scanner.damage`:
  torn-tail     the last entry (or its header) is cut short: a writer died mid-append
  zero-tail     only zero bytes follow the last whole entry (preallocation, lost writes)
  bad-size      a size field below 14: the framing cannot continue
  entry-too-big an entry larger than the configured cap
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import BinaryIO

from kafkalog_cli.codec.layout import HEADER_SIZE_UP_TO_MAGIC, LOG_OVERHEAD, LOG_OVERHEAD_SIZE, MIN_ENTRY_SIZE
from kafkalog_cli.codec.model import Damage

DEFAULT_CHUNK = 4 * 1024 * 1024
DEFAULT_MAX_ENTRY = 256 * 1024 * 1024
_ZERO_PROBE = 1024 * 1024
_unpack_overhead = LOG_OVERHEAD.unpack_from


class EntryScanner:
    """Iterate `(position, view)` over whole entries of `f` in [start, end)."""

    def __init__(self, f: BinaryIO, start: int = 0, end: int | None = None, *,
                 chunk_size: int = DEFAULT_CHUNK, max_entry: int = DEFAULT_MAX_ENTRY) -> None:
        self._f = f
        self.start = start
        self.end = os.fstat(f.fileno()).st_size if end is None else end
        self._chunk = chunk_size
        self._max_entry = max_entry
        self.damage: Damage | None = None
        self.valid_end = start  # position just after the last whole entry

    def __iter__(self) -> Iterator[tuple[int, memoryview]]:
        f = self._f
        end = self.end
        f.seek(self.start)
        buf = bytearray(self._chunk)
        mv = memoryview(buf)
        base = self.start  # file position of buf[0]
        filled = 0
        p = 0
        unpack = _unpack_overhead
        while True:
            pos = base + p
            left = end - pos
            if left <= HEADER_SIZE_UP_TO_MAGIC:
                self.valid_end = pos
                if left > 0:
                    self._tail(pos, left, "torn-tail",
                               f"{left} bytes after the last whole batch are too few for a header")
                return
            if filled - p < HEADER_SIZE_UP_TO_MAGIC:
                base, filled, p = self._refill(buf, mv, base, filled, p)
            _off, size = unpack(buf, p)
            total = size + LOG_OVERHEAD_SIZE
            if size < MIN_ENTRY_SIZE:
                self.valid_end = pos
                self._tail(pos, left, "bad-size",
                           f"batch size field {size} is below the minimum {MIN_ENTRY_SIZE}")
                return
            if total > left:
                self.valid_end = pos
                self._tail(pos, left, "torn-tail",
                           f"batch declares {total} bytes but only {left} remain in the file")
                return
            if total > self._max_entry:
                self.valid_end = pos
                self.damage = Damage(pos, "entry-too-big",
                                     f"batch of {total} bytes exceeds the {self._max_entry}-byte cap",
                                     left)
                return
            if filled - p < total:
                if total > len(buf):
                    big = bytearray(total)
                    have = filled - p
                    big[:have] = buf[p:filled]
                    f.seek(pos + have)
                    if f.readinto(memoryview(big)[have:]) != total - have:
                        self.valid_end = pos
                        self.damage = Damage(pos, "torn-tail", "file shrank while reading", left)
                        return
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

    def _tail(self, pos: int, left: int, code: str, reason: str) -> None:
        if self._all_zero(pos, left):
            code = "zero-tail"
            reason = f"{left} zero bytes follow the last whole batch"
        self.damage = Damage(pos, code, reason, left)

    def _all_zero(self, pos: int, n: int) -> bool:
        f = self._f
        f.seek(pos)
        while n > 0:
            block = f.read(min(n, _ZERO_PROBE))
            if not block or block.count(0) != len(block):
                return False
            n -= len(block)
        return True
