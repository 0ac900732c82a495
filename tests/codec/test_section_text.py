"""fastcodec.section_text, the text dump's writer straight from a records section, against
the pure chain: batch_v2.decode_records_pure, then dump.text_line on each record's row.

Where the pure decoder raises, section_text gives None (dump then takes the object path,
which reports the damage); where it gives bytes, they are the pure chain's, byte for byte.
It may also give None for a header key that is not strict UTF-8 (the object path shows it
as Java decodes it), and for nothing else on a well-formed section.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalog_cli.codec.batch_v2 import decode_records_pure, encode_record
from kafkalog_cli.commands.dump import text_line
from kafkalog_cli.errors import CorruptBatch
from kafkalog_cli.output.render import payload_encoder
from tests.codec.test_fastcodec import (
    base_offsets,
    base_sequences,
    base_timestamps,
    log_append_times,
    mutated,
    sections,
)
from tests.conftest import compiled

fc = compiled("fastcodec")
pytestmark = pytest.mark.skipif(fc is None or not hasattr(fc, "section_text"),
                                reason="compiled fastcodec not built (test_fastcodec's "
                                       "test_extension_is_built reports it)")

PAYLOADS = ("utf8", "base64", "hex")
SETTINGS = settings(max_examples=300, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def pure_text(args: tuple, tstype: str, payload: str, print_data: bool) -> bytes | None:
    """The pure chain's lines, or None where decode_records_pure raises."""
    try:
        recs = decode_records_pure(*args)
    except CorruptBatch:
        return None
    enc = payload_encoder(payload)
    lines = []
    for r in recs:
        row = {"kind": "record", "offset": r.offset, "timestamp": r.timestamp,
               "timestampType": tstype, "key": enc(r.key), "value": enc(r.value),
               "headers": [{"key": k, "value": enc(v)} for k, v in r.headers],
               "keySize": -1 if r.key is None else len(r.key),
               "valueSize": -1 if r.value is None else len(r.value), "sequence": r.sequence}
        lines.append(text_line(row, print_data).encode() + b"\n")
    return b"".join(lines)


def both(data, count, base_offset, base_timestamp, base_sequence, lat):
    """(section_text, pure chain) for every payload mode and print_data."""
    args = (data, count, base_offset, base_timestamp, base_sequence, lat)
    tstype = "CreateTime" if lat is None else "LogAppendTime"
    for mode, payload in enumerate(PAYLOADS):
        for print_data in (True, False):
            yield (fc.section_text(*args, tstype.encode(), mode, print_data),
                   pure_text(args, tstype, payload, print_data))


@SETTINGS
@given(sections(), base_offsets, base_timestamps, base_sequences, log_append_times)
def test_well_formed_sections(section, base_offset, base_timestamp, base_sequence, lat):
    data, count = section
    for fast, pure in both(data, count, base_offset, base_timestamp, base_sequence, lat):
        if pure is not None:  # (an offset or timestamp past a long fails both ways)
            assert fast == pure  # header keys here are str: strict UTF-8, never a refusal
        else:
            assert fast is None


@settings(max_examples=600, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(mutated(), base_sequences, log_append_times)
def test_damaged_sections(section, base_sequence, lat):
    data, count = section
    for fast, pure in both(data, count, 100, 1000, base_sequence, lat):
        assert fast is None or fast == pure
        if pure is None:
            assert fast is None


@given(st.binary(max_size=64), st.integers(-2, 12))
@SETTINGS
def test_random_bytes(data, count):
    for fast, pure in both(data, count, 5, 5, 5, None):
        assert fast is None or fast == pure
        if pure is None:
            assert fast is None


@pytest.mark.parametrize("key", [b"\xff", b"\xed\xa0\x80", b"ok\xc0\xafno"],
                         ids=["0xff", "surrogate", "overlong"])
def test_header_key_not_strict_utf8_goes_to_the_object_path(key):
    """The pure chain shows such a key with U+FFFD (Java's String(bytes, UTF_8)); the
    compiled writer refuses the section rather than print raw bytes."""
    rec = bytearray(encode_record(0, 0, b"k", b"v", [("#" * len(key), b"x")]))
    i = bytes(rec).index(b"#" * len(key))  # the same length: the framing holds
    rec[i:i + len(key)] = key
    data = bytes(rec)
    assert pure_text((data, 1, 0, 0, -1, None), "CreateTime", "utf8", True) is not None
    assert fc.section_text(data, 1, 0, 0, -1, None, b"CreateTime", 0, True) is None


def test_crafted_lines():
    """Null and empty keys and values, headers with null values, a wrapping sequence,
    extreme offsets and timestamps, LogAppendTime: each line as the pure chain writes it."""
    recs = [(0, 0, None, b"v\xff\n", [("h\u00e9", None), ("", b"x")]),
            (1, -1, b"", None, []),
            (7, 12345, b"\xf0\x9f\x98\x80k", b"", [("a", b""), ("b", None)])]
    data = b"".join(encode_record(*r) for r in recs)
    for base in ((2**63 - 8, -(2**63) + 1, 2**31 - 3, None), (0, 0, -1, 2**63 - 1),
                 (5, 1_700_000_000_000, 0, None)):
        for fast, pure in both(data, 3, *base):
            assert pure is not None and fast == pure


def test_outside_the_fast_path():
    """Arguments the compiled decoder does not take (not bytes, ints past 64 bits) and a
    LogAppendTime past a long: None, and dump's object path takes the batch."""
    data = encode_record(0, 0, b"k", b"v", [])
    assert fc.section_text(bytearray(data), 1, 0, 0, -1, None, b"CreateTime", 0, True) is None
    assert fc.section_text(data, 1, 2**64, 0, -1, None, b"CreateTime", 0, True) is None
    assert fc.section_text(data, 1, 0, 0, -1, 2**64, b"LogAppendTime", 0, True) is None
    assert fc.section_text(data, 1, 0, 0, -1, None, b"CreateTime", 0, True) == \
        pure_text((data, 1, 0, 0, -1, None), "CreateTime", "utf8", True)
