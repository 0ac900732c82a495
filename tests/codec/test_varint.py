import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkalog_cli.codec.varint import encode_varint, encode_varlong, read_varint, read_varlong
from kafkalog_cli.errors import CorruptBatch

# examples from Kafka's ByteUtils behaviour (kafka-on-disk.md §2.4)
EXAMPLES = [(0, "00"), (-1, "01"), (1, "02"), (-2, "03"), (63, "7e"), (-64, "7f"),
            (64, "8001"), (300, "d804")]


@pytest.mark.parametrize(("value", "hexed"), EXAMPLES)
def test_known_encodings(value, hexed):
    assert encode_varint(value).hex() == hexed
    assert read_varint(bytes.fromhex(hexed), 0) == (value, len(hexed) // 2)


@given(st.integers(-(2**31), 2**31 - 1))
def test_varint_roundtrip(v):
    data = encode_varint(v)
    assert len(data) <= 5
    assert read_varint(data + b"\xff", 0) == (v, len(data))


@given(st.integers(-(2**63), 2**63 - 1))
def test_varlong_roundtrip(v):
    data = encode_varlong(v)
    assert len(data) <= 10
    assert read_varlong(data, 0) == (v, len(data))


def test_too_long_and_truncated_varints_are_corrupt():
    with pytest.raises(CorruptBatch):
        read_varint(b"\x80\x80\x80\x80\x80\x01", 0)
    with pytest.raises(CorruptBatch):
        read_varlong(b"\x80" * 10 + b"\x01", 0)
    with pytest.raises(CorruptBatch):
        read_varint(b"\x80\x80", 0)


def test_varint_matches_kafka_python():
    from kafka.record.util import decode_varint
    from kafka.record.util import encode_varint as kp_encode

    for v in (0, 1, -1, 2**31 - 1, -(2**31), 123456, -98765):
        buf = bytearray()
        kp_encode(v, buf.append)
        assert bytes(buf) == encode_varint(v)
        assert decode_varint(bytes(buf), 0)[0] == v
