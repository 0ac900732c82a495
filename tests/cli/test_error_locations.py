"""Every error names its file and byte (issue 14, section 5): no `<bytes>`, no `internal
error`, no traceback, on the inputs that used to give them; each test failed before its fix."""

import json
import os
import re
import struct
import subprocess
import sys

import pytest

from kafkalog_cli.codec import compression as codecs
from kafkalog_cli.codec.batch_v2 import encode_batch, encode_record
from kafkalog_cli.codec.checksum import crc32, crc32c
from kafkalog_cli.codec.message_v01 import encode_message, encode_message_set
from tests.cli.run import Result, run

LOG = "00000000000000000000.log"
ERROR_LINE = re.compile(r"^kafkalog: error: (/[^:]+):(\d+): ", re.M)


def clean(r: Result) -> None:
    assert "Traceback" not in r.err and "internal error" not in r.err, r.err
    assert "<bytes>" not in r.err, r.err


def error_at(r: Result) -> tuple[str, int]:
    clean(r)
    m = ERROR_LINE.search(r.err)
    assert m, r.err
    return m.group(1), int(m.group(2))


def partition(tmp_path, data: bytes, name: str = "t-0"):
    pdir = tmp_path / "ld" / name
    pdir.mkdir(parents=True)
    (pdir / LOG).write_bytes(data)
    return pdir


def fix_v2_crc(b: bytearray, pos: int = 0) -> None:
    size = struct.unpack_from(">i", b, pos + 8)[0] + 12
    struct.pack_into(">I", b, pos + 17, crc32c(bytes(b[pos + 21:pos + size])))


def fix_legacy_crc(b: bytearray, pos: int = 0) -> None:
    size = struct.unpack_from(">i", b, pos + 8)[0] + 12
    struct.pack_into(">I", b, pos + 12, crc32(bytes(b[pos + 16:pos + size])))


# -- codec errors are located at their batch ----------------------------------------------

def test_a_legacy_wrapper_with_codec_7_is_a_warning_at_its_byte(tmp_path):
    plain = encode_message(0, None, b"first", magic=1, timestamp=1)
    wrapper = bytearray(encode_message_set([(1, 2, None, b"a"), (2, 3, None, b"b")], magic=1,
                                           codec=codecs.GZIP))
    wrapper[17] = (wrapper[17] & ~7) | 7  # attributes: codec 7
    fix_legacy_crc(wrapper)
    pdir = partition(tmp_path, plain + bytes(wrapper) + plain)
    for args in ([], ["--records"], ["--format", "jsonl"]):
        r = run("dump", pdir, *args)
        clean(r)
        assert r.code == 4
        assert f"warning: {pdir / LOG}:{len(plain)}: inner messages do not decode: unknown " \
               "compression codec 7" in r.err or \
               f"warning: {pdir / LOG}:{len(plain)}: records do not decode: unknown " \
               "compression codec 7" in r.err, r.err
        # the dump went on past the bad wrapper
        after = len(plain) + len(wrapper)
        assert f"position: {after} " in r.text or f'"position":{after},' in r.text


def test_a_nested_legacy_error_gives_the_wrapper_position_and_the_inner_byte(tmp_path):
    inner = [encode_message(i, None, b"v%d" % i, magic=0) for i in range(3)]
    bad = bytearray(inner[1])
    struct.pack_into(">i", bad, 8, 10**6)  # the second inner message claims 1 MB
    payload = codecs.compress(codecs.GZIP, inner[0] + bytes(bad) + inner[2])
    head = encode_message(0, None, b"before", magic=0)
    wrapper = encode_message(2, None, payload, magic=0, attributes=codecs.GZIP)
    pdir = partition(tmp_path, head + wrapper)
    r = run("dump", pdir, "--records")
    clean(r)
    assert r.code == 4
    assert f"{pdir / LOG}:{len(head)}: inner messages do not decode: inner message of size " \
           f"1000000 does not fit (at byte {len(inner[0])} of the gzip-decompressed message " \
           "set)" in r.err, r.err


def test_a_v2_record_error_is_located_at_its_byte_in_the_file(tmp_path):
    first = encode_batch([(0, 1000, b"k", b"v", [])])
    rec0 = encode_record(0, 0, b"k", b"v")
    rec1 = encode_record(1, 0, b"k", b"v", [("h", b"x")])
    second = bytearray(encode_batch([(1, 2000, b"k", b"v", []),
                                     (2, 2000, b"k", b"v", [("h", b"x")])]))
    count_at = 61 + len(rec0) + rec1.index(b"\x02h") - 1  # the header count (1) of record 2
    assert second[count_at] == 0x02
    second[count_at] = 0x01  # zig-zag -1
    fix_v2_crc(second)
    pdir = partition(tmp_path, first + bytes(second))
    r = run("find-by-time", pdir, "-t", "1500")
    path, pos = error_at(r)
    assert r.code == 4 and path == str(pdir / LOG)
    assert pos == len(first) + count_at + 1  # just past the count, as the decoder reads it
    assert "invalid header count -1" in r.err


def test_find_by_time_documents_exit_4():
    r = run("find-by-time", "--help")
    assert r.code == 0
    assert "4 a batch the search reads does not decode" in " ".join(r.text.split())


def test_retain_documents_exit_4_for_a_corrupt_checkpoint(sample):
    assert "or a checkpoint or batch it must read does not decode" in \
        " ".join(run("retain", "--help").text.split())
    (sample / "log-start-offset-checkpoint").write_bytes(b"0\n1\ndemo 0 1_000\n")
    r = run("retain", sample, "--dry-run", "--retention-ms", "1")
    path, pos = error_at(r)
    assert r.code == 4 and path == str(sample / "log-start-offset-checkpoint") and pos == 4


def test_compact_locates_a_batch_that_does_not_decode(tmp_path):
    good = encode_batch([(0, 1, b"k", b"v", [])])
    bad = bytearray(encode_batch([(1, 2, b"k", b"v", []), (2, 3, b"k2", b"v", [])],
                                 codec=codecs.GZIP))
    bad[-8] ^= 0xFF  # inside the gzip stream: its CRC no longer matches
    fix_v2_crc(bad)
    pdir = partition(tmp_path, good + bytes(bad))
    (pdir / "00000000000000000003.log").write_bytes(encode_batch([(3, 4, b"k", b"v", [])]))
    r = run("compact", pdir, "--dry-run", "--all")
    path, pos = error_at(r)
    assert r.code == 4 and path == str(pdir / LOG) and pos == len(good), r.err


# -- the timestamp overflow: one clear error on both decoders ------------------------------

@pytest.mark.parametrize("pure", ["0", "1"])
@pytest.mark.parametrize("fmt", ["text", "jsonl"])
def test_a_timestamp_past_a_long_is_one_error_on_both_paths(tmp_path, pure, fmt):
    b = bytearray(encode_batch([(0, 0, b"k", b"v", []), (1, 1, b"k", b"v", [])]))
    struct.pack_into(">q", b, 27, 2**63 - 1)  # base timestamp; the second delta is +1
    fix_v2_crc(b)
    pdir = partition(tmp_path, bytes(b))
    env = {**os.environ, "KAFKALOG_PURE": pure}
    p = subprocess.run([sys.executable, "-m", "kafkalog_cli", "dump", str(pdir), "--records",
                        "--format", fmt], capture_output=True, env=env, timeout=60)
    r = Result(p.returncode, p.stdout, p.stderr.decode())
    clean(r)
    assert r.code == 4
    second = 61 + len(encode_record(0, 0, b"k", b"v"))
    assert f"warning: {pdir / LOG}:{second}: records do not decode: record timestamp does not " \
           "fit a long" in r.err, r.err
    assert b"9223372036854775808" not in r.out


# -- checkpoints: byte positions, UTF-8, Java numbers -------------------------------------

@pytest.mark.parametrize(("content", "pos", "reason"), [
    (b"0\n2\ndemo 0 5\nd\xffmo 1 7\n", 14, "byte 0xff is not UTF-8 text"),
    (b"0\n2\ndemo 0 5\ndemo 1\n", 13, "malformed line 4"),
    (b"0\n1\ndemo 0 9223372036854775808\n", 4, "malformed offset"),
    (b"0\n1\ndemo 0 1_000\n", 4, "malformed offset"),
    (b"0\nx\n", 2, "malformed entry count"),
    (b"0\n3\ndemo 0 5\n", 2, "declares 3 entries but holds 1"),
])
def test_a_bad_root_checkpoint_names_its_byte(sample, content, pos, reason):
    cp = sample / "replication-offset-checkpoint"
    cp.write_bytes(content)
    r = run("dump", cp)
    path, at = error_at(r)
    assert (r.code, path, at) == (4, str(cp), pos) and reason in r.err, r.err
    r = run("recover", sample, "--dry-run")  # reads it for the high watermark
    clean(r)
    assert r.code in (0, 4)
    r = run("verify", sample, "--format", "json")
    clean(r)
    found = [x for x in json.loads(r.text)["findings"] if x["code"] == "CHECKPOINT_CORRUPT"]
    assert [(x["file"], x["position"]) for x in found] == [(str(cp), pos)]


def test_a_non_utf8_leader_epoch_checkpoint_and_a_short_snapshot(sample):
    lec = sample / "demo-0" / "leader-epoch-checkpoint"
    lec.write_bytes(b"0\n1\n0 \xc3\n")
    for cmd in ("dump", "verify"):
        r = run(cmd, lec)
        clean(r)
        assert r.code == 4
    path, pos = error_at(run("dump", lec))
    assert (path, pos) == (str(lec), 6)
    snap = sample / "demo-0" / "00000000000000000506.snapshot"
    snap.write_bytes(b"\x00\x01\x02")
    path, pos = error_at(run("dump", snap))
    assert (path, pos) == (str(snap), 3)


# -- a partition dir whose name is not UTF-8 ----------------------------------------------

def test_a_non_utf8_partition_dir_name_is_shown_escaped(sample):
    bad = sample / os.fsdecode(b"d\xffmo-1")
    (sample / "demo-1").rename(bad)
    for args in (["info", sample], ["info", sample, "--format", "json"], ["txn", sample],
                 ["dump", bad, "--format", "jsonl"], ["dump", bad, "--records"],
                 ["recover", sample, "--dry-run"], ["find-by-time", bad, "-t", "latest"],
                 ["verify", sample]):
        r = run(*args)
        clean(r)
        assert r.code in (0, 4), (args, r.err)
        r.out.decode("utf-8")  # the output stays UTF-8
    r = run("verify", sample)
    assert r.code == 4
    assert "LOGDIR_BAD_DIR" in r.text and "d\\xffmo-1: directory name is not UTF-8" in r.text
    assert '"file":"' + str(sample) + '/d\\\\xffmo-1/' in run("dump", bad, "--format",
                                                                 "jsonl").text


# -- a damaged index on the way of find-by-time -t max-timestamp --------------------------

def test_max_timestamp_with_indexes_pointing_at_a_torn_entry(tmp_path):
    data = encode_batch([(i, 1000 + i, b"k", b"v", []) for i in range(6)])
    tail = bytearray(17)
    struct.pack_into(">qi", tail, 0, 5, 1000)  # a 1000-byte entry of which 5 bytes exist
    tail[16] = 1  # magic 1: read as a legacy message
    pdir = partition(tmp_path, data + bytes(tail))
    (pdir / "00000000000000000000.index").write_bytes(struct.pack(">ii", 5, len(data)))
    (pdir / "00000000000000000000.timeindex").write_bytes(struct.pack(">qi", 1005, 5))
    r = run("find-by-time", pdir, "-t", "max-timestamp", "--format", "json")
    clean(r)
    assert r.code == 0
    assert [(x["offset"], x["timestamp"]) for x in json.loads(r.text)] == [(5, 1005)]


# -- stdout closed, or its reader gone ------------------------------------------------------

def test_dump_with_stdout_closed_is_one_line_and_exit_8(sample):
    p = subprocess.run(f'"{sys.executable}" -m kafkalog_cli dump "{sample}" --records >&-',
                       shell=True, capture_output=True, timeout=60)
    err = p.stderr.decode()
    assert p.returncode == 8
    assert err == "kafkalog: error: standard output is closed; give it a file or /dev/null " \
                  "(>/dev/null)\n"
    assert "8 operational error (also: stdout closed)" in " ".join(
        run("dump", "--help").text.split())


@pytest.mark.parametrize("fmt", ["text", "jsonl"])
def test_a_reader_that_goes_away_is_exit_141_like_cat(sample, fmt):
    p = subprocess.Popen([sys.executable, "-m", "kafkalog_cli", "dump", str(sample),
                          "--records", "--print-data", "--format", fmt],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdout.readline()
    p.stdout.close()  # as `| head -1` does
    err = p.stderr.read().decode()
    assert p.wait(timeout=60) == 141, err  # what a shell reports for cat: the run was cut
    assert err == ""
    assert "141 the reader of stdout went away" in " ".join(run("dump", "--help").text.split())
