"""codec/v07.py: round trips against hand-built bytes, one test per error path, fuzzing."""

import gzip
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalog_cli.codec import compression
from kafkalog_cli.codec.message_v07 import (
    codec_name,
    decode_message,
    encode_message,
    encode_message_set,
    inner_messages,
    split_entries,
)
from kafkalog_cli.errors import CorruptBatch, KafkalogError
from tests.v07.bytes07 import entry

payloads = st.lists(st.binary(max_size=300), min_size=1, max_size=20)


@given(st.binary(max_size=500), st.sampled_from([0, 1]))
def test_encoder_matches_hand_bytes(p, magic):
    assert encode_message(p, magic=magic) == entry(p, magic=magic)


@given(payloads, st.sampled_from(["none", "gzip", "snappy"]), st.sampled_from([0, 1]))
@settings(max_examples=60)
def test_message_set_round_trip(ps, codec, magic):
    c = compression.BY_NAME[codec]
    if c and magic == 0:
        magic = 1
    data = encode_message_set(ps, codec=c, magic=magic)
    got = []
    for _pos, m in split_entries(data):
        assert m.is_valid()
        assert m.codec == c
        got += [bytes(x.payload) for x in inner_messages(m)]
    assert got == ps


def test_decoded_fields():
    m = decode_message(entry(b"abc", magic=1, attributes=0xFE)[4:])
    assert (m.magic, m.attributes, m.codec, bytes(m.payload), m.size, m.entry_size) == \
        (1, 0xFE, 2, b"abc", 9, 13)
    assert codec_name(m.codec) == "snappy" and codec_name(3) == "unknown(3)"
    assert decode_message(entry(b"abc", magic=0)[4:]).codec == 0


@pytest.mark.parametrize("data, reason", [
    (b"\x00\x00\x00", "below the minimum"),
    (b"\x02" + bytes(8), "unknown magic byte 2"),
    (b"\x01\x00\x00\x00\x00", "below its header size"),
])
def test_decode_errors(data, reason):
    with pytest.raises(CorruptBatch, match=reason):
        decode_message(data)


def _wrapper(codec: int, body: bytes) -> bytes:
    return entry(body, magic=1, attributes=codec)


@pytest.mark.parametrize("blob, reason", [
    (entry(b"x") + b"\x00\x00", "2 bytes after the last whole entry"),
    (struct.pack(">i", 3) + b"abc", "size 3, below the minimum"),
    (struct.pack(">i", 50) + bytes(10), "declares 50 bytes; only 10 remain"),
    (struct.pack(">i", 6) + b"\x07" + bytes(5), "unknown magic byte 7"),
])
def test_split_errors(blob, reason):
    with pytest.raises(CorruptBatch, match=reason):
        list(split_entries(blob))


def test_inner_errors():
    bad_inner = entry(b"in", crc=123)
    cases = [
        (_wrapper(1, gzip.compress(bad_inner)), "fails its CRC"),
        (_wrapper(1, b"not gzip"), "gzip"),
        (_wrapper(2, b"\xff\xff\xff\xff\xff\xff"), "snappy"),
        (_wrapper(3, b"whatever"), "unknown compression codec 3"),
        (_wrapper(1, gzip.compress(entry(b"x")[:-1])), "declares"),
    ]
    for blob, reason in cases:
        (_pos, m), = split_entries(blob)
        with pytest.raises(CorruptBatch, match=reason):
            inner_messages(m)


def test_nesting_is_bounded_and_decompression_capped():
    blob = entry(b"deep")
    for _ in range(6):
        blob = _wrapper(1, gzip.compress(blob))
    (_pos, m), = split_entries(blob)
    with pytest.raises(CorruptBatch, match="nested"):
        inner_messages(m)
    bomb = _wrapper(1, gzip.compress(entry(bytes(1 << 20))))
    (_pos, m), = split_entries(bomb)
    with pytest.raises(CorruptBatch, match="exceeds the cap"):
        inner_messages(m, max_size=1000)


@given(st.binary(max_size=200))
@settings(max_examples=300)
def test_fuzzed_bytes_only_raise_kafkalog_errors(blob):
    try:
        for _pos, m in split_entries(blob):
            m.is_valid()
            inner_messages(m, max_size=1 << 16)
    except KafkalogError:
        pass


@given(payloads, st.sampled_from([1, 2]), st.integers(0, 10**6), st.integers(1, 255))
@settings(max_examples=100)
def test_fuzzed_wrappers_only_raise_kafkalog_errors(ps, codec, at, mask):
    blob = bytearray(encode_message_set(ps, codec=codec))
    blob[at % len(blob)] ^= mask
    try:
        for _pos, m in split_entries(bytes(blob)):
            inner_messages(m, max_size=1 << 20)
    except KafkalogError:
        pass
