"""`__transaction_state` records (transaction coordinator; `--transaction-log-decoder`).

Record layout: coordinator.py; one record type, 0:
Key   : TransactionLogKey: TransactionalId string
Value : TransactionLogValue v0 (non-flexible) or v1 (flexible, KIP-915; tagged fields of
        transactions V2, KIP-890):
        ProducerId int64, [tag 0 PreviousProducerId, tag 1 NextProducerId: int64]
        ProducerEpoch int16, [tag 3 NextProducerEpoch int16]
        TransactionTimeoutMs int32, TransactionStatus int8,
        TransactionPartitions [](Topic string, PartitionIds []int32) (nullable),
        TransactionLastUpdateTimestampMs int64, TransactionStartTimestampMs int64,
        [tag 2 ClientTransactionVersion int16]
A null value is a tombstone (the transactional id expired).

TransactionStatus ids are Kafka's TransactionState ids (TransactionState.java); the name is
added as `transactionState` in JSON (kafka-dump-log before 4.0 printed `state=<name>`; 4.x
prints the id only, and so does text output).
"""

from __future__ import annotations

from typing import Any

from kafkalog_cli.codec.internal.coordinator import Coordinator
from kafkalog_cli.codec.internal.schema import Message, Struct, field, message

TRANSACTION_LOG_KEY = message("TransactionLogKey", field("TransactionalId", "string", "0"),
                              api_key=0)
TRANSACTION_LOG_VALUE = message(
    "TransactionLogValue",
    field("ProducerId", "int64"),
    field("PreviousProducerId", "int64", tag=0, tagged="1+", default=-1),
    field("NextProducerId", "int64", tag=1, tagged="1+", default=-1),
    field("ProducerEpoch", "int16"),
    field("NextProducerEpoch", "int16", tag=3, tagged="1+", default=-1),
    field("TransactionTimeoutMs", "int32"),
    field("TransactionStatus", "int8"),
    field("TransactionPartitions", Struct("PartitionsSchema", (
        field("Topic", "string"), field("PartitionIds", "[]int32"))), null="0+"),
    field("TransactionLastUpdateTimestampMs", "int64"),
    field("TransactionStartTimestampMs", "int64"),
    field("ClientTransactionVersion", "int16", tag=2, tagged="1+"),
    api_key=0, valid="0-1", flexible="1+")

STATES = {0: "Empty", 1: "Ongoing", 2: "PrepareCommit", 3: "PrepareAbort", 4: "CompleteCommit",
          5: "CompleteAbort", 6: "Dead", 7: "PrepareEpochFence"}


def _with_state(_record_type: int, raw: dict[str, Any]) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for k, v in raw.items():
        data[k] = v
        if k == "transactionStatus":
            data["transactionState"] = STATES.get(v, f"Unknown({v})")
    return data


def kafka_view(decoded: dict[str, Any]) -> dict[str, Any]:
    """The record as `--transaction-log-decoder` prints it: without `transactionState`."""
    value = decoded["value"]
    if value is None:
        return decoded
    data = {k: v for k, v in value["data"].items() if k != "transactionState"}
    return {"key": decoded["key"], "value": {**value, "data": data}}


COORDINATOR = Coordinator("__transaction_state", (TRANSACTION_LOG_KEY, TRANSACTION_LOG_VALUE),
                          refine=_with_state)
MESSAGES: tuple[Message, ...] = COORDINATOR.messages
decode = COORDINATOR.decode
