"""Index file layouts (no header, fixed-size big-endian entries).

.index     relativeOffset int32 | position int32                          (8 bytes)
.timeindex timestamp int64 | relativeOffset int32                        (12 bytes)
.txnindex  version int16 | producerId int64 | firstOffset int64 |
           lastOffset int64 | lastStableOffset int64                     (34 bytes)
A live broker preallocates the active segment's .index/.timeindex and zero-fills the
tail; Kafka trims them on roll and close. A zero entry after slot 0 marks that tail
(an offset can only be relative 0 in slot 0), as kafka-dump-log assumes too.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import NamedTuple

OFFSET_ENTRY = struct.Struct(">ii")
TIME_ENTRY = struct.Struct(">qi")
TXN_ENTRY = struct.Struct(">hqqqq")


class OffsetEntry(NamedTuple):
    relative_offset: int
    position: int


class TimeEntry(NamedTuple):
    timestamp: int
    relative_offset: int


class AbortedTxn(NamedTuple):
    version: int
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


def offset_entries(data: bytes) -> list[OffsetEntry]:
    """Every whole slot of the file, as Kafka counts them (zero tail included)."""
    n = len(data) // OFFSET_ENTRY.size
    return [OffsetEntry(*e) for e in OFFSET_ENTRY.iter_unpack(data[:n * OFFSET_ENTRY.size])]


def time_entries(data: bytes) -> list[TimeEntry]:
    n = len(data) // TIME_ENTRY.size
    return [TimeEntry(*e) for e in TIME_ENTRY.iter_unpack(data[:n * TIME_ENTRY.size])]


def used_slots(entries: Sequence[OffsetEntry | TimeEntry]) -> int:
    """How many leading slots are real: stop at the first slot i > 0 with relative offset 0."""
    for i, e in enumerate(entries):
        if i > 0 and e.relative_offset == 0:
            return i
    return len(entries)


def txn_entries(data: bytes) -> list[AbortedTxn]:
    """Entries while 34 bytes remain (a partial trailing entry is ignored, as Kafka does)."""
    n = len(data) // TXN_ENTRY.size
    return [AbortedTxn(*e) for e in TXN_ENTRY.iter_unpack(data[:n * TXN_ENTRY.size])]


def encode_offset_entries(entries: list[tuple[int, int]]) -> bytes:
    return b"".join(OFFSET_ENTRY.pack(r, p) for r, p in entries)


def encode_time_entries(entries: list[tuple[int, int]]) -> bytes:
    return b"".join(TIME_ENTRY.pack(t, r) for t, r in entries)


def encode_txn_entries(entries: list[AbortedTxn]) -> bytes:
    return b"".join(TXN_ENTRY.pack(*e) for e in entries)
