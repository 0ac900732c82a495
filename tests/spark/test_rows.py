"""The Spark reader's compiled column builder against its pure-Python twin.

`rows._Records` (records decoded to objects, columns built with pyarrow) is the
specification; `rows._CompiledRecords` (kafkalog_cli/_speedups/fastcodec.pyx RecordColumns,
records section straight into Arrow buffers) must give equal Arrow batches, or fail the same
batch with the same reason and leave the columns as they were. No Spark session needed.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pa = pytest.importorskip("pyarrow")
pytest.importorskip("pyspark")

from pyspark.sql.pandas.types import to_arrow_schema  # noqa: E402

from kafkalog_cli.codec import compression as codecs  # noqa: E402
from kafkalog_cli.codec.batch_v2 import RecordBatch, encode_batch, encode_record  # noqa: E402
from kafkalog_cli.codec.entry import split_entries  # noqa: E402
from kafkalog_cli.codec.layout import (  # noqa: E402
    ATTR_TIMESTAMP_TYPE,
    ATTR_TRANSACTIONAL,
    LOG_OVERHEAD_SIZE,
    V2_HEADER,
    V2_HEADER_SIZE,
)
from kafkalog_cli.codec.message_v01 import encode_message_set  # noqa: E402
from kafkalog_cli.errors import CorruptDataError  # noqa: E402
from kafkalog_cli.spark import options as opt  # noqa: E402
from kafkalog_cli.spark import rows  # noqa: E402
from kafkalog_cli.spark.datasource import records_schema  # noqa: E402
from kafkalog_cli.spark.plan import Pruning, Split, plan  # noqa: E402
from tests.conftest import CORPUS, FIXTURE  # noqa: E402

pytestmark = pytest.mark.skipif(rows._RecordColumns is None,
                                reason="compiled fastcodec not built (tests/codec/"
                                       "test_fastcodec.py::test_extension_is_built reports it)")

SCHEMA = to_arrow_schema(records_schema(True), timezone="UTC")
SCHEMA_NO_HEADERS = to_arrow_schema(records_schema(False), timezone="UTC")
SPLIT = Split("orders", 3, "/data/orders-3/00000000000000000000.log", 0, 0, None)
INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)
CASES = settings(max_examples=int(os.environ.get("KAFKALOG_HYPOTHESIS_EXAMPLES", "250")),
                 deadline=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _fill(cls, batches, lo, until, schema):
    cols = cls("headers" in schema.names) if cls is rows._Records else cls()
    errors = []
    for pos, b in batches:
        try:
            cols.add_batch(pos, b, lo, until)
        except CorruptDataError as e:
            errors.append((pos, e.reason))
    return cols.to_arrow(schema, SPLIT), errors


def _same(batches, lo=None, until=None, schema=SCHEMA):
    """Both builders on the same batches: equal rows, equal failures. Returns them."""
    want, want_errors = _fill(rows._Records, batches, lo, until, schema)
    got, got_errors = _fill(rows._CompiledRecords, batches, lo, until, schema)
    assert got_errors == want_errors
    got.validate(full=True)
    assert got.schema == want.schema == schema
    for name in schema.names:  # column by column, for a readable failure
        assert got.column(name).equals(want.column(name)), name
    assert got.equals(want)
    return want, want_errors


def v2(section: bytes, count: int, *, base_offset=0, base_timestamp=0, max_timestamp=0,
       log_append_time=False, transactional=False, producer_id=-1, producer_epoch=-1,
       base_sequence=-1, leader_epoch=-1) -> RecordBatch:
    """A v2 batch around any records section (the CRC is not checked here)."""
    attributes = (ATTR_TIMESTAMP_TYPE if log_append_time else 0) | \
        (ATTR_TRANSACTIONAL if transactional else 0)
    length = V2_HEADER_SIZE - LOG_OVERHEAD_SIZE + len(section)
    header = V2_HEADER.pack(base_offset, length, leader_epoch, 2, 0, attributes,
                            max(count - 1, 0), base_timestamp, max_timestamp, producer_id,
                            producer_epoch, base_sequence, count)
    return RecordBatch(header + section)


# -- strategies ---------------------------------------------------------------------------

blobs = st.one_of(st.none(), st.binary(max_size=24))
header_lists = st.lists(st.tuples(st.text(max_size=6),
                                  st.one_of(st.none(), st.binary(max_size=8))), max_size=3)
records = st.lists(st.tuples(st.integers(0, 40), st.integers(-5000, 5000), blobs, blobs,
                             st.one_of(st.just([]), header_lists)), max_size=6)


@st.composite
def sections(draw):
    """A records section and its count: well-formed, or damaged a little."""
    recs = draw(records)
    data = bytearray(b"".join(encode_record(*r) for r in recs))
    count = len(recs)
    if data and draw(st.integers(0, 3)) == 0:
        pos = draw(st.integers(0, len(data) - 1))
        op = draw(st.sampled_from(("flip", "cut", "insert")))
        if op == "flip":
            data[pos] ^= 1 << draw(st.integers(0, 7))
        elif op == "cut":
            del data[pos:]
        else:
            data[pos:pos] = draw(st.binary(min_size=1, max_size=3))
        count = draw(st.integers(max(count - 1, 0), count + 1))
    return bytes(data), count


@st.composite
def batch_lists(draw):
    out, pos = [], 0
    for _ in range(draw(st.integers(1, 4))):
        data, count = draw(sections())
        b = v2(data, count,
               base_offset=draw(st.one_of(st.integers(0, 200), st.integers(*INT64))),
               base_timestamp=draw(st.one_of(st.integers(-1, 2**41), st.integers(*INT64))),
               max_timestamp=draw(st.one_of(st.integers(-1, 2**41), st.integers(*INT64))),
               log_append_time=draw(st.booleans()), transactional=draw(st.booleans()),
               producer_id=draw(st.integers(-1, 2**40)),
               producer_epoch=draw(st.integers(-1, 2**15 - 1)),
               base_sequence=draw(st.one_of(st.just(-1), st.integers(0, 100),
                                            st.integers(2**31 - 20, 2**31 - 1))),
               leader_epoch=draw(st.integers(-1, 50)))
        out.append((pos, b))
        pos += b.size
    return out


bounds = st.one_of(st.none(), st.integers(0, 250), st.integers(*INT64))


# -- tests --------------------------------------------------------------------------------

@CASES
@given(batch_lists(), bounds, bounds, st.booleans())
def test_random_v2_batches(batches, lo, until, headers):
    _same(batches, lo, until, SCHEMA if headers else SCHEMA_NO_HEADERS)


@pytest.mark.parametrize("codec", [codecs.NONE, codecs.GZIP, codecs.SNAPPY, codecs.LZ4,
                                   codecs.ZSTD])
def test_compressed_batches(codec):
    recs = [(100 + i, 1_700_000_000_000 + i, None if i % 5 == 0 else b"k%d" % i,
             None if i % 7 == 0 else b"v" * i, [("h", b"x"), ("é", None)] if i % 3 else [])
            for i in range(50)]
    b = RecordBatch(encode_batch(recs, codec=codec, producer_id=9, producer_epoch=1,
                                 base_sequence=2**31 - 10, partition_leader_epoch=4))
    table, errors = _same([(0, b)], lo=110, until=140)
    assert errors == [] and [r["offset"] for r in table.to_pylist()] == list(range(110, 140))


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", [codecs.NONE, codecs.GZIP])
def test_legacy_message_sets(magic, codec):
    recs = [(i, 1_600_000_000_000 + i, None if i % 4 == 0 else b"key", b"value%d" % i)
            for i in range(20)]
    data = encode_message_set(recs, magic=magic, codec=codec)
    batches, pos = [], 0
    for b in split_entries(data):
        batches.append((pos, b))
        pos += b.size
    table, errors = _same(batches, lo=3, until=None)
    assert errors == [] and len(table) == 17


def test_a_failing_batch_leaves_no_rows_behind():
    good = encode_record(0, 0, b"k", b"v", [("h", b"1")])
    bad = v2(good * 2 + b"\x7e", 3, base_offset=10)  # third record's length runs past
    batches = [(0, v2(good, 1, base_offset=0)), (100, bad), (200, v2(good, 1, base_offset=20))]
    table, errors = _same(batches)
    assert [r["offset"] for r in table.to_pylist()] == [0, 20]
    assert errors == [(100, "record length 63 runs past the records section")]


def test_extreme_values():
    rec = encode_record(0, 0, b"k", b"v")
    cases = [
        (0, v2(rec, 1, base_timestamp=2**62)),                       # no µs value: null
        (1, v2(rec, 1, base_timestamp=-(2**62))),
        (2, v2(rec, 1, max_timestamp=2**63 - 1, log_append_time=True)),
        (3, v2(rec, 1, base_timestamp=-1)),                          # -1 ms stays -1 ms
        (4, v2(encode_record(5, 0, None, None), 1, base_offset=2**63 - 3)),  # offset overflow
        (5, v2(encode_record(3, 0, None, None), 1, base_sequence=2**31 - 2)),  # wraps to 1
    ]
    table, errors = _same(cases)
    got = table.to_pylist()
    assert [r["timestamp"] for r in got[:3]] == [None, None, None]
    assert got[3]["timestamp"].timestamp() == -0.001
    assert got[4]["sequence"] == 1
    assert errors == [(4, rows.OFFSET_OVERFLOW)]


def _read_all(path, monkeypatch, compiled, include_headers="true"):
    monkeypatch.setattr(rows, "COMPILED", compiled)
    o = opt.parse({"path": str(path), "includeHeaders": include_headers})
    schema = to_arrow_schema(records_schema(o.include_headers), timezone="UTC")
    batches = [b for s in plan(o, Pruning()).splits
               for b in rows.read_records(s, schema, verify_crc=True, fail=False,
                                          include_control=False)]
    return pa.Table.from_batches(batches, schema=schema)


@pytest.mark.parametrize("where", ["fixtures", "corpus"])
def test_real_log_dirs(where, monkeypatch):
    path = {"fixtures": FIXTURE, "corpus": CORPUS}[where]
    want = _read_all(path, monkeypatch, compiled=False)
    got = _read_all(path, monkeypatch, compiled=True)
    assert len(want) > 1000
    assert got.equals(want)
