"""A hand-checked golden 0.7 partition: every byte written here from the format description
(docs/kafka-on-disk.md 3.9, 0.7's Message.scala), none by kafkalog's encoder; kafkalog
must decode it exactly."""

import gzip
import json
import struct
import zlib

import pytest
import snappy

from tests.cli.run import run

# entry 1 @0: magic 0, payload "hello"
#   size 10 = magic 1 + crc 4 + payload 5; crc32("hello") = 0x3610a686
E1 = bytes.fromhex("0000000a" "00" "3610a686") + b"hello"
# entry 2 @14: magic 1, attributes 0, payload "kafka 0.7"
#   size 15 = magic 1 + attributes 1 + crc 4 + payload 9; crc32("kafka 0.7") = 0x3d9a95c4
E2 = bytes.fromhex("0000000f" "01" "00" "3d9a95c4") + b"kafka 0.7"
# entry 3 @33: magic 1, empty payload: size 6, crc32("") = 0
E3 = bytes.fromhex("00000006" "01" "00" "00000000")

# the message set inside the compressed wrappers: "in-a" (magic 1), "in-b" (magic 0)
INNER = (bytes.fromhex("0000000a" "01" "00") + struct.pack(">I", zlib.crc32(b"in-a")) + b"in-a"
         + bytes.fromhex("00000009" "00") + struct.pack(">I", zlib.crc32(b"in-b")) + b"in-b")


def _wrapper(codec: int, body: bytes) -> bytes:
    return struct.pack(">i", 6 + len(body)) + bytes([1, codec]) + \
        struct.pack(">I", zlib.crc32(body)) + body


GZ = gzip.compress(INNER, mtime=0)  # what java.util.zip.GZIPOutputStream writes (RFC 1952)
# snappy-java SnappyOutputStream: magic 82 'SNAPPY' 00, version 1, compatible 1, chunks
XERIAL = (b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
          + struct.pack(">i", len(snappy.compress(INNER))) + snappy.compress(INNER))
E4 = _wrapper(1, GZ)
E5 = _wrapper(2, XERIAL)
E6 = _wrapper(2, snappy.compress(INNER))  # un-framed snappy, which snappy-java also reads
SEG0 = E1 + E2 + E3 + E4
SEG1 = E5 + E6  # the next segment is named after the end of the first


def test_hand_bytes_are_what_the_description_says():
    assert len(E1) == 14 and zlib.crc32(b"hello") == 0x3610A686
    assert len(E2) == 19 and zlib.crc32(b"kafka 0.7") == 0x3D9A95C4
    assert len(E3) == 10
    assert INNER[:4] == b"\x00\x00\x00\x0a" and len(INNER) == 14 + 13


@pytest.fixture
def golden(tmp_path):
    pdir = tmp_path / "logs" / "golden-3"
    pdir.mkdir(parents=True)
    (pdir / "00000000000000000000.kafka").write_bytes(SEG0)
    (pdir / f"{len(SEG0):020d}.kafka").write_bytes(SEG1)
    return pdir


def test_dump_json_decodes_every_byte(golden):
    r = run("dump", golden, "--records", "--format", "json", "--payload", "utf8")
    assert r.code == 0, r.err
    rows = json.loads(r.out)
    entries = [x for x in rows if x["kind"] == "entry"]
    s1 = len(SEG0)
    assert [(e["offset"], e["nextOffset"], e["position"], e["magic"], e["compression"],
             e["crc"]) for e in entries] == [
        (0, 14, 0, 0, "none", 0x3610A686),
        (14, 33, 14, 1, "none", 0x3D9A95C4),
        (33, 43, 33, 1, "none", 0),
        (43, s1, 43, 1, "gzip", zlib.crc32(GZ)),
        (s1, s1 + len(E5), 0, 1, "snappy", zlib.crc32(XERIAL)),
        (s1 + len(E5), s1 + len(E5) + len(E6), len(E5), 1, "snappy",
         zlib.crc32(snappy.compress(INNER))),
    ]
    assert all(e["isValid"] for e in entries)
    msgs = [(m["offset"], m["nextOffset"], m["innerIndex"], m["magic"], m["payload"])
            for m in rows if m["kind"] == "message"]
    assert msgs == [
        (0, 14, None, 0, "hello"), (14, 33, None, 1, "kafka 0.7"), (33, 43, None, 1, ""),
        (43, s1, 0, 1, "in-a"), (43, s1, 1, 0, "in-b"),
        (s1, s1 + len(E5), 0, 1, "in-a"), (s1, s1 + len(E5), 1, 0, "in-b"),
        (s1 + len(E5), s1 + len(E5) + len(E6), 0, 1, "in-a"),
        (s1 + len(E5), s1 + len(E5) + len(E6), 1, 0, "in-b"),
    ]
    assert all(m["topic"] == "golden" and m["partition"] == 3 for m in rows if "topic" in m)


def test_dump_text_and_verify(golden):
    r = run("dump", golden / "00000000000000000000.kafka", "--print-data")
    assert r.code == 0, r.err
    lines = r.text.splitlines()
    assert lines[:3] == [f"Dumping {golden / '00000000000000000000.kafka'}", "Starting offset: 0",
                         "offset: 0 position: 0 nextOffset: 14 isvalid: true payloadsize: 5 "
                         "magic: 0 compresscodec: none crc: 907060870"]
    assert "| offset: 0 nextOffset: 14 payloadsize: 5 magic: 0 compresscodec: none crc: " \
           "907060870 isvalid: true payload: hello" in lines
    v = run("verify", golden.parent, "--format", "json")
    assert v.code == 0, v.text
    summary = json.loads(v.out)["summary"]
    assert (summary["segments"], summary["batches"], summary["records"], summary["errors"]) \
        == (2, 6, 3 + 2 * 3, 0)


def test_find_by_time_is_refused_and_info_shows_the_format(golden):
    r = run("find-by-time", golden, "--timestamp", "2024-01-01T00:00:00Z")
    assert r.code == 16 and r.out == b""
    assert r.err.count("\n") == 1 and r.err.startswith("kafkalog: error: ")
    assert "carry no timestamp" in r.err
    r = run("find-by-time", golden, "-t", "latest", "--format", "json")
    assert r.code == 0 and json.loads(r.out)[0]["offset"] == len(SEG0) + len(SEG1)
    r = run("info", golden, "--format", "json")
    assert r.code == 0, r.err
    info = json.loads(r.out)[0]
    assert info["format"] == "0.7"
    p = info["partitions"][0]
    assert (p["format"], p["logStartOffset"], p["logEndOffset"], p["entries"], p["codecs"]) == \
        ("0.7", 0, len(SEG0) + len(SEG1), 6, ["gzip", "none", "snappy"])
    assert "Kafka 0.7" in run("info", golden).text
