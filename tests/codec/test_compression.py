import gzip
import os
import struct

import pytest
import zstandard
from kafka import codec as kp

from kafkalog_cli.codec import compression as c
from kafkalog_cli.errors import CorruptBatch, DecompressionLimit

DATA = os.urandom(3000) + b"kafka log segment " * 20000


@pytest.mark.parametrize("codec", [c.GZIP, c.SNAPPY, c.LZ4, c.ZSTD])
def test_roundtrip(codec):
    assert c.decompress(codec, c.compress(codec, DATA)) == DATA


def test_snappy_is_xerial_framed_and_kafka_python_reads_it():
    z = c.compress(c.SNAPPY, DATA)
    assert z[:8] == b"\x82SNAPPY\x00"
    assert struct.unpack(">ii", z[8:16]) == (1, 1)
    assert kp.snappy_decode(z) == DATA
    assert c.decompress(c.SNAPPY, kp.snappy_encode(DATA, xerial_compatible=True)) == DATA


def test_raw_snappy_without_header_is_accepted():
    import snappy

    assert c.decompress(c.SNAPPY, snappy.compress(b"raw block")) == b"raw block"


def test_lz4_frame_matches_kafka_python_both_ways():
    z = c.compress(c.LZ4, DATA)
    assert z[4:6] == b"\x60\x40"  # independent blocks, 64 KiB (KafkaLZ4BlockOutputStream)
    assert kp.lz4_decode(z) == DATA
    assert c.decompress(c.LZ4, kp.lz4_encode(DATA)) == DATA


def test_lz4_magic0_broken_header_checksum_accepted_only_for_legacy():
    z = kp.lz4_encode_old_kafka(DATA)  # HC computed from the magic, as Kafka < 0.10 wrote
    assert c.decompress(c.LZ4, z, legacy_lz4=True) == DATA
    with pytest.raises(CorruptBatch):
        c.decompress(c.LZ4, z)
    assert kp.lz4_decode_old_kafka(c.compress(c.LZ4, DATA, legacy_lz4=True)) == DATA


def test_zstd_frames_without_content_size():
    z = c.compress(c.ZSTD, DATA)
    assert zstandard.get_frame_parameters(z).content_size == zstandard.CONTENTSIZE_UNKNOWN
    with pytest.raises(zstandard.ZstdError):
        zstandard.ZstdDecompressor().decompress(z)  # why the codec streams
    assert c.decompress(c.ZSTD, z) == DATA
    assert c.decompress(c.ZSTD, kp.zstd_encode(DATA)) == DATA


def test_zstd_context_reused_is_clean_after_a_corrupt_or_capped_batch():
    # one decompressor a thread serves every batch: a batch that fails half way, or is cut at
    # the cap, leaves nothing behind that the next batch would read
    z = c.compress(c.ZSTD, DATA)
    other = c.compress(c.ZSTD, b"other batch " * 500)
    with pytest.raises(CorruptBatch):  # a frame header, then a block of a reserved type
        c.decompress(c.ZSTD, b"\x28\xb5\x2f\xfd\x00\x00" + b"\xff" * 8)
    assert c.decompress(c.ZSTD, other) == b"other batch " * 500
    with pytest.raises(DecompressionLimit):
        c.decompress(c.ZSTD, z, max_size=1000)
    assert c.decompress(c.ZSTD, z) == DATA


def test_zstd_threads_decompress_at_once_each_with_its_own_context():
    from concurrent.futures import ThreadPoolExecutor

    blobs = [(c.compress(c.ZSTD, bytes([k]) * 200_000 + DATA), k) for k in range(8)]

    def each(blob_k):
        blob, k = blob_k
        return all(c.decompress(c.ZSTD, blob) == bytes([k]) * 200_000 + DATA
                   for _ in range(20))

    with ThreadPoolExecutor(4) as pool:
        assert all(pool.map(each, blobs))


def test_gzip_concatenated_members():
    assert c.decompress(c.GZIP, gzip.compress(b"ab") + gzip.compress(b"cd")) == b"abcd"


@pytest.mark.parametrize("codec", [c.GZIP, c.SNAPPY, c.LZ4, c.ZSTD])
def test_decompression_bomb_is_capped(codec):
    bomb = c.compress(codec, b"\0" * (8 * 1024 * 1024))
    with pytest.raises(DecompressionLimit):
        c.decompress(codec, bomb, max_size=1024 * 1024)


@pytest.mark.parametrize("codec", [c.GZIP, c.SNAPPY, c.LZ4, c.ZSTD])
def test_garbage_is_corrupt_not_a_crash(codec):
    z = bytearray(c.compress(codec, DATA))
    for i in range(20, len(z), 97):
        z[i] ^= 0x5A
    try:
        out = c.decompress(codec, bytes(z))
    except CorruptBatch:
        return
    assert out != DATA  # some codecs carry no checksum: garbage in, garbage out, no crash
