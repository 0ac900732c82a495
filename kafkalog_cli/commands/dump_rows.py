"""The rows `kafkalog dump` prints: the kinds, each kind's fields (csv's header is their union
over the kinds a run can print; each format says which kinds a PATH gives (docs/json.md
describes them)."""

from __future__ import annotations

from typing import Any

from kafkalog_cli.codec import compression
from kafkalog_cli.codec.entry import Batch
from kafkalog_cli.codec.layout import TIMESTAMP_TYPES

Row = dict[str, Any]


def batch_row(b: Batch, pos: int, file: str) -> Row:
    return {"kind": "batch", "file": file, "position": pos, "baseOffset": b.base_offset,
            "lastOffset": b.last_offset, "count": b.count, "magic": b.magic,
            "compression": compression.name(b.compression),
            "timestampType": TIMESTAMP_TYPES[b.timestamp_type], "maxTimestamp": b.max_timestamp,
            "producerId": b.producer_id, "producerEpoch": b.producer_epoch,
            "baseSequence": b.base_sequence, "lastSequence": b.last_sequence,
            "isTransactional": b.is_transactional, "isControl": b.is_control,
            "deleteHorizonMs": b.delete_horizon_ms, "partitionLeaderEpoch":
                b.partition_leader_epoch, "crc": b.crc, "isValid": b.is_valid(), "size": b.size}


# the fields of each kind of row, in order; csv's header is the union over the kinds a run
# can print (one header for batches and records: `kind` tells them apart)
KIND_COLUMNS: dict[str, tuple[str, ...]] = {
    "batch": ("kind", "file", "position", "baseOffset", "lastOffset", "count", "magic",
              "compression", "timestampType", "maxTimestamp", "producerId", "producerEpoch",
              "baseSequence", "lastSequence", "isTransactional", "isControl",
              "deleteHorizonMs", "partitionLeaderEpoch", "crc", "isValid", "size"),
    "record": ("kind", "topic", "partition", "offset", "timestamp", "timestampType", "key",
               "value", "headers", "sequence", "crc", "control", "decoded"),
    "index-entry": ("kind", "file", "offset", "position"),
    "timeindex-entry": ("kind", "file", "timestamp", "offset"),
    "aborted-txn": ("kind", "file", "version", "producerId", "firstOffset", "lastOffset",
                    "lastStableOffset"),
    "producer": ("kind", "file", "producerId", "producerEpoch", "coordinatorEpoch",
                 "currentTxnFirstOffset", "lastTimestamp", "lastSequence", "lastOffset",
                 "offsetDelta"),
    "leader-epoch": ("kind", "file", "epoch", "startOffset"),
    "checkpoint-entry": ("kind", "file", "topic", "partition", "offset"),
    "file": ("kind", "file", "content"),
    # Kafka 0.7: an entry (a message, or a compressed wrapper) and the messages in it
    "entry": ("kind", "file", "topic", "partition", "position", "offset", "nextOffset", "size",
              "magic", "attributes", "compression", "crc", "isValid", "payloadSize"),
    "message": ("kind", "topic", "partition", "offset", "nextOffset", "innerIndex", "magic",
                "attributes", "compression", "crc", "isValid", "payloadSize", "payload"),
}

def csv_columns(kinds: list[list[str]]) -> list[str]:
    return list(dict.fromkeys(c for ks in kinds for k in ks for c in KIND_COLUMNS[k]))
