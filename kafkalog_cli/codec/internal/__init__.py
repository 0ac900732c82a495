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

The package itself holds only the names (`dump`'s options need them, not the decoders: loading
those was ~10 ms of every `dump`'s start-up); decoders.py holds the decoders by kind.

The schemas are our own data, written from Kafka's message specs (`*.json` in the
group-, share- and transaction-coordinator, metadata and clients jars); SPECS lists them by
spec name and the conformance tests compare them with the specs of the pinned Kafka.
"""

from __future__ import annotations

KIND_NAMES = ("offsets", "transactions", "share", "metadata")  # decoders.KINDS' keys
TOPICS: dict[str, str] = {
    "__consumer_offsets": "offsets",
    "__transaction_state": "transactions",
    "__share_group_state": "share",
    "__cluster_metadata": "metadata",
}


def kind_for_topic(topic: str) -> str | None:
    """The decoder `--decode auto` picks for a topic, None for other topics."""
    return TOPICS.get(topic)
