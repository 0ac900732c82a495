"""One split in, Arrow record batches out (runs in Spark's Python workers; needs only pyarrow).

Records mode yields what a Kafka consumer sees: control batches are skipped (unless
includeControl), and under read_committed so are the transactional batches of aborted
transactions (Kafka's Fetcher: a transactional batch of producer P is dropped from the
aborted transaction's first offset up to P's ABORT marker). Batches mode yields one row
per batch header, never decoding v2 records, and one row per damaged byte range.

Damage: a torn, zero or garbage tail at the end of a file is what a crashed writer
leaves, and the broker truncates it at start-up, so it ends the read quietly. Anything else
(mid-file corruption, a CRC mismatch with verifyCrc, records that do not decode) fails the
task unless failOnDataLoss is false; then the scan resyncs past it and goes on.
Every column is built to the declared Arrow schema exactly (Spark rejects any other).

Columns are filled by the compiled RecordColumns (v2 records straight into Arrow buffers,
about 8x the pure builder) when it is built, else by _Records, the pure-Python builder it is
tested equal to (tests/spark/test_rows.py); KAFKALOG_PURE=1 forces the pure one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from itertools import accumulate
from operator import attrgetter

import pyarrow as pa

from kafkalog_cli import _speedups
from kafkalog_cli.codec import compression
from kafkalog_cli.codec.batch_v2 import RecordBatch
from kafkalog_cli.codec.entry import Batch
from kafkalog_cli.codec.model import Damage
from kafkalog_cli.errors import CorruptBatch, CorruptDataError
from kafkalog_cli.spark.plan import Split
from kafkalog_cli.storage.disk import fs
from kafkalog_cli.storage.disk.segment import iter_batches

TAIL_DAMAGE = ("torn-tail", "zero-tail", "garbage-tail")
MAX_ROWS = 16_384  # rows per Arrow batch
MAX_BYTES = 16 << 20  # or about this many batch bytes (or payload bytes), whichever first

# the compiled column builder (kafkalog_cli/_speedups/fastcodec.pyx); KAFKALOG_PURE=1: none
_RecordColumns = getattr(_speedups.compiled("fastcodec"), "RecordColumns", None)
COMPILED = _RecordColumns is not None

_key, _value, _offset, _ts = (attrgetter(n) for n in ("key", "value", "offset", "timestamp"))
_seq, _headers = attrgetter("sequence"), attrgetter("headers")


class DataLoss(CorruptDataError):
    """Damaged data in a read with failOnDataLoss=true."""


def _fail(split: Split, pos: int, reason: str) -> DataLoss:
    return DataLoss(f"{reason} (read with failOnDataLoss=false to skip damaged data)",
                    split.log_path, pos)


def _batches(split: Split, fail: bool) -> Iterator[tuple[int, Batch]]:
    """(position, batch) in the split's byte range, handling damage as the module says."""

    def on_damage(d: Damage) -> None:
        if d.code in TAIL_DAMAGE and split.end is None:
            return  # the broker's recovery truncates a tail; no consumer ever saw it
        if fail:
            raise _fail(split, d.position, f"{d.reason} [{d.code}]")

    yield from iter_batches(fs.as_path(split.log_path), split.start, split.end, on_damage,
                            resync=not fail)


I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1
OFFSET_OVERFLOW = "record offset does not fit a long"  # (the compiled twin says the same)
_US_LIMIT = I64_MAX // 1000  # epoch ms beyond this has no microsecond timestamp: null


class _Records:
    """Column lists for one Arrow batch of records: the pure-Python way, and the
    specification _CompiledRecords is tested against (tests/spark/test_rows.py)."""

    def __init__(self, headers: bool) -> None:
        self.headers = headers
        self.keys: list[bytes | None] = []
        self.values: list[bytes | None] = []
        self.offsets: list[int] = []
        self.timestamps: list[int] = []
        self.sequences: list[int] = []
        self.hcounts: list[int] = []
        self.hkeys: list[str] = []
        self.hvalues: list[bytes | None] = []
        # per-batch values, repeated per record
        self.tstypes: list[int] = []
        self.epochs: list[int | None] = []
        self.pids: list[int] = []
        self.pepochs: list[int] = []
        self.txn: list[bool] = []
        self.bases: list[int] = []
        self.positions: list[int] = []

    def __len__(self) -> int:
        return len(self.offsets)

    full = False  # pyarrow builds any size: rows and batch bytes decide the flush

    def add_batch(self, pos: int, b: Batch, lo: int | None, until: int | None) -> None:
        """b's records with lo <= offset < until; CorruptDataError leaves the columns as
        they were."""
        recs = list(b.records())  # the columns take a batch whole or not at all
        if lo is not None or until is not None:  # record by record: offsets may be unordered
            recs = [r for r in recs if (lo is None or r.offset >= lo) and
                    (until is None or r.offset < until)]
        if not recs:
            return
        offsets = list(map(_offset, recs))
        if max(offsets) > I64_MAX or min(offsets) < I64_MIN:
            raise CorruptBatch(OFFSET_OVERFLOW)
        n = len(recs)
        self.offsets += offsets
        self.keys += map(_key, recs)
        self.values += map(_value, recs)
        self.timestamps += map(_ts, recs)
        self.sequences += map(_seq, recs)
        if self.headers:
            hs = list(map(_headers, recs))
            self.hcounts += map(len, hs)
            for h in hs:
                if h:
                    for k, v in h:
                        self.hkeys.append(k)
                        self.hvalues.append(v)
        epoch = b.partition_leader_epoch
        self.tstypes += [b.timestamp_type] * n
        self.epochs += [epoch if epoch >= 0 else None] * n
        self.pids += [b.producer_id] * n
        self.pepochs += [b.producer_epoch] * n
        self.txn += [b.is_transactional] * n
        self.bases += [b.base_offset] * n
        self.positions += [pos] * n

    def to_arrow(self, schema: pa.Schema, split: Split) -> pa.RecordBatch:
        cols = {
            "key": lambda t: pa.array(self.keys, t),
            "value": lambda t: pa.array(self.values, t),
            "offset": lambda t: pa.array(self.offsets, t),
            "timestamp": lambda t: _timestamps(self.timestamps, t),
            "timestampType": lambda t: pa.array(self.tstypes, t),
            "headers": lambda t: _headers_array(self.hcounts, self.hkeys, self.hvalues, t),
            "leaderEpoch": lambda t: pa.array(self.epochs, t),
            "producerId": lambda t: pa.array(self.pids, t),
            "producerEpoch": lambda t: pa.array(self.pepochs, t),
            "sequence": lambda t: pa.array(self.sequences, t),
            "isTransactional": lambda t: pa.array(self.txn, t),
            "batchBaseOffset": lambda t: pa.array(self.bases, t),
            "position": lambda t: pa.array(self.positions, t),
        }
        return _record_batch(schema, split, len(self.offsets), cols)


class _CompiledRecords:
    """The same columns filled by the compiled decoder (_speedups.fastcodec.RecordColumns):
    v2 records go from the records section into Arrow buffers with no object per record."""

    def __init__(self) -> None:
        assert _RecordColumns is not None
        self.cols = _RecordColumns()  # it always gathers headers; to_arrow takes what is asked

    def __len__(self) -> int:
        return int(self.cols.rows)

    def add_batch(self, pos: int, b: Batch, lo: int | None, until: int | None) -> None:
        # a negative leader epoch (none recorded) becomes null, as in _Records
        fields = (b.timestamp_type, b.partition_leader_epoch, b.producer_id, b.producer_epoch,
                  b.is_transactional)
        if isinstance(b, RecordBatch):
            data, lat = b.records_section()
            self.cols.add_v2(data, b.count, b.base_offset, b.base_timestamp, b.base_sequence,
                             lat, lo, until, *fields, pos)
        else:
            self.cols.add_records(list(b.records()), lo, until, *fields, b.base_offset, pos)

    @property
    def full(self) -> bool:
        """Payload enough for one Arrow batch (past 2 GiB, add_batch raises CorruptBatch)."""
        return bool(self.cols.data_bytes >= MAX_BYTES)

    def to_arrow(self, schema: pa.Schema, split: Split) -> pa.RecordBatch:
        buf, n, nh = self.cols.take()

        def binary(name: str, t: pa.DataType, rows: int) -> pa.Array:
            return pa.Array.from_buffers(t, rows, [_buf(buf[f"{name}_valid"]),
                                                   pa.py_buffer(buf[f"{name}_offsets"]),
                                                   pa.py_buffer(buf[f"{name}_data"])])

        def fixed(name: str, t: pa.DataType, valid: str | None = None) -> pa.Array:
            return pa.Array.from_buffers(t, n, [_buf(buf[valid]) if valid else None,
                                                pa.py_buffer(buf[name])])

        def headers(t: pa.DataType) -> pa.Array:
            item = t.value_type
            hkey = pa.Array.from_buffers(item.field(0).type, nh, [
                None, pa.py_buffer(buf["hkey_offsets"]), pa.py_buffer(buf["hkey_data"])])
            struct = pa.StructArray.from_arrays(
                [hkey, binary("hvalue", item.field(1).type, nh)], fields=list(item))
            return pa.ListArray.from_arrays(
                pa.Array.from_buffers(pa.int32(), n + 1, [None,
                                                          pa.py_buffer(buf["headers_offsets"])]),
                struct, type=t)

        cols = {
            "key": lambda t: binary("key", t, n),
            "value": lambda t: binary("value", t, n),
            "offset": lambda t: fixed("offset", t),
            "timestamp": lambda t: fixed("timestamp", t, "timestamp_valid"),
            "timestampType": lambda t: fixed("timestampType", t),
            "headers": headers,
            "leaderEpoch": lambda t: fixed("leaderEpoch", t, "leaderEpoch_valid"),
            "producerId": lambda t: fixed("producerId", t),
            "producerEpoch": lambda t: fixed("producerEpoch", t),
            "sequence": lambda t: fixed("sequence", t),
            "isTransactional": lambda t: fixed("isTransactional", t),
            "batchBaseOffset": lambda t: fixed("batchBaseOffset", t),
            "position": lambda t: fixed("position", t),
        }
        return _record_batch(schema, split, n, cols)


def _buf(b: bytes | None) -> pa.Buffer | None:
    return None if b is None else pa.py_buffer(b)


def _record_batch(schema: pa.Schema, split: Split, n: int,
                  cols: dict[str, Callable[[pa.DataType], pa.Array]]) -> pa.RecordBatch:
    """The columns in the declared schema's order; the split's own values repeated."""
    same = {"topic": split.topic, "partition": split.partition, "segment": split.log_path}
    return pa.RecordBatch.from_arrays(
        [pa.repeat(pa.scalar(same[f.name], f.type), n) if f.name in same else
         cols[f.name](f.type) for f in schema], schema=schema)


def _timestamps(ms: list[int], t: pa.DataType) -> pa.Array:
    """Kafka's epoch milliseconds as Spark's microsecond timestamps (-1 stays -1 ms, as a
    consumer's ConsumerRecord.timestamp() -> java.sql.Timestamp gives; null when there is no
    such microsecond value)."""
    if ms and (min(ms) < -_US_LIMIT or max(ms) > _US_LIMIT):
        return pa.array([v * 1000 if -_US_LIMIT <= v <= _US_LIMIT else None for v in ms], t)
    return pa.array(ms, pa.int64()).cast(pa.timestamp("ms", tz=t.tz)).cast(t)


def _headers_array(counts: list[int], keys: list[str], values: list[bytes | None],
                   t: pa.DataType) -> pa.Array:
    item = t.value_type
    struct = pa.StructArray.from_arrays(
        [pa.array(keys, item.field(0).type), pa.array(values, item.field(1).type)],
        fields=list(item))
    offsets = pa.array(list(accumulate(counts, initial=0)), pa.int32())
    return pa.ListArray.from_arrays(offsets, struct, type=t)


def _columns(headers: bool) -> _Records | _CompiledRecords:
    return _CompiledRecords() if COMPILED else _Records(headers)


def _aborted_by_producer(split: Split) -> dict[int, list[tuple[int, int]]]:
    out: dict[int, list[tuple[int, int]]] = {}
    for pid, first, marker in split.aborted:
        out.setdefault(pid, []).append((first, marker))
    return out


def read_records(split: Split, schema: pa.Schema, *, verify_crc: bool, fail: bool,
                 include_control: bool) -> Iterator[pa.RecordBatch]:
    lo, until, min_ts = split.from_offset, split.until_offset, split.min_timestamp_ms
    aborted = _aborted_by_producer(split)
    headers = "headers" in schema.names
    cols = _columns(headers)
    pending = 0  # batch bytes in `cols`
    for pos, b in _batches(split, fail):
        v2 = b.magic == 2
        if until is not None and v2 and b.base_offset >= until:
            break
        if lo is not None and b.last_offset < lo:
            continue
        if b.is_control and not include_control:
            continue
        if min_ts is not None and v2 and b.max_timestamp < min_ts:
            continue
        if verify_crc and not b.is_valid():
            if fail:
                raise _fail(split, pos, f"batch CRC mismatch (stored {b.crc}, computed "
                                        f"{b.compute_crc()})")
            continue
        if aborted and b.is_transactional and not b.is_control:
            spans = aborted.get(b.producer_id)
            if spans and any(first <= b.last_offset and b.base_offset <= marker
                             for first, marker in spans):
                continue
        try:
            cols.add_batch(pos, b, lo, until)
        except CorruptDataError as e:
            if fail:
                raise _fail(split, pos, f"records do not decode: {e.reason}") from None
            continue
        pending += b.size
        if len(cols) >= MAX_ROWS or pending >= MAX_BYTES or cols.full:
            yield cols.to_arrow(schema, split)
            cols, pending = _columns(headers), 0
    if len(cols):
        yield cols.to_arrow(schema, split)


BATCH_FIELDS = ("topic", "partition", "segment", "position", "size", "magic", "baseOffset",
                "lastOffset", "count", "compression", "timestampType", "maxTimestamp",
                "producerId", "producerEpoch", "baseSequence", "lastSequence",
                "partitionLeaderEpoch", "isTransactional", "isControl", "crc", "crcValid",
                "damage")


def _batch_row(split: Split, pos: int, b: Batch, verify_crc: bool) -> tuple:  # type: ignore[type-arg]
    return (split.topic, split.partition, split.log_path, pos, b.size, b.magic, b.base_offset,
            b.last_offset, b.count, compression.name(b.compression), b.timestamp_type,
            b.max_timestamp, b.producer_id, b.producer_epoch, b.base_sequence, b.last_sequence,
            b.partition_leader_epoch, b.is_transactional, b.is_control, b.crc,
            b.is_valid() if verify_crc else None, None)


def _damage_row(split: Split, d: Damage) -> tuple:  # type: ignore[type-arg]
    return (split.topic, split.partition, split.log_path, d.position, d.size or None,
            *([None] * 15), None, f"{d.code}: {d.reason}")


def read_batches(split: Split, schema: pa.Schema, *,
                 verify_crc: bool) -> Iterator[pa.RecordBatch]:
    """One row per batch (and per damage report) in the split, for statistics and checks."""
    lo, until = split.from_offset, split.until_offset
    rows: list[tuple] = []  # type: ignore[type-arg]
    damages: list[Damage] = []

    def on_damage(d: Damage) -> None:
        damages.append(d)

    def flush() -> pa.RecordBatch:
        cols = list(zip(*rows, strict=True)) if rows else [()] * len(BATCH_FIELDS)
        return pa.RecordBatch.from_arrays([pa.array(list(c), f.type) for c, f in
                                           zip(cols, schema, strict=True)], schema=schema)

    for pos, b in iter_batches(fs.as_path(split.log_path), split.start, split.end, on_damage,
                               resync=True):
        rows.extend(_damage_row(split, d) for d in damages)
        damages.clear()
        if until is not None and b.magic == 2 and b.base_offset >= until:
            break
        if lo is not None and b.last_offset < lo:
            continue
        try:
            rows.append(_batch_row(split, pos, b, verify_crc))
        except CorruptDataError as e:  # a legacy wrapper whose inner set does not inflate
            rows.append(_damage_row(split, Damage(pos, "bad-batch", e.reason, b.size)))
        if len(rows) >= MAX_ROWS:
            yield flush()
            rows = []
    rows.extend(_damage_row(split, d) for d in damages)
    if rows:
        yield flush()
