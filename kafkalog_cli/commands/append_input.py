"""append's input: JSON Lines or plain lines, each record checked against the Kafka fields it
becomes, so that a first pass over the input finds every bad record before anything is written.

JSON Lines: one object per line, `{"key": s|null, "value": s|null, "timestamp": ms|null,
"headers": [{"key": s, "value": s|null}, ...]}`; other members are ignored. Lines: each line
is a value, or `key<separator>value`. Keys and values are UTF-8 text or base64 (--payload).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator
from typing import IO, Any

import orjson

from kafkalog_cli.codec.layout import INT32_MAX, INT64_MAX, V2_HEADER_SIZE
from kafkalog_cli.commands import options
from kafkalog_cli.errors import UsageError

# timestamp, key, value, headers
Rec = tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]

TIMESTAMP = options.Int64(min=-1)  # CreateTime epoch ms; -1 is NO_TIMESTAMP
# a record's own varints at their widest: length, attributes, timestamp and offset deltas, key
# and value lengths, header count (DefaultRecord); then a key and a value length per header
RECORD_OVERHEAD = 5 + 1 + 10 + 5 + 5 + 5 + 5
HEADER_OVERHEAD = 5 + 5


def record_size(r: Rec) -> int:
    """At least the bytes `r` takes in a v2 batch (its payload plus the widest varints)."""
    return (RECORD_OVERHEAD + len(r[1] or b"") + len(r[2] or b"")
            + sum(HEADER_OVERHEAD + len(k.encode()) + len(v or b"") for k, v in r[3]))


def _payload(value: str | bytes, payload: str, where: str) -> bytes:
    if payload == "base64":
        try:
            return base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise UsageError(f"{where}: not valid base64") from None
    return value if isinstance(value, bytes) else value.encode("utf-8")


def _nullable(value: Any, payload: str, where: str) -> bytes | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise UsageError(f"{where}: expected a string or null, found {type(value).__name__}")
    return _payload(value, payload, where)


def _headers(value: Any, payload: str, where: str) -> list[tuple[str, bytes | None]]:
    if value is None:
        return []
    shape = f'{where}: headers: expected [{{"key": string, "value": string or null}}, ...]'
    if not isinstance(value, list):
        raise UsageError(shape)
    out = []
    for h in value:
        if not isinstance(h, dict) or not isinstance(h.get("key"), str):
            raise UsageError(shape)
        out.append((h["key"], _nullable(h.get("value"), payload, f"{where}: header value")))
    return out


def _json_record(line: bytes, payload: str, now_ms: int, where: str) -> Rec | None:
    if not line.strip():
        return None
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError as e:
        raise UsageError(f"{where}: not valid JSON ({e})") from None
    if not isinstance(obj, dict):
        raise UsageError(f"{where}: expected a JSON object")
    ts = obj.get("timestamp")
    if ts is None:
        ts = now_ms
    why = TIMESTAMP.error(ts)
    if why is not None:
        raise UsageError(f"{where}: timestamp: {why}")
    return (ts, _nullable(obj.get("key"), payload, f"{where}: key"),
            _nullable(obj.get("value"), payload, f"{where}: value"),
            _headers(obj.get("headers"), payload, where))


def _line_record(line: bytes, payload: str, separator: bytes | None, now_ms: int,
                 where: str) -> Rec:
    # the bytes as they are: a line need not be valid UTF-8
    if separator is not None and separator in line:
        k, v = line.split(separator, 1)
        return now_ms, _payload(k, payload, where), _payload(v, payload, where), []
    return now_ms, None, _payload(line, payload, where), []


def read_records(f: IO[bytes], name: str, fmt: str, payload: str, separator: bytes | None,
                 now_ms: int, *, headers: bool = True) -> Iterator[Rec]:
    """Each record of `f`; UsageError naming `name:line` at the first that Kafka cannot
    store (`headers=False`: the message format has no headers)."""
    for n, line in enumerate(f, start=1):
        where = f"{name}:{n}"
        line = line.rstrip(b"\r\n")
        r = _line_record(line, payload, separator, now_ms, where) if fmt == "lines" else \
            _json_record(line, payload, now_ms, where)
        if r is None:
            continue
        if r[3] and not headers:
            raise UsageError(f"{where}: headers: magic 0 and 1 messages have no headers")
        if record_size(r) > INT32_MAX - V2_HEADER_SIZE:
            raise UsageError(f"{where}: the record may take {record_size(r)} bytes; a batch "
                             f"holds at most {INT32_MAX - V2_HEADER_SIZE} (INT32 length)")
        yield r


def batches(recs: Iterator[Rec], max_records: int, max_bytes: int) -> Iterator[list[Rec]]:
    """Group records as a producer does (batch.size, a record count cap). A record whose
    timestamp delta from the batch's first would not fit the INT64 varlong starts a batch."""
    batch: list[Rec] = []
    size = 0
    for r in recs:
        rsize = 20 + len(r[1] or b"") + len(r[2] or b"") + sum(len(k) + len(v or b"")
                                                              for k, v in r[3])
        if batch and (len(batch) >= max_records or size + rsize > max_bytes
                      or r[0] - batch[0][0] > INT64_MAX):
            yield batch
            batch, size = [], 0
        batch.append(r)
        size += rsize
    if batch:
        yield batch
