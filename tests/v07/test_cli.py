"""The operators' commands on Kafka 0.7 dirs, end to end: exit codes, stdout, stderr."""

import csv
import gzip
import io
import json
import os
import shlex
import shutil
import struct
import subprocess
import sys
import zlib
from itertools import pairwise

import pytest

from tests.cli.run import run
from tests.v07.bytes07 import flip, payload_of, positions, segments

CRASH_EXIT = 99


def gen(out, *extra):
    r = run("generate", out, "--format", "0.7", "--records", "240", "--batch-records", "6",
            "--codec", "none", "--codec", "gzip", "--codec", "snappy", "--segment-bytes",
            "3000", "--partitions", "2", *extra)
    assert r.code == 0, r.err
    return out


def one_error_line(r):
    assert "Traceback" not in r.err
    lines = [ln for ln in r.err.splitlines() if ln.startswith("kafkalog: error: ")]
    assert len(lines) == 1, r.err
    return lines[0]


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    return gen(tmp_path_factory.mktemp("v07") / "ld")


def test_dump_json_offsets_are_byteOffsets(clean):
    r = run("dump", clean / "demo-0", "--records", "--format", "jsonl")
    assert r.code == 0, r.err
    rows = [json.loads(x) for x in r.out.splitlines()]
    entries = [x for x in rows if x["kind"] == "entry"]
    # offsets: segment name + position, consecutive, each nextOffset the following offset
    for seg in segments(clean / "demo-0"):
        mine = [e for e in entries if e["file"] == str(seg)]
        start = int(seg.name[:20])
        assert [(e["position"], e["size"]) for e in mine] == positions(seg.read_bytes())
        assert all(e["offset"] == start + e["position"] for e in mine)
    assert all(a["nextOffset"] == b["offset"] for a, b in pairwise(entries))
    assert {e["compression"] for e in entries} == {"none", "gzip", "snappy"}
    msgs = [m for m in rows if m["kind"] == "message"]
    assert [m["payload"].split(" ")[0] for m in msgs] == [f"demo-0#{i}" for i in range(240)]
    assert all(m["magic"] == 1 and m["isValid"] for m in msgs)


def test_dump_filters_by_byteOffset_and_refuses_the_rest(clean):
    segs = segments(clean / "demo-0")
    second = int(segs[1].name[:20])
    r = run("dump", clean / "demo-0", "--format", "jsonl", "--from-offset", second,
            "--to-offset", second + 1)
    rows = [json.loads(x) for x in r.out.splitlines()]
    assert r.code == 0 and [x["offset"] for x in rows] == [second]
    for opt in (["--from-time", "0"], ["--key", "k"], ["--producer-id", "1"]):
        r = run("dump", clean / "demo-0", *opt)
        assert r.code == 16 and "no timestamps, keys or producer ids" in one_error_line(r)


def test_verify_clean_and_shallow(clean):
    r = run("verify", clean)
    assert r.code == 0, r.text
    assert "verified 2 partitions" in r.text and "0 errors" in r.text
    assert run("verify", clean, "--shallow").code == 0


def test_commands_refuse_mixing_0_7_and_current_paths(clean, sample):
    for args in (["recover", clean, sample, "--dry-run"], ["info", clean, sample],
                 ["find-by-time", clean, sample, "-t", "latest"]):
        r = run(*args)
        assert r.code == 16 and "run the command on each kind" in one_error_line(r)
    # verify and dump take each path on its own
    assert run("verify", clean, sample).code == 0


def test_info_and_find_by_time(clean):
    r = run("info", clean, "--format", "json")
    assert r.code == 0
    parts = json.loads(r.out)[0]["partitions"]
    ends = [sum(p.stat().st_size for p in segments(clean / f"demo-{i}")) for i in (0, 1)]
    assert [(p["format"], p["logEndOffset"]) for p in parts] == [("0.7", ends[0]), ("0.7", ends[1])]
    r = run("find-by-time", clean, "-t", "earliest")
    assert r.code == 0 and r.text.splitlines() == ["demo-0 earliest: offset 0",
                                                   "demo-1 earliest: offset 0"]
    r = run("find-by-time", clean, "-t", "max-timestamp")
    assert r.code == 16 and "carry no timestamp" in one_error_line(r)


@pytest.mark.parametrize("args, says", [
    (["--damage", "name-gap"], "add --format 0.7"),
    (["--format", "0.7", "--damage", "swap-leftover"], "not a Kafka 0.7 damage kind"),
    (["--format", "0.7", "--codec", "lz4"], "no lz4 codec"),
    (["--format", "0.7", "--preset", "sample"], "--preset"),
    (["--format", "0.7", "--magic", "0", "--codec", "gzip"], "cannot be compressed"),
])
def test_generate_refusals(tmp_path, args, says):
    r = run("generate", tmp_path / "x", *args)
    assert r.code == 16 and says in one_error_line(r)


def test_recover_torn_tail_then_nothing_to_do(tmp_path):
    ld = gen(tmp_path / "ld", "--damage", "torn-tail")
    newest = segments(ld / "demo-1")[-1]
    before = newest.read_bytes()
    last_pos, last_n = positions(before)[-1]
    cut = last_pos + 4 + last_n
    r = run("recover", ld, "--dry-run")
    assert r.code == 4 and "would truncate" in r.text and newest.read_bytes() == before
    v = run("verify", ld, "--format", "json")
    torn = [f for f in json.loads(v.out)["findings"] if f["code"] == "V07_TORN_TAIL"]
    assert v.code == 4 and sorted((f["file"], f["position"]) for f in torn)[-1] == \
        (str(newest), cut)
    r = run("recover", ld, "--quarantine", tmp_path / "q", "--format", "json")
    assert r.code == 1, r.err
    rep = json.loads(r.out)["partitions"]
    assert [p["actions"][0]["positions"] for p in rep][1] == [cut, len(before)]
    assert newest.read_bytes() == before[:cut]
    saved = sorted((tmp_path / "q").rglob("*.bytes-*"))
    assert saved[-1].read_bytes() == before[cut:]
    manifest = [json.loads(x) for m in (tmp_path / "q").rglob("manifest.jsonl")
                for x in m.read_text().splitlines()]
    assert {m["action"] for m in manifest} == {"cut"} and len(manifest) == 2
    r = run("recover", ld)
    assert r.code == 0 and r.text.strip() == "nothing to do"
    assert run("verify", ld).code == 0


def test_recover_bit_flip_needs_force(tmp_path):
    ld = gen(tmp_path / "ld", "--damage", "bit-flip")
    newest = segments(ld / "demo-0")[-1]
    data = newest.read_bytes()
    whole = positions(data)
    at = whole[len(whole) // 2][0]
    r = run("recover", ld / "demo-0")
    assert r.code == 4 and "valid data follows" in r.text and newest.read_bytes() == data
    r = run("recover", ld / "demo-0", "--force", "--no-quarantine")
    assert r.code == 1, r.err
    assert newest.read_bytes() == data[:at]
    assert not (tmp_path / ".kafkalog-quarantine").exists()


def test_recover_a_segment_file_is_a_usage_error(clean):
    r = run("recover", segments(clean / "demo-0")[0])
    assert r.code == 16 and "name the partition dir" in one_error_line(r)


@pytest.mark.parametrize("point", ["recover.v07.truncate.before", "recover.v07.truncate.after",
                                   "quarantine.save_range.after"])
def test_crash_during_recover_is_finished_by_a_rerun(tmp_path, point):
    ld = gen(tmp_path / "ld", "--damage", "torn-tail", "--partitions", "1")
    newest = segments(ld / "demo-0")[-1]
    before = newest.read_bytes()
    pos, n = positions(before)[-1]
    env = dict(os.environ, KAFKALOG_CRASH_AT=point)
    p = subprocess.run([sys.executable, "-m", "kafkalog_cli", "recover", str(ld)], env=env,
                       capture_output=True, timeout=120)
    assert p.returncode == CRASH_EXIT, p.stderr
    r = run("recover", ld)
    if point == "recover.v07.truncate.after":
        assert r.code == 0  # the cut was made before the crash
    else:
        assert r.code == 1, r.err
    assert newest.read_bytes() == before[:pos + 4 + n]
    assert run("recover", ld).code == 0


def test_migrate_maps_every_byteOffset(tmp_path, clean):
    out = tmp_path / "new"
    r = run("migrate", clean, out)
    assert r.code == 0, r.err
    rows = list(csv.reader(io.StringIO(r.text)))
    assert rows[0] == ["topic", "partition", "byteOffset", "newOffset"]
    for p in (0, 1):
        mine = [(int(b), int(n)) for t, pp, b, n in rows[1:] if (t, pp) == ("demo", str(p))]
        starts = []
        for seg in segments(clean / f"demo-{p}"):
            data = seg.read_bytes()
            starts += [int(seg.name[:20]) + pos for pos, _ in positions(data)]
        end = sum(s.stat().st_size for s in segments(clean / f"demo-{p}"))
        assert [b for b, _ in mine] == [*starts, end]
        assert mine[0][1] == 0 and mine[-1][1] == 240
        assert all(a[1] < b[1] for a, b in pairwise(mine))
        # every entry start maps to the offset of its first message, in the new log
        d = run("dump", out / f"demo-{p}", "--records", "--format", "jsonl",
                "--payload", "utf8")
        recs = [json.loads(x) for x in d.out.splitlines() if b'"record"' in x]
        assert [x["offset"] for x in recs] == list(range(240))
        assert [x["value"].split(" ")[0] for x in recs] == [f"demo-{p}#{i}" for i in range(240)]
        by_offset = {x["offset"]: x["value"] for x in recs}
        for (b, n), seg_pos in zip(mine[:-1], starts, strict=True):
            assert b == seg_pos and by_offset[n].split(" ")[0].startswith(f"demo-{p}#")
        assert all(x["key"] is None and x["timestamp"] == -1 for x in recs)
    assert run("verify", out).code == 0
    assert {p.name for p in out.iterdir()} >= {"demo-0", "demo-1",
                                               "recovery-point-offset-checkpoint"}
    assert not list(tmp_path.glob(".*migrating"))


def test_migrate_wrapper_maps_to_its_first_inner_message(tmp_path, clean):
    r = run("migrate", clean / "demo-0", tmp_path / "new", "--start-offset", "1000",
            "--topic", "renamed", "--mapping", tmp_path / "map.csv")
    assert r.code == 0 and r.out == b""
    rows = list(csv.DictReader((tmp_path / "map.csv").open()))
    assert {x["topic"] for x in rows} == {"renamed"}
    assert rows[0]["newOffset"] == "1000" and rows[-1]["newOffset"] == "1240"
    seg = segments(clean / "demo-0")[0]
    data = seg.read_bytes()
    (pos, n), = [(p, n) for p, n in positions(data) if data[p + 5] == 1][:1]  # first gzip
    new = int(next(x for x in rows if int(x["byteOffset"]) == pos)["newOffset"])
    d = run("dump", tmp_path / "new" / "renamed-0", "--records", "--format", "jsonl",
            "--from-offset", new, "--to-offset", new)
    rec = [json.loads(x) for x in d.out.splitlines() if b'"record"' in x]
    inner = gzip.decompress(payload_of(data, pos, n))
    assert rec[0]["value"].encode() == payload_of(inner, *positions(inner)[0])


def test_migrate_refusals_write_nothing(tmp_path, clean, sample):
    bad = gen(tmp_path / "bad", "--damage", "crc")
    r = run("migrate", bad, tmp_path / "out")
    assert r.code == 4 and "kafkalog recover" in one_error_line(r)
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob(".*migrating"))
    assert r.out == b""
    mixed = gen(tmp_path / "mixed", "--damage", "mixed")
    assert run("migrate", mixed, tmp_path / "out").code == 4
    gap = gen(tmp_path / "gap", "--damage", "name-gap")
    assert run("migrate", gap / "demo-0", tmp_path / "out").code == 4
    assert run("migrate", sample, tmp_path / "out").code == 16
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    r = run("migrate", clean, tmp_path / "full")
    assert r.code == 16 and "not an empty directory" in one_error_line(r)
    r = run("migrate", clean, tmp_path / "out", "--topic", "a/b")
    assert r.code == 16 and "--topic" in one_error_line(r)
    r = run("migrate", clean, tmp_path / "out", "--timestamp", "yesterday")
    assert r.code == 16 and "Traceback" not in r.err


def test_mixed_log_dir_is_reported_not_guessed(tmp_path, sample):
    ld = gen(tmp_path / "ld", "--damage", "torn-tail")
    shutil.copytree(sample / "demo-0", ld / "demo-5")
    v = run("verify", ld, "--format", "json")
    codes = [f["code"] for f in json.loads(v.out)["findings"] if f["severity"] == "error"]
    assert v.code == 4 and "V07_MIXED_LOG_DIR" in codes
    r = run("recover", ld, "--format", "json")
    rep = {p["path"]: p for p in json.loads(r.out)["partitions"]}
    assert r.code == 5  # 4 | 1: the 0.8+ dir is a problem left; the 0.7 partitions repaired
    assert rep[str(ld / "demo-5")]["problems"] and not rep[str(ld / "demo-5")]["actions"]
    assert rep[str(ld / "demo-0")]["actions"][0]["action"] == "truncate"
    assert run("verify", ld / "demo-0").code == 0
    r = run("dump", ld, "--format", "jsonl")
    assert r.code == 4 and "mixed" in r.err
    r = run("migrate", ld, tmp_path / "out")
    assert r.code == 4 and "mixed" in one_error_line(r)


def test_partition_dir_names_other_than_topic_dash_partition(tmp_path, clean):
    odd = tmp_path / "my_topic_0"
    shutil.copytree(clean / "demo-0", odd)
    v = run("verify", odd, "--format", "json")
    codes = [f["code"] for f in json.loads(v.out)["findings"]]
    assert v.code == 4 and codes == ["V07_BAD_DIR_NAME"]
    d = run("dump", odd, "--records", "--format", "jsonl")
    rows = [json.loads(x) for x in d.out.splitlines()]
    assert d.code == 0 and {(x["topic"], x["partition"]) for x in rows} == {("my_topic_0", -1)}
    r = run("migrate", odd, tmp_path / "out")
    assert r.code == 4 and "<topic>-<partition>" in one_error_line(r)


def test_zero_tail_and_segment_name_width(tmp_path, clean):
    pdir = tmp_path / "t-0"
    shutil.copytree(clean / "demo-0", pdir)
    newest = segments(pdir)[-1]
    size = newest.stat().st_size
    with open(newest, "ab") as f:
        f.write(bytes(64))
    first = segments(pdir)[0]
    first.rename(pdir / "0.kafka")
    v = run("verify", pdir, "--format", "json")
    found = {(f["code"], f["position"]) for f in json.loads(v.out)["findings"]}
    assert ("V07_ZERO_TAIL", size) in found and ("V07_SEGMENT_NAME_WIDTH", None) in found
    r = run("recover", pdir)
    assert r.code == 1 and newest.stat().st_size == size


def test_migrate_into_an_existing_empty_dir_and_after_an_interrupted_run(tmp_path, clean):
    out = tmp_path / "out"
    (out / ".kafkalog-migrating" / "junk").mkdir(parents=True)  # left by a killed migrate
    r = run("migrate", clean / "demo-1", out)
    assert r.code == 0, r.err
    assert "interrupted migrate" in r.err
    assert sorted(p.name for p in out.iterdir()) == [
        "demo-1", "log-start-offset-checkpoint", "recovery-point-offset-checkpoint",
        "replication-offset-checkpoint"]
    assert run("verify", out).code == 0


@pytest.mark.parametrize("nth", [1, 3])
def test_a_migrate_killed_while_filling_an_existing_dir_is_undone_by_the_next(tmp_path, clean,
                                                                              nth):
    out = tmp_path / "out"
    out.mkdir()  # a mount point: filled by one rename per entry
    env = dict(os.environ, KAFKALOG_CRASH_AT=f"migrate.finish.moved:{nth}")
    p = subprocess.run([sys.executable, "-m", "kafkalog_cli", "migrate", str(clean / "demo-1"),
                        str(out)], env=env, capture_output=True)
    assert p.returncode == 99, p.stderr
    assert len([c for c in out.iterdir() if c.name != ".kafkalog-migrating"]) == nth
    r = run("migrate", clean / "demo-1", out)
    assert r.code == 0, r.err
    assert sorted(p.name for p in out.iterdir()) == [
        "demo-1", "log-start-offset-checkpoint", "recovery-point-offset-checkpoint",
        "replication-offset-checkpoint"]
    assert run("verify", out).code == 0
    fresh = run("migrate", clean / "demo-1", tmp_path / "fresh")  # the same, never interrupted
    assert r.out == fresh.out and r.out.startswith(b"topic,partition,byteOffset,newOffset")
    for f in (tmp_path / "fresh").rglob("*"):
        if f.is_file() and f.name != "partition.metadata":  # a new random topic id each run
            assert (out / f.relative_to(tmp_path / "fresh")).read_bytes() == f.read_bytes()


def _errors(path):
    v = run("verify", path, "--format", "json")
    return [f for f in json.loads(v.out)["findings"] if f["severity"] == "error"]


def test_hints_name_full_and_force_and_plain_recover_says_what_it_leaves(tmp_path):
    ld = gen(tmp_path / "ld")
    pdir = ld / "demo-0"
    first = segments(pdir)[0]  # 0.7's recovery never reads it; later segments follow
    pos, n = positions(first.read_bytes())[-1]
    flip(first, pos + 4 + n - 1)
    [err] = _errors(ld)
    fix = f"kafkalog recover {pdir} --full --force"
    assert (err["code"], err["fix"]) == ("V07_CRC_MISMATCH", fix)
    r = run("recover", ld)
    assert r.code == 4 and f"left          {first}:{pos}: V07_CRC_MISMATCH" in r.text
    assert f"fix: {fix}" in r.text
    assert run(*shlex.split(fix)[1:]).code == 1
    assert _errors(ld) == []
    assert run("recover", ld).text == "nothing to do\n"


def test_a_compressed_entry_that_does_not_decode_is_cut_like_a_crc_failure(tmp_path):
    ld = gen(tmp_path / "ld")
    pdir = ld / "demo-1"
    newest = segments(pdir)[-1]
    data = bytearray(newest.read_bytes())
    pos, n = next((p, n) for p, n in positions(bytes(data)) if data[p + 5] & 3 == 1)  # gzip
    data[pos + 10 + 12] ^= 0xFF  # inside the deflate stream, then the CRC made right again
    struct.pack_into(">I", data, pos + 6, zlib.crc32(payload_of(bytes(data), pos, n)))
    newest.write_bytes(bytes(data))
    errs = _errors(ld)
    assert [e["code"] for e in errs] == ["V07_INNER_INVALID"]
    starts = [p for p, _ in positions(bytes(data))]
    force = " --force" if starts.index(pos) < len(starts) - 1 else ""  # whole entries follow
    assert errs[0]["fix"] == f"kafkalog recover {pdir}{force}"
    assert run(*shlex.split(errs[0]["fix"])[1:]).code == 1
    assert _errors(ld) == [] and newest.read_bytes() == data[:pos]


def _same_log_dir(got, want):
    assert sorted(p.relative_to(got) for p in got.rglob("*")) == \
        sorted(p.relative_to(want) for p in want.rglob("*"))
    for f in want.rglob("*"):
        if f.is_file() and f.name != "partition.metadata":  # a new random topic id each run
            assert (got / f.relative_to(want)).read_bytes() == f.read_bytes(), f


def test_migrate_refuses_a_mapping_it_cannot_write_before_making_out(tmp_path, clean):
    for mapping in (tmp_path / "no-such-dir" / "map.csv", tmp_path / "out" / "map.csv"):
        r = run("migrate", clean, tmp_path / "out", "--mapping", mapping)
        assert r.code == 16 and "--mapping" in one_error_line(r)
        assert not (tmp_path / "out").exists()
        assert not list(tmp_path.glob(".*migrating"))
    (tmp_path / "out").mkdir()  # an empty mount point: the mapping may not go in it either
    r = run("migrate", clean, tmp_path / "out", "--mapping", tmp_path / "out" / "map.csv")
    assert r.code == 16 and "inside OUT" in one_error_line(r)
    assert list((tmp_path / "out").iterdir()) == []


@pytest.mark.parametrize(("var", "existing"), [("KAFKALOG_CRASH_AT", False),
                                               ("KAFKALOG_CRASH_AT", True),
                                               ("KAFKALOG_FAIL_AT", False)])
def test_a_migrate_stopped_between_mapping_and_out_is_finished_by_a_rerun(tmp_path, clean,
                                                                          var, existing):
    fresh = tmp_path / "fresh"
    r = run("migrate", clean, fresh, "--mapping", tmp_path / "fresh.csv")
    assert r.code == 0, r.err
    out, mapping = tmp_path / "out", tmp_path / "map.csv"
    if existing:
        out.mkdir()  # a mount point
    env = dict(os.environ, **{var: "migrate.mapping.written"})
    p = subprocess.run([sys.executable, "-m", "kafkalog_cli", "migrate", str(clean), str(out),
                        "--mapping", str(mapping)], env=env, capture_output=True)
    # killed (or a full disk) after the mapping was written and before OUT was made
    assert p.returncode == (CRASH_EXIT if var == "KAFKALOG_CRASH_AT" else 8), p.stderr
    assert mapping.read_bytes() == (tmp_path / "fresh.csv").read_bytes()
    assert not out.exists() or [c.name for c in out.iterdir()] in ([], [".kafkalog-migrating"])
    r = run("migrate", clean, out, "--mapping", mapping)
    assert r.code == 0, r.err
    assert mapping.read_bytes() == (tmp_path / "fresh.csv").read_bytes()
    _same_log_dir(out, fresh)
    assert not list(tmp_path.glob(".*migrating")) and not list(tmp_path.glob("*.tmp"))
    assert run("verify", out).code == 0


def test_migrate_writes_the_mapping_to_stdout_before_out(tmp_path, clean):
    # nobody reads standard output: the mapping cannot be delivered, so OUT is not made
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        p = subprocess.run([sys.executable, "-m", "kafkalog_cli", "migrate", str(clean),
                            str(tmp_path / "out")], stdout=write_end, stderr=subprocess.PIPE)
    finally:
        os.close(write_end)
    assert p.returncode == 8, p.stderr
    assert b"cannot write the mapping" in p.stderr
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob(".*migrating"))


def test_migrate_a_topic_current_kafka_refuses(tmp_path, clean):
    src = tmp_path / "src"
    src.mkdir()
    shutil.copytree(clean / "demo-0", src / "my topic-0")
    r = run("migrate", src / "my topic-0", tmp_path / "out")
    assert r.code == 16 and "choose a topic name with --topic" in one_error_line(r)
    assert not (tmp_path / "out").exists()
    r = run("migrate", src / "my topic-0", tmp_path / "out", "--topic", "my_topic")
    assert r.code == 0, r.err
    assert (tmp_path / "out" / "my_topic-0").is_dir()
    assert "my_topic 0 240" in (tmp_path / "out" / "recovery-point-offset-checkpoint").read_text()


def test_what_recover_leaves_is_in_every_format_under_its_partition(tmp_path):
    ld = gen(tmp_path / "ld")
    pdir = ld / "demo-0"
    first = segments(pdir)[0]  # outside 0.7's recovery: left, not cut
    pos, n = positions(first.read_bytes())[-1]
    flip(first, pos + 4 + n - 1)
    doc = json.loads(run("recover", ld, "--format", "json").out)
    [part] = [p for p in doc["partitions"] if p["path"] == str(pdir)]
    assert [x["code"] for x in part["left"]] == ["V07_CRC_MISMATCH"]
    assert doc["logDirs"] == [{"logDir": str(ld), "actions": [], "left": []}]
    r = run("recover", ld, "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(r.text)))
    assert r.code == 4
    assert [(x["partition"], x["code"], x["position"]) for x in rows
            if x["kind"] == "left"] == [("0", "V07_CRC_MISMATCH", str(pos))]
    assert [x["logDir"] for x in rows if x["kind"] == "logDir"] == [str(ld)]


@pytest.mark.parametrize("where", ["mapping-on-segment", "mapping-in-partition", "out-inside",
                                   "out-holds"])
def test_migrate_writes_nothing_into_source(tmp_path, where):
    """SOURCE is only read: a --mapping or an OUT inside it, or an OUT that SOURCE lies in,
    is refused (16) before anything is written, and every SOURCE byte stays."""
    src = gen(tmp_path / "src", "--records", "50")
    seg = next((src / "demo-0").glob("*.kafka"))
    before = {p: p.read_bytes() for p in src.rglob("*") if p.is_file()}
    args = {"mapping-on-segment": [src, tmp_path / "out", "--mapping", seg],
            "mapping-in-partition": [src, tmp_path / "out", "--mapping", src / "demo-0" / "m"],
            "out-inside": [src, src / "new"],
            "out-holds": [src / "demo-0", src]}[where]
    r = run("migrate", *args)
    assert r.code == 16 and "SOURCE" in r.err, r.err
    assert {p: p.read_bytes() for p in src.rglob("*") if p.is_file()} == before
    assert not (tmp_path / "out").exists() and not (src / "new").exists()


def test_migrate_start_offset_leaves_room_for_every_message(tmp_path):
    """Offsets and the log end offset are longs: a --start-offset that would take the log end
    past 2**63 - 1 is refused (16) and nothing is written; one message less room is fine and
    verifies clean."""
    src = gen(tmp_path / "src", "--records", "50", "--partitions", "1")
    top = 2**63 - 1
    r = run("migrate", src, tmp_path / "a", "--start-offset", top - 50 + 1,
            "--mapping", tmp_path / "a.csv")
    assert r.code == 16 and "--start-offset" in r.err, r.err
    assert not (tmp_path / "a").exists() and not (tmp_path / "a.csv").exists()
    ok = run("migrate", src, tmp_path / "b", "--start-offset", top - 50,
             "--mapping", tmp_path / "b.csv")
    assert ok.code == 0, ok.err
    assert run("verify", tmp_path / "b").code == 0
