"""Where a codec error says it is: positions relative to the parsed buffer, made file
positions by `located`, and bytes of decompressed data named in the reason (`nested`)."""

import struct

import pytest

from kafkalog_cli.codec import compression as codecs
from kafkalog_cli.codec.batch_v2 import RecordBatch, encode_batch, encode_record
from kafkalog_cli.codec.checkpoint import parse_leader_epochs, parse_offsets
from kafkalog_cli.codec.message_v01 import LegacyBatch, encode_message
from kafkalog_cli.errors import CorruptBatch, CorruptDataError, locating


def test_located_adds_where_the_buffer_starts_and_is_final_once_it_names_a_file():
    e = CorruptBatch("bad", pos=5)
    assert e.located(None, 61) is e and (e.path, e.pos) == (None, 66)
    e.located("/d/a.log", 1000)
    assert str(e) == "/d/a.log:1066: bad"
    e.located("/elsewhere", 7)  # an outer layer cannot move it any more
    assert str(e) == "/d/a.log:1066: bad"
    assert str(CorruptBatch("no position").located("/d/a.log", 40)) == "/d/a.log:40: no position"


def test_nested_moves_a_position_in_decompressed_data_into_the_reason():
    e = CorruptBatch("short", pos=12).nested("the gzip-decompressed records")
    assert (e.pos, e.reason) == (None, "short (at byte 12 of the gzip-decompressed records)")
    assert str(e.located("/d/a.log", 300)) == \
        "/d/a.log:300: short (at byte 12 of the gzip-decompressed records)"


def test_locating_names_the_file_of_what_fails_inside():
    with pytest.raises(CorruptDataError) as info, locating("/d/a.log", 100):
        raise CorruptBatch("x", pos=3)
    assert str(info.value) == "/d/a.log:103: x"


def _bad_second_record(codec: int) -> RecordBatch:
    b = bytearray(encode_batch([(0, 0, b"k", b"v", []), (1, 0, b"k", b"v", [])]))
    body = bytearray(b[61:])
    body[len(encode_record(0, 0, b"k", b"v"))] = 0x7E  # record 2's length: 63, past the end
    if codec:
        body = bytearray(codecs.compress(codec, bytes(body)))
        b[22] = codec
    out = b[:61] + body
    struct.pack_into(">i", out, 8, len(out) - 12)
    return RecordBatch(bytes(out))


def test_a_record_error_is_positioned_in_the_batch_or_in_the_decompressed_records():
    with pytest.raises(CorruptBatch) as plain:
        _bad_second_record(codecs.NONE).records()
    # the byte after the length varint, 61 header bytes + the first record in
    assert plain.value.pos == 61 + len(encode_record(0, 0, b"k", b"v")) + 1
    with pytest.raises(CorruptBatch) as packed:
        _bad_second_record(codecs.GZIP).records()
    assert packed.value.pos is None
    assert packed.value.reason == "record length 63 runs past the records section (at byte " \
        f"{len(encode_record(0, 0, b'k', b'v')) + 1} of the gzip-decompressed records)"


def test_legacy_message_errors_point_into_the_entry():
    m = bytearray(encode_message(0, b"key", b"value", magic=1, timestamp=5))
    struct.pack_into(">i", m, 26, 99)  # the key length (after 18 + 8 timestamp bytes)
    with pytest.raises(CorruptBatch) as info:
        LegacyBatch(bytes(m))
    assert (info.value.pos, info.value.reason) == (26, "message field of 99 bytes runs past "
                                                       "the message")
    with pytest.raises(CorruptBatch) as info:
        LegacyBatch(bytes(m[:-3]))  # the size field claims 3 bytes more than there are
    assert info.value.pos == 8


def test_an_error_in_a_wrapper_names_the_inner_message():
    inner = [encode_message(i, None, b"v", magic=0) for i in range(2)]
    nested = encode_message(1, None, codecs.compress(codecs.GZIP, inner[0]), magic=0,
                            attributes=codecs.GZIP)
    wrapper = LegacyBatch(encode_message(2, None, codecs.compress(codecs.SNAPPY,
                                                                  inner[1] + nested),
                                         magic=0, attributes=codecs.SNAPPY))
    with pytest.raises(CorruptBatch) as info:
        wrapper.records()
    assert info.value.pos is None
    assert info.value.reason == "compressed wrapper holds a compressed inner message (at byte " \
        f"{len(inner[1]) + 17} of the snappy-decompressed message set)"


@pytest.mark.parametrize(("data", "pos", "reason"), [
    (b"0\n1\nt 0 5\n", None, None),
    (b"1\n", 0, "unrecognised checkpoint version '1'"),
    (b"0\n1\nt 0 +5\nx", 11, "malformed line 4: 'x'"),
    (b"0\n1\nt 2147483648 5\n", 4, "malformed partition '2147483648'"),
    (b"0\n1\nt 0 \xd9\xa3\n", 4, "malformed offset '\u0663'"),  # Python's int() takes it
    (b"0\n1\nt 0 \xff\n", 8, "byte 0xff is not UTF-8 text"),
])
def test_offset_checkpoint_positions(data, pos, reason):
    if reason is None:
        assert parse_offsets(data) == {("t", 0): 5}
        return
    with pytest.raises(CorruptDataError) as info:
        parse_offsets(data)
    assert (info.value.pos, info.value.reason) == (pos, reason)


def test_leader_epoch_ranges_are_javas():
    assert parse_leader_epochs(b"0\n1\n2147483647 9223372036854775807\n") == \
        [(2**31 - 1, 2**63 - 1)]
    with pytest.raises(CorruptDataError) as info:
        parse_leader_epochs(b"0\n2\n1 0\n2147483648 5\n")
    assert (info.value.pos, info.value.reason) == (8, "malformed leader epoch '2147483648'")
