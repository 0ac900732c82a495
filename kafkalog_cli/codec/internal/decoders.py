"""The internal-topic decoders by kind (the package's docstring says what each reads)."""

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
