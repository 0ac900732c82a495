"""The compiled v2 record decoder (kafkalog_cli/_speedups/fastcodec.pyx) against the pure one.

`batch_v2.decode_records_pure` is the specification: on any input both must return equal
records (every slot, with the same types) or both raise CorruptBatch (same reason and pos).
The same holds for the streaming `iter_records` (the records up to a malformed one, then its
CorruptBatch) and for `check_records` (that CorruptBatch, or nothing).
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalog_cli.codec import batch_v2
from kafkalog_cli.codec.batch_v2 import (
    EAGER_RECORDS,
    RecordBatch,
    check_records_pure,
    decode_records_pure,
    encode_batch,
    encode_record,
    iter_records_pure,
)
from kafkalog_cli.codec.model import Record
from kafkalog_cli.errors import CorruptBatch
from tests.conftest import compiled

SLOTS = ("offset", "timestamp", "key", "value", "headers", "sequence", "attributes", "crc")
INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)

FAST = settings(max_examples=300, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


fc = compiled("fastcodec")
needs_ext = pytest.mark.skipif(fc is None, reason="compiled fastcodec not built "
                               "(test_extension_is_built reports it)")


# -- comparing the two paths --------------------------------------------------------------

def _typed(v):
    if isinstance(v, list):
        return ("list", [_typed(x) for x in v])
    if isinstance(v, tuple):
        return ("tuple", tuple(_typed(x) for x in v))
    if isinstance(v, memoryview):
        return ("memoryview", bytes(v))
    return (type(v).__name__, v)


def _outcome(fn, *args):
    try:
        records = fn(*args)
    except CorruptBatch as exc:
        return ("CorruptBatch", type(exc), exc.reason, exc.pos)
    assert type(records) is list
    assert all(type(r) is Record for r in records)
    return ("ok", [tuple(_typed(getattr(r, s)) for s in SLOTS) for r in records])


def _error(exc):
    return ("CorruptBatch", type(exc), exc.reason, exc.pos)


def _stream_outcome(fn, *args):
    """The records an iterator gives before it raises, and the CorruptBatch (or None)."""
    it = fn(*args)
    got = []
    try:
        for r in it:
            assert type(r) is Record
            got.append(tuple(_typed(getattr(r, s)) for s in SLOTS))
    except CorruptBatch as exc:
        assert next(it, None) is None  # nothing more after the error, as a generator
        return got, _error(exc)
    return got, None


def _check_outcome(fn, *args):
    try:
        assert fn(*args) is None
    except CorruptBatch as exc:
        return _error(exc)
    return None


def _same(data, count, base_offset=0, base_timestamp=0, base_sequence=-1, lat=None):
    args = (data, count, base_offset, base_timestamp, base_sequence, lat)
    pure = _outcome(decode_records_pure, *args)
    fast = _outcome(fc.decode_records, *args)
    assert fast == pure
    stream = _stream_outcome(iter_records_pure, *args)
    assert _stream_outcome(fc.iter_records, *args) == stream
    # the list is the whole stream, and check_records raises what the list raises
    if pure[0] == "ok":
        assert stream == (pure[1], None)
    else:
        assert stream[1] == pure
    assert _check_outcome(fc.check_records, *args) == _check_outcome(check_records_pure, *args) \
        == (None if pure[0] == "ok" else pure)
    return pure


# -- strategies ---------------------------------------------------------------------------

blobs = st.one_of(st.none(), st.binary(max_size=40))
headers = st.lists(st.tuples(st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=12))),
                   max_size=3)
record_fields = st.tuples(
    st.one_of(st.integers(0, 1000), st.integers(*INT32)),                      # offset delta
    st.one_of(st.integers(-1000, 1000), st.integers(*INT64)),                  # timestamp delta
    blobs, blobs, st.one_of(st.just([]), headers))
base_offsets = st.one_of(st.integers(0, 2**40), st.integers(*INT64))
base_timestamps = st.one_of(st.integers(0, 2**42), st.integers(*INT64))
base_sequences = st.one_of(st.just(-1), st.integers(*INT32), st.integers(2**31 - 50, 2**31 - 1))
log_append_times = st.one_of(st.none(), st.integers(*INT64))


@st.composite
def sections(draw):
    recs = draw(st.lists(record_fields, max_size=8))
    data = b"".join(encode_record(*r) for r in recs)
    return data, len(recs)


@st.composite
def varint_bytes(draw, value: int, width_max: int = 5, bits: int = 32):
    """`value` zig-zag encoded, possibly padded with continuation bytes (Java accepts those),
    and possibly with garbage in the bits a 5-byte varint drops."""
    u = ((value << 1) ^ (value >> (bits - 1))) & ((1 << bits) - 1)
    out = bytearray()
    while u >= 0x80:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)
    pad = draw(st.integers(0, width_max - len(out)))
    if pad:
        out[-1] |= 0x80
        out += b"\x80" * (pad - 1) + b"\x00"
    if len(out) == 5 and bits == 32 and draw(st.booleans()):
        out[4] |= draw(st.integers(0, 7)) << 4  # bits 32..34: ignored like Java
    return bytes(out)


@st.composite
def odd_sections(draw):
    """Well-formed records with non-canonical varints and non-canonical empty header counts."""
    n = draw(st.integers(0, 4))
    parts = []
    for _ in range(n):
        body = bytearray([draw(st.integers(0, 255))])
        body += draw(varint_bytes(draw(st.integers(*INT64)), 10, 64))
        body += draw(varint_bytes(draw(st.integers(*INT32))))
        for field in (draw(blobs), draw(blobs)):
            if field is None:
                body += draw(varint_bytes(draw(st.integers(INT32[0], -1))))
            else:
                body += draw(varint_bytes(len(field))) + field
        hs = draw(headers)
        body += draw(varint_bytes(len(hs)))
        for k, v in hs:
            kb = k.encode()
            body += draw(varint_bytes(len(kb))) + kb
            body += (draw(varint_bytes(-1)) if v is None
                     else draw(varint_bytes(len(v))) + v)
        parts.append(draw(varint_bytes(len(body))) + bytes(body))
    return b"".join(parts), n


@st.composite
def mutated(draw):
    data, count = draw(st.one_of(sections(), odd_sections()))
    buf = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(("flip", "set", "insert", "delete", "truncate", "append")))
        pos = draw(st.integers(0, max(len(buf) - 1, 0)))
        if op == "flip" and buf:
            buf[pos] ^= 1 << draw(st.integers(0, 7))
        elif op == "set" and buf:
            buf[pos] = draw(st.sampled_from((0x00, 0x01, 0x7F, 0x80, 0xFF, 0xC0, 0xED)))
        elif op == "insert":
            buf[pos:pos] = draw(st.binary(min_size=1, max_size=6))
        elif op == "delete":
            del buf[pos:pos + draw(st.integers(1, 6))]
        elif op == "truncate":
            del buf[pos:]
        elif op == "append":
            buf += draw(st.binary(min_size=1, max_size=6))
    count = draw(st.one_of(st.just(count), st.integers(max(count - 2, -1), count + 2)))
    return bytes(buf), count


# -- the extension is there and wired in -------------------------------------------------

def test_extension_is_built():
    if os.environ.get("KAFKALOG_NO_EXT"):
        pytest.skip("KAFKALOG_NO_EXT is set: built without the extension on purpose")
    assert fc is not None, ("kafkalog_cli._speedups.fastcodec does not import: the Cython "
                            "build failed or was skipped (pip install -e . shows why)")
    if os.environ.get("KAFKALOG_PURE") != "1":
        assert batch_v2.ACCELERATED is True
        assert batch_v2.decode_records is fc.decode_records
        assert batch_v2.check_records is fc.check_records
        assert batch_v2.iter_records is fc.iter_records


@needs_ext
def test_records_are_built_slot_by_slot():
    """If Record changes shape, the compiled path falls back to Record(...): correct, slower."""
    assert fc.fast_record_construction(), "Record layout changed; update fastcodec.pyx"


def test_pure_path_forced_by_environment():
    code = ("from kafkalog_cli.codec import batch_v2 as b\n"
            "assert b.ACCELERATED is False\n"
            "assert b.decode_records is b.decode_records_pure\n"
            "assert b.iter_records is b.iter_records_pure\n"
            "d = b.encode_batch([(3, 10, b'k', b'v', [('h', None)])])\n"
            "assert [r.offset for r in b.RecordBatch(d).records()] == [3]\n")
    env = dict(os.environ, KAFKALOG_PURE="1")
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=60)


# every module that binds a compiled twin at import, and what it binds then (batch_v2's
# decoders: test_pure_path_forced_by_environment and the test above)
_BINDINGS = (
    "import kafkalog_cli._speedups.fastcodec as fc\n"
    "from kafkalog_cli.codec import compression\n"
    "from kafkalog_cli.commands import dump, workers\n"
    "from kafkalog_cli.output import render\n"
    "from kafkalog_cli.storage.checks import check\n"
    "from kafkalog_cli.storage.disk import pieces\n"
    "from kafkalog_cli.storage.maintenance import offset_map\n"
    "got = [check._fastscan is not None, pieces._fastscan is not None,\n"
    "       offset_map.FAST is not None, render.utf8_visible is fc.utf8_visible,\n"
    "       dump.record_writer('jsonl', 'utf8', True) is not None,\n"
    "       compression._fast_module() is not None, workers._fastout is not None]\n"
    "try:  # Spark's column builder, where the spark extra (pyarrow) is installed\n"
    "    from kafkalog_cli.spark import rows\n"
    "    got.append(rows.COMPILED)\n"
    "except ImportError:\n"
    "    pass\n"
    "print(sorted(set(got)))\n")


@needs_ext
@pytest.mark.parametrize("pure", ["0", "1"])
def test_every_compiled_binding_follows_the_environment(pure):
    """KAFKALOG_PURE=1 gives every module its pure twin, whatever is built; without it
    every one takes the build (one switch, _speedups.compiled, read by all)."""
    env = dict(os.environ, KAFKALOG_PURE=pure)
    out = subprocess.run([sys.executable, "-c", _BINDINGS], env=env, check=True, timeout=60,
                         capture_output=True, text=True).stdout
    assert out.strip() == ("[False]" if pure == "1" else "[True]")


def test_record_batch_looks_the_decoder_up_at_call_time(monkeypatch):
    data = encode_batch([(7, 100, b"a", b"b", []), (8, 101, None, None, [("x", b"y")])])
    calls = []

    def spy(*args):
        calls.append(args)
        return decode_records_pure(*args)

    monkeypatch.setattr(batch_v2, "decode_records", spy)
    recs = list(RecordBatch(data).records())
    assert len(calls) == 1 and [r.offset for r in recs] == [7, 8]


# -- equality on valid input --------------------------------------------------------------

@needs_ext
@FAST
@given(sections(), base_offsets, base_timestamps, base_sequences, log_append_times)
def test_valid_sections(section, base_offset, base_timestamp, base_sequence, lat):
    data, count = section
    kind = _same(data, count, base_offset, base_timestamp, base_sequence, lat)[0]
    assert kind == _expected(data, count, base_offset, base_timestamp, lat)


def _expected(data, count, base_offset, base_timestamp, lat=None):
    """ok, unless a record's offset or CreateTime (base + delta) leaves the 64-bit range."""
    deltas = decode_records_pure(data, count, 0, 0, -1, None)
    fits = all(INT64[0] <= base_offset + r.offset <= INT64[1] and
               (lat is not None or INT64[0] <= base_timestamp + r.timestamp <= INT64[1])
               for r in deltas)
    return "ok" if fits else "CorruptBatch"


@needs_ext
@FAST
@given(odd_sections(), base_offsets, base_timestamps, base_sequences)
def test_non_canonical_varints(section, base_offset, base_timestamp, base_sequence):
    data, count = section
    kind = _same(data, count, base_offset, base_timestamp, base_sequence)[0]
    assert kind == _expected(data, count, base_offset, base_timestamp)


@needs_ext
@settings(max_examples=60, deadline=None)
@given(st.lists(record_fields, min_size=1, max_size=5), st.sampled_from((0, 1)),
       st.integers(-1, 2**31 - 1))
def test_record_batch_end_to_end(recs, ts_type, base_sequence):
    rows = [(1000 + od % 1000, 10**12 + td % 10**6, k, v, h) for od, td, k, v, h in recs]
    rows.sort(key=lambda r: r[0])
    data = encode_batch(rows, timestamp_type=ts_type, log_append_time=5 * 10**12,
                        base_sequence=base_sequence,
                        producer_id=-1 if base_sequence < 0 else 9, producer_epoch=0)
    batch = RecordBatch(data)
    fast = list(batch.records())
    assert fast == decode_records_pure(batch.records_bytes(), batch.count, batch.base_offset,
                                       batch.base_timestamp, batch.base_sequence,
                                       batch.max_timestamp if ts_type else None)
    assert [r.sequence for r in fast] == [
        -1 if base_sequence < 0 else batch_v2.increment_sequence(base_sequence, r.offset - 1000
                                                                 + (1000 - batch.base_offset))
        for r in fast]


@needs_ext
@settings(max_examples=100, deadline=None)
@given(st.one_of(sections(), mutated()), base_sequences)
def test_record_constructor_path(section, base_sequence):
    """The Record(...) fallback (used if Record's layout ever changes) agrees too."""
    data, count = section
    fc._set_slot_writes(False)
    try:
        _same(data, count, 1, 2, base_sequence, None)
    finally:
        assert fc._set_slot_writes(True)


@needs_ext
def test_gc_tracking():
    data = encode_record(0, 0, b"k", b"v", [("h", b"x")]) + encode_record(1, 0, None, None, [])
    untracked = fc.decode_records(data, 2, 0, 0, -1, None)  # the default: untracked
    assert not any(gc.is_tracked(r) or gc.is_tracked(r.headers) for r in untracked)
    assert not gc.is_tracked(untracked[0].headers[0])  # (str, bytes): as CPython would
    assert fc.set_untracked_records(False) is True
    try:
        recs = fc.decode_records(data, 2, 0, 0, -1, None)
    finally:
        assert fc.set_untracked_records(True) is False
    assert all(gc.is_tracked(r) and gc.is_tracked(r.headers) for r in recs)
    assert _outcome(lambda *a: untracked, 0) == _outcome(lambda *a: recs, 0)


# -- equality on damaged input ------------------------------------------------------------

@needs_ext
@settings(max_examples=600, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(mutated(), base_sequences, log_append_times)
def test_mutated_sections(section, base_sequence, lat):
    data, count = section
    _same(data, count, 100, 1000, base_sequence, lat)


@needs_ext
@FAST
@given(st.binary(max_size=64), st.integers(-2, 12))
def test_random_bytes(data, count):
    _same(data, count, 5, 5, 5, None)


_VALID = encode_record(0, 0, b"k", b"v", [("h", b"x")])

CASES = {
    "empty data": (b"", 1, "premature end"),
    "trailing byte": (_VALID + b"\x00", 1, "bytes remain"),
    "count zero, data left": (_VALID, 0, "bytes remain"),
    "negative count": (b"", -3, None),
    "negative length": (b"\x01" + _VALID[1:], 1, "record length -1"),
    "length past end": (b"\x7e", 1, "record length 63"),
    "empty record": (b"\x00\x00\x00", 1, "premature end"),
    "varint 6 bytes": (b"\xff\xff\xff\xff\xff\x01", 1, "longer than 5"),
    "varint cut": (b"\xff\xff", 1, "varint runs past"),
    "varlong 11 bytes": (b"\x18\x00" + b"\xff" * 10 + b"\x00" * 13, 1, "longer than 10"),
    "varlong cut": (b"\x04\x00\x80", 1, "varint runs past"),
    "zero length at the end": (b"\x00", 1, "premature end"),
    "attributes only": (b"\x02\x00", 1, "varint runs past"),
    "key past end": (b"\x0a\x00\x00\x00\x7e\x00", 1, "premature end"),
    "value past end": (b"\x0a\x00\x00\x00\x01\x7e", 1, "premature end"),
    "structure mismatch": (b"\x0e\x00\x00\x00\x01\x01\x00\x00", 1, "does not match"),
    "header count negative": (b"\x0a\x00\x00\x00\x01\x01\x01", 1, "invalid header count -1"),
    "header count too big": (b"\x0a\x00\x00\x00\x01\x01\x7e", 1, "invalid header count 63"),
    "non-canonical zero headers past": (b"\x0a\x00\x00\x00\x01\x01\x80\x00", 1,
                                        "invalid header count 0"),
    "null header key": (b"\x0e\x00\x00\x00\x01\x01\x02\x01\x00", 1, "header key is null"),
    "header value past record": (b"\x10\x00\x00\x00\x01\x01\x02\x00\x04\x00\x00\x00", 1,
                                 "runs past the record"),
    "header key cut": (b"\x0e\x00\x00\x00\x01\x01\x02\x7e", 1, "varint runs past"),
}


@needs_ext
@pytest.mark.parametrize("name", list(CASES))
def test_each_error(name):
    data, count, expected = CASES[name]
    outcome = _same(data, count)
    if expected is None:
        assert outcome == ("ok", [])
    else:
        assert outcome[0] == "CorruptBatch" and expected in outcome[2], outcome


@needs_ext
@pytest.mark.parametrize(("data", "key"), [
    (b"\x12\x00\x00\x00\x01\x01\x02\x02\xff\x00", "\ufffd"),
    (b"\x16\x00\x00\x00\x01\x01\x02\x06\xed\xa0\x80\x00", "\ufffd"),  # a surrogate: one, as Java
], ids=["0xff", "surrogate"])
def test_header_key_not_utf8_reads_as_kafka_does(data, key):
    """Kafka reads a header key as new String(bytes, UTF_8) (DefaultRecord.readHeaders):
    malformed parts become U+FFFD and the record is there; no CorruptBatch, both paths."""
    assert _same(data, 1)[0] == "ok"  # and the compiled path gives the same records
    assert [r.headers for r in decode_records_pure(data, 1, 0, 0, -1, None)] == [[(key, b"")]]


# -- arguments off the fast path fall back to the pure function ----------------------------

@needs_ext
@pytest.mark.parametrize("kind", [bytearray, memoryview])
def test_buffer_types(kind):
    # (no headers for memoryview: the pure code calls .decode on a header key slice)
    hs = [("h", b"v")] if kind is bytearray else []
    data = b"".join(encode_record(i, i, b"key", b"value", hs) for i in range(3))
    assert _same(kind(data), 3)[0] == "ok"
    assert _same(kind(data[:-1]), 3)[0] == "CorruptBatch"


@needs_ext
@pytest.mark.parametrize(("args", "outcome"), [
    # base + delta past a long: both paths fail the batch with the same reason and position
    ((2**63 - 1, 0, 0, None), ("record offset does not fit a long", 0)),
    ((0, 2**63 - 1, 0, None), ("record timestamp does not fit a long", 0)),
    ((-(2**63), -(2**63), 0, None), ("record offset does not fit a long", 20)),
    ((2**70, -(2**70), 2**40, 2**80), ("record offset does not fit a long", 0)),  # > 64 bits
    ((0, 2**63 - 1, 0, 5), None),  # LogAppendTime: the deltas are not used
    ((True, False, True, True), None),  # bools are ints to the pure code
])
def test_extreme_arguments(args, outcome):
    data = encode_record(2**31 - 1, 2**63 - 1, None, b"", []) + encode_record(
        -(2**31), -(2**63), b"", None, [])
    got = _same(data, 2, *args)
    if outcome is None:
        assert got[0] == "ok"
    else:
        assert got[0] == "CorruptBatch" and got[2:] == outcome
    assert _same(data, 2**70, *args)[0] == "CorruptBatch"


# -- a batch of many records streams them --------------------------------------------------

@pytest.fixture(params=["compiled", "pure"])
def decoder(request, monkeypatch):
    """RecordBatch.records() on the compiled decoder (when built), then on the pure one."""
    if request.param == "compiled":
        if fc is None:
            pytest.skip("compiled fastcodec not built")
    else:
        monkeypatch.setattr(batch_v2, "decode_records", batch_v2.decode_records_pure)
        monkeypatch.setattr(batch_v2, "check_records", batch_v2.check_records_pure)
        monkeypatch.setattr(batch_v2, "iter_records", batch_v2.iter_records_pure)
    return request.param


def _many(n: int, extra_count: int = 0) -> bytes:
    data = bytearray(encode_batch([(i, 7, None, b"v", []) for i in range(n)]))
    count_pos = len(data) - len(b"".join(encode_record(i, 0, None, b"v") for i in range(n))) - 4
    data[count_pos:count_pos + 4] = (n + extra_count).to_bytes(4, "big")
    return bytes(data)


def test_a_big_batch_streams_its_records(decoder):
    import tracemalloc

    n = 4 * EAGER_RECORDS
    batch = RecordBatch(_many(n))
    section = len(batch.records_bytes())

    def peak(consume) -> int:
        tracemalloc.start()
        try:
            consume()
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    seen = [0, -1]  # how many, the last offset

    def stream() -> None:
        for r in batch.records():
            assert r.offset == seen[1] + 1
            seen[0] += 1
            seen[1] = r.offset

    streaming = peak(stream)
    assert seen == [n, n - 1]
    whole = peak(lambda: batch_v2.decode_records(batch.records_bytes(), n, 0, 7, -1, None))
    # a list holds n records (~100+ bytes each); the stream one record and the section
    assert whole > n * 100
    assert streaming < section + 64 * 1024, (streaming, whole)


@pytest.mark.parametrize("n", [EAGER_RECORDS, EAGER_RECORDS + 1])
def test_a_malformed_batch_raises_before_its_first_record(decoder, n):
    batch = RecordBatch(_many(n, extra_count=1))  # claims one record more than it holds
    with pytest.raises(CorruptBatch, match="premature end"):
        batch.records()
    assert [r.offset for r in RecordBatch(_many(n)).records()] == list(range(n))
