"""Offset, time and transaction indexes read from disk, with Kafka's lookups and sanity checks.

Callers see absolute offsets; relative offsets stay inside. An index is read from its file a
block of entries at a time, never whole: a broker's are at most segment.index.bytes (10 MiB
by default), but a file on disk can be any size, or a sparse gigabyte of zeros. The real
entries of an offset or time index are its slots up to the first one after slot 0 whose
relative offset is 0 (codec/index_entry.py): finding them reads no further than that slot.
"""

from __future__ import annotations

import struct
import weakref
from collections.abc import Iterator
from typing import Self

from kafkalog_cli.codec import index_entry as ie
from kafkalog_cli.storage.disk import fs

BLOCK_ENTRIES = 4096  # entries read at a time


class _EntryFile:
    """The whole slots of an index file, read in blocks through a descriptor held open with
    the object (a file removed meanwhile stays readable). One block is kept."""

    def __init__(self, path: fs.FilePath, entry: struct.Struct) -> None:
        self.path = path
        self.entry = entry
        ranges = fs.open_ranges(path)  # a descriptor locally, ranged reads for a URL
        self._ranges = ranges
        self.size = ranges.size
        self.slots = self.size // entry.size
        self._block_no = -1
        self._block = b""
        if self.slots <= BLOCK_ENTRIES:  # one block, the usual size: read now, close
            try:
                self.block(0)
            finally:
                ranges.close()
        else:
            weakref.finalize(self, ranges.close)

    def block(self, n: int) -> bytes:
        """Slots [n * BLOCK_ENTRIES, (n + 1) * BLOCK_ENTRIES) that exist, as bytes."""
        if n != self._block_no:
            first = n * BLOCK_ENTRIES
            want = max(0, min(BLOCK_ENTRIES, self.slots - first)) * self.entry.size
            try:
                data = self._ranges.pread(want, first * self.entry.size)
            except OSError as e:
                raise OSError(e.errno, e.strerror, str(self.path)) from None
            if len(data) < want:
                raise OSError(0, "file shrank while being read", str(self.path))
            self._block, self._block_no = data, n
        return self._block

    def slot(self, i: int) -> tuple[int, ...]:
        """Slot i, unpacked (0 <= i < slots)."""
        data = self.block(i // BLOCK_ENTRIES)
        return self.entry.unpack_from(data, i % BLOCK_ENTRIES * self.entry.size)

    def blocks(self, slots: int, start: int = 0) -> Iterator[bytes]:
        """Slots [start, slots), a block at a time."""
        size = self.entry.size
        for n in range(start // BLOCK_ENTRIES, (slots + BLOCK_ENTRIES - 1) // BLOCK_ENTRIES):
            first = n * BLOCK_ENTRIES
            yield self.block(n)[max(0, start - first) * size:(slots - first) * size]

    def used(self, rel_pos: int) -> int:
        """How many leading slots are real: up to the first slot i > 0 with relative
        offset 0, or all of them."""
        for n in range((self.slots + BLOCK_ENTRIES - 1) // BLOCK_ENTRIES):
            z = ie.first_zero_slot(self.block(n), self.entry, rel_pos, 1 if n == 0 else 0)
            if z is not None:
                return n * BLOCK_ENTRIES + z
        return self.slots


class IndexEntries:
    """The real entries of an offset or time index, with absolute offsets: (offset,
    position) or (timestamp, offset). A sequence read from the file on demand."""

    def __init__(self, f: _EntryFile, used: int, base_offset: int, rel_first: bool) -> None:
        self._f = f
        self._n = used
        self._base = base_offset
        self._rel_first = rel_first  # the relative offset is the first field (offset index)

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i: int) -> tuple[int, int]:
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError("index entry out of range")
        a, b = self._f.slot(i)
        return (self._base + a, b) if self._rel_first else (a, self._base + b)

    def __iter__(self) -> Iterator[tuple[int, int]]:
        return self.iter_from(0)

    def iter_from(self, start: int) -> Iterator[tuple[int, int]]:
        """Entries start, start + 1, ... to the last."""
        base, unpack = self._base, self._f.entry.iter_unpack
        for data in self._f.blocks(self._n, max(0, start)):
            if self._rel_first:
                for rel, pos in unpack(data):
                    yield base + rel, pos
            else:
                for ts, rel in unpack(data):
                    yield ts, base + rel


def _last_at_most(entries: IndexEntries, key: int,
                  default: tuple[int, int]) -> tuple[int, int]:
    """The last entry whose first field is <= `key` (a binary search reading log2(n) slots,
    as AbstractIndex.largestLowerBoundSlotFor), else `default`."""
    lo, hi = 0, len(entries)
    while lo < hi:
        mid = (lo + hi) // 2
        if entries[mid][0] <= key:
            lo = mid + 1
        else:
            hi = mid
    return entries[lo - 1] if lo else default


class _SparseIndex:
    """What the offset and time index share (Kafka's AbstractIndex): a file of fixed-size
    slots read a block at a time, the leading slots before a zero-filled tail as entries;
    `slot_count` counts every whole slot, as Kafka does."""

    ENTRY: struct.Struct
    REL_POS: int  # where in a slot its relative offset sits (0 ends the entries)
    REL_FIRST: bool  # whether that relative offset is the slot's first field

    def __init__(self, path: fs.FilePath, base_offset: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self._f = _EntryFile(path, self.ENTRY)
        self.file_size = self._f.size
        self.slot_count = self._f.slots
        self.used = self._f.used(self.REL_POS)  # leading slots before a zero-filled tail
        self.entries = IndexEntries(self._f, self.used, base_offset, rel_first=self.REL_FIRST)

    @classmethod
    def read(cls, path: fs.FilePath, base_offset: int) -> Self:
        return cls(path, base_offset)

    @property
    def untrimmed(self) -> bool:
        return self.used < self.slot_count

    def first_slot_zero(self) -> bool:
        """Whether the first slot is all zero bytes (an empty segment's preallocated one)."""
        return self.slot_count > 0 and not any(self._f.slot(0))


class OffsetIndex(_SparseIndex):
    """(offset, position) entries."""

    ENTRY, REL_POS, REL_FIRST = ie.OFFSET_ENTRY, ie.OFFSET_REL_POS, True

    def sanity_errors(self) -> list[str]:
        """OffsetIndex.sanityCheck, verbatim in meaning (its last entry is the file's last
        slot, zero tail included)."""
        errs = []
        if self.slot_count:
            last = self.base_offset + self._f.slot(self.slot_count - 1)[0]
            if last < self.base_offset:
                errs.append(f"last offset {last} is below the base offset {self.base_offset}")
        if self.file_size % ie.OFFSET_ENTRY.size:
            errs.append(f"file size {self.file_size} is not a multiple of "
                        f"{ie.OFFSET_ENTRY.size}")
        return errs

    def lookup(self, offset: int) -> tuple[int, int]:
        """Largest entry with offset <= `offset`, else (base offset, 0)."""
        return _last_at_most(self.entries, offset, (self.base_offset, 0))


class TimeIndex(_SparseIndex):
    """(timestamp, offset) entries."""

    ENTRY, REL_POS, REL_FIRST = ie.TIME_ENTRY, ie.TIME_REL_POS, False

    def sanity_errors(self) -> list[str]:
        """TimeIndex.sanityCheck."""
        errs = []
        if self.slot_count:
            last_ts, last_rel = self._f.slot(self.slot_count - 1)
            first_ts = self._f.slot(0)[0]
            if last_ts < first_ts:
                errs.append(f"last timestamp {last_ts} is below the first {first_ts}")
            if self.base_offset + last_rel < self.base_offset:
                errs.append("last offset is below the base offset")
        if self.file_size % ie.TIME_ENTRY.size:
            errs.append(f"file size {self.file_size} is not a multiple of {ie.TIME_ENTRY.size}")
        return errs

    def last_entry(self) -> tuple[int, int]:
        """The last real entry, or (-1, base offset) when empty (TimeIndex.lastEntry)."""
        e = self.entries
        return e[-1] if len(e) else (-1, self.base_offset)

    def lookup(self, timestamp: int) -> tuple[int, int]:
        """Largest entry with timestamp <= `timestamp`, else (-1, base offset)."""
        return _last_at_most(self.entries, timestamp, (-1, self.base_offset))


class TxnIndex:
    """Aborted transactions; entries are read while 34 bytes remain (a partial trailing
    entry is ignored, as Kafka does)."""

    def __init__(self, path: fs.FilePath, base_offset: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self._f = _EntryFile(path, ie.TXN_ENTRY)
        self.file_size = self._f.size

    @classmethod
    def read(cls, path: fs.FilePath, base_offset: int) -> TxnIndex:
        return cls(path, base_offset)

    @property
    def entries(self) -> Iterator[ie.AbortedTxn]:
        for data in self._f.blocks(self._f.slots):
            for e in ie.TXN_ENTRY.iter_unpack(data):
                yield ie.AbortedTxn(*e)

    def sanity_errors(self) -> Iterator[str]:
        prev = None
        for i, e in enumerate(self.entries):
            pos = i * ie.TXN_ENTRY.size
            if (e.version >> 8) > 0:  # Kafka reads only the first byte of the version
                yield f"entry at byte {pos} has unknown version {e.version}"
            if e.last_offset < self.base_offset:
                yield (f"entry at byte {pos}: last offset {e.last_offset} is below the base "
                       f"offset {self.base_offset}")
            if prev is not None and e.last_offset <= prev:
                yield f"entry at byte {pos}: last offset {e.last_offset} does not increase"
            if e.first_offset > e.last_offset:
                yield f"entry at byte {pos}: first offset is after last offset"
            prev = e.last_offset
        if self.file_size % ie.TXN_ENTRY.size:
            yield (f"{self.file_size % ie.TXN_ENTRY.size} trailing bytes after the last whole "
                   "entry")
