"""compact against a separate, obviously-correct model of Kafka's cleaner rules."""

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from kafka.record.memory_records import MemoryRecords

from kafkalog_cli.codec.control import ABORT, parse_control
from kafkalog_cli.storage.disk.logdir import open_target
from tests.cli.run import run

NOW = 1_700_001_000_000
DAY = 86_400_000


def raw_records(pdir: Path) -> list[dict]:
    """Every record with what the model needs, straight from the batches."""
    out = []
    for seg in open_target(pdir).partition.segments:
        for _pos, b in seg.batches():
            for r in b.records():
                out.append({"offset": r.offset, "key": r.key, "value": r.value,
                            "ts": r.timestamp, "pid": b.producer_id, "txn": b.is_transactional,
                            "control": b.is_control,
                            "abort": b.is_control and parse_control(r.key, r.value).type == ABORT})
    return out


def model(records: list[dict], uncleanable: int, drop_tombstones: bool) -> list[tuple]:
    """Latest record per key below `uncleanable`; keyless and aborted data dropped;
    tombstones kept unless their horizon has passed; everything from `uncleanable` on kept."""
    aborted_offsets = set()
    pending: dict[int, list[int]] = {}
    for r in records:
        if r["control"]:
            offs = pending.pop(r["pid"], [])
            if r["abort"]:
                aborted_offsets.update(offs)
        elif r["txn"]:
            pending.setdefault(r["pid"], []).append(r["offset"])
    data = [r for r in records if not r["control"]]
    latest = {}
    for r in data:
        if r["offset"] < uncleanable and r["key"] is not None and \
                r["offset"] not in aborted_offsets:
            latest[r["key"]] = r["offset"]
    # Cleaner.shouldRetainRecord keeps anything past the map's latestOffset, but the map
    # moves that to each batch's last offset and each segment's end as it is built
    # (buildOffsetMapForSegment): when the map does not fill, a round judges all it rewrites
    keep = []
    for r in data:
        if r["offset"] >= uncleanable:
            keep.append(r)
        elif r["offset"] in aborted_offsets:
            continue  # aborted batches are discarded whole, before any record rule
        elif (r["key"] is not None and latest.get(r["key"]) == r["offset"] and
                not (drop_tombstones and r["value"] is None)):
            keep.append(r)
    return [(r["offset"], r["key"], r["value"], r["ts"]) for r in keep]


def data_of(pdir: Path) -> list[tuple]:
    return [(r["offset"], r["key"], r["value"], r["ts"]) for r in raw_records(pdir)
            if not r["control"]]


def active_base(pdir: Path) -> int:
    return open_target(pdir).partition.segments[-1].base_offset


def assert_clean_and_kafka_python_reads(ld: Path) -> None:
    r = run("verify", ld, "--format", "json")
    assert r.code == 0, [f for f in json.loads(r.out)["findings"] if f["severity"] == "error"]
    for log in ld.rglob("*.log"):
        data = log.read_bytes()
        mr = MemoryRecords(data)
        n = 0
        while (b := mr.next_batch()) is not None:
            assert b.validate_crc()
            list(b)
            n += 1
        assert n or not data


def gen(tmp: Path, seed: int, **kw) -> Path:
    rng = random.Random(seed)
    args = ["generate", tmp, "--records", str(kw.get("records", rng.randrange(300, 1500))),
            "--keys", str(kw.get("keys", rng.choice([1, 5, 40, 300]))),
            "--tombstones", str(rng.choice([0.0, 0.1, 0.3])),
            "--segment-bytes", str(kw.get("segment_bytes", rng.choice([4000, 12000, 40000]))),
            "--batch-records", str(rng.choice([1, 7, 30])), "--seed", str(seed)]
    for c in rng.sample(["none", "gzip", "snappy", "lz4", "zstd"], 2):
        args += ["--codec", c]
    if kw.get("transactions", rng.random() < 0.6):
        args.append("--transactions")
    if "magic" in kw:
        args += ["--magic", str(kw["magic"])]
    assert run(*args).code == 0
    return tmp


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("buffer", ["large", "tiny"])
def test_compact_agrees_with_the_model(tmp_path, seed, buffer):
    ld = gen(tmp_path / "ld", seed)
    pdir = ld / "demo-0"
    before = raw_records(pdir)
    u = active_base(pdir)
    args = ["compact", pdir, "--force", "--now", NOW, "--no-quarantine"]
    if buffer == "tiny":
        args += ["--dedupe-buffer-size", str(24 * 20)]  # 18 keys a round: many rounds
    r = run(*args, "--format", "json")
    assert r.code == 0, r.err
    rounds = json.loads(r.out)["partitions"][0]["rounds"]
    if buffer == "tiny" and len({x["key"] for x in before if x["key"] and not x["control"]}) > 18:
        assert len(rounds) > 1 and rounds[0]["mapFull"]
    assert data_of(pdir) == model(before, u, drop_tombstones=False)
    assert_clean_and_kafka_python_reads(ld)
    ckpt = (ld / "cleaner-offset-checkpoint").read_text().split()
    assert ckpt[-1] == str(u)


def test_keyless_records_after_the_last_key_of_a_round_go_too(tmp_path):
    """Kafka's map moves its latestOffset to each batch's last offset and to each segment's
    end, so the round judges its keyless tail (and drops it) instead of keeping everything
    past the last key it put; a round that fills the map stops at what it mapped."""
    ld = tmp_path / "ld"
    common = ["--create", "--topic", "t", "--partition", "0", "--segment-bytes", "1500",
              "--now", str(NOW)]
    lines = "".join(json.dumps({"key": f"k{i % 4}", "value": "v" * 40}) + "\n"
                    for i in range(12))
    lines += "".join(json.dumps({"key": None, "value": "x" * 40}) + "\n" for _ in range(12))
    assert run("append", ld, *common, "--batch-records", "3", stdin=lines.encode()).code == 0
    assert run("append", ld, *common, stdin=b'{"key": "last", "value": "z"}\n').code == 0
    pdir = ld / "t-0"
    before, u = raw_records(pdir), active_base(pdir)
    assert any(r["key"] is None and r["offset"] < u for r in before)
    r = run("compact", pdir, "--force", "--now", NOW, "--no-quarantine")
    assert r.code == 0, r.err
    after = data_of(pdir)
    assert after == model(before, u, drop_tombstones=False)
    assert not any(k is None and o < u for o, k, _v, _t in after)


def test_tombstones_go_after_the_delete_horizon(tmp_path):
    ld = tmp_path / "ld"
    assert run("generate", ld, "--records", "600", "--keys", "20", "--tombstones", "0.3",
               "--segment-bytes", "1000000", "--seed", "3").code == 0
    pdir = ld / "demo-0"

    def more(n: int) -> None:
        # the first rewrite gives every batch holding a tombstone a horizon of NOW + 1 day
        extra = "".join(json.dumps({"key": f"new-{n}-{i}", "value": "x", "timestamp": NOW})
                        + "\n" for i in range(300)).encode()
        assert run("append", ld, "--topic", "demo", "--partition", "0", "--segment-bytes",
                   "4000", stdin=extra).code == 0

    more(0)  # rolls: the generated keys are now below the active segment, never to repeat
    u1 = active_base(pdir)
    assert run("compact", pdir, "--force", "--now", NOW, "--no-quarantine").code == 0
    horizon_now = {(o, k) for o, k, v, _t in data_of(pdir) if v is None and o < u1}
    assert horizon_now, "the seed must produce tombstones"
    more(1)
    before, u2 = raw_records(pdir), active_base(pdir)
    assert run("compact", pdir, "--force", "--now", NOW + DAY - 1, "--no-quarantine").code == 0
    assert data_of(pdir) == model(before, u2, drop_tombstones=False)  # 1 ms early: all stay
    more(2)
    before, u3 = raw_records(pdir), active_base(pdir)
    assert run("compact", pdir, "--force", "--now", NOW + DAY, "--no-quarantine").code == 0
    want = [t for t in model(before, u3, drop_tombstones=False) if (t[0], t[1]) not in horizon_now]
    assert data_of(pdir) == want  # horizon <= now: the first round's tombstones are gone
    assert len(want) < len(model(before, u3, drop_tombstones=False))


def test_offsets_and_producer_fields_survive(tmp_path):
    ld = gen(tmp_path / "ld", 5, transactions=True)
    pdir = ld / "demo-0"
    before = {r["offset"]: r for r in raw_records(pdir)}
    assert run("compact", pdir, "--force", "--now", NOW, "--no-quarantine").code == 0
    for r in raw_records(pdir):
        b = before[r["offset"]]
        assert (r["key"], r["value"], r["ts"], r["pid"], r["txn"]) == \
            (b["key"], b["value"], b["ts"], b["pid"], b["txn"])


def test_dry_run_reports_and_changes_nothing_and_ratio_is_honoured(tmp_path):
    ld = gen(tmp_path / "ld", 1)
    pdir = ld / "demo-0"
    before = {p: p.read_bytes() for p in ld.rglob("*") if p.is_file()}
    r = run("compact", pdir, "--dry-run", "--format", "json", "--now", NOW)
    assert r.code == 4
    rep = json.loads(r.out)["partitions"][0]
    assert rep["dirtyRatio"] > 0.5
    assert rep["rounds"][0]["recordsOut"] < rep["rounds"][0]["recordsIn"]
    assert {p: p.read_bytes() for p in ld.rglob("*") if p.is_file()} == before
    r = run("compact", pdir, "--min-cleanable-ratio", "1", "--now", NOW)
    assert r.code == 0 and "skipped" in r.text
    assert {p: p.read_bytes() for p in ld.rglob("*") if p.is_file()} == before


def test_a_log_dir_needs_topic_or_all(tmp_path):
    ld = gen(tmp_path / "ld", 2)
    r = run("compact", ld)
    assert r.code == 16 and "--topic" in r.err
    assert run("compact", ld, "--topic", "demo", "--force", "--now", NOW).code == 0


def test_compact_works_on_consumer_offsets_from_the_corpus(tmp_path, corpus):
    src = corpus / "william0423-zk-2.4"
    ld = tmp_path / "ld"
    shutil.copytree(src, ld)
    pdir = ld / "__consumer_offsets-28"
    before = raw_records(pdir)
    u = active_base(pdir)
    r = run("compact", pdir, "--force", "--now", NOW, "--no-quarantine")
    assert r.code == 0, r.err
    assert data_of(pdir) == model(before, u, drop_tombstones=False)


CRASH = ["replace.cleaned-to-swap.before", "replace.cleaned-to-swap.after", "replace.swapped",
         "replace.old-to-deleted.before", "replace.old-to-deleted.after",
         "replace.strip-swap.before", "replace.strip-swap.after", "replace.renamed",
         "quarantine.remove.before"]


@pytest.mark.parametrize("point", CRASH)
def test_crash_during_replacement_then_recover_is_old_or_new_never_a_mix(tmp_path, point):
    ld = gen(tmp_path / "ld", 7, records=800, keys=30, transactions=True)
    pdir = ld / "demo-0"
    old = data_of(pdir)
    new = model(raw_records(pdir), active_base(pdir), drop_tombstones=False)
    env = dict(os.environ, KAFKALOG_CRASH_AT=point)
    p = subprocess.run([sys.executable, "-m", "kafkalog_cli", "compact", str(pdir), "--force",
                        "--now", str(NOW)], env=env, capture_output=True)
    assert p.returncode == 99, p.stderr
    assert run("recover", ld).code in (0, 1)
    assert_clean_and_kafka_python_reads(ld)
    got = data_of(pdir)
    assert got in (old, new)
    kept = set(new)
    assert kept <= set(got)  # nothing the model keeps is ever lost
    # and compacting again finishes the job
    assert run("compact", pdir, "--force", "--now", str(NOW)).code == 0
    assert data_of(pdir) == new


def _batches(pdir):
    return [b for s in open_target(pdir).partition.segments for _p, b in s.batches()]


def test_last_batch_of_a_live_producer_stays_as_an_empty_batch(tmp_path):
    ld = tmp_path / "ld"
    common = ["--create", "--topic", "t", "--partition", "0", "--segment-bytes", "2000",
              "--now", str(NOW)]
    # producer 7 writes key k once; later plain records overwrite k, so 7's batch empties
    assert run("append", ld, *common, "--producer-id", "7", "--base-sequence", "40",
               stdin=b'{"key": "k", "value": "from-7"}\n').code == 0
    lines = "".join(json.dumps({"key": "k" if i % 2 else f"x{i}", "value": "v" * 50}) + "\n"
                    for i in range(200)).encode()
    assert run("append", ld, *common, "--batch-records", "5", stdin=lines).code == 0
    pdir = ld / "t-0"
    [before] = [b for b in _batches(pdir) if b.producer_id == 7]
    assert run("compact", pdir, "--force", "--now", str(NOW), "--no-quarantine").code == 0
    [after] = [b for b in _batches(pdir) if b.producer_id == 7]
    assert after.count == 0 and after.size == 61  # header only, as DefaultRecordBatch writes
    assert (after.base_offset, after.last_offset, after.base_sequence, after.producer_epoch,
            after.max_timestamp) == (before.base_offset, before.last_offset,
                                     before.base_sequence, before.producer_epoch,
                                     before.max_timestamp)
    assert after.base_timestamp == -1 and after.is_valid()
    assert_clean_and_kafka_python_reads(ld)


def test_an_aborted_transaction_goes_data_first_then_its_marker_after_the_horizon(tmp_path):
    ld = tmp_path / "ld"
    common = ["--create", "--topic", "t", "--partition", "0", "--segment-bytes", "2000",
              "--now", str(NOW)]
    assert run("append", ld, *common, "--producer-id", "9", "--transactional", "--end-txn",
               "abort", stdin=b'{"key": "a", "value": "1"}\n{"key": "b", "value": "2"}\n').code == 0
    filler = "".join(json.dumps({"key": f"f{i}", "value": "v" * 80}) + "\n"
                     for i in range(100)).encode()
    assert run("append", ld, *common, "--producer-id", "11", "--batch-records", "5",
               stdin=filler).code == 0  # another producer, so 9's marker is not its last batch
    pdir = ld / "t-0"

    def markers():
        return [b for b in _batches(pdir) if b.is_control and b.producer_id == 9]

    assert len(markers()) == 1 and markers()[0].delete_horizon_ms is None

    def round_at(now: int, seq: int) -> None:
        assert run("append", ld, *common, "--producer-id", "11", "--base-sequence", str(seq),
                   "--batch-records", "5", stdin=filler).code == 0  # something dirty to clean
        assert run("compact", pdir, "--force", "--now", str(now), "--no-quarantine").code == 0

    # Rounds start two days on: producer 9 has expired (producer.id.expiration.ms, 1 day), so
    # its last batch is not kept as an empty batch for it (that would keep the marker too).
    t1 = NOW + 2 * DAY
    # round 1: the aborted data goes; its data was seen this round, so the marker stays as is
    assert run("compact", pdir, "--force", "--now", str(t1), "--no-quarantine").code == 0
    assert not [b for b in _batches(pdir) if b.producer_id == 9 and not b.is_control]
    [m] = markers()
    assert m.delete_horizon_ms is None
    # round 2: nothing of the transaction is left, so the marker gets a delete horizon
    round_at(t1 + 1, 100)
    [m] = markers()
    assert m.delete_horizon_ms == t1 + 1 + DAY
    # round 3, before the horizon: it stays; round 4, at the horizon: it goes
    round_at(t1 + DAY, 200)
    assert len(markers()) == 1
    round_at(t1 + 1 + DAY, 300)
    assert markers() == []
    assert_clean_and_kafka_python_reads(ld)


def test_a_many_round_compact_keeps_every_replaced_file_in_the_quarantine(tmp_path):
    # each round replaces the segment at base 0 again: every version must stay, none
    # overwritten by the next under the same name
    ld = gen(tmp_path / "ld", 3, records=1200, keys=300)
    pdir = ld / "demo-0"
    *cleanable, _active = sorted(pdir.glob("*.log"))
    before = {p.name: p.read_bytes() for p in cleanable}
    q = tmp_path / "q"
    r = run("compact", pdir, "--force", "--now", NOW, "--quarantine", q,
            "--dedupe-buffer-size", str(24 * 20), "--format", "json")
    assert r.code == 0, r.err
    assert len(json.loads(r.out)["partitions"][0]["rounds"]) > 2
    [stamp] = list(q.iterdir())
    manifest = [json.loads(x) for x in (stamp / "manifest.jsonl").read_text().split("\n") if x]
    moved = [m["to"] for m in manifest if m["action"] == "moved"]
    assert len(moved) == len(set(moved))
    assert all(Path(t).exists() for t in moved)
    kept = {p.read_bytes() for p in stamp.rglob("*") if p.is_file()}
    assert all(data in kept for data in before.values())  # every original segment, whole
    assert all(Path(m["from"]).is_absolute() for m in manifest)


def _interrupted_with_an_empty_swap(tmp_path: Path) -> tuple[Path, Path, bytes]:
    """A compact killed once its first group (wholly superseded: no record stays) is a
    .swap: `0.log.swap` is empty, `0.log` still holds the old records."""
    ld = tmp_path / "ld"
    assert run("generate", ld, "--records", "3000", "--keys", "5", "--segment-bytes", "40000",
               "--seed", "1").code == 0
    pdir = ld / "demo-0"
    old = (pdir / "00000000000000000000.log").read_bytes()
    p = subprocess.run([sys.executable, "-m", "kafkalog_cli", "compact", str(pdir), "--force",
                        "--now", str(NOW), "--segment-bytes", "40000", "--quarantine",
                        str(tmp_path / "q")],
                       env=dict(os.environ, KAFKALOG_CRASH_AT="replace.swapped:1"),
                       capture_output=True)
    assert p.returncode == 99, p.stderr
    assert (pdir / "00000000000000000000.log.swap").stat().st_size == 0
    return ld, pdir, old


def _state(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()
            and p.name != ".lock"}


def test_nothing_but_recover_changes_a_partition_with_an_interrupted_replacement(tmp_path):
    ld, pdir, _old = _interrupted_with_an_empty_swap(tmp_path)
    before = _state(ld)
    for args in (["compact", pdir, "--force", "--now", NOW],
                 ["retain", ld, "--retention-bytes", "1", "--ignore-high-watermark"],
                 ["index-rebuild", pdir],
                 ["append", ld, "--topic", "demo", "--partition", "0"]):
        r = run(*args, stdin=b'{"value": "x"}\n')
        assert r.code == 8, (args, r.err)
        assert f"{pdir}/00000000000000000000." in r.err
        assert ".swap: left by an interrupted segment replacement; run `kafkalog recover` " \
               "first" in r.err
        assert _state(ld) == before, args
    assert run("recover", ld, "--quarantine", tmp_path / "q2").code in (0, 1)
    assert run("compact", pdir, "--force", "--now", NOW, "--no-quarantine").code == 0
    assert_clean_and_kafka_python_reads(ld)


def test_recover_finishing_an_empty_swap_quarantines_the_segment_it_replaces(tmp_path):
    ld, pdir, old = _interrupted_with_an_empty_swap(tmp_path)
    q = tmp_path / "q2"
    for dry in (["--dry-run"], []):  # the report names what goes, dry run or not
        r = run("recover", ld, "--quarantine", q, *dry)
        assert r.code in (0, 1, 4), r.err
        assert f"{pdir / '00000000000000000000.log'}" in r.out.decode()
        assert b"replaced by a finished swap" in r.out
    assert (pdir / "00000000000000000000.log").read_bytes() == b""  # the swap, in place
    [stamp] = list(q.iterdir())
    manifest = [json.loads(x) for x in (stamp / "manifest.jsonl").read_text().split("\n") if x]
    [entry] = [m for m in manifest if m["from"] == str(pdir / "00000000000000000000.log")]
    assert entry["reason"] == "replaced by a finished swap"
    assert Path(entry["to"]).read_bytes() == old
    assert_clean_and_kafka_python_reads(ld)


@pytest.mark.parametrize("fault", ["KAFKALOG_FAIL_AT", "KAFKALOG_CRASH_AT"])
def test_a_compact_that_fails_before_its_swap_leaves_the_log_as_it_was(tmp_path, fault):
    # a full disk while the cleaned segment is written: one error line, no .cleaned left
    # (a kill leaves one, which recover removes)
    ld = gen(tmp_path / "ld", 4, records=900, keys=20)
    pdir = ld / "demo-0"
    before = _state(pdir)
    env = dict(os.environ, **{fault: "compact.cleaned.written"})
    p = subprocess.run([sys.executable, "-m", "kafkalog_cli", "compact", str(pdir), "--force",
                        "--now", str(NOW)], env=env, capture_output=True, text=True)
    if fault == "KAFKALOG_FAIL_AT":
        assert p.returncode == 8, p.stderr
        [line] = p.stderr.strip().split("\n")
        assert line.startswith("kafkalog: error: ") and "No space left on device" in line
        assert _state(pdir) == before
    else:
        assert p.returncode == 99
        assert list(pdir.glob("*.cleaned"))
        assert run("recover", ld).code in (0, 1)
        assert _state(pdir) == before


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("magic", [2, 1])
def test_replay_counts_what_the_passes_of_their_own_count(tmp_path, seed, magic):
    """compact takes the log end and the dirty range's record count (the map's size) from
    replay's one pass: equal to what log_end_offset and a pass of their own over the
    batches give, for a dirty range from the log start, from a checkpoint inside a segment,
    from one at a segment's base, and past the log end (reset to the log start)."""
    from kafkalog_cli.storage.disk.logdir import open_target
    from kafkalog_cli.storage.disk.segment import log_end_offset
    from kafkalog_cli.storage.maintenance import compaction as c

    part = open_target(gen(tmp_path / "ld", seed, records=1200, segment_bytes=4000,
                           transactions=magic == 2 and seed % 2 == 0, magic=magic)
                       / "demo-0").partition
    assert len(part.segments) > 2
    start = part.segments[0].base_offset
    leo = log_end_offset(part.segments)
    mid = (part.segments[1].base_offset + part.segments[2].base_offset) // 2 + 1
    checked = 0
    for ckpt in (None, mid, part.segments[2].base_offset, leo + 100):
        st, _aborted, log_end, counts = c.replay(
            part, (start,) if ckpt is None else (ckpt, start))
        assert log_end == leo
        cfg = c.CleanerConfig()
        rng = c.cleanable_range(part, ckpt, start, None, st, NOW, cfg, log_end)
        assert rng == c.cleanable_range(part, ckpt, start, None, st, NOW, cfg)
        passed = c.dirty_records(part, rng)
        assert c.dirty_records(part, rng, counts) == passed
        assert all(rng.first_dirty in counts[s.base_offset] for s in part.segments)
        checked += passed > 0
    assert checked >= 3


def test_legacy_compressed_wrappers_size_the_map_for_their_inner_records(tmp_path):
    """The offset map is sized for the dirty range's records. A compressed magic-1 wrapper
    holds many: counted as one, the map filled after ~50 keys and 300 keys took 78 rounds,
    each "map full", where the broker's map (dedupe buffer) takes them in one."""
    ld = tmp_path / "ld"
    assert run("generate", ld, "--magic", "1", "--codec", "gzip", "--records", "3000",
               "--batch-records", "20", "--keys", "300", "--segment-bytes", "20000").code == 0
    r = run("compact", ld / "demo-0", "--force", "--now", NOW, "--no-quarantine",
            "--format", "json")
    assert r.code == 0, r.err
    rounds = json.loads(r.out)["partitions"][0]["rounds"]
    assert [x["mapFull"] for x in rounds] == [False]
    assert rounds[0]["recordsOut"] < rounds[0]["recordsIn"]
