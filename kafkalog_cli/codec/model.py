"""Values the codec hands out: records, headers, damage reports."""

from __future__ import annotations

from dataclasses import dataclass

# (key, value); Kafka forbids a null header key, a null header value is legal
Header = tuple[str, bytes | None]


class Record:
    """One record (v2) or message (v0/v1), decoded.

    The compiled decoder hands records out untracked by CPython's cyclic GC (a batch keeps
    hundreds alive at once, and collecting them costs as much as decoding them): a cycle a
    caller builds through a record, such as `r.headers.append(r)`, is never collected.
    `kafkalog_cli._speedups.fastcodec.set_untracked_records(False)` turns this off.
    """

    __slots__ = ("attributes", "crc", "headers", "key", "offset", "sequence", "timestamp",
                 "value")

    def __init__(self, offset: int, timestamp: int, key: bytes | None, value: bytes | None,
                 headers: list[Header], sequence: int = -1, attributes: int = 0,
                 crc: int | None = None) -> None:
        self.offset = offset
        self.timestamp = timestamp
        self.key = key
        self.value = value
        self.headers = headers
        self.sequence = sequence
        self.attributes = attributes
        self.crc = crc  # legacy messages carry their own CRC

    def __repr__(self) -> str:
        return (f"Record(offset={self.offset}, timestamp={self.timestamp}, key={self.key!r}, "
                f"value={self.value!r}, headers={self.headers!r})")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Record):
            return NotImplemented
        return (self.offset, self.timestamp, self.key, self.value, self.headers) == (
            other.offset, other.timestamp, other.key, other.value, other.headers)

    __hash__ = None  # type: ignore[assignment]  # mutable, so unhashable (mypy wants a callable)


@dataclass(frozen=True, slots=True)
class Damage:
    """Bytes a scanner could not accept: where, how many, and why (LevelDB's Reporter idea)."""

    position: int
    code: str
    reason: str
    size: int = 0  # bytes affected, when known
