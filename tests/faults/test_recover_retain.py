"""recover and retain: crash at every step, damaged dirs, the rules table, hostile dirs.

kafkalog runs in processes forked from this one (run_forked): each its own process, which
a crash point ends with os._exit, without an interpreter's start-up for each of hundreds."""

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from kafkalog_cli.storage.disk.logdir import open_target
from tests.cli.run import run_forked as run
from tests.faults.surgery import append_bytes, batch_positions, flip_byte, segments, shrink

DRIVER = Path(__file__).with_name("crash_driver.py")


def records(path: Path) -> list[tuple]:
    out = []
    for part in open_target(path).partitions():
        for seg in part.segments:
            for _pos, b in seg.batches(on_damage=lambda d: None):
                if b.is_valid():
                    out += [(part.topic, part.partition, r.offset, r.key, r.value)
                            for r in b.records()]
    return out


def run_env(args, env_extra, stdin=b""):
    """`python ARGS` with these environment variables added: returncode, stdout, stderr."""
    args = [str(a) for a in args]
    if args[:2] == ["-m", "kafkalog_cli"]:
        r = run(*args[2:], stdin=stdin, env=env_extra)
        return subprocess.CompletedProcess(args, r.code, r.out, r.err.encode())
    env = dict(os.environ, **env_extra)
    return subprocess.run([sys.executable, *args], capture_output=True, env=env,
                          input=stdin, timeout=120)


def crash_points(args, tmp_path) -> list[tuple[str, int]]:
    listing = tmp_path / "points.txt"
    p = run_env(args, {"KAFKALOG_CRASH_LIST": str(listing)})
    assert p.returncode in (0, 1), p.stderr
    names = listing.read_text().split() if listing.exists() else []
    seen: Counter[str] = Counter()
    points = []
    for n in names:
        seen[n] += 1
        points.append((n, seen[n]))
    return points


def assert_clean(path: Path) -> None:
    r = run("verify", path, "--format", "json")
    errs = [f for f in json.loads(r.out)["findings"] if f["severity"] == "error"]
    assert r.code == 0 and not errs, errs


def damaged_copy(sample: Path, tmp: Path) -> Path:
    d = tmp / "ld"
    shutil.copytree(sample, d)
    shrink(segments(d / "demo-1")[-1].log_path, 9)            # torn tail
    append_bytes(segments(d / "demo-0")[-1].log_path, bytes(300))  # zero tail
    os.remove(segments(d / "legacy-v1-0")[0].path(".index"))  # missing index
    (d / "demo-0" / "00000000000000777777.timeindex").write_bytes(b"")  # orphan
    return d


def test_recover_matrix_crash_at_every_step_then_recover(sample, tmp_path):
    base = damaged_copy(sample, tmp_path / "base")
    durable = records(base)  # every valid batch: what must survive
    points = crash_points(["-m", "kafkalog_cli", "recover", base / "..", ], tmp_path) \
        if False else crash_points(["-m", "kafkalog_cli", "recover", damaged_copy(
            sample, tmp_path / "probe")], tmp_path)
    assert len(points) >= 8
    for name, nth in points:
        d = damaged_copy(sample, tmp_path / f"c-{name}-{nth}")
        p = run_env(["-m", "kafkalog_cli", "recover", d], {"KAFKALOG_CRASH_AT": f"{name}:{nth}"})
        assert p.returncode == 99, (name, nth, p.stderr)
        r = run("recover", d)
        assert r.code in (0, 1), (name, nth, r.err)
        assert_clean(d)
        assert records(d) == durable, (name, nth)
        assert run("recover", d).code == 0  # and nothing left to do


def test_replacement_protocol_crash_matrix(sample, tmp_path):
    pdir0 = tmp_path / "ref" / "demo-0"
    shutil.copytree(sample, tmp_path / "ref")
    before = records(pdir0)
    p = run_env([DRIVER, pdir0], {})
    assert p.returncode == 0, p.stderr
    after = records(pdir0)
    assert len(after) < len(before)  # the stand-in cleaner really changed something
    points = crash_points([DRIVER, tmp_path / "probe" / "demo-0"],
                          tmp_path) if shutil.copytree(sample, tmp_path / "probe") else []
    assert {n for n, _ in points} >= {"replace.cleaned-to-swap.after", "replace.swapped",
                                      "replace.old-to-deleted.after", "replace.strip-swap.after",
                                      "replace.renamed"}
    for name, nth in points:
        d = tmp_path / f"c-{name}-{nth}"
        shutil.copytree(sample, d)
        p = run_env([DRIVER, d / "demo-0"], {"KAFKALOG_CRASH_AT": f"{name}:{nth}"})
        assert p.returncode == 99, (name, nth, p.stderr)
        r = run("recover", d)
        assert r.code in (0, 1), (name, nth, r.err)
        assert_clean(d)
        got = records(d / "demo-0")
        assert got in (before, after), (name, nth)  # old or new, never a mix


def test_retain_crash_matrix(sample, tmp_path):
    args = ["retain", "--retention-ms", "1000", "--now", "1700000005500"]
    full = records(sample / "demo-0")
    points = crash_points(["-m", "kafkalog_cli", *args, tmp_path / "probe"], tmp_path) \
        if shutil.copytree(sample, tmp_path / "probe") else []
    assert any(n.startswith("retain.") for n, _ in points)
    for name, nth in points:
        d = tmp_path / f"c-{name}-{nth}"
        shutil.copytree(sample, d)
        p = run_env(["-m", "kafkalog_cli", *args, d], {"KAFKALOG_CRASH_AT": f"{name}:{nth}"})
        assert p.returncode == 99, (name, nth, p.stderr)
        assert run("recover", d).code in (0, 1)
        assert_clean(d)
        got = records(d / "demo-0")
        assert got == full[len(full) - len(got):]  # a suffix: retention only removes a prefix


@pytest.mark.parametrize("point", ["recover.truncate.before", "recover.index.before",
                                   "quarantine.remove.before"])
def test_a_full_disk_mid_recover_fails_cleanly_and_recover_completes(sample, tmp_path, point):
    d = damaged_copy(sample, tmp_path)
    durable = records(d)
    p = run_env(["-m", "kafkalog_cli", "recover", d], {"KAFKALOG_FAIL_AT": point})
    assert p.returncode == 8 and b"Traceback" not in p.stderr
    assert p.stderr.decode().strip().splitlines()[-1].startswith("kafkalog: error:")
    assert run("recover", d).code == 1
    assert_clean(d)
    assert records(d) == durable


def test_quarantine_holds_exactly_the_cut_bytes_and_removed_files(sample, tmp_path):
    d = tmp_path / "ld"
    shutil.copytree(sample, d)
    log = segments(d / "demo-1")[-1].log_path
    original = log.read_bytes()
    last_pos, _ = batch_positions(log)[-1]
    shrink(log, 5)
    q = tmp_path / "q"
    r = run("recover", d, "--quarantine", q)
    assert r.code == 1, r.err
    [stamp] = list(q.iterdir())
    manifest = [json.loads(x) for x in (stamp / "manifest.jsonl").read_text().splitlines()]
    cut = [m for m in manifest if m["action"] == "cut"]
    assert [(m["start"], m["end"]) for m in cut] == [(last_pos, len(original) - 5)]
    assert Path(cut[0]["to"]).read_bytes() == original[last_pos:-5]
    assert log.read_bytes() == original[:last_pos]
    moved = [m for m in manifest if m["action"] == "moved"]
    for m in moved:
        assert Path(m["to"]).exists() and not Path(m["from"]).exists()


def test_mid_segment_corruption_is_refused_without_force(sample, tmp_path):
    d = tmp_path / "ld"
    shutil.copytree(sample, d)
    log = segments(d / "demo-0")[0].log_path
    pos, _ = batch_positions(log)[2]
    flip_byte(log, pos + 40)
    before = {p: p.read_bytes() for p in d.rglob("*") if p.is_file()}
    r = run("recover", d, "--full")
    assert r.code == 4
    assert "valid data follows" in r.text and "--force" in r.text
    assert {p: p.read_bytes() for p in d.rglob("*") if p.is_file()} == before
    r = run("recover", d, "--full", "--force", "--dry-run")
    assert r.code == 4 and "would truncate" in r.text
    r = run("recover", d, "--full", "--force")
    assert r.code == 1
    assert_clean(d)
    assert len(batch_positions(log)) == 2


def test_dry_run_changes_nothing_and_second_run_is_a_no_op(sample, tmp_path):
    d = damaged_copy(sample, tmp_path)
    before = {p: p.read_bytes() for p in d.rglob("*") if p.is_file()}
    r = run("recover", d, "--dry-run", "--format", "json")
    assert r.code == 4
    plan = json.loads(r.out)
    kinds = Counter(a["action"] for p in plan["partitions"] for a in p["actions"])
    assert kinds["truncate"] == 2 and kinds["rebuild-index"] >= 1 and kinds["remove"] >= 1
    assert {p: p.read_bytes() for p in d.rglob("*") if p.is_file()} == before
    assert run("recover", d).code == 1
    assert run("recover", d).code == 0


def test_a_symlinked_log_is_reported_not_truncated(sample, tmp_path):
    d = tmp_path / "ld"
    shutil.copytree(sample, d)
    log = segments(d / "demo-1")[-1].log_path
    outside = tmp_path / "outside.log"
    outside.write_bytes(log.read_bytes()[:-5])
    log.unlink()
    log.symlink_to(outside)
    r = run("recover", d)
    assert r.code == 8 and "symlink" in r.err
    assert outside.stat().st_size == len(outside.read_bytes())
    assert Path(os.path.realpath(log)) == outside


# -- retention rules (UnifiedLog.deleteOldSegments), on a generated dir ----------------------

def make_log(tmp_path, timestamps_per_segment, hw=None):
    from kafkalog_cli.codec.batch_v2 import encode_batch
    from kafkalog_cli.storage.disk.checkpoints import update_offsets
    from kafkalog_cli.storage.maintenance.writer import LogConfig, PartitionWriter

    d = tmp_path / "ld"
    with PartitionWriter(d / "t-0", "t", 0, LogConfig(), now_ms=0) as w:
        for n, stamps in enumerate(timestamps_per_segment):
            if n:
                w.roll(w.next_offset)
            for ts in stamps:
                w.append(encode_batch([(w.next_offset, ts, None, b"v" * 100, [])]))
        leo = w.next_offset
    update_offsets(d / "replication-offset-checkpoint", {("t", 0): leo if hw is None else hw})
    return d


def bases(d):
    return [s.base_offset for s in open_target(d / "t-0").partition.segments]


@pytest.mark.parametrize(("now", "expected"), [
    (1000 + 500, [0, 2, 4]),       # now - 1000 == 500 is not > 500: nothing goes (strict)
    (1000 + 501, [2, 4]),          # segment 0 (largest ts 1000) goes
    (3000 + 501, [4]),
    (10_000, [6]),                 # every segment qualifies: roll an empty one at the LEO
])
def test_time_retention_is_strict_and_rolls_when_all_go(tmp_path, now, expected):
    d = make_log(tmp_path, [[900, 1000], [2000, 3000], [3500, 4000]])
    r = run("retain", d, "--retention-ms", "500", "--now", now, "--no-quarantine")
    assert r.code == 0, r.err
    assert bases(d) == expected
    assert_clean(d)


def test_time_retention_stops_at_the_first_survivor(tmp_path):
    # segment 2 is old but behind a young one
    d = make_log(tmp_path, [[1000], [9000], [2000], [9500]])
    run("retain", d, "--retention-ms", "100", "--now", "5000", "--no-quarantine")
    assert bases(d) == [1, 2, 3]


def test_retention_never_passes_the_high_watermark(tmp_path):
    d = make_log(tmp_path, [[1000, 1000], [1000, 1000], [1000]], hw=3)
    run("retain", d, "--retention-ms", "1", "--now", "99999", "--no-quarantine")
    assert bases(d) == [2, 4]  # segment 2 holds offset 3 >= HW, so it and later stay
    run("retain", d, "--retention-ms", "1", "--now", "99999", "--no-quarantine",
        "--ignore-high-watermark")
    assert bases(d) == [5]


def test_size_retention_keeps_the_log_at_or_above_the_limit(tmp_path):
    d = make_log(tmp_path, [[1], [2], [3], [4]])
    size = open_target(d / "t-0").partition.segments[0].size
    run("retain", d, "--retention-bytes", 2 * size, "--no-quarantine")
    assert bases(d) == [2, 3]
    run("retain", d, "--retention-bytes", 2 * size, "--no-quarantine")
    assert bases(d) == [2, 3]  # size == retention.bytes: the walk runs but nothing fits


def test_log_start_offset_and_checkpoint(tmp_path):
    d = make_log(tmp_path, [[1, 2], [3, 4], [5]])
    run("retain", d, "--log-start-offset", "3", "--no-quarantine")
    assert bases(d) == [2, 4]  # segment 2 holds offset 2 < 3: it stays whole
    assert "t 0 2" in (d / "log-start-offset-checkpoint").read_text()


def test_delete_delay_keeps_deleted_files_until_a_later_run(tmp_path):
    d = make_log(tmp_path, [[1], [2], [3]])
    run("retain", d, "--retention-ms", "1", "--now", "100", "--delete-delay", "3600000",
        "--no-quarantine")
    assert sorted(p.name for p in (d / "t-0").glob("*.deleted"))
    run("retain", d, "--delete-delay", "0", "--no-quarantine")
    assert not list((d / "t-0").glob("*.deleted"))


def test_future_timestamps_fall_back_to_mtime(tmp_path):
    d = make_log(tmp_path, [[10**15], [2]])
    r = run("retain", d, "--retention-ms", "1000", "--now", "5000000", "--max-future-ms", "1000",
            "--no-quarantine")
    assert "in the future" in r.text
    assert bases(d) == [0, 1]  # the file was just written: its mtime is young
    log0 = open_target(d / "t-0").partition.segments[0].log_path
    os.utime(log0, (1, 1))  # an old file whose records claim to come from the far future
    r = run("retain", d, "--retention-ms", "1000", "--no-quarantine", "--max-future-ms", "1000")
    assert bases(d) == [2]  # both old enough now (the second by its real timestamp): rolled


def test_retain_is_silent_when_nothing_happens_and_idempotent(tmp_path):
    d = make_log(tmp_path, [[1], [2]])
    r = run("retain", d, "--retention-ms", "10", "--now", "5")
    assert r.code == 0 and r.out == b""
    r = run("retain", d, "--retention-ms", "1", "--now", "100", "--format", "json")
    assert json.loads(r.out)["partitions"][0]["deleted"][0]["baseOffset"] == 0
    assert run("retain", d, "--retention-ms", "1", "--now", "100").out == b""


DRILLS = {  # damage -> (what verify must report, whether recover needs --force)
    "torn-tail": ({"LOG_TORN_TAIL"}, False),
    "bit-flip": ({"LOG_CRC_MISMATCH"}, True),
    "zero-tail": ({"LOG_ZERO_TAIL"}, False),
    "garbage-tail": ({"LOG_GARBAGE_TAIL"}, False),
    "missing-index": ({"INDEX_MISSING"}, False),
    "swap-leftover": ({"LEFTOVER_SWAP"}, False),
    "cleaned-leftover": ({"LEFTOVER_CLEANED"}, False),
    "deleted-leftover": ({"LEFTOVER_DELETED"}, False),
    "orphan-index": ({"ORPHAN_INDEX"}, False),
    "bad-checkpoint": ({"CHECKPOINT_CORRUPT"}, False),
}


@pytest.mark.parametrize("kind", sorted(DRILLS))
def test_generated_drills_are_found_and_repaired(tmp_path, kind):
    d = tmp_path / "ld"
    r = run("generate", d, "--segment-bytes", "8000", "--damage", kind)
    assert r.code == 0, r.err
    codes, force = DRILLS[kind]
    v = json.loads(run("verify", d, "--format", "json").out)
    assert codes <= {f["code"] for f in v["findings"] if f["severity"] != "info"}
    args = ["recover", d, "--full"] + (["--force"] if force else [])
    assert run(*args).code == 1
    assert_clean(d)
    assert run(*args).code == 0
