"""`dump --decode`: internal-topic records as JSON, the way kafka-dump-log's decoders show them.

A record row gains `"decoded": {"key": ..., "value": ...}` (value None: tombstone), or
`{"error": reason}` when its bytes do not decode; a KRaft control record's `control` gains
`"data"` whatever the mode, as kafka-dump-log always prints it. Text output puts them where
and as Kafka 4's kafka-dump-log does (`key: {...} payload: {...}`, `SnapshotHeader {...}`,
`LeaderChange: {...}`), without the fields kafkalog adds to JSON. A record that does not
decode never stops the dump.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from kafkalog_cli.codec.internal import KIND_NAMES, TOPICS, kind_for_topic
from kafkalog_cli.errors import CorruptDataError

if TYPE_CHECKING:
    from kafkalog_cli.codec.internal.decoders import Decoder

# the decoders (and orjson) load when a record is decoded: a `dump` of other topics, most of
# them, never does
F = TypeVar("F", bound=Callable[..., Any])
CHOICES = ("auto", "none", *KIND_NAMES)
Row = dict[str, Any]


def decode_option(f: F) -> F:
    topics = ", ".join(f"{t} ({k})" for t, k in TOPICS.items())
    return click.option(
        "--decode", type=click.Choice(CHOICES), default="auto", show_default=True,
        help=f"Decode internal-topic records as JSON: auto picks by topic name ({topics}; "
             "KRaft .checkpoint files: metadata); a kind forces that decoder on every "
             "record and implies --print-data; none keeps the raw bytes.")(f)


class Decoding:
    """Which decoder a partition's records get, and applying it to record rows."""

    def __init__(self, mode: str, kafka_text: bool = False) -> None:
        self.mode = mode
        self.kafka_text = kafka_text  # rows for text output: kafka-dump-log's JSON only

    @property
    def forced(self) -> bool:
        return self.mode in KIND_NAMES

    def for_topic(self, topic: str, kraft_snapshot: bool = False) -> tuple[str, Decoder] | None:
        if self.mode == "none":
            return None
        kind = self.mode if self.forced else \
            "metadata" if kraft_snapshot else kind_for_topic(topic)
        if kind is None:
            return None
        from kafkalog_cli.codec.internal.decoders import KINDS

        return kind, KINDS[kind]

    def record(self, row: Row, decoder: tuple[str, Decoder], key: bytes | None,
               value: bytes | None) -> None:
        from kafkalog_cli.codec.internal.decoders import kafka_view

        kind, fn = decoder
        try:
            decoded = fn(key, value)
            row["decoded"] = kafka_view(kind, decoded) if self.kafka_text else decoded
        except CorruptDataError as e:
            row["decoded"] = {"kind": kind, "error": str(e.reason)}

    def control(self, row: Row, control_type: int, value: bytes | None) -> None:
        ctl = row.get("control")
        if not isinstance(ctl, dict) or "error" in ctl:
            return
        from kafkalog_cli.codec.internal.metadata import decode_control

        try:
            found = decode_control(control_type, value)
        except CorruptDataError as e:
            ctl["dataError"] = e.reason
            return
        if found is not None:
            ctl["label"], ctl["data"] = found


def _json(v: Any) -> str:
    import orjson

    return orjson.dumps(v).decode("utf-8")


def control_text(control: dict[str, Any]) -> str | None:
    """kafka-dump-log's ` SnapshotHeader {...}` part (` LeaderChange: {...}`, the one label
    it prints with a colon); None when there is no decoded data."""
    if "data" not in control:
        return None
    colon = ":" if control.get("type") == "LEADER_CHANGE" else ""
    return f" {control['label']}{colon} {_json(control['data'])}"


def data_text(decoded: dict[str, Any], offset: int) -> str:
    """The ` key: ... payload: ...` part of a decoded record's text line."""
    if "error" in decoded:
        if decoded.get("kind") == "metadata":
            return f" payload: Error at {offset}, skipping. {decoded['error']}"
        return f" key: Error at offset {offset}, skipping. {decoded['error']}"
    parts = []
    if decoded.get("key") is not None:
        parts.append(f" key: {_json(decoded['key'])}")
    value = decoded.get("value")
    parts.append(" payload: <DELETE>" if value is None else f" payload: {_json(value)}")
    return "".join(parts)
