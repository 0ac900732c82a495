"""A v2 batch whose compressed records section is cut short (or has bytes after its end) but
whose CRC was recomputed: one line naming the file, the batch's byte and the codec, exit 4,
in dump and verify, compiled and pure (KAFKALOG_PURE=1). Where Kafka's reader ignores the
extra bytes (gzip after a member, lz4 after the end mark, snappy-java under 4 bytes after
the last chunk) the batch decodes as Kafka's does. Each cut test failed before the fix for
zstd, whose streaming reader returned a cut frame's data without a word."""

import json
import os
import struct
import subprocess
import sys

import pytest

from kafkalog_cli.codec import compression as codecs
from kafkalog_cli.codec.batch_v2 import encode_batch
from kafkalog_cli.codec.checksum import crc32c
from kafkalog_cli.errors import CorruptBatch
from tests.cli.run import Result
from tests.conftest import compiled

LOG = "00000000000000000000.log"
RECORDS = [(1 + i, 1000 + i, b"k%d" % i, b"value-%d " % i * 20, []) for i in range(50)]
FIRST = encode_batch([(0, 1, b"a", b"b", [])])
CODECS = ("gzip", "snappy", "lz4", "zstd")
TRUNCATED = {"gzip": "gzip data is truncated", "snappy": "snappy data is truncated",
             "lz4": "lz4 data is truncated", "zstd": "zstd data is truncated"}


def crafted(codec: str, cut: int = 0, extra: bytes = b"") -> bytes:
    """A batch of RECORDS through `codec`, `cut` bytes taken off its end and `extra` added,
    its length and CRC made right again (LevelDB's FixChecksum)."""
    b = bytearray(encode_batch(RECORDS, codec=codecs.BY_NAME[codec]))
    del b[len(b) - cut:]
    b += extra
    struct.pack_into(">i", b, 8, len(b) - 12)
    struct.pack_into(">I", b, 17, crc32c(bytes(b[21:])))
    return bytes(b)


def kafkalog(pure: str, *args: object) -> Result:
    env = {**os.environ, "KAFKALOG_PURE": pure}
    p = subprocess.run([sys.executable, "-m", "kafkalog_cli", *map(str, args)],
                       capture_output=True, env=env, timeout=120)
    return Result(p.returncode, p.stdout, p.stderr.decode())


def partition(tmp_path, batch: bytes):
    pdir = tmp_path / "ld" / "t-0"
    pdir.mkdir(parents=True)
    (pdir / LOG).write_bytes(FIRST + batch)
    return pdir


@pytest.mark.parametrize("pure", ["0", "1"])
@pytest.mark.parametrize("cut", [1, 8, 150])
@pytest.mark.parametrize("codec", CODECS)
def test_a_cut_payload_is_one_codec_error_at_its_batch(tmp_path, codec, cut, pure):
    pdir = partition(tmp_path, crafted(codec, cut=cut))
    where = f"{pdir / LOG}:{len(FIRST)}"
    r = kafkalog(pure, "dump", pdir, "--records")
    assert r.code == 4
    assert r.err.count("\n") == 1 and "Traceback" not in r.err, r.err
    assert r.err.startswith(f"kafkalog: warning: {where}: records do not decode: "
                            f"{TRUNCATED[codec]}"), r.err
    r = kafkalog(pure, "verify", pdir, "--format", "json")
    assert r.code == 4, r.err
    found = [x for x in json.loads(r.text)["findings"] if x["file"].endswith(".log")]
    assert [(x["code"], f"{x['file']}:{x['position']}") for x in found] == \
        [("LOG_RECORDS_INVALID", where)], found
    assert TRUNCATED[codec] in found[0]["message"], found


@pytest.mark.parametrize("pure", ["0", "1"])
@pytest.mark.parametrize(("codec", "extra"), [
    ("gzip", b"\x00garbage"),  # GZIPInputStream.readTrailer: not a member header, ignored
    ("gzip", b"\x1f\x8b\x08"),  # a member header cut short: readHeader fails, ignored
    ("lz4", b"\x00garbage"),  # Lz4BlockInputStream reads nothing after the end mark
    ("snappy", b"\x00\x01\x02"),  # SnappyInputStream.hasNextChunk: under 4 bytes, the end
])
def test_bytes_kafka_ignores_after_the_payload_are_ignored(tmp_path, codec, extra, pure):
    pdir = partition(tmp_path, crafted(codec, extra=extra))
    r = kafkalog(pure, "dump", pdir, "--records", "--format", "jsonl")
    assert (r.code, r.err) == (0, ""), r.err
    assert [json.loads(x)["offset"] for x in r.text.splitlines()
            if '"offset"' in x and '"key"' in x] == list(range(51))
    r = kafkalog(pure, "verify", pdir)
    assert (r.code, r.err) == (0, ""), r.text


@pytest.mark.parametrize("pure", ["0", "1"])
@pytest.mark.parametrize(("codec", "extra", "reason"), [
    ("zstd", b"\x00garbage", "zstd data is corrupt"),  # zstd-jni reads on: a bad frame
    ("gzip", b"\x1f\x8b\x08\x00" + bytes(6) + b"\xff\xff",  # a member header, then junk
     "gzip data is "),
])
def test_bytes_kafka_reads_after_the_payload_are_a_codec_error(tmp_path, codec, extra,
                                                                reason, pure):
    pdir = partition(tmp_path, crafted(codec, extra=extra))
    r = kafkalog(pure, "dump", pdir, "--records")
    assert r.code == 4
    assert r.err.startswith(f"kafkalog: warning: {pdir / LOG}:{len(FIRST)}: records do not "
                            f"decode: {reason}"), r.err


# -- the codec layer: every cut of a payload, untouched payloads unchanged ----------------

def payloads():
    import zstandard

    data = b"".join(b"record %d " % i * 7 for i in range(3000))
    yield "gzip", codecs.compress(codecs.GZIP, data), data
    yield "snappy", codecs.compress(codecs.SNAPPY, data), data
    yield "lz4", codecs.compress(codecs.LZ4, data), data
    yield "zstd", codecs.compress(codecs.ZSTD, data), data
    # zstd with a content size and a checksum, two frames around a skippable one, and a
    # frame of several blocks (a block holds 128 KiB at most)
    c = zstandard.ZstdCompressor(write_checksum=True)
    yield "zstd", c.compress(data[:5000]), data[:5000]
    two = c.compress(b"ab") + b"\x50\x2a\x4d\x18\x02\x00\x00\x00xy" + c.compress(b"cd")
    yield "zstd", two, b"abcd"
    big = os.urandom(300_000)
    yield "zstd", codecs.compress(codecs.ZSTD, big), big


@pytest.mark.parametrize("pure", [False, True])
def test_every_cut_of_a_payload_is_truncated_and_the_whole_decodes(monkeypatch, pure):
    fastinflate = compiled("fastinflate")
    if pure:  # as KAFKALOG_PURE=1: no compiled walk
        monkeypatch.setattr(codecs, "_fast_module", lambda: None)
        monkeypatch.setattr(codecs, "_isal_zlib", lambda: None)
        monkeypatch.setattr(codecs, "_zstd_contexts", codecs._ZstdContexts())
    for codec, payload, data in payloads():
        assert codecs.decompress(codecs.BY_NAME[codec], payload) == data
        step = max(1, len(payload) // 300)
        for end in range(1, len(payload), step):
            cut = payload[:end]
            try:
                out = codecs.decompress(codecs.BY_NAME[codec], memoryview(cut))
            except CorruptBatch as e:
                if codec != "zstd" or codecs._zstd_cut_frame(cut) is not None:
                    assert e.reason.startswith(f"{codec} "), (codec, end, e)
                continue
            # the only cuts that decode are whole zstd frames (the two-frame payload), and
            # snappy cut 1-3 bytes into a chunk length, which snappy-java takes as the end
            assert (codec == "zstd" and codecs._zstd_cut_frame(cut) is None) or \
                (codec == "snappy" and data.startswith(out)), (codec, end)
        if codec == "zstd" and fastinflate is not None and not pure:
            for end in range(len(payload) + 1):
                assert fastinflate.zstd_cut_frame(payload[:end]) == \
                    codecs._zstd_cut_frame(payload[:end]), end


def test_a_zstd_cut_names_the_frame_it_cuts():
    one = codecs.compress(codecs.ZSTD, b"first")
    two = codecs.compress(codecs.ZSTD, b"second" * 100)
    with pytest.raises(CorruptBatch, match=f"zstd data is truncated: its frame at byte "
                                           f"{len(one)} has no end"):
        codecs.decompress(codecs.ZSTD, one + two[:-2])
