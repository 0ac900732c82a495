"""Cross-checks with kafka-python's `kafka.record`, an independent implementation.

What it builds (every magic and codec, headers, nulls) we decode identically; what we
build it decodes identically.
"""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from kafkalog_cli.codec.batch_v2 import encode_batch
from kafkalog_cli.codec.entry import split_entries
from kafkalog_cli.codec.message_v01 import encode_message_set

blobs = st.one_of(st.none(), st.binary(max_size=300))
header = st.tuples(st.text(min_size=0, max_size=10), st.one_of(st.none(), st.binary(max_size=20)))
v2_record = st.tuples(st.integers(0, 2**40), blobs, blobs, st.lists(header, max_size=3))
legacy_record = st.tuples(st.integers(0, 2**40), st.one_of(st.none(), st.binary(max_size=200)),
                          st.binary(max_size=300))


def kafka_python_records(data: bytes) -> list[tuple]:
    mr = MemoryRecords(data)
    out = []
    while True:
        b = mr.next_batch()
        if b is None:
            return out
        for r in b:
            out.append((r.offset, r.timestamp, r.key, r.value,
                        [tuple(h) for h in getattr(r, "headers", [])]))


def ours(data: bytes) -> list[tuple]:
    out = []
    for b in split_entries(data):
        assert b.is_valid()
        out += [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in b.records()]
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=st.lists(v2_record, min_size=1, max_size=20), codec=st.sampled_from([0, 1, 2, 3, 4]),
       base=st.integers(0, 2**40), pid=st.integers(-1, 2**40), transactional=st.booleans())
def test_v2_built_by_kafka_python_decodes_identically(records, codec, base, pid, transactional):
    b = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=transactional,
                                  producer_id=pid, producer_epoch=3 if pid >= 0 else -1,
                                  base_sequence=7 if pid >= 0 else -1, batch_size=1 << 24)
    for i, (ts, k, v, h) in enumerate(records):
        if k is None and v is None:
            v = b""
        b.append(i, timestamp=ts, key=k, value=v, headers=h)
    data = bytes(b.build())
    # kafka-python leaves the base offset at 0; give the batch a real one as a broker would
    data = base.to_bytes(8, "big") + data[8:]
    [batch] = split_entries(data)
    assert batch.compression in (codec, 0)  # kafka-python stores small batches uncompressed
    assert batch.is_transactional == transactional
    assert batch.producer_id == pid
    assert ours(data) == kafka_python_records(data)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=st.lists(v2_record, min_size=1, max_size=20), codec=st.sampled_from([0, 1, 2, 3, 4]),
       base=st.integers(0, 2**40))
def test_v2_built_by_us_decodes_identically_in_kafka_python(records, codec, base):
    tuples = [(base + i, ts, k, v, h) for i, (ts, k, v, h) in enumerate(records)]
    data = encode_batch(tuples, codec=codec, producer_id=5, producer_epoch=1, base_sequence=0)
    mr = MemoryRecords(data)
    kb = mr.next_batch()
    assert kb.validate_crc()
    assert kafka_python_records(data) == [(o, t, k, v, list(h)) for o, t, k, v, h in tuples]
    assert ours(data) == kafka_python_records(data)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=st.lists(legacy_record, min_size=1, max_size=15), magic=st.sampled_from([0, 1]),
       codec=st.sampled_from([0, 1, 2, 3]))
def test_legacy_built_by_kafka_python_decodes_identically(records, magic, codec):
    b = LegacyRecordBatchBuilder(magic=magic, compression_type=codec, batch_size=1 << 24)
    for i, (ts, k, v) in enumerate(records):
        b.append(i, timestamp=ts if magic else None, key=k, value=v)
    data = bytes(b.build())
    expected = [(o, t if magic else -1, k, v, h) for o, t, k, v, h in kafka_python_records(data)]
    assert ours(data) == expected


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=st.lists(legacy_record, min_size=1, max_size=15), magic=st.sampled_from([0, 1]),
       codec=st.sampled_from([0, 1, 2, 3]), start=st.integers(0, 2**40))
def test_legacy_built_by_us_decodes_identically_in_kafka_python(records, magic, codec, start):
    tuples = [(start + i, ts if magic else -1, k, v) for i, (ts, k, v) in enumerate(records)]
    data = encode_message_set(tuples, magic=magic, codec=codec)
    got = kafka_python_records(data)
    assert [(o, t if magic else -1, k, v) for o, t, k, v, _ in got] == tuples
    assert [(o, t, k, v) for o, t, k, v, _ in ours(data)] == tuples


def test_log_append_time_reports_max_timestamp_for_every_record():
    data = encode_batch([(0, 5, b"k", b"v", []), (1, 6, None, b"w", [])], timestamp_type=1,
                        log_append_time=1234)
    [b] = split_entries(data)
    assert [r.timestamp for r in b.records()] == [1234, 1234]
    assert [r.timestamp for r in MemoryRecords(data).next_batch()] == [1234, 1234]
