"""The compiled lz4/snappy framing (kafkalog_cli/_speedups/fastinflate.pyx) and the isal gzip
path against the pure-Python ones in codec/compression.py, which are the specification.

fastinflate returns the decompressed bytes exactly when the pure function returns them, and
None exactly when it raises (decompress() then runs the pure function for its message), so
`decompress` gives the same bytes or the same exception type and message on both paths. isal
is checked the same way against zlib. Independent decoders (lz4.frame, kafka-python's xerial
reader, snappy, gzip, xxhash) check the pure path in turn.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import re
import struct
import zlib
from pathlib import Path

import lz4.block
import lz4.frame
import pytest
import snappy
import xxhash
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka import codec as kp

from kafkalog_cli.codec import compression as c
from kafkalog_cli.errors import CorruptBatch, DecompressionLimit
from tests.conftest import compiled

fi = compiled("fastinflate")
needs_ext = pytest.mark.skipif(fi is None, reason="compiled fastinflate not built "
                               "(test_extension_is_built reports it)")
FAST = settings(max_examples=300, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

payloads = st.one_of(
    st.binary(max_size=3000),
    st.builds(lambda b, n: b * n, st.binary(min_size=1, max_size=40), st.integers(1, 3000)))


def _outcome(fn, *args):
    try:
        return ("ok", fn(*args))
    except (CorruptBatch, DecompressionLimit) as e:
        return (type(e), str(e))


@contextlib.contextmanager
def _without_accelerators():
    saved = c._fast_module, c._isal_zlib
    c._fast_module = c._isal_zlib = lambda: None  # the loaders' answer when missing
    try:
        yield
    finally:
        c._fast_module, c._isal_zlib = saved


def _both(codec, data, max_size, legacy=False):
    """decompress() as dispatched (compiled, isal) and on the pure path: must be equal."""
    fast = _outcome(lambda: c.decompress(codec, data, max_size=max_size, legacy_lz4=legacy))
    with _without_accelerators():
        pure = _outcome(lambda: c.decompress(codec, data, max_size=max_size, legacy_lz4=legacy))
    assert fast == pure
    return pure


def _check_lz4(data, max_size, legacy):
    pure = _both(c.LZ4, data, max_size, legacy)
    got = fi.unlz4(data, max_size, legacy)
    assert got == (pure[1] if pure[0] == "ok" else None)
    assert got is None or type(got) is bytes
    return pure


def _check_snappy(data, max_size):
    pure = _both(c.SNAPPY, data, max_size)
    got = fi.unsnappy(data, max_size)
    assert got == (pure[1] if pure[0] == "ok" else None)
    assert got is None or type(got) is bytes
    return pure


# -- building frames with every option Kafka's readers meet -------------------------------

@st.composite
def lz4_frames(draw):
    """(frame, payload, legacy): Kafka's LZ4 frame with random block sizes and flags."""
    data = draw(payloads)
    legacy = draw(st.booleans())
    code = draw(st.integers(4, 7))
    block_checksum = draw(st.booleans())
    content_size = draw(st.booleans())
    flg = 0x60 | (0x10 if block_checksum else 0) | (0x08 if content_size else 0) \
        | (0x04 if draw(st.booleans()) else 0)
    descriptor = bytes((flg, code << 4)) + (struct.pack("<Q", len(data)) if content_size else b"")
    hashed = c._LZ4_MAGIC + descriptor if legacy else descriptor  # Kafka < 0.10's wrong HC
    out = bytearray(c._LZ4_MAGIC + descriptor + bytes(((xxhash.xxh32_intdigest(hashed) >> 8)
                                                       & 0xFF,)))
    step = draw(st.integers(1, 1 << (2 * code + 8)))
    for i in range(0, len(data), step):
        raw = data[i:i + step]
        packed = lz4.block.compress(raw, store_size=False)
        if draw(st.booleans()) or len(packed) >= len(raw):
            block = raw
            out += struct.pack("<I", len(raw) | 0x80000000)
        else:
            block = packed
            out += struct.pack("<I", len(packed))
        out += block
        if block_checksum:
            out += struct.pack("<I", xxhash.xxh32_intdigest(block))
    out += b"\x00\x00\x00\x00"
    if flg & 0x04:
        out += struct.pack("<I", xxhash.xxh32_intdigest(data))
    return bytes(out), data, legacy


@st.composite
def xerial_streams(draw):
    """(stream, payload): snappy-java framing, random chunking, repeated stream headers."""
    data = draw(payloads)
    header = c._XERIAL_HEADER.pack(c._XERIAL_MAGIC, 1, 1)
    out = bytearray(header)
    step = draw(st.integers(1, 40000))
    repeat = draw(st.booleans())
    for i in range(0, len(data), step):
        if repeat and draw(st.booleans()):
            out += header
        block = snappy.compress(data[i:i + step])
        out += struct.pack(">i", len(block)) + block
    return bytes(out), data


def _damaged(draw, frame):
    how = draw(st.sampled_from(["truncate", "flip", "cap", "none"]))
    cap = c.DEFAULT_MAX_DECOMPRESSED
    if how == "truncate":
        frame = frame[:draw(st.integers(0, max(0, len(frame) - 1)))]
    elif how == "flip" and frame:
        i = draw(st.integers(0, len(frame) - 1))
        frame = frame[:i] + bytes((frame[i] ^ draw(st.integers(1, 255)),)) + frame[i + 1:]
    elif how == "cap":
        cap = draw(st.integers(0, 4000))
    return frame, cap


# -- lz4 -------------------------------------------------------------------------------

@needs_ext
@FAST
@given(lz4_frames())
def test_lz4_round_trip_and_independent_decoder(frame_data):
    frame, data, legacy = frame_data
    assert _check_lz4(frame, c.DEFAULT_MAX_DECOMPRESSED, legacy) == ("ok", data)
    assert _check_lz4(memoryview(frame), c.DEFAULT_MAX_DECOMPRESSED, legacy) == ("ok", data)
    if not legacy:
        assert lz4.frame.decompress(frame) == data


@needs_ext
@FAST
@given(st.data(), lz4_frames())
def test_lz4_damage_gives_the_same_error_on_both_paths(draw, frame_data):
    frame, _data, legacy = frame_data
    frame, cap = _damaged(draw.draw, frame)
    _check_lz4(frame, cap, legacy)
    _check_lz4(frame, cap, not legacy)


@needs_ext
def test_lz4_error_paths_one_by_one():
    data = b"x" * 100000 + os.urandom(5000)  # a compressed block, then a stored one
    frame = c.compress(c.LZ4, data)
    legacy = c.compress(c.LZ4, data, legacy_lz4=True)
    cases = {
        "bad magic": (b"\x05" + frame[1:], False),
        "truncated": (frame[:-3], False),
        "header truncated": (frame[:6], False),
        "reserved bits": (frame[:4] + bytes((frame[4] | 1,)) + frame[5:], False),
        "dependent blocks": (frame[:4] + bytes((frame[4] & ~0x20,)) + frame[5:], False),
        "block size code": (frame[:5] + b"\x30" + frame[6:], False),
        "descriptor checksum": (frame[:6] + bytes((frame[6] ^ 1,)) + frame[7:], False),
        "legacy frame read as current": (legacy, False),
        "block past the data": (frame[:7] + struct.pack("<I", 60000) + frame[11:], False),
        "corrupt block": (frame[:11] + b"\xff" * 8 + frame[19:], False),
    }
    for why, (bad, leg) in cases.items():
        kind, msg = _check_lz4(bad, c.DEFAULT_MAX_DECOMPRESSED, leg)
        assert kind is CorruptBatch, (why, msg)
    assert _check_lz4(legacy, c.DEFAULT_MAX_DECOMPRESSED, True) == ("ok", data)
    for cap in (0, 1, 65535, 65536, len(data) - 1):
        assert _check_lz4(frame, cap, False)[0] is DecompressionLimit
    assert _check_lz4(frame, len(data), False) == ("ok", data)


# -- snappy ----------------------------------------------------------------------------

@needs_ext
@FAST
@given(xerial_streams())
def test_snappy_round_trip_and_independent_decoder(stream_data):
    stream, data = stream_data
    assert _check_snappy(stream, c.DEFAULT_MAX_DECOMPRESSED) == ("ok", data)
    assert _check_snappy(memoryview(stream), c.DEFAULT_MAX_DECOMPRESSED) == ("ok", data)
    if data and stream.count(c._XERIAL_MAGIC) == 1:  # kafka-python needs a chunk, one header
        assert kp.snappy_decode(stream) == data
    raw = snappy.compress(data)
    assert _check_snappy(raw, c.DEFAULT_MAX_DECOMPRESSED) == ("ok", snappy.uncompress(raw))


@needs_ext
@FAST
@given(st.data(), xerial_streams())
def test_snappy_damage_gives_the_same_error_on_both_paths(draw, stream_data):
    stream, data = stream_data
    _check_snappy(*_damaged(draw.draw, stream))
    _check_snappy(*_damaged(draw.draw, snappy.compress(data)))


@needs_ext
def test_snappy_error_paths_one_by_one():
    data = os.urandom(5000) + b"y" * 100000
    stream = c.compress(c.SNAPPY, data)
    header = stream[:16]
    cases = {
        "version 0": header[:8] + b"\x00\x00\x00\x00" + stream[12:],
        "chunk past the end": stream[:-1],
        "negative chunk": header + b"\xff\xff\xff\xff",
        "bad length prefix": header + b"\x00\x00\x00\x05" + b"\xff" * 5,
        "empty chunk": header + b"\x00\x00\x00\x00",
        "corrupt chunk": stream[:22] + b"\xff" * 6 + stream[28:],
        "empty raw": b"",
        "corrupt raw": b"\x10\xff\xff",
    }
    for why, bad in cases.items():
        kind, msg = _check_snappy(bad, c.DEFAULT_MAX_DECOMPRESSED)
        assert kind is CorruptBatch, (why, msg)
    repeated = header + stream[16:] + stream  # a header between chunks is tolerated
    assert _check_snappy(repeated, c.DEFAULT_MAX_DECOMPRESSED) == ("ok", data + data)
    assert _check_snappy(header, c.DEFAULT_MAX_DECOMPRESSED) == ("ok", b"")
    # SnappyInputStream.hasNextChunk: under 4 bytes after a chunk are the end of the stream
    assert _check_snappy(stream + b"\x00\x00", c.DEFAULT_MAX_DECOMPRESSED) == ("ok", data)
    for cap in (0, 1, 32767, 32768, len(data) - 1):
        assert _check_snappy(stream, cap)[0] is DecompressionLimit
    assert _check_snappy(stream, len(data)) == ("ok", data)


# -- xxh32 -----------------------------------------------------------------------------

@needs_ext
@FAST
@given(st.binary(max_size=100), st.integers(0, 2**32 - 1))
def test_xxh32_matches_xxhash_and_the_pure_one(data, seed):
    want = xxhash.xxh32_intdigest(data, seed)
    assert fi.xxh32(data, seed) == want
    assert c._xxh32(data, seed) == want


# -- gzip: isal against zlib -----------------------------------------------------------

@FAST
@given(st.data(), payloads, st.integers(1, 3))
def test_gzip_isal_and_zlib_agree(draw, data, members):
    stream = b"".join(gzip.compress(data, compresslevel=draw.draw(st.integers(1, 9)))
                      for _ in range(members))
    assert _both(c.GZIP, stream, c.DEFAULT_MAX_DECOMPRESSED) == ("ok", data * members)
    _both(c.GZIP, *_damaged(draw.draw, stream))


def test_gzip_error_paths_one_by_one():
    assert c._isal_zlib() is not None, "isal is a declared dependency"
    data = os.urandom(5000) + b"z" * 100000
    stream = gzip.compress(data)
    cases = {
        "truncated": stream[:-9],
        "bad crc": stream[:-8] + bytes((stream[-8] ^ 1,)) + stream[-7:],
        "bad header": b"\x1f\x8c" + stream[2:],
        "a member header, then junk": stream + stream[:10] + b"\xff\xff",
    }
    for why, bad in cases.items():
        kind, msg = _both(c.GZIP, bad, c.DEFAULT_MAX_DECOMPRESSED)
        assert kind is CorruptBatch, (why, msg)
    # GZIPInputStream.readTrailer ignores what follows a member unless it is a member header
    assert _both(c.GZIP, stream + b"garbage!", c.DEFAULT_MAX_DECOMPRESSED) == ("ok", data)
    for cap in (0, 1, len(data) - 1, 2 * len(data) - 1):
        assert _both(c.GZIP, stream + stream, cap)[0] is DecompressionLimit
    assert _both(c.GZIP, stream + stream, 2 * len(data)) == ("ok", data + data)


# -- every compressed batch and message of the corpora ---------------------------------

_SEGMENT = re.compile(r"\d{20}\.log$")
_CORPORA = (Path(__file__).resolve().parents[2].parent / "shared" / "corpus",
            # the reference brokers' corpora, as bench/datasets.py finds them (`make kafka-ref`)
            Path(os.environ.get("KAFKALOG_KAFKA_REF")
                 or Path(__file__).resolve().parents[2] / ".kafka-ref"))


def _compressed_payloads(buf):
    """(codec, payload, legacy_lz4) of every compressed v2 batch or v0/v1 wrapper in `buf`."""
    pos = 0
    while pos + 17 <= len(buf):
        (size,) = struct.unpack_from(">i", buf, pos + 8)
        end = pos + 12 + size
        if size < 14 or end > len(buf):
            return
        magic = buf[pos + 16]
        if magic == 2 and size >= 49:
            codec = struct.unpack_from(">h", buf, pos + 21)[0] & 7
            if codec:
                yield codec, buf[pos + 61:end], False
        elif magic in (0, 1):
            codec = buf[pos + 17] & 7
            p = pos + 18 + (8 if magic == 1 else 0)
            (klen,) = struct.unpack_from(">i", buf, p)
            p += 4 + max(klen, 0)
            (vlen,) = struct.unpack_from(">i", buf, p)
            if codec and vlen > 0:
                yield codec, buf[p + 4:p + 4 + vlen], magic == 0
        pos = end


def test_corpus_payloads_decode_equal_on_both_paths():
    seen = {}
    for root in _CORPORA:
        if not root.is_dir():
            continue
        for path in sorted(root.rglob("*.log")):
            if not _SEGMENT.search(path.name):
                continue
            for codec, payload, legacy in _compressed_payloads(path.read_bytes()):
                kind, _ = _both(codec, payload, c.DEFAULT_MAX_DECOMPRESSED, legacy)
                assert kind == "ok", (path, codec)
                if codec == c.LZ4 and fi is not None:
                    assert fi.unlz4(payload, c.DEFAULT_MAX_DECOMPRESSED, legacy) is not None
                if codec == c.SNAPPY and fi is not None:
                    assert fi.unsnappy(payload, c.DEFAULT_MAX_DECOMPRESSED) is not None
                seen[c.name(codec)] = seen.get(c.name(codec), 0) + 1
    # the shared corpus alone holds the three codecs this module's decoders change (the
    # reference brokers' corpora, zstd too, exist only once the conformance tests made
    # them); a parser slip would find none
    assert set(seen) >= {"gzip", "snappy", "lz4"}, seen


def test_zlib_alone_still_decodes_when_isal_is_missing():
    data = b"abc" * 1000
    with _without_accelerators():
        assert c.decompress(c.GZIP, gzip.compress(data) * 2) == data * 2
        assert zlib.decompress(gzip.compress(data), 31) == data
