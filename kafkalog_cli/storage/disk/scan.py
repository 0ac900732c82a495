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
  unsearched    framing breaks, and the search for what follows gave up (ProbeBudget)
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
PROBE_WORK_PER_BYTE = 8  # bytes the probes of a scan may read or checksum, per file byte
PROBE_WORK_MIN = 64 * 1024 * 1024  # ... and at least this many
PROBE_STEP = 512  # a probe, and the scan after it, read this much first, then double
_ZERO_PROBE = 1024 * 1024
_unpack_overhead = LOG_OVERHEAD.unpack_from


class ReadableFile(Protocol):
    """What the scanner needs of a file: an unbuffered `open(path, "rb", buffering=0)` fits."""

    def fileno(self) -> int: ...

    def seek(self, pos: int, whence: int = ..., /) -> int: ...

    def read(self, size: int = ..., /) -> bytes: ...

    def readinto(self, buffer: bytearray | memoryview, /) -> int | None: ...


class ProbeBudget:
    """Bytes the resync probes of one scan may read and checksum: linear in the file size,
    whatever the file holds (repeated bytes can look like an entry header every few bytes,
    each claiming a large entry to checksum; damage every few bytes means a probe for each).
    A probe that finds its budget spent gives up: the damage is reported as `unsearched`."""

    def __init__(self, size: int) -> None:
        self.left = PROBE_WORK_MIN + PROBE_WORK_PER_BYTE * max(0, size)
        self.spent_out = False

    def spend(self, n: int) -> bool:
        if n > self.left:
            self.left = 0
            self.spent_out = True
            return False
        self.left -= n
        return True


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
        self.budget = ProbeBudget(self.end - start)
        self._buf: bytearray | None = None  # kept across resyncs
        self._read_cap = chunk_size  # the next read's size; small after a resync, then doubled
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
        if self._buf is None:  # no bigger than the file: zero-filling 4 MiB for a 14 KB
            # segment was most of `info`'s time on many small partitions (page faults)
            self._buf = bytearray(max(PROBE_STEP, min(self._chunk, end - start)))
        else:  # resuming after damage: read little first, so dense damage stays linear
            self._read_cap = PROBE_STEP
        buf = self._buf
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
                base, filled, p = self._refill(buf, mv, base, filled, p,
                                               HEADER_SIZE_UP_TO_MAGIC)
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
                if self.budget.spent_out:
                    self._add(Damage(pos, "unsearched", f"framing breaks (size field {size}); "
                                     "the search for a valid batch after it stopped, its work "
                                     "cap spent: what follows is unchecked", left))
                elif total > self._max_entry and size >= MIN_ENTRY_SIZE and total <= left:
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
                base, filled, p = self._refill(buf, mv, base, filled, p, total)
            yield pos, mv[p:p + total]
            p += total

    def _refill(self, buf: bytearray, mv: memoryview, base: int, filled: int,
                p: int, need: int) -> tuple[int, int, int]:
        """Move the unread bytes to the front and read more, at least `need` bytes in all
        (when the file has them); same-size copies keep views legal."""
        rest = filled - p
        if rest:
            buf[:rest] = buf[p:filled]
        base += p
        want = min(len(buf), self.end - base, max(need, rest + self._read_cap)) - rest
        self._read_cap = min(2 * self._read_cap, len(buf))
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
        The window is read as far as the search gets (PROBE_STEP, then doubling), and what
        is read or checksummed is paid from the scan's budget: None once it is spent
        (`budget.spent_out`).
        """
        f = self._f
        n = min(self.end - pos, self._window)
        if n <= HEADER_SIZE_UP_TO_MAGIC:
            return None
        data = b""
        limit = n - HEADER_SIZE_UP_TO_MAGIC  # candidate starts i < limit
        i = 0
        while i < limit:
            if len(data) < min(n, i + HEADER_SIZE_UP_TO_MAGIC + PROBE_STEP):
                want = min(n, max(2 * len(data), i + HEADER_SIZE_UP_TO_MAGIC + PROBE_STEP))
                if not self.budget.spend(want - len(data)):
                    return None
                f.seek(pos + len(data))
                data += f.read(want - len(data))
                if len(data) < want:  # the file shrank under us
                    n = len(data)
                    limit = n - HEADER_SIZE_UP_TO_MAGIC
                    continue
            # candidates among the bytes read (a header must fit in them)
            seen = len(data) - HEADER_SIZE_UP_TO_MAGIC
            m = _MAGIC_CANDIDATE.search(data, i + MAGIC_POS, seen + MAGIC_POS)
            if m is None:
                i = max(i, seen)
                continue
            i = m.start() - MAGIC_POS
            if data[i + 8:i + 12] == b"\0\0\0\0":
                nz = _NON_ZERO.search(data, i + 8)
                if nz is None:
                    i = max(i + 1, len(data) - 11)  # zeros up to what is read
                    continue
                i = max(i + 1, nz.start() - 11)
                continue
            off, size = _unpack_overhead(data, i)
            total = size + LOG_OVERHEAD_SIZE
            if off >= 0 and size >= MIN_ENTRY_SIZE and pos + i + total <= self.end and \
                    i + total <= n:
                if len(data) < i + total:
                    want = min(n, max(2 * len(data), i + total))
                    if not self.budget.spend(want - len(data)):
                        return None
                    f.seek(pos + len(data))
                    data += f.read(want - len(data))
                    if len(data) < i + total:
                        return None  # the file shrank under us
                if not self.budget.spend(total):
                    return None
                if _crc_ok(data, i, total, data[i + MAGIC_POS]):
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
