"""Records of Kafka's coordinators (CoordinatorRecordSerde): `__consumer_offsets` (groups.py),
`__share_group_state` (share.py) and `__transaction_state` (txnlog.py).

Key   : record type int16 | key message (non-flexible, read at version 0)
Value : version int16 | value message at that version; a null value is a tombstone

The record type is the `apiKey` of the key and value specs (`coordinator-key`/`-value`).
Output follows kafka-dump-log: key `{"type": "<record type>", "data": {...}}`, value
`{"version": "<value version>", "data": {...}}` or None for a tombstone. Trailing bytes are
not checked, as the coordinators do not.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kafkalog_cli.codec.internal.schema import (
    Message,
    UnknownRecordType,
    jsonable,
    read_message,
    read_version,
)
from kafkalog_cli.errors import CorruptDataError

KEY_READ_VERSION = 0
# (record type, value data) -> the value data to show (post-processing of one topic's values)
Refine = Callable[[int, dict[str, Any]], dict[str, Any]]


class Coordinator:
    """The record types of one coordinator topic and how their keys and values decode."""

    def __init__(self, topic: str, *types: tuple[Message, Message],
                 refine: Refine | None = None) -> None:
        self.topic = topic
        self.types: dict[int, tuple[Message, Message]] = {}
        for key, value in types:
            if key.api_key is None or key.api_key != value.api_key:
                raise ValueError(f"{key.name} and {value.name}: record types differ")
            self.types[key.api_key] = (key, value)
        self.refine = refine

    @property
    def messages(self) -> tuple[Message, ...]:
        return tuple(m for pair in self.types.values() for m in pair)

    def decode(self, key: bytes | None, value: bytes | None) -> dict[str, Any]:
        """`{"key": ..., "value": ...}` for one record of the topic."""
        if key is None:
            raise CorruptDataError(f"{self.topic} record has no key")
        record_type = read_version(key, f"{self.topic} key")
        pair = self.types.get(record_type)
        if pair is None:
            raise UnknownRecordType(f"Unknown record type {record_type}", pos=0)
        kdata, _ = read_message(key, pair[0], KEY_READ_VERSION, pos=2)
        out: dict[str, Any] = {"key": {"type": str(record_type), "data": jsonable(kdata)},
                               "value": None}
        if value is None:
            return out
        version = read_version(value, f"{self.topic} value")
        vdata, _ = read_message(value, pair[1], version, pos=2)
        if self.refine is not None:
            vdata = self.refine(record_type, vdata)
        out["value"] = {"version": str(version), "data": jsonable(vdata)}
        return out
