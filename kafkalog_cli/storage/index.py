"""Offset, time and transaction indexes read from disk, with Kafka's lookups and sanity checks.

Callers see absolute offsets; relative offsets stay inside. Index files are small (at most
segment.index.bytes, 10 MiB by default), so they are read whole.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from pathlib import Path

from kafkalog_cli.codec import index_entry as ie


@dataclass
class OffsetIndex:
    """(offset, position) pairs; `slots` counts every whole slot, as Kafka does."""

    path: Path
    base_offset: int
    file_size: int
    slots: list[ie.OffsetEntry]
    used: int  # leading slots before a zero-filled tail

    @classmethod
    def read(cls, path: Path, base_offset: int) -> OffsetIndex:
        data = path.read_bytes()
        slots = ie.offset_entries(data)
        return cls(path, base_offset, len(data), slots, ie.used_slots(slots))

    @property
    def entries(self) -> list[tuple[int, int]]:
        """Real entries as (absolute offset, position)."""
        b = self.base_offset
        return [(b + e.relative_offset, e.position) for e in self.slots[:self.used]]

    @property
    def untrimmed(self) -> bool:
        return self.used < len(self.slots)

    def sanity_errors(self) -> list[str]:
        """OffsetIndex.sanityCheck, verbatim in meaning."""
        errs = []
        if self.slots and self.base_offset + self.slots[-1].relative_offset < self.base_offset:
            errs.append(f"last offset {self.base_offset + self.slots[-1].relative_offset} is "
                        f"below the base offset {self.base_offset}")
        if self.file_size % ie.OFFSET_ENTRY.size:
            errs.append(f"file size {self.file_size} is not a multiple of "
                        f"{ie.OFFSET_ENTRY.size}")
        return errs

    def lookup(self, offset: int) -> tuple[int, int]:
        """Largest entry with offset <= `offset`, else (base offset, 0)."""
        entries = self.entries
        i = bisect.bisect_right(entries, (offset, 2**31)) - 1
        if i < 0:
            return self.base_offset, 0
        return entries[i]


@dataclass
class TimeIndex:
    path: Path
    base_offset: int
    file_size: int
    slots: list[ie.TimeEntry]
    used: int

    @classmethod
    def read(cls, path: Path, base_offset: int) -> TimeIndex:
        data = path.read_bytes()
        slots = ie.time_entries(data)
        return cls(path, base_offset, len(data), slots, ie.used_slots(slots))

    @property
    def entries(self) -> list[tuple[int, int]]:
        """Real entries as (timestamp, absolute offset)."""
        b = self.base_offset
        return [(e.timestamp, b + e.relative_offset) for e in self.slots[:self.used]]

    @property
    def untrimmed(self) -> bool:
        return self.used < len(self.slots)

    def sanity_errors(self) -> list[str]:
        """TimeIndex.sanityCheck."""
        errs = []
        if self.slots:
            last, first = self.slots[-1], self.slots[0]
            if last.timestamp < first.timestamp:
                errs.append(f"last timestamp {last.timestamp} is below the first "
                            f"{first.timestamp}")
            if self.base_offset + last.relative_offset < self.base_offset:
                errs.append("last offset is below the base offset")
        if self.file_size % ie.TIME_ENTRY.size:
            errs.append(f"file size {self.file_size} is not a multiple of {ie.TIME_ENTRY.size}")
        return errs

    def last_entry(self) -> tuple[int, int]:
        """The last real entry, or (-1, base offset) when empty (TimeIndex.lastEntry)."""
        e = self.entries
        return e[-1] if e else (-1, self.base_offset)

    def lookup(self, timestamp: int) -> tuple[int, int]:
        """Largest entry with timestamp <= `timestamp`, else (-1, base offset)."""
        e = self.entries
        lo, hi = 0, len(e)
        while lo < hi:
            mid = (lo + hi) // 2
            if e[mid][0] <= timestamp:
                lo = mid + 1
            else:
                hi = mid
        return e[lo - 1] if lo else (-1, self.base_offset)


@dataclass
class TxnIndex:
    path: Path
    base_offset: int
    file_size: int
    entries: list[ie.AbortedTxn]

    @classmethod
    def read(cls, path: Path, base_offset: int) -> TxnIndex:
        data = path.read_bytes()
        return cls(path, base_offset, len(data), ie.txn_entries(data))

    def sanity_errors(self) -> list[str]:
        errs = []
        prev = None
        for i, e in enumerate(self.entries):
            pos = i * ie.TXN_ENTRY.size
            if (e.version >> 8) > 0:  # Kafka reads only the first byte of the version
                errs.append(f"entry at byte {pos} has unknown version {e.version}")
            if e.last_offset < self.base_offset:
                errs.append(f"entry at byte {pos}: last offset {e.last_offset} is below the "
                            f"base offset {self.base_offset}")
            if prev is not None and e.last_offset <= prev:
                errs.append(f"entry at byte {pos}: last offset {e.last_offset} does not "
                            f"increase")
            if e.first_offset > e.last_offset:
                errs.append(f"entry at byte {pos}: first offset is after last offset")
            prev = e.last_offset
        if self.file_size % ie.TXN_ENTRY.size:
            errs.append(f"{self.file_size % ie.TXN_ENTRY.size} trailing bytes after the last "
                        "whole entry")
        return errs
