"""Decoders for the records of Kafka's internal topics, as kafka-dump-log's decoders show them.

| kind           | topic                 | module       | kafka-dump-log option          |
|----------------|-----------------------|--------------|--------------------------------|
| `offsets`      | `__consumer_offsets`  | groups.py    | `--offsets-decoder`            |
| `transactions` | `__transaction_state` | txnlog.py    | `--transaction-log-decoder`    |
| `metadata`     | `__cluster_metadata`  | metadata.py  | `--cluster-metadata-decoder`   |

Each decoder takes a record's key and value bytes and returns `{"key": ..., "value": ...}`
(JSON-ready values; `value` None is a tombstone) or raises CorruptDataError
(UnknownRecordType for a key type with no schema). schema.py reads the generated-message
encoding all of them share.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kafkalog_cli.codec.internal import groups, metadata, txnlog

Decoder = Callable[[bytes | None, bytes | None], dict[str, Any]]

KINDS: dict[str, Decoder] = {
    "offsets": groups.decode,
    "transactions": txnlog.decode,
    "metadata": metadata.decode,
}
TOPICS: dict[str, str] = {
    "__consumer_offsets": "offsets",
    "__transaction_state": "transactions",
    "__cluster_metadata": "metadata",
}


def kind_for_topic(topic: str) -> str | None:
    """The decoder `--decode auto` picks for a topic, None for other topics."""
    return TOPICS.get(topic)
