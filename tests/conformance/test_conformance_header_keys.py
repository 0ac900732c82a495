"""A header key that is not UTF-8: Kafka reads it as a String (U+FFFD for each malformed part,
DefaultRecord.readHeaders), so the record is there for consumers and for a broker. kafkalog
must show it as kafka-dump-log does, and verify and recover must not call the batch corrupt
(recover would cut it, and everything after it)."""
from __future__ import annotations

import json
import subprocess
import sys

import kafka_ref
import pytest

from kafkalog_cli.codec.batch_v2 import assemble_batch, encode_record

pytestmark = pytest.mark.conformance


def _run(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "kafkalog_cli", *args], capture_output=True,
                          check=False)


def _log(tmp_path):
    recs = [encode_record(0, 0, b"k0", b"v0", [("ok", b"1")]),
            # "K\u00ff" encodes to 3 bytes; they are swapped for 3 that are not UTF-8
            encode_record(1, 1, b"k1", b"v1", [("K\u00ff", b"2"), ("x\u00e9", None)])
            .replace(b"K\xc3\xbf", b"K\xff\xfe"),
            encode_record(2, 2, b"k2", b"v2", [("\u00e9d", b"3")])
            .replace(b"\xc3\xa9d", b"\xed\xa0\x80")]  # a surrogate
    part = tmp_path / "hk-0"
    part.mkdir()
    (part / "00000000000000000000.log").write_bytes(b"".join(  # two batches: offsets 0-2, 3-5
        assemble_batch(b"".join(recs), 3, base_offset=base, last_offset_delta=2,
                       base_timestamp=1_700_000_000_000, max_timestamp=1_700_000_000_002)
        for base in (0, 3)))
    return part


def test_header_keys_not_utf8_as_kafka_dump_log(tmp_path):
    part = _log(tmp_path)
    log = part / "00000000000000000000.log"
    code, out, err = kafka_ref.dump_log([log], "--deep-iteration", "--print-data-log")
    assert code == 0, err
    theirs = [e["headerKeys"] for e in kafka_ref.parse_dump_log(out) if e["kind"] == "record"]
    # the surrogate is one U+FFFD, where Python's "replace" gives three
    assert theirs == [["ok"], ["K\ufffd\ufffd", "x\u00e9"], ["\ufffd"]] * 2
    res = _run("dump", str(log), "--records", "--format", "jsonl")
    assert res.returncode == 0, res.stderr
    ours = [[h["key"] for h in r["headers"]] for r in map(json.loads, res.stdout.splitlines())
            if r["kind"] == "record"]
    assert ours == theirs
    text = _run("dump", str(log), "--records", "--print-data")
    assert text.returncode == 0
    assert text.stdout.decode().count("headerKeys: [K\ufffd\ufffd,x\u00e9]") == 2


def test_verify_and_recover_keep_them(tmp_path):
    part = _log(tmp_path)
    before = (part / "00000000000000000000.log").read_bytes()
    v = _run("verify", str(part))
    assert v.returncode == 0, v.stdout + v.stderr
    r = _run("recover", str(part), "--full", "--force")
    assert r.returncode in (0, 1), r.stdout + r.stderr  # 1: indexes written, nothing cut
    assert (part / "00000000000000000000.log").read_bytes() == before
