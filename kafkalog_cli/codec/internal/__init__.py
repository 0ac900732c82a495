"""Decoders for the records of Kafka's internal topics, as kafka-dump-log's decoders show them.

| kind           | topic                 | module       | kafka-dump-log option          |
|----------------|-----------------------|--------------|--------------------------------|
| `offsets`      | `__consumer_offsets`  | groups.py    | `--offsets-decoder`            |
| `transactions` | `__transaction_state` | txnlog.py    | `--transaction-log-decoder`    |
| `share`        | `__share_group_state` | share.py     | `--share-group-state-decoder`  |
| `metadata`     | `__cluster_metadata`  | metadata.py  | `--cluster-metadata-decoder`   |

Each decoder takes a record's key and value bytes and returns `{"key": ..., "value": ...}`
(JSON-ready values; `value` None is a tombstone) or raises CorruptDataError
(UnknownRecordType for a key type with no schema). schema.py reads the generated-message
encoding all of them share; coordinator.py the key/value framing of the first three.

The schemas are our own data, written from Kafka's message specs (`*.json` in the
group-, share- and transaction-coordinator, metadata and clients jars); SPECS lists them by
spec name and the conformance tests compare them with the specs of the pinned Kafka.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kafkalog_cli.codec.internal import groups, metadata, share, txnlog
from kafkalog_cli.codec.internal.schema import Message

Decoder = Callable[[bytes | None, bytes | None], dict[str, Any]]

KINDS: dict[str, Decoder] = {
    "offsets": groups.decode,
    "transactions": txnlog.decode,
    "share": share.decode,
    "metadata": metadata.decode,
}
TOPICS: dict[str, str] = {
    "__consumer_offsets": "offsets",
    "__transaction_state": "transactions",
    "__share_group_state": "share",
    "__cluster_metadata": "metadata",
}
# what kafka-dump-log prints of a decoded record, for the kinds where kafkalog adds fields
_KAFKA_VIEWS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "transactions": txnlog.kafka_view,
    "metadata": metadata.kafka_view,
}
# every message the decoders read, by Kafka's spec name
SPECS: dict[str, Message] = {m.name: m for mod in (groups, txnlog, share, metadata)
                             for m in mod.MESSAGES}


def kafka_view(kind: str, decoded: dict[str, Any]) -> dict[str, Any]:
    """A decoder's output as kafka-dump-log's decoder prints it (text output): the fields
    kafkalog adds for JSON left out."""
    view = _KAFKA_VIEWS.get(kind)
    return decoded if view is None else view(decoded)


def kind_for_topic(topic: str) -> str | None:
    """The decoder `--decode auto` picks for a topic, None for other topics."""
    return TOPICS.get(topic)
