"""Producer-state snapshot `<offset>.snapshot` (ProducerSnapshot.json, version 1).

    version int16 | crc uint32 (CRC-32C of bytes 6..end) | entryCount int32 | entries
entry (46 bytes): producerId int64 | epoch int16 | lastSequence int32 | lastOffset int64 |
    offsetDelta int32 | timestamp int64 | coordinatorEpoch int32 | currentTxnFirstOffset int64
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from kafkalog_cli.codec.checksum import crc32c
from kafkalog_cli.errors import CorruptDataError

_HEAD = struct.Struct(">hIi")
_ENTRY = struct.Struct(">qhiqiqiq")
VERSION = 1


class ProducerEntry(NamedTuple):
    producer_id: int
    epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int


def decode_snapshot(data: bytes) -> list[ProducerEntry]:
    if len(data) < _HEAD.size:
        raise CorruptDataError(f"producer snapshot is {len(data)} bytes, shorter than its "
                               f"{_HEAD.size}-byte header", pos=len(data))
    version, crc, count = _HEAD.unpack_from(data, 0)
    if version != VERSION:
        raise CorruptDataError(f"producer snapshot has unknown version {version}", pos=0)
    actual = crc32c(memoryview(data)[6:])
    if actual != crc:
        raise CorruptDataError(f"producer snapshot CRC mismatch: stored {crc}, computed {actual}",
                               pos=2)
    if count < 0 or len(data) != _HEAD.size + count * _ENTRY.size:
        raise CorruptDataError(f"producer snapshot declares {count} entries but holds "
                               f"{len(data) - _HEAD.size} entry bytes", pos=6)
    return [ProducerEntry(*_ENTRY.unpack_from(data, _HEAD.size + i * _ENTRY.size))
            for i in range(count)]


def encode_snapshot(entries: list[ProducerEntry]) -> bytes:
    body = struct.pack(">i", len(entries)) + b"".join(_ENTRY.pack(*e) for e in entries)
    return struct.pack(">hI", VERSION, crc32c(body)) + body
