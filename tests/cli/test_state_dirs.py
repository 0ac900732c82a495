"""A deleted topic's `<topic>-<p>.<uuid>-delete` dir (a broker leaves one when a topic is
deleted and created again) beside the live `<topic>-<p>`: the mutating commands must not
take it for the live partition. The checkpoints' entry for the topic-partition is the live
one's: retention and the cleaner run on the live dir only, and recover writes no entry for
the copy (verify reads the checkpoints so too)."""

import json
import shutil
from pathlib import Path

import pytest

from kafkalog_cli.storage.disk.checkpoints import read_offsets
from tests.cli.run import run

NOW = 1_800_000_000_000
ROOT_FILES = ("log-start-offset-checkpoint", "recovery-point-offset-checkpoint",
              "replication-offset-checkpoint", "cleaner-offset-checkpoint")


@pytest.fixture
def two_incarnations(tmp_path: Path) -> Path:
    """Live s-0: 600 records written at NOW; beside it, the old s-0 (1 000 records written
    around 1 700 000 000 000) as the broker left it, renamed -delete."""
    old = tmp_path / "old"
    assert run("generate", old, "--topic", "s", "--records", "1000", "--keys", "50",
               "--segment-bytes", "20000").code == 0
    lines = "".join(json.dumps({"key": f"k{i % 50}", "value": "v" * 50}) + "\n"
                    for i in range(600))
    (tmp_path / "recs.jsonl").write_text(lines)
    ld = tmp_path / "ld"
    assert run("append", ld, "--create", "--topic", "s", "--partition", "0", "--input",
               tmp_path / "recs.jsonl", "--now", NOW, "--segment-bytes", "8000").code == 0
    shutil.copytree(old / "s-0", ld / "s-0.0123456789abcdef0123456789abcdef-delete")
    return ld


def _state(ld: Path) -> tuple[dict[str, dict[tuple[str, int], int]], list[str], list[str]]:
    cps = {n: read_offsets(ld / n) for n in ROOT_FILES if (ld / n).exists()}
    return cps, sorted(p.name for p in (ld / "s-0").iterdir()), sorted(
        p.name for p in (ld / "s-0.0123456789abcdef0123456789abcdef-delete").iterdir())


@pytest.mark.parametrize("args", [
    ["retain", "--retention-ms", "86400000", "--now", NOW],  # the old data is a year older
    ["retain", "--now", NOW],
    ["compact", "--all", "--force", "--now", NOW],
], ids=["retain-ms", "retain", "compact"])
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_retain_and_compact_leave_a_deleted_topics_copy_and_the_live_partition_alone(
        two_incarnations: Path, args: list[object], jobs: str) -> None:
    ld = two_incarnations
    cps, live, copy = _state(ld)
    r = run(*args, ld, "-j", jobs)
    assert r.code == 0, r.err
    assert "-delete: " in r.out.decode() and "is the live partition's" in r.out.decode()
    after_cps, after_live, after_copy = _state(ld)
    assert after_copy == copy
    if args[0] == "retain":  # the live data is new: nothing of it goes
        assert (after_cps, after_live) == (cps, live)
    assert after_cps.get("log-start-offset-checkpoint", {}).get(("s", 0), 0) == 0
    assert run("verify", ld).code == 0


def test_recover_writes_no_checkpoint_entry_for_the_copy(two_incarnations: Path) -> None:
    ld = two_incarnations
    before = read_offsets(ld / "recovery-point-offset-checkpoint")
    assert before[("s", 0)] == 600
    r = run("recover", ld, "--full")
    assert r.code in (0, 1), r.err
    assert read_offsets(ld / "recovery-point-offset-checkpoint")[("s", 0)] == 600  # not 1000
    v = run("verify", ld, "--format", "json")
    assert v.code == 0 and not [f for f in json.loads(v.out)["findings"]
                                if f["severity"] != "info"], v.out


def test_two_dirs_of_one_topic_partition_are_an_error_and_nothing_changes_them(
        two_incarnations: Path) -> None:
    # s-0 and s-00 parse to the same partition, as Java's parseInt reads them; a broker
    # refuses to start on both (duplicate log directories)
    ld = two_incarnations
    shutil.rmtree(ld / "s-0.0123456789abcdef0123456789abcdef-delete")
    shutil.copytree(ld / "s-0", ld / "s-00")
    before = _listing(ld)
    v = run("verify", ld, "--format", "json")
    dup = [f for f in json.loads(v.out)["findings"] if f["code"] == "PARTITION_DUPLICATE"]
    assert v.code == 4 and len(dup) == 1 and dup[0]["file"] == str(ld / "s-00")
    for args in (["retain", "--retention-ms", "1", "--now", NOW], ["recover", "--full"],
                 ["compact", "--all", "--force", "--now", NOW]):
        r = run(*args, ld)
        assert (r.code, r.err) == (8, f"kafkalog: error: {ld / 's-00'}: the same "
                                      f"topic-partition as {ld / 's-0'} (a broker refuses to "
                                      "start on both); move one out of the log dir and run "
                                      "again\n"), args
        assert _listing(ld) == before


def _listing(ld: Path) -> dict[str, bytes]:
    return {str(p.relative_to(ld)): p.read_bytes() for p in sorted(ld.rglob("*"))
            if p.is_file()}


def test_recover_reports_every_offset_it_cuts(tmp_path):
    """recover's truncate row: `offsets` runs from the new log end (the damaged batch's base
    offset: it goes too) to the last offset cut, `records` counts the whole batches after
    the damage. The batch boundaries are read here from the bytes themselves."""
    import struct

    out = tmp_path / "ld"
    assert run("generate", str(out), "--records", "400", "--batch-records", "20",
               "--segment-bytes", 1 << 20).code == 0
    log = out / "demo-0" / "00000000000000000000.log"
    data = bytearray(log.read_bytes())
    starts, pos = [], 0
    while pos < len(data):
        starts.append(pos)
        pos += 12 + struct.unpack_from(">i", data, pos + 8)[0]
    base = [struct.unpack_from(">q", data, p)[0] for p in starts]
    assert len(starts) == 20 and base[5] == 100
    data[starts[5] + 70] ^= 0xFF  # in batch 5's records: its CRC fails
    log.write_bytes(bytes(data))
    r = run("recover", str(out), "--full", "--force", "--format", "json")
    assert r.code in (1, 5), r.text
    cut = [a for a in json.loads(r.out)["partitions"][0]["actions"] if a["action"] == "truncate"]
    assert cut and cut[0]["offsets"] == [100, 399] and cut[0]["records"] == 280
    assert cut[0]["positions"][0] == starts[5] and log.stat().st_size == starts[5]


def test_recover_exit_codes_are_or_ed(tmp_path):
    """One partition repaired and one left (a cut refused without --force): 1 | 4 = 5, so a
    script sees that the disk changed; each alone gives 1 and 4."""
    import struct

    for name in ("fixed", "left"):
        assert run("generate", tmp_path / name, "--records", "200", "--batch-records", "20",
                   "--segment-bytes", 1 << 20).code == 0
    (tmp_path / "fixed" / "demo-0" / "00000000000000000000.index").unlink()  # rebuilt: 1
    log = tmp_path / "left" / "demo-0" / "00000000000000000000.log"
    data = bytearray(log.read_bytes())
    data[12 + struct.unpack_from(">i", data, 8)[0] + 70] ^= 0xFF  # 2nd of 10 batches: refused
    log.write_bytes(bytes(data))
    parts = [tmp_path / "fixed" / "demo-0", tmp_path / "left" / "demo-0"]
    assert run("recover", *parts).code == 5
    assert run("recover", parts[0]).code == 0 and run("recover", parts[1]).code == 4


def test_generate_force_never_replaces_a_locked_dir_or_a_links_target(tmp_path):
    """--force replaces OUT, but not a log dir whose .lock a broker holds (exit 8, nothing
    removed), and for a symlink OUT only the link goes, never the dir it points to."""
    import fcntl
    import os

    live = tmp_path / "live"
    assert run("generate", live, "--records", "5").code == 0
    files = sorted(p.name for p in (live / "demo-0").iterdir())
    fd = os.open(live / ".lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX)  # as a broker's JVM holds it
        r = run("generate", live, "--force", "--records", "1")
        assert r.code == 8 and "holds the log dir lock" in r.err
        assert sorted(p.name for p in (live / "demo-0").iterdir()) == files
    finally:
        os.close(fd)
    link = tmp_path / "link"
    link.symlink_to(live)
    assert run("generate", link, "--force", "--records", "1").code == 0
    assert not link.is_symlink() and sorted(p.name for p in (live / "demo-0").iterdir()) == files
