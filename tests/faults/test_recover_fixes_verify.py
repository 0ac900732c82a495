"""recover fixes what verify finds: damaged copies of the sample log dir are verified, the
`fix:` commands verify prints are run exactly as written, and then verify reports no error
and, once a recover has seen to the warnings too, another has nothing to do. Plain
`recover` never claims a clean log dir (exit 0 or 1) while verify still reports errors.

The CLI runs in this process (a subprocess per command would cost minutes) with fsync
stubbed out: durability is not what these tests are about.
"""

import contextlib
import io
import json
import os
import shlex
import shutil
import tempfile
from collections import Counter
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalog_cli.cli import main
from kafkalog_cli.storage.checks.snapshot_rules import (
    AT_OR_BELOW_START,
    PAST_END,
    STRAY,
    snapshots_the_load_deletes,
)
from kafkalog_cli.storage.disk import naming
from kafkalog_cli.storage.disk.checkpoints import log_start_offset
from kafkalog_cli.storage.disk.logdir import open_target
from kafkalog_cli.storage.drills.damage import KINDS, apply_damage
from tests.cli.run import run
from tests.conftest import FIXTURE
from tests.faults.surgery import batch_positions, fix_checksum, mutate, mutation

PARTS = sorted(p.name for p in FIXTURE.iterdir() if p.is_dir())
ANY = st.integers(0, 10**6)  # an index, taken modulo what there is to choose from
MUTATIONS = st.lists(mutation, min_size=1, max_size=3)
EPOCH_ENTRIES = st.lists(st.tuples(st.integers(-1, 5), st.integers(0, 700)), max_size=4)

DAMAGE = st.one_of(
    st.tuples(st.just("log-bytes"), st.sampled_from(PARTS), ANY, MUTATIONS),
    # flipped bytes past the batch header, then the CRC made right again: CRC-valid batches
    # whose records may not decode
    st.tuples(st.just("undecodable"), st.sampled_from(PARTS), ANY, ANY,
              st.lists(st.tuples(ANY, st.integers(1, 255)), min_size=1, max_size=3)),
    # a batch's base offset moved (it is outside the CRC in every format)
    st.tuples(st.just("offset"), st.sampled_from(PARTS), ANY, ANY,
              st.integers(-60, 60).filter(bool)),
    st.tuples(st.just("snapshot"), st.sampled_from(PARTS), ANY, MUTATIONS),
    st.tuples(st.just("epoch-bytes"), st.sampled_from(PARTS), MUTATIONS),
    st.tuples(st.just("epoch-entries"), st.sampled_from(PARTS), EPOCH_ENTRIES),
    st.tuples(st.just("root"), st.sampled_from(naming.ROOT_CHECKPOINTS), MUTATIONS),
    st.tuples(st.just("index"), st.sampled_from(PARTS), ANY,
              st.sampled_from(naming.INDEX_KINDS), MUTATIONS),
    st.tuples(st.just("remove"), st.sampled_from(PARTS), ANY),
    st.tuples(st.just("drill"), st.sampled_from(PARTS), st.sampled_from(KINDS), ANY),
)


def kafkalog(*args: object) -> tuple[int, str]:
    """Run the CLI in this process: (exit code, stdout). Never a traceback."""
    buf = io.BytesIO()
    out = io.TextIOWrapper(buf, encoding="utf-8", write_through=True)
    err = io.StringIO()
    code = None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main([str(a) for a in args])
        except SystemExit as e:
            code = e.code
    out.flush()
    assert "Traceback" not in err.getvalue() and "internal error" not in err.getvalue(), (
        args, err.getvalue())
    assert isinstance(code, int), (args, code)
    return code, buf.getvalue().decode("utf-8", "replace")


def errors(ld: Path) -> list[dict]:
    code, out = kafkalog("verify", ld, "--format", "json")
    errs = [f for f in json.loads(out)["findings"] if f["severity"] == "error"]
    assert code == (4 if errs else 0)
    return errs


def fix_commands(ld: Path) -> list[str]:
    """The `fix:` lines of verify's text output for its errors, in order, each once."""
    _code, out = kafkalog("verify", ld)
    lines = out.splitlines()
    fixes: list[str] = []
    for line, nxt in zip(lines, [*lines[1:], ""], strict=True):
        if line.startswith("error") and nxt.strip().startswith("fix: "):
            fix = nxt.strip().removeprefix("fix: ")
            if fix not in fixes:
                fixes.append(fix)
    return fixes


def tree(ld: Path) -> dict[str, bytes]:
    return {str(p.relative_to(ld)): p.read_bytes() for p in sorted(ld.rglob("*")) if p.is_file()}


def _pick(items: list, n: int):
    return items[n % len(items)] if items else None


def damage(ld: Path, d: tuple) -> None:
    kind, *args = d
    if kind == "root":
        name, muts = args
        p = ld / name
        p.write_bytes(mutate(p.read_bytes(), muts))
        return
    pdir = ld / args[0]
    segs = open_target(pdir).partition.segments
    if kind == "log-bytes":
        log = _pick(segs, args[1]).log_path
        log.write_bytes(mutate(log.read_bytes(), args[2]))
    elif kind in ("undecodable", "offset"):
        log = _pick(segs, args[1]).log_path
        batch = _pick(batch_positions(log), args[2])
        if batch is None:
            return
        pos, size = batch
        data = bytearray(log.read_bytes())
        if kind == "offset":
            base = int.from_bytes(data[pos:pos + 8], "big", signed=True)
            data[pos:pos + 8] = max(0, base + args[3]).to_bytes(8, "big", signed=True)
            log.write_bytes(bytes(data))
            return
        header = 61 if data[pos + 16] == 2 else 22
        for at, mask in args[3]:
            if size > header:
                data[pos + header + at % (size - header)] ^= mask
        log.write_bytes(bytes(data))
        fix_checksum(log, pos)
    elif kind == "snapshot":
        snap = _pick(sorted(pdir.glob("*" + naming.SNAPSHOT)), args[1])
        if snap is not None:
            snap.write_bytes(mutate(snap.read_bytes(), args[2]))
    elif kind == "epoch-bytes":
        p = pdir / naming.LEADER_EPOCH
        p.write_bytes(mutate(p.read_bytes(), args[1]))
    elif kind == "epoch-entries":
        body = "".join(f"{e} {o}\n" for e, o in args[1])
        (pdir / naming.LEADER_EPOCH).write_text(f"0\n{len(args[1])}\n{body}")
    elif kind == "index":
        p = _pick(segs, args[1]).path(args[2])
        if p.exists():
            p.write_bytes(mutate(p.read_bytes(), args[3]))
    elif kind == "remove":
        files = sorted(p for p in pdir.iterdir() if not p.name.endswith(naming.LOG))
        _pick(files, args[1]).unlink()
    else:  # a drill of `kafkalog generate --damage`
        apply_damage(open_target(pdir).partition, args[1], args[2])


@contextlib.contextmanager
def damaged_copy(damages: list[tuple]):
    with tempfile.TemporaryDirectory() as tmp, mock.patch("os.fsync"):
        ld = Path(tmp) / "ld"
        shutil.copytree(FIXTURE, ld)
        for d in damages:
            damage(ld, d)
        yield ld


def test_following_verify_fix_hints_leaves_a_clean_log_dir_and_nothing_to_do():
    seen: Counter[str] = Counter()

    @settings(max_examples=80)
    @given(damages=st.lists(DAMAGE, min_size=1, max_size=3))
    def check(damages):
        with damaged_copy(damages) as ld:
            found = errors(ld)
            seen.update({f["code"] for f in found})
            fixes = fix_commands(ld)
            assert all(f["fix"] for f in found), found  # every error names its fix
            for fix in fixes:
                argv = shlex.split(fix)
                assert argv[0] == "kafkalog", fix
                code, out = kafkalog(*argv[1:])
                assert code in (0, 1, 4), (fix, code, out)
            left = errors(ld)
            assert not left, (damages, fixes, [(f["code"], f["file"], f["fix"]) for f in left])
            # a recover may still act on warnings (a missing index); the next has nothing to do
            assert kafkalog("recover", ld)[0] in (0, 1)
            before = tree(ld)
            code, out = kafkalog("recover", ld)
            assert (code, out) == (0, "nothing to do\n"), (damages, fixes, out)
            assert tree(ld) == before

    check()
    # the damage reached the kinds of finding the fix is for (nearly all: which examples
    # hypothesis draws can shift with what ran before in the process; the focused tests
    # below reach the snapshot and leader-epoch ones every time)
    targets = {"LOG_CRC_MISMATCH", "LOG_RECORDS_INVALID", "LOG_OFFSET_ORDER",
               "SNAPSHOT_CORRUPT", "LEADER_EPOCH_CORRUPT", "LEADER_EPOCH_ORDER",
               "CHECKPOINT_CORRUPT", "LOG_TORN_TAIL"}
    assert len(targets & set(seen)) >= 6, seen


def test_plain_recover_never_claims_clean_while_verify_has_errors():
    @settings(max_examples=40)
    @given(damages=st.lists(DAMAGE, min_size=1, max_size=3))
    def check(damages):
        with damaged_copy(damages) as ld:
            code, out = kafkalog("recover", ld, "--format", "json")
            report = json.loads(out)
            left = {(x["code"], x["file"], x["position"])
                    for r in report["partitions"] + report["logDirs"] for x in r["left"]}
            errs = {(f["code"], f["file"], f["position"]) for f in errors(ld)}
            assert left == errs  # what recover says it left is what verify finds
            changed = any(r["actions"] for r in report["partitions"] + report["logDirs"])
            assert code == (4 if errs else 0) | (1 if changed else 0)  # OR-ed, as fsck's

    check()


def test_a_corrupt_snapshot_and_epoch_checkpoint_are_rebuilt_as_the_broker_wrote_them(tmp_path):
    ld = tmp_path / "ld"
    shutil.copytree(FIXTURE, ld)
    snap = ld / "demo-0" / naming.segment_file_name(506, naming.SNAPSHOT)
    epochs = ld / "demo-0" / naming.LEADER_EPOCH
    original = snap.read_bytes(), epochs.read_bytes()
    snap.write_bytes(original[0][:-3])
    epochs.write_text("0\n2\n0 0\n")
    assert {f["code"] for f in errors(ld)} == {"SNAPSHOT_CORRUPT", "LEADER_EPOCH_CORRUPT"}
    code, out = kafkalog("recover", ld)
    assert code == 1 and out.count("rewrite") == 2, out
    assert (snap.read_bytes(), epochs.read_bytes()) == original
    assert kafkalog("recover", ld) == (0, "nothing to do\n")


def _snapshot(pdir: Path, off: int) -> Path:
    return pdir / naming.segment_file_name(off, naming.SNAPSHOT)


def kafka_load_deletes(snapshots, bases, log_start, log_end):
    """Kafka 4.x's LogLoader.load, transliterated: ProducerStateManager.removeStraySnapshots
    (segment base offsets), then truncateAndReload(log start, log end) on what is left."""
    files = dict.fromkeys(sorted(snapshots))  # the ConcurrentSkipListMap, in offset order
    deleted = set()
    max_base = max(bases) if bases else None
    latest_stray = None
    for key in list(files):
        if latest_stray is not None:
            if key not in bases:
                files.pop(latest_stray)  # prev.deleteIfExists(); snapshots.remove(prev)
                deleted.add(latest_stray)
                latest_stray = key
        elif key not in bases:
            latest_stray = key
    if latest_stray is not None and max_base is not None and latest_stray < max_base:
        files.pop(latest_stray)
        deleted.add(latest_stray)
    for off in list(files):  # truncateAndReload: "remove all out of range snapshots"
        if off > log_end or off <= log_start:
            deleted.add(off)
    return deleted


@pytest.mark.parametrize(("snapshots", "bases", "start", "end", "expected"), [
    # a clean shutdown's: one at each base and one at the log end; the log start's goes
    ({0, 243, 506, 608}, {0, 243, 506}, 0, 608, {0: AT_OR_BELOW_START}),
    # one past the end is the largest stray, so the one at the log end goes as a stray too
    ({243, 506, 608, 700}, {0, 243, 506}, 0, 608, {608: STRAY, 700: PAST_END}),
    # strays below the last base all go, the largest too
    ({100, 300, 506}, {0, 243, 506}, 0, 608, {100: STRAY, 300: STRAY}),
    ({100, 300, 506, 600}, {0, 243, 506}, 0, 608, {100: STRAY, 300: STRAY}),
    # at or below the log start: a stray goes as a stray first
    ({243, 299, 300, 301, 506}, {0, 243, 506}, 300, 608,
     {243: AT_OR_BELOW_START, 299: STRAY, 300: STRAY, 301: STRAY}),
    ({300, 506, 550}, {0, 300, 506}, 300, 608, {300: AT_OR_BELOW_START}),
    ({610}, {0, 506}, 0, 608, {610: PAST_END}),  # kept as the largest stray, then past the end
    (set(), {0}, 0, 0, {}),
    # a log start past the log end (the broker deletes every segment): only past the end
    ({0, 243, 700}, {0, 243, 506}, 1000, 608, {700: PAST_END}),
])
def test_the_snapshots_the_load_deletes(snapshots, bases, start, end, expected):
    assert snapshots_the_load_deletes(snapshots, bases, start, end) == expected
    if start <= end:
        assert set(expected) == kafka_load_deletes(snapshots, bases, start, end)


@given(st.sets(st.integers(0, 40), max_size=12), st.sets(st.integers(0, 40), min_size=1,
                                                          max_size=6),
       st.integers(0, 40), st.integers(0, 40))
@settings(max_examples=300, deadline=None)
def test_the_rule_deletes_what_kafkas_load_deletes(snapshots, bases, start, end):
    start = min(start, end)  # past the end is not modelled (LOG_START_PAST_END)
    assert set(snapshots_the_load_deletes(snapshots, bases, start, end)) == \
        kafka_load_deletes(snapshots, bases, start, end)


def _snapshot_findings(ld: Path) -> dict[Path, str]:
    code, out = kafkalog("verify", ld, "--format", "json")
    assert code == 0, out  # none of them an error
    return {Path(f["file"]): f["code"] for f in json.loads(out)["findings"]
            if f["code"].startswith("SNAPSHOT_")}


def _recover_removes_exactly(tmp_path: Path, ld: Path, rules: dict[Path, str],
                             starts: dict[str, int] | None = None) -> None:
    """--dry-run lists exactly the files of `rules` (file -> the rule that removes it) and
    changes nothing; verify reports each; recover quarantines exactly them, byte for byte,
    and leaves the rest; then a second run and verify find nothing."""
    gone = {p: _why(r, (starts or {}).get(p.parent.name, 0)) for p, r in rules.items()}
    before = tree(ld)
    code, out = kafkalog("recover", ld, "--dry-run", "--format", "json")
    rows = [a for r in json.loads(out)["partitions"] for a in r["actions"]]
    assert code == 4 and tree(ld) == before  # work found, nothing changed
    assert {Path(a["file"]): a["reason"] for a in rows if a["action"] == "remove"} == gone, rows
    codes = {STRAY: "SNAPSHOT_STRAY", PAST_END: "SNAPSHOT_PAST_END",
             AT_OR_BELOW_START: "SNAPSHOT_AT_OR_BELOW_START"}
    assert _snapshot_findings(ld) == {p: codes[r] for p, r in rules.items()}

    code, out = kafkalog("recover", ld)
    assert code == 1, out
    assert out.count("remove        ") == len(gone) and "would" not in out, out
    quarantined = {str(p.relative_to(p.parents[1])): p.read_bytes()
                   for p in (tmp_path / ".kafkalog-quarantine").rglob("*.snapshot")}
    assert quarantined == {k: before[k] for k in (str(p.relative_to(ld)) for p in gone)}
    assert {k: v for k, v in before.items() if ld / k not in gone} == tree(ld)  # the rest
    assert kafkalog("recover", ld) == (0, "nothing to do\n")
    assert _snapshot_findings(ld) == {}


def _why(rule: str, start: int = 0) -> str:
    return {STRAY: "stray producer snapshot: its offset is no segment's base offset (the "
                   "broker keeps only the largest such one, if above the last segment's)",
            PAST_END: "producer snapshot beyond the log end offset",
            AT_OR_BELOW_START: f"producer snapshot at or below the log start offset {start}"
            }[rule]


def test_snapshots_out_of_the_logs_range_are_quarantined_as_the_broker_deletes_them(tmp_path):
    """ProducerStateManager.truncateAndReload at load deletes a snapshot at an offset > the
    log end or <= the log start (at the log start too, not just below). demo-0: segments 0,
    243, 506, log end 608, log start 243 from the checkpoint; demo-1 has no entry, so its
    log start is its first segment's base offset, 0. Before that, removeStraySnapshots
    keeps only the largest stray one: demo-0's 700 (then past the end), so 608 goes too."""
    ld = tmp_path / "ld"
    shutil.copytree(FIXTURE, ld)
    (ld / naming.LOG_START).write_text("0\n1\ndemo 0 243\n")
    d0, d1 = ld / "demo-0", ld / "demo-1"
    for off in (0, 700):  # copies: a snapshot's offset is its name
        shutil.copyfile(_snapshot(d0, 243), _snapshot(d0, off))
    shutil.copyfile(_snapshot(d1, 263), _snapshot(d1, 0))
    _recover_removes_exactly(tmp_path, ld, {
        _snapshot(d0, 0): AT_OR_BELOW_START, _snapshot(d0, 243): AT_OR_BELOW_START,
        _snapshot(d0, 608): STRAY, _snapshot(d0, 700): PAST_END,
        _snapshot(d1, 0): AT_OR_BELOW_START}, {"demo-0": 243})
    assert sorted(p.name for p in d0.glob("*.snapshot")) == ["00000000000000000506.snapshot"]
    assert len(list(d1.glob("*.snapshot"))) == 3  # 263, 506 and the largest stray, 608


def test_stray_snapshots_are_quarantined_as_the_broker_deletes_them(tmp_path):
    """removeStraySnapshots: demo-0 (segments 0, 243, 506; log end 608) gets strays at 100
    and 300 (below the last base: they go), 550 and 600 (above it: all but the largest go;
    the one at the log end, 608, is then the largest and stays). demo-1 gets one at 400,
    its only stray below the last base besides 608: the largest below goes too."""
    ld = tmp_path / "ld"
    shutil.copytree(FIXTURE, ld)
    d0, d1 = ld / "demo-0", ld / "demo-1"
    for off in (100, 300, 550, 600):
        shutil.copyfile(_snapshot(d0, 243), _snapshot(d0, off))
    shutil.copyfile(_snapshot(d1, 263), _snapshot(d1, 400))
    (d1 / "00000000000000000608.snapshot").unlink()  # so 400 is the largest stray
    rules = {_snapshot(d0, off): STRAY for off in (100, 300, 550, 600)}
    _recover_removes_exactly(tmp_path, ld, {**rules, _snapshot(d1, 400): STRAY})
    assert sorted(int(p.stem) for p in d0.glob("*.snapshot")) == [243, 506, 608]
    assert sorted(int(p.stem) for p in d1.glob("*.snapshot")) == [263, 506]


def test_a_log_start_past_the_log_end_leaves_the_snapshots_alone(tmp_path):
    """There the broker deletes every segment (LogLoader), which recover does not do: it
    takes no snapshot from below the log start either, and leaves the error to verify."""
    ld = tmp_path / "ld"
    shutil.copytree(FIXTURE, ld)
    (ld / naming.LOG_START).write_text("0\n1\ndemo 0 999999\n")
    before = tree(ld)
    code, out = kafkalog("recover", ld)
    assert code == 4 and "remove" not in out and "LOG_START_PAST_END" in out, out
    assert tree(ld) == before


@pytest.mark.parametrize(("entry", "tiered", "start", "shown"), [
    (None, False, 243, 243),  # no entry: the first segment's base offset
    (100, False, 243, 243),  # an entry below it is raised to it
    (400, False, 400, 400),
    ("corrupt", False, 243, 243),  # the broker reads an unparsable checkpoint as empty
    (100, True, 100, 100),  # tiered storage: the entry as is (older offsets are remote)
    # no entry: the load takes 0 (LogManager.loadLogs); info shows the local start
    (None, True, 0, 243),
    ("corrupt", True, 0, 243),
])
def test_the_log_start_is_the_one_the_brokers_load_takes(tmp_path, entry, tiered, start,
                                                         shown):
    ld = tmp_path / "ld"
    shutil.copytree(FIXTURE, ld)
    for f in (ld / "demo-0").glob("00000000000000000000.*"):
        f.unlink()  # the first segment now starts at 243
    if entry == "corrupt":
        (ld / naming.LOG_START).write_text("0\n1\ndemo 0 x\n")
    elif entry is not None:
        (ld / naming.LOG_START).write_text(f"0\n1\ndemo 0 {entry}\n")
    if tiered:
        (ld / naming.REMOTE_INDEX_CACHE).mkdir()
    for target in (ld / "demo-0", ld):  # alone (its log dir unlisted), or in its log dir
        [part] = [p for p in open_target(target).partitions() if p.path.name == "demo-0"]
        first = part.segments[0].base_offset
        assert log_start_offset(part, first) == start
        assert log_start_offset(part, first, local_if_unknown=True) == shown


def test_hints_name_full_below_the_recovery_point_and_force_when_batches_follow(tmp_path):
    ld = tmp_path / "ld"
    shutil.copytree(FIXTURE, ld)
    pdir = ld / "demo-0"
    first = open_target(pdir).partition.segments[0].log_path  # below the recovery point
    pos, size = batch_positions(first)[-1]
    data = bytearray(first.read_bytes())
    data[pos + size - 2] ^= 0x40  # the last batch of the first segment: later ones follow
    first.write_bytes(bytes(data))
    assert fix_commands(ld) == [f"kafkalog recover {pdir} --full --force"]
    code, out = kafkalog("recover", ld)  # plain: does not look there, but says what is left
    assert code == 4
    assert f"left          {first}:{pos}: LOG_CRC_MISMATCH" in out
    assert f"fix: kafkalog recover {pdir} --full --force" in out
    code, out = kafkalog("recover", pdir, "--full")  # not enough: cutting drops segments
    assert code == 4 and "rerun with --force" in out
    assert kafkalog("recover", pdir, "--full", "--force")[0] == 1
    assert errors(ld) == []


def test_a_crc_valid_batch_whose_records_do_not_decode_is_cut_like_a_crc_failure(tmp_path):
    ld = tmp_path / "ld"
    shutil.copytree(FIXTURE, ld)
    pdir = ld / "demo-1"
    last = open_target(pdir).partition.segments[-1].log_path
    pos, _size = batch_positions(last)[-1]
    data = bytearray(last.read_bytes())
    data[pos + 61] ^= 0x7F  # the first record's length varint
    last.write_bytes(bytes(data))
    fix_checksum(last, pos)
    assert [f["code"] for f in errors(ld)] == ["LOG_RECORDS_INVALID"]
    assert fix_commands(ld) == [f"kafkalog recover {pdir}"]  # the tail: no option needed
    code, out = kafkalog("recover", pdir)
    assert code == 1 and f"truncate      {last} bytes {pos}..{len(data)}" in out, out
    assert errors(ld) == []
    assert os.path.getsize(last) == pos


def test_a_corrupt_root_checkpoint_is_rewritten_once(tmp_path):
    ld = tmp_path / "ld"
    shutil.copytree(FIXTURE, ld)
    (ld / naming.REPLICATION).write_text("0\n5\ndemo 0 x\n")
    [f] = errors(ld)
    assert (f["code"], f["fix"]) == ("CHECKPOINT_CORRUPT", f"kafkalog recover {ld}")
    code, out = kafkalog("recover", ld)
    assert code == 1 and f"rewrite       {ld / naming.REPLICATION}" in out
    assert (ld / naming.REPLICATION).read_text() == "0\n0\n"  # the broker reads it as empty
    assert kafkalog("recover", ld) == (0, "nothing to do\n")



def test_index_rebuild_on_a_damaged_log_names_the_fix_verify_names(tmp_path):
    ld = tmp_path / "ld"
    shutil.copytree(FIXTURE, ld)
    pdir = ld / "demo-0"
    first = open_target(pdir).partition.segments[0].log_path
    pos, _size = batch_positions(first)[2]
    data = bytearray(first.read_bytes())
    data[pos + 70] ^= 1
    first.write_bytes(bytes(data))
    [fix] = fix_commands(ld)
    assert fix == f"kafkalog recover {pdir} --full --force"
    r = run("index-rebuild", pdir)
    assert r.code == 5 and f"(fix: {fix})" in r.err  # 1 | 4: indexes rewritten, damage left


def test_a_batch_over_the_cap_is_kept_not_cut(tmp_path):
    """A CRC-valid gzip batch that inflates past --max-decompressed-bytes is kafkalog's own
    memory guard, not damage (a broker keeps it, a consumer reads it): verify warns that its
    records went unchecked (exit 0), recover keeps it byte for byte, and a cap above its size
    checks it clean."""
    from tests.cli.run import run

    inp = tmp_path / "big.jsonl"
    inp.write_text(json.dumps({"key": "k", "value": "x" * (65 << 20)}) + "\n")  # cap: 64 MiB
    ld = tmp_path / "ld"
    assert run("append", ld, "--create", "--topic", "t", "--partition", 0, "--input", inp,
               "--codec", "gzip").code == 0
    log = ld / "t-0" / "00000000000000000000.log"
    before = log.read_bytes()
    v = run("verify", ld, "--format", "jsonl")
    codes = [(f["severity"], f["code"]) for f in map(json.loads, v.out.splitlines())
             if f.get("kind") == "finding"]
    assert v.code == 0 and ("warning", "LOG_RECORDS_OVER_CAP") in codes, v.out
    r = run("recover", ld / "t-0", "--full")
    assert r.code in (0, 1) and log.read_bytes() == before, r.text
    assert run("verify", ld, "--max-decompressed-bytes", 80 << 20).code == 0
