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
from array import array
from typing import Final, NamedTuple

OFFSET_ENTRY = struct.Struct(">ii")
TIME_ENTRY = struct.Struct(">qi")
TXN_ENTRY = struct.Struct(">hqqqq")


class AbortedTxn(NamedTuple):
    version: int
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


# where each layout keeps its relative offset (bytes into the entry)
OFFSET_REL_POS: Final = 0
TIME_REL_POS: Final = TIME_ENTRY.size - struct.calcsize(">i")
_WORD: Final = array("i").itemsize  # 4: the relative offset is one aligned word


def first_zero_slot(data: bytes, entry: struct.Struct, rel_pos: int, start: int = 0) -> int | None:
    """The first slot >= `start` of `data` (whole entries) whose relative offset is 0, or None.

    Used slots end there: the broker preallocates the active segment's index zero-filled,
    and an offset can only be relative 0 in slot 0 (kafka-dump-log stops the same way)."""
    words = array("i")
    words.frombytes(data)  # a zero word reads 0 in either byte order
    rels = words[rel_pos // _WORD::entry.size // _WORD]
    try:
        return rels.index(0, start)
    except ValueError:
        return None


def encode_offset_entries(entries: list[tuple[int, int]]) -> bytes:
    return b"".join(OFFSET_ENTRY.pack(r, p) for r, p in entries)


def encode_time_entries(entries: list[tuple[int, int]]) -> bytes:
    return b"".join(TIME_ENTRY.pack(t, r) for t, r in entries)


def encode_txn_entries(entries: list[AbortedTxn]) -> bytes:
    return b"".join(TXN_ENTRY.pack(*e) for e in entries)
