"""A run of retain or compact stopped at any step, then the same command run again (what an
operator does first): the dir ends as an uninterrupted run leaves it, and every file the
runs removed is in the quarantine, byte for byte."""

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from kafkalog_cli.storage.disk import naming
from tests.cli.run import run_forked as run
from tests.faults.test_recover_retain import crash_points, records, run_env

RETAIN = ["retain", "--retention-ms", "100000", "--now", "1700000200000"]
COMPACT = ["compact", "--all", "--now", "1700000300000", "--force"]


def _digests(root: Path, segments_only: bool = False) -> set[str]:
    """The files' SHA-1s (only the partitions' segment files: checkpoints are rewritten)."""
    return {hashlib.sha1(p.read_bytes()).hexdigest() for p in root.rglob("*")
            if p.is_file() and not (segments_only and naming.parse_file_name(p.name).offset
                                    is None)}


def _segment_files(d: Path) -> dict[str, list[str]]:
    """Each partition's segment file names, by base offset."""
    out: dict[str, list[str]] = {}
    for part in sorted(p for p in d.iterdir() if p.is_dir() and not p.name.startswith(".")):
        for f in sorted(part.iterdir()):
            fn = naming.parse_file_name(f.name)
            if fn.offset is not None:
                out.setdefault(f"{part.name}/{fn.offset}", []).append(f.name)
    return out


@pytest.mark.parametrize("args", [RETAIN, COMPACT], ids=["retain", "compact"])
def test_a_stopped_run_then_the_same_command_loses_nothing_and_leaves_nothing(
        args: list[str], tmp_path: Path) -> None:
    src = tmp_path / "src" / "ld"
    assert run("generate", src, "--topic", "t", "--partitions", "2", "--records", "3000",
               "--keys", "60", "--segment-bytes", "16384", "--seed", "7").code == 0
    ref = tmp_path / "ref" / "ld"
    shutil.copytree(src, ref)
    assert run(*args, ref, "-j", "1").code == 0
    want = records(ref)
    assert want != records(src)  # the run has work to do
    originals = _digests(src, segments_only=True)
    probe = tmp_path / "probe" / "ld"
    shutil.copytree(src, probe)
    points = [(n, k) for n, k in crash_points(["-m", "kafkalog_cli", *args, probe], tmp_path)
              if n.startswith(("retain.to-deleted", "replace.", "quarantine."))]
    assert {n for n, _ in points} >= ({"retain.to-deleted.after"} if args is RETAIN
                                      else {"replace.renamed", "replace.old-to-deleted.after"})
    for name, nth in points[::max(1, len(points) // 12)]:  # a dozen steps, spread out
        d = tmp_path / "c" / f"{name}-{nth}"
        shutil.copytree(src, d)
        p = run_env(["-m", "kafkalog_cli", *args, d], {"KAFKALOG_CRASH_AT": f"{name}:{nth}"})
        assert p.returncode == 99, (name, nth, p.stderr)
        r = run(*args, d, "-j", "2")
        if r.code == 8 and "run `kafkalog recover` first" in r.err:  # a replacement mid-way
            assert run("recover", d).code in (0, 1)
            r = run(*args, d, "-j", "2")
        assert r.code == 0, (name, nth, r.err)
        assert records(d) == want, (name, nth)
        # the same files as the uninterrupted run's: no `.deleted` left, and no index or
        # snapshot without its segment's .log (a broker would delete it; no run sees it again)
        assert _segment_files(d) == _segment_files(ref), (name, nth)
        # whatever is gone from the dir is in the quarantine, as it was
        gone = originals - _digests(d)
        assert gone and gone <= _digests(tmp_path / "c" / ".kafkalog-quarantine"), (name, nth)
        shutil.rmtree(tmp_path / "c")


def test_recover_stopped_after_its_cut_then_run_again_removes_the_snapshot_past_the_end(
        tmp_path: Path) -> None:
    # the stopped run cut the log before it removed the snapshot at the old log end; the
    # rerun found nothing to cut and left the snapshot, and verify said nothing of it
    d = tmp_path / "ld"
    assert run("generate", d, "--topic", "t", "--partitions", "2", "--records", "2000",
               "--segment-bytes", "65536", "--seed", "7").code == 0
    log = sorted((d / "t-1").glob("*.log"))[-1]
    with open(log, "r+b") as f:
        f.truncate(log.stat().st_size - 37)  # a torn last batch
    (d / ".kafka_cleanshutdown").unlink()
    snaps = {p.name for p in (d / "t-1").glob("*.snapshot")}
    p = run_env(["-m", "kafkalog_cli", "recover", d, "--full", "-j", "1"],
                {"KAFKALOG_CRASH_AT": "recover.truncate.after:1"})
    assert p.returncode == 99, p.stderr
    v = run("verify", d, "--format", "json")
    past = [f for f in json.loads(v.out)["findings"] if f["code"] == "SNAPSHOT_PAST_END"]
    assert len(past) == 1 and past[0]["file"].endswith("00000000000000002000.snapshot")
    r = run("recover", d, "--full", "-j", "2")
    assert r.code == 1, r.err
    assert {p.name for p in (d / "t-1").glob("*.snapshot")} == \
        snaps - {"00000000000000002000.snapshot"}
    v = run("verify", d, "--format", "json")
    assert v.code == 0 and not [f for f in json.loads(v.out)["findings"]
                                if f["severity"] != "info"], v.out
    assert run("recover", d).code == 0
