"""The write path: append, rolls, indexes, find-by-time, the lock, fixtures."""

import filecmp
import itertools
import json
import os
import random
import shutil
import subprocess
import sys
import time

import pytest

from kafkalog_cli.codec.batch_v2 import encode_batch
from kafkalog_cli.storage.disk.logdir import open_target
from kafkalog_cli.storage.maintenance.log_config import LogConfig
from kafkalog_cli.storage.maintenance.writer import PartitionWriter
from kafkalog_cli.storage.queries.timelookup import offset_for_time
from tests.cli.run import run
from tests.conftest import FIXTURE
from tests.faults.surgery import batch_positions


def random_records(n: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        rec = {"key": None if rng.random() < 0.2 else f"k{rng.randrange(50)}",
               "value": None if rng.random() < 0.05 else "v" * rng.randrange(0, 300) + str(i),
               "timestamp": 1_700_000_000_000 + i * 7 + rng.randint(-500, 500)}
        if rng.random() < 0.3:
            rec["headers"] = [{"key": "h", "value": str(i)}, {"key": "n", "value": None}]
        out.append(rec)
    return out


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_append_then_dump_gives_back_every_record(tmp_path, codec):
    recs = random_records(700, seed=len(codec))
    data = "".join(json.dumps(r) + "\n" for r in recs).encode()
    r = run("append", tmp_path / "ld", "--create", "--topic", "t", "--partition", "3", "--codec",
            codec,
            "--segment-bytes", "20000", "--batch-records", "37", stdin=data)
    assert r.code == 0, r.err
    out = run("dump", tmp_path / "ld" / "t-3", "--records", "--no-batches", "--format", "jsonl")
    got = [json.loads(x) for x in out.out.splitlines()]
    assert [g["offset"] for g in got] == list(range(700))
    for g, want in zip(got, recs, strict=True):
        assert (g["key"], g["value"], g["timestamp"]) == (want["key"], want["value"],
                                                            want["timestamp"])
        assert g["headers"] == want.get("headers", [])
        assert (g["topic"], g["partition"]) == ("t", 3)
    assert run("verify", tmp_path / "ld").code == 0


def test_append_continues_an_existing_log(tmp_path):
    for n in range(3):
        r = run("append", tmp_path, "--topic", "t", "--partition", "0", "--input-format",
                "lines", "--segment-bytes", "3000", stdin=b"".join(b"%d-%d\n" % (n, i)
                                                                   for i in range(100)))
        assert r.code == 0, r.err
    out = run("dump", tmp_path / "t-0", "--records", "--no-batches", "--format", "jsonl")
    vals = [json.loads(x)["value"] for x in out.out.splitlines()]
    assert vals == [f"{n}-{i}" for n in range(3) for i in range(100)]
    assert run("verify", tmp_path).code == 0


def _segment_sizes(pdir):
    return [(s.base_offset, s.size) for s in open_target(pdir).partition.segments]


def test_roll_on_size_is_exactly_size_plus_incoming_over_segment_bytes(tmp_path):
    cfg = LogConfig(segment_bytes=5000, index_interval_bytes=100)
    rng = random.Random(5)
    sizes = []
    with PartitionWriter(tmp_path / "t-0", "t", 0, cfg, now_ms=0) as w:
        for _ in range(120):
            n = rng.randrange(1, 6)
            batch = encode_batch([(w.next_offset + i, 1000, None, b"x" * rng.randrange(10, 400),
                                   []) for i in range(n)])
            sizes.append(len(batch))
            w.append(batch)
    segs = open_target(tmp_path / "t-0").partition.segments
    assert len(segs) > 5
    for seg, nxt in itertools.pairwise(segs):
        batches = batch_positions(seg.log_path)
        first_of_next = batch_positions(nxt.log_path)[0][1]
        assert seg.size <= 5000
        assert seg.size + first_of_next > 5000  # rolled only when the next batch would not fit
        assert sum(s for _, s in batches) == seg.size


def test_roll_on_time_uses_record_timestamps(tmp_path):
    cfg = LogConfig(segment_ms=1000)
    with PartitionWriter(tmp_path / "t-0", "t", 0, cfg, now_ms=0) as w:
        for ts in (0, 500, 1000, 1001, 1500, 2001, 2002):
            w.append(encode_batch([(w.next_offset, ts, None, b"v", [])]))
    # strict '>' against the first batch's max timestamp of the active segment
    # 1001 - 0 > 1000 rolls at offset 3; 2001 - 1001 = 1000 does not; 2002 - 1001 does
    assert [b for b, _ in _segment_sizes(tmp_path / "t-0")] == [0, 3, 6]


@pytest.mark.parametrize("interval", [0, 1, 500, 4096])
def test_append_indexes_equal_index_rebuild_byte_for_byte(tmp_path, interval):
    recs = random_records(900, seed=interval)
    data = "".join(json.dumps(r) + "\n" for r in recs).encode()
    ld = tmp_path / "ld"
    assert run("append", ld, "--create", "--topic", "t", "--partition", "0", "--segment-bytes",
               "30000", "--index-interval-bytes", interval, "--batch-records", "10",
               "--producer-id", "4", "--transactional", "--end-txn", "abort", stdin=data).code == 0
    copy = tmp_path / "copy"
    shutil.copytree(ld, copy)
    for p in (copy / "t-0").glob("*index"):
        p.unlink()
    r = run("index-rebuild", copy, "--index-interval-bytes", interval)
    assert r.code == 1, r.err
    names = sorted(p.name for p in (ld / "t-0").iterdir() if p.suffix.endswith("index"))
    assert any(n.endswith(".txnindex") for n in names)
    _match, mismatch, errors = filecmp.cmpfiles(ld / "t-0", copy / "t-0", names, shallow=False)
    assert mismatch == [] and errors == []
    assert run("index-rebuild", copy, "--index-interval-bytes", interval).code == 0


@pytest.mark.parametrize("seed", range(6))
def test_find_by_time_agrees_with_a_brute_force_scan(tmp_path, seed):
    rng = random.Random(seed)
    ld = tmp_path / "ld"
    assert run("generate", ld, "--records", "800", "--jitter-ms", "3000", "--segment-bytes",
               "9000", "--seed", seed, "--codec", "none", "--codec", "lz4").code == 0
    part = open_target(ld / "demo-0").partition
    records = [r for s in part.segments for _p, b in s.batches() for r in b.records()]
    lo = min(r.timestamp for r in records) - 10
    hi = max(r.timestamp for r in records) + 10
    for t in [lo, hi] + [rng.randrange(lo, hi) for _ in range(25)]:
        # ListOffsets: the first batch (in offset order) whose max timestamp >= t, then its
        # first record at or after t
        want = None
        for s in part.segments:
            for _p, b in s.batches():
                if b.max_timestamp >= t:
                    want = next(r.offset for r in b.records() if r.timestamp >= t)
                    break
            if want is not None:
                break
        assert offset_for_time(part, t).offset == want, t
    out = run("find-by-time", ld, "-t", str(hi), "--format", "json")
    assert json.loads(out.out) == [{"topic": "demo", "partition": 0, "query": "timestamp",
                                    "targetTimestamp": hi, "offset": None, "timestamp": None,
                                    "leaderEpoch": None}]


HOLD = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
fcntl.lockf(fd, fcntl.LOCK_EX)
print("locked", flush=True)
time.sleep(60)
"""


def test_a_held_lock_makes_every_mutating_command_refuse(sample):
    before = {p: p.read_bytes() for p in sample.rglob("*") if p.is_file()}
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(sample / ".lock")],
                              stdout=subprocess.PIPE)
    try:
        assert holder.stdout.readline().strip() == b"locked"
        for args in (["append", sample, "--topic", "demo", "--partition", "0"],
                     ["index-rebuild", sample / "demo-0"],
                     ["recover", sample], ["retain", sample, "--retention-bytes", "1"],
                     ["compact", sample / "demo-0", "--force"]):
            r = run(*args, stdin=b'{"value": "x"}\n')
            assert r.code == 8, r.err
            assert "holds the log dir lock" in r.err
        # a dry run takes no lock, but says its report may not hold
        for args in (["recover", sample, "--dry-run"], ["compact", sample / "demo-0",
                                                        "--dry-run"],
                     ["retain", sample, "--dry-run"], ["index-rebuild", sample, "--dry-run"]):
            r = run(*args)
            assert r.code in (0, 1, 4), r.err
            assert f"{sample.resolve() / '.lock'}: held by another process" in r.err, args
    finally:
        holder.kill()
        holder.wait()
    after = {p: p.read_bytes() for p in sample.rglob("*") if p.is_file()}
    assert after == before


def test_an_unheld_lock_file_is_normal(sample):
    assert (sample / ".lock").exists()
    assert run("index-rebuild", sample).code == 0


def test_fixtures_are_reproducible(tmp_path):
    t0 = time.time()
    r = run("generate", tmp_path / "sample", "--preset", "sample")
    assert r.code == 0, r.err
    cmp = filecmp.dircmp(FIXTURE, tmp_path / "sample")

    def diffs(c):
        out = c.left_only + c.right_only + c.diff_files + c.funny_files
        for sub in c.subdirs.values():
            out += diffs(sub)
        return out

    assert diffs(cmp) == [], "run `make fixtures` and commit the result"
    assert time.time() - t0 < 60


def test_jsonl_keeps_one_record_per_newline_with_unicode_line_separators(tmp_path):
    # U+0085, U+2028, U+2029 and the C0 separators are legal raw in a JSON string; a reader
    # splitting on "\n" (the JSON Lines rule) must see one row per record, values intact
    values = ["a\u2028b", "c\x85d", "e\u2029f", "g\x1c\x1d\x1eh", "i\r\nj", "k\x0bl\x0cm"]
    data = "".join(json.dumps({"value": v}) + "\n" for v in values).encode()
    assert run("append", tmp_path, "--topic", "t", "--partition", "0", stdin=data).code == 0
    out = run("dump", tmp_path / "t-0", "--records", "--no-batches", "--format", "jsonl")
    lines = out.out.decode().split("\n")
    assert lines[-1] == ""
    assert [json.loads(x)["value"] for x in lines[:-1]] == values


def _lines(n: int) -> bytes:
    return b"".join(b"%d\n" % i for i in range(n))


def test_append_lifts_the_clean_shutdown_marker_while_it_writes(sample):
    # with the marker a broker recovers nothing: a crash mid-append must not leave it
    marker = sample / ".kafka_cleanshutdown"
    original = marker.read_bytes()
    env = dict(os.environ, KAFKALOG_CRASH_AT="writer.appended:3")
    p = subprocess.run([sys.executable, "-m", "kafkalog_cli", "append", str(sample), "--topic",
                        "demo", "--partition", "0", "--input-format", "lines",
                        "--batch-records", "10"], input=_lines(100), env=env,
                       capture_output=True)
    assert p.returncode == 99, p.stderr
    assert not marker.exists()
    assert run("recover", sample).code in (0, 1)
    # a finished append puts back what the broker wrote there (its broker epoch included)
    marker.write_bytes(original)
    r = run("append", sample, "--topic", "demo", "--partition", "0", "--input-format",
            "lines", stdin=_lines(5))
    assert r.code == 0, r.err
    assert marker.read_bytes() == original


def test_append_keeps_the_log_start_offset_a_broker_checkpointed(sample):
    ckpt = sample / "log-start-offset-checkpoint"
    ckpt.write_text("0\n1\ndemo 0 150\n")  # as DeleteRecords(demo-0, 150) leaves it
    r = run("append", sample, "--topic", "demo", "--partition", "0", "--input-format",
            "lines", stdin=_lines(3))
    assert r.code == 0, r.err
    assert ckpt.read_text().split("\n")[2] == "demo 0 150"


def test_append_drops_a_log_start_offset_past_the_old_log_end(sample):
    # a stale entry (its partition dir was removed): kept, a broker's loader would delete
    # the whole new log as below its log start
    ckpt = sample / "log-start-offset-checkpoint"
    ckpt.write_text("0\n2\ndemo 0 5\ngone 0 7\n")
    shutil.rmtree(sample / "demo-0")
    r = run("append", sample, "--topic", "demo", "--partition", "0", "--input-format",
            "lines", stdin=_lines(3))
    assert r.code == 0, r.err
    assert ckpt.read_text().split("\n")[1:3] == ["1", "gone 0 7"]


def test_append_keeps_an_empty_marker_empty(sample):
    # brokers before 3.5 write an empty .kafka_cleanshutdown
    marker = sample / ".kafka_cleanshutdown"
    marker.write_bytes(b"")
    assert run("append", sample, "--topic", "demo", "--partition", "0", "--input-format",
               "lines", stdin=_lines(2)).code == 0
    assert marker.read_bytes() == b""


@pytest.mark.parametrize("name", ["recovery-point-offset-checkpoint",
                                  "replication-offset-checkpoint",
                                  "log-start-offset-checkpoint"])
def test_append_refuses_a_corrupt_checkpoint_before_it_writes(sample, name):
    (sample / name).write_text("7\nnot a checkpoint\n")
    before = {p: p.read_bytes() for p in sample.rglob("*") if p.is_file()}
    r = run("append", sample, "--topic", "demo", "--partition", "0", "--input-format",
            "lines", stdin=_lines(2))
    assert r.code == 4, r.err
    assert r.err.startswith(f"kafkalog: error: {sample / name}")
    assert {p: p.read_bytes() for p in sample.rglob("*") if p.is_file()} == before
