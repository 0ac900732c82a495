"""`__transaction_state` records (transaction coordinator; `--transaction-log-decoder`).

Key   : version int16 (0) | TransactionLogKey v0: TransactionalId string
Value : version int16 | TransactionLogValue v0 (non-flexible) or v1 (flexible, KIP-915):
        ProducerId int64, [tag 0 PreviousProducerId, tag 1 NextProducerId: int64, v1+]
        ProducerEpoch int16, TransactionTimeoutMs int32, TransactionStatus int8,
        TransactionPartitions [](Topic string, PartitionIds []int32) (nullable),
        TransactionLastUpdateTimestampMs int64, TransactionStartTimestampMs int64,
        [tag 2 ClientTransactionVersion int16, v1+]
A null value is a tombstone (the transactional id expired).

TransactionStatus ids are Kafka's TransactionState ids (TransactionMetadata.scala); the
name is added as `transactionState`.
"""

from __future__ import annotations

from typing import Any

from kafkalog_cli.codec.internal.schema import (
    NO_VERSIONS,
    Struct,
    UnknownRecordType,
    field,
    message,
    read_struct,
    read_version,
    versions,
)
from kafkalog_cli.errors import CorruptDataError

TRANSACTION_LOG_KEY = message("TransactionLogKey", field("TransactionalId", "string"))
TRANSACTION_LOG_VALUE = message(
    "TransactionLogValue",
    field("ProducerId", "int64"),
    field("PreviousProducerId", "int64", tag=0, tagged="1+", default=-1),
    field("NextProducerId", "int64", tag=1, tagged="1+", default=-1),
    field("ProducerEpoch", "int16"),
    field("TransactionTimeoutMs", "int32"),
    field("TransactionStatus", "int8"),
    field("TransactionPartitions", Struct("PartitionsSchema", (
        field("Topic", "string"), field("PartitionIds", "[]int32"))), null="0+"),
    field("TransactionLastUpdateTimestampMs", "int64"),
    field("TransactionStartTimestampMs", "int64"),
    field("ClientTransactionVersion", "int16", tag=2, tagged="1+", default=0))
KEY_VERSIONS = versions("0")
VALUE_VERSIONS = versions("0-1")
VALUE_FLEXIBLE = versions("1+")

STATES = {0: "Empty", 1: "Ongoing", 2: "PrepareCommit", 3: "PrepareAbort", 4: "CompleteCommit",
          5: "CompleteAbort", 6: "Dead", 7: "PrepareEpochFence"}


def decode(key: bytes | None, value: bytes | None) -> dict[str, Any]:
    """`{"key": {"type", "data"}, "value": {"version", "data"} | None}` for one record."""
    if key is None:
        raise CorruptDataError("__transaction_state record has no key")
    kv = read_version(key, "__transaction_state key")
    if not KEY_VERSIONS[0] <= kv <= KEY_VERSIONS[1]:
        raise UnknownRecordType(f"Unknown record type {kv}", pos=0)
    kdata, _ = read_struct(key, TRANSACTION_LOG_KEY, kv, NO_VERSIONS, pos=2)
    out: dict[str, Any] = {"key": {"type": str(kv), "data": kdata}, "value": None}
    if value is None:
        return out
    vv = read_version(value, "__transaction_state value")
    if not VALUE_VERSIONS[0] <= vv <= VALUE_VERSIONS[1]:
        raise CorruptDataError(f"unknown version {vv} of TransactionLogValue", pos=0)
    raw, _ = read_struct(value, TRANSACTION_LOG_VALUE, vv, VALUE_FLEXIBLE, pos=2)
    data: dict[str, Any] = {}
    for k, v in raw.items():
        data[k] = v
        if k == "transactionStatus":
            data["transactionState"] = STATES.get(v, f"Unknown({v})")
    out["value"] = {"version": str(vv), "data": data}
    return out
