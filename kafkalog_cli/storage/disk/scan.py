"""Stream the entries of a segment file with flat memory, and say where and why it stops.

One scanner serves every format; a `Framing` says how its entries are framed, checked and
searched for after damage. The current format's (magic 0-2, `CurrentFraming`) follows
FileLogInputStream.nextBatch (see codec/entry.py); Kafka 0.7's is in formats/kafka07/scan.py.
The scanner reuses one
buffer (readinto), so a yielded view is only valid until the next entry is requested;
callers that keep a batch call `detach()` on it. It never trusts a length it cannot
frame: after a bad size field it stops and reports, as LevelDB's reader does.

Stop reasons of the current framing, the first reported as `scanner.damage`:
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
import sys
from collections.abc import Generator, Iterator
from typing import Generic, NamedTuple, Protocol, TypeVar

from kafkalog_cli.codec.checksum import crc32, crc32c
from kafkalog_cli.codec.entry import Batch, decode_entry
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
from kafkalog_cli.errors import CorruptBatch

DEFAULT_CHUNK = 4 * 1024 * 1024
DEFAULT_MAX_ENTRY = 256 * 1024 * 1024
DEFAULT_RESYNC_WINDOW = 4 * 1024 * 1024
PROBE_WORK_PER_BYTE = 8  # bytes the probes of a scan may read or checksum, per file byte
PROBE_WORK_MIN = 64 * 1024 * 1024  # ... and at least this many
PROBE_STEP = 512  # a probe, and the scan after it, read this much first, then double
_ZERO_PROBE = 1024 * 1024
_unpack_overhead = LOG_OVERHEAD.unpack_from
# finished scans' buffers, for the next scan in this process: a -j worker scans a partition
# as many pieces, and a fresh 4 MiB buffer for each was a page fault per 4 KiB and a memset
# (list.pop and append: atomic, so two threads never take the same one)
_SPARE: list[bytearray] = []


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


E = TypeVar("E")


class Fault(NamedTuple):
    """Why the entry at a position is not one: a Damage code, its reason, its size field."""

    code: str
    reason: str
    size: int


class Framing(Protocol[E]):
    """What a format tells the scanner: how an entry is framed, what it yields for one, and
    what damage is reported (and where the scan resumes) when framing breaks."""

    head: int  # bytes an entry needs before `frame` can read it; fewer left: `tail`

    def frame(self, buf: bytearray, p: int, left: int, max_entry: int) -> int | Fault:
        """The entry's total size, read from its header at buf[p:]; `left` bytes remain."""

    def entry(self, view: memoryview) -> E | Fault:
        """What the scan yields for one whole entry (a view valid until the next)."""

    def tail(self, s: EntryScanner[E], pos: int, left: int) -> None:
        """Report the `left` (< head) bytes at the end of the file."""

    def broken(self, s: EntryScanner[E], pos: int, left: int, fault: Fault) -> int | None:
        """Report the damage at `pos`; where the scan may resume, or None."""


class Window:
    """Up to `limit` bytes of the file from `base`, read only as far as a probe gets (each
    read paid from the scan's budget), growing by doubling."""

    def __init__(self, f: ReadableFile, base: int, limit: int, budget: ProbeBudget) -> None:
        self.f, self.base, self.limit, self.budget = f, base, limit, budget
        self.data = b""

    def cover(self, n: int) -> bool:
        """Hold the first min(n, limit) bytes; False when the budget cannot pay for them."""
        n = min(n, self.limit)
        have = len(self.data)
        if n <= have:
            return True
        want = min(self.limit, max(n, 2 * have, PROBE_STEP)) - have
        if not self.budget.spend(want):
            return False
        self.f.seek(self.base + have)
        more = self.f.read(want)
        self.data += more
        if len(more) < want:  # the file shrank under us
            self.limit = len(self.data)
        return True


class EntryScanner(Generic[E]):
    """Iterate `(position, entry)` over whole entries of `f` in [start, end)."""

    def __init__(self, f: ReadableFile, start: int = 0, end: int | None = None, *,
                 framing: Framing[E], chunk_size: int = DEFAULT_CHUNK,
                 max_entry: int = DEFAULT_MAX_ENTRY, resync: bool = False,
                 resync_window: int = DEFAULT_RESYNC_WINDOW) -> None:
        self.file = f
        self.framing = framing
        self.start = start
        self.end = os.fstat(f.fileno()).st_size if end is None else end
        self._chunk = chunk_size
        self.max_entry = max_entry
        self.resync = resync
        self.window = resync_window
        self.budget = ProbeBudget(self.end - start)
        self._buf: bytearray | None = None  # kept across resyncs
        self._read_cap = chunk_size  # the next read's size; small after a resync, then doubled
        self.damages: list[Damage] = []  # found and not yet taken by the reader

    def __iter__(self) -> Iterator[tuple[int, E]]:
        pos = self.start
        try:
            while True:
                resume = yield from self._run(pos)
                if resume is None:
                    return
                pos = resume
        finally:
            self._give_back()

    def _give_back(self) -> None:
        """The buffer to the next scan (_take_buffer reuses it once no view of it is left)."""
        buf, self._buf = self._buf, None
        if buf is not None and len(buf) <= DEFAULT_CHUNK and len(_SPARE) < 2:
            _SPARE.append(buf)

    def _run(self, start: int) -> Generator[tuple[int, E], None, int | None]:
        """Scan from `start`; returns where to resume after mid-file damage, or None."""
        f = self.file
        end = self.end
        fr = self.framing
        head = fr.head
        frame = fr.frame
        entry = fr.entry
        f.seek(start)
        if self._buf is None:  # no bigger than the file: zero-filling 4 MiB for a 14 KB
            # segment was most of `info`'s time on many small partitions (page faults)
            self._buf = _take_buffer(max(PROBE_STEP, min(self._chunk, end - start)))
        else:  # resuming after damage: read little first, so dense damage stays linear
            self._read_cap = PROBE_STEP
        buf = self._buf
        mv = memoryview(buf)
        base = start  # file position of buf[0]
        filled = 0
        p = 0
        while True:
            pos = base + p
            left = end - pos
            if left < head:
                if left > 0:
                    fr.tail(self, pos, left)
                return None
            if filled - p < head:
                base, filled, p = self._refill(buf, mv, base, filled, p, head)
                if filled - p < head:  # what lies past `filled` is an older read's
                    self.add(Damage(pos, "torn-tail", "file shrank while reading", left))
                    return None
            total = frame(buf, p, left, self.max_entry)
            if isinstance(total, Fault):
                return fr.broken(self, pos, left, total)
            if filled - p < total <= len(buf):
                base, filled, p = self._refill(buf, mv, base, filled, p, total)
            if filled - p >= total:
                view = mv[p:p + total]
                p += total
            else:  # larger than the buffer: read on its own (it is below max_entry)
                big = bytearray(total)
                have = filled - p
                big[:have] = buf[p:filled]
                f.seek(pos + have)
                if f.readinto(memoryview(big)[have:]) != total - have:
                    self.add(Damage(pos, "torn-tail", "file shrank while reading", left))
                    return None
                view = memoryview(big)
                base, filled, p = pos + total, 0, 0
            got = entry(view)
            if isinstance(got, Fault):
                return fr.broken(self, pos, left, got)
            yield pos, got

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
        n = self.file.readinto(mv[rest:rest + want]) if want > 0 else 0
        return base, rest + (n or 0), 0

    def add(self, d: Damage) -> None:
        self.damages.append(d)

    def all_zero(self, pos: int, n: int) -> bool:
        f = self.file
        f.seek(pos)
        while n > 0:
            block = f.read(min(n, _ZERO_PROBE))
            if not block or block.count(0) != len(block):
                return False
            n -= len(block)
        return True


def _take_buffer(n: int) -> bytearray:
    """A buffer of n bytes or more: a finished scan's where one is big enough and no view of
    it is left (a caller may still hold the last entry it was given: its bytes must stay),
    else a new one."""
    while _SPARE:
        try:
            buf = _SPARE.pop()
        except IndexError:  # another thread took it
            break
        if len(buf) >= n and sys.getrefcount(buf) == 2:  # `buf`, the call's argument
            return buf
    up = 1 << (n - 1).bit_length()  # so that the next scan's, a little bigger, fits too
    return bytearray(up if up <= DEFAULT_CHUNK else n)


class CurrentFraming:
    """Entries of magic 0-2: offset int64, size int32, then `size` bytes (the magic at 16)."""

    head = HEADER_SIZE_UP_TO_MAGIC + 1  # a whole entry is longer than its header

    def frame(self, buf: bytearray, p: int, left: int, max_entry: int) -> int | Fault:
        size: int = _unpack_overhead(buf, p)[1]
        total = size + LOG_OVERHEAD_SIZE
        if size < MIN_ENTRY_SIZE or total > left or total > max_entry:
            return Fault("", "", size)  # `broken` tells which
        return total

    def entry(self, view: memoryview) -> Batch | Fault:
        try:  # the header only: records are checked by their readers (checks/)
            return decode_entry(view)
        except CorruptBatch as e:  # framed by its size field, so the scan can go on
            return Fault("bad-batch", e.reason, len(view))

    def tail(self, s: EntryScanner[Batch], pos: int, left: int) -> None:
        self._tail(s, pos, left, "torn-tail",
                   f"{left} bytes after the last whole batch are too few for a header")

    def broken(self, s: EntryScanner[Batch], pos: int, left: int,
               fault: Fault) -> int | None:
        if fault.code == "bad-batch":  # unknown magic, malformed legacy message
            s.add(Damage(pos, fault.code, fault.reason, fault.size))
            return pos + fault.size
        size = fault.size
        total = size + LOG_OVERHEAD_SIZE
        nxt = self.probe(s, pos + 1)
        if nxt is not None:
            why = (f"size field {size} is below the minimum {MIN_ENTRY_SIZE}"
                   if size < MIN_ENTRY_SIZE else f"size field {size} does not fit")
            s.add(Damage(pos, "corrupt", f"framing breaks ({why}); {nxt - pos} bytes "
                         f"are skipped to the next valid batch at byte {nxt}", nxt - pos))
            return nxt if s.resync else None
        if s.budget.spent_out:
            s.add(Damage(pos, "unsearched", f"framing breaks (size field {size}); "
                         "the search for a valid batch after it stopped, its work "
                         "cap spent: what follows is unchecked", left))
        elif total > s.max_entry and size >= MIN_ENTRY_SIZE and total <= left:
            s.add(Damage(pos, "entry-too-big", f"batch of {total} bytes exceeds "
                         f"the {s.max_entry}-byte cap", left))
        elif size < MIN_ENTRY_SIZE:
            self._tail(s, pos, left, "garbage-tail",
                       f"batch size field {size} is below the minimum {MIN_ENTRY_SIZE}; "
                       "no valid batch follows")
        else:
            self._tail(s, pos, left, "torn-tail",
                       f"batch declares {total} bytes but only {left} remain in the file")
        return None

    @staticmethod
    def _tail(s: EntryScanner[Batch], pos: int, left: int, code: str,
              reason: str) -> None:
        if s.all_zero(pos, left):
            code = "zero-tail"
            reason = f"{left} zero bytes follow the last whole batch"
        elif code == "torn-tail" and not _plausible_header(s.file, pos, left):
            code = "garbage-tail"
            reason = f"{left} bytes that are not a batch header follow the last whole batch"
        s.add(Damage(pos, code, reason, left))

    def probe(self, s: EntryScanner[Batch], pos: int) -> int | None:
        """The next position (within the window) where an entry frames and its CRC checks.

        Candidates are found by regex jumps, not a byte loop: the magic byte must be 0..2,
        and a run of zeros can only end in a size field, so zero runs are skipped whole.
        The window is read as far as the search gets (PROBE_STEP, then doubling), and what
        is read or checksummed is paid from the scan's budget: None once it is spent
        (`budget.spent_out`).
        """
        n = min(s.end - pos, s.window)
        if n <= HEADER_SIZE_UP_TO_MAGIC:
            return None
        w = Window(s.file, pos, n, s.budget)
        i = 0
        while i < w.limit - HEADER_SIZE_UP_TO_MAGIC:  # a header must fit
            if len(w.data) < min(w.limit, i + HEADER_SIZE_UP_TO_MAGIC + PROBE_STEP):
                if not w.cover(i + HEADER_SIZE_UP_TO_MAGIC + PROBE_STEP):
                    return None
                continue
            data = w.data
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
            if off >= 0 and size >= MIN_ENTRY_SIZE and pos + i + total <= s.end and \
                    i + total <= w.limit:
                if not w.cover(i + total) or len(w.data) < i + total or \
                        not s.budget.spend(total):
                    return None  # the budget is spent, or the file shrank under us
                if _crc_ok(w.data, i, total, data[i + MAGIC_POS]):
                    return pos + i
            i += 1
        return None




CURRENT = CurrentFraming()


def _plausible_header(f: ReadableFile, pos: int, left: int) -> bool:
    """A torn batch still has a sane header; anything else is garbage."""
    if left <= HEADER_SIZE_UP_TO_MAGIC:
        return False
    f.seek(pos)
    head = f.read(HEADER_SIZE_UP_TO_MAGIC)
    _off, size = _unpack_overhead(head, 0)
    return _off >= 0 and size >= MIN_ENTRY_SIZE and head[16] in (0, 1, 2)


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
