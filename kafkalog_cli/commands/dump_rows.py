"""The rows `kafkalog dump` prints: the kinds, each kind's fields (csv's header is their union
over the kinds a run can print), and which kinds a PATH gives (docs/json.md describes them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kafkalog_cli.codec import compression
from kafkalog_cli.codec.entry import Batch
from kafkalog_cli.codec.layout import TIMESTAMP_TYPES
from kafkalog_cli.commands import v07
from kafkalog_cli.errors import UsageError
from kafkalog_cli.storage.disk import naming
from kafkalog_cli.storage.disk.logdir import Target
from kafkalog_cli.storage.v07 import Target07

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


def is_log(path: Path, fn: naming.FileName) -> bool:
    return (fn.kind is naming.FileKind.SEGMENT and fn.suffix == naming.LOG) or \
        fn.kind is naming.FileKind.KRAFT_SNAPSHOT or \
        (path.name.endswith((".log", ".checkpoint")) and fn.kind is not naming.FileKind.ROOT)


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
    **v07.KIND_COLUMNS,
}

_SUFFIX_KINDS = {naming.INDEX: "index-entry", naming.TIMEINDEX: "timeindex-entry",
                 naming.TXNINDEX: "aborted-txn", naming.SNAPSHOT: "producer"}


def file_kind(path: Path, fn: naming.FileName) -> str:
    """The kind of rows a file that is not a log prints; refuses a file dump cannot read."""
    if fn.suffix in _SUFFIX_KINDS:
        return _SUFFIX_KINDS[fn.suffix]
    if fn.kind is naming.FileKind.LEADER_EPOCH:
        return "leader-epoch"
    if fn.name in naming.ROOT_CHECKPOINTS:
        return "checkpoint-entry"
    if fn.kind in (naming.FileKind.PARTITION_METADATA, naming.FileKind.ROOT,
                   naming.FileKind.QUORUM_STATE):
        return "file"
    raise UsageError(f"{path}: not a file kafkalog knows how to dump")


def row_kinds(t07: Target07 | None, target: Target | None, records: bool,
              batches: bool) -> list[str]:
    """The kinds of rows dumping one resolved PATH can print (refusing an unknown file)."""
    if t07 is not None:
        return ["entry"] * batches + ["message"] * records
    assert target is not None
    if target.kind == "file":
        fn = naming.parse_file_name(target.path.name)
        if not is_log(target.path, fn):
            return [file_kind(target.path, fn)]
    return ["batch"] * batches + ["record"] * records


def csv_columns(kinds: list[list[str]]) -> list[str]:
    return list(dict.fromkeys(c for ks in kinds for k in ks for c in KIND_COLUMNS[k]))
