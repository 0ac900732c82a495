"""storage/v07*.py: what a path holds, the scanner's damage paths, generate, recovery."""

import random
import shutil
import struct

import pytest

from kafkalog_cli.codec.message_v07 import inner_messages
from kafkalog_cli.errors import UsageError
from kafkalog_cli.storage.checks.check import CheckOptions, Stats
from kafkalog_cli.storage.checks.findings import Findings
from kafkalog_cli.storage.drills.generate07 import Gen07Spec, generate, payload
from kafkalog_cli.storage.formats.kafka07.check import check_target
from kafkalog_cli.storage.formats.kafka07.layout import (
    find_target,
    parse_partition_dir,
    parse_segment_name,
)
from kafkalog_cli.storage.formats.kafka07.recovery import apply_plan, plan_partition
from kafkalog_cli.storage.formats.kafka07.scan import iter_entries
from kafkalog_cli.storage.maintenance.quarantine import Quarantine
from tests.v07.bytes07 import entry, flip, payload_of, positions, segments


def scan(path, **kw):
    damages = []
    got = [(pos, bytes(m.payload)) for pos, m in iter_entries(path, on_damage=damages.append, **kw)]
    return got, damages


def write(tmp_path, *chunks, name="t-0"):
    pdir = tmp_path / name
    pdir.mkdir(parents=True, exist_ok=True)
    p = pdir / "00000000000000000000.kafka"
    p.write_bytes(b"".join(chunks))
    return p


GOOD = [entry(b"a" * 20), entry(b"b" * 30, magic=0), entry(b"c" * 40)]
ALL = b"".join(GOOD)


# -- names and detection -----------------------------------------------------------------

def test_names():
    assert parse_segment_name("00000000000000001234.kafka") == 1234
    assert parse_segment_name("1234.kafka") == 1234  # 0.7 reads any width (Long.parseLong)
    assert parse_segment_name("x.kafka") is None
    assert parse_segment_name("00000000000000000000.log") is None
    assert parse_partition_dir("my-topic-12") == ("my-topic", 12)
    assert parse_partition_dir("my_topic_0") is None
    assert parse_partition_dir("t-x") is None


def test_detection(tmp_path, sample):
    assert find_target(sample) is None  # a current log dir is not ours
    assert find_target(sample / "demo-0") is None
    assert find_target(tmp_path / "missing") is None
    generate(tmp_path / "ld", Gen07Spec(records=50, partitions=2, segment_bytes=1000))
    t = find_target(tmp_path / "ld")
    assert t.kind == "logdir" and [p.path.name for p in t.partitions] == ["demo-0", "demo-1"]
    assert t.root_files == [".kafka_cleanshutdown"]
    t = find_target(tmp_path / "ld" / "demo-1")
    assert t.kind == "partition" and len(t.partitions[0].segments) > 1
    seg = t.partitions[0].segments[1].path
    t = find_target(seg)
    assert t.kind == "file" and [s.path for s in t.partitions[0].segments] == [seg]
    # a current partition dir beside the 0.7 ones: mixed log dir
    shutil.copytree(sample / "demo-0", tmp_path / "ld" / "demo-9")
    t = find_target(tmp_path / "ld")
    assert [d.name for d in t.modern_dirs] == ["demo-9"]
    # 0.7 and 0.8+ files in one partition dir: mixed
    (tmp_path / "ld" / "demo-0" / "00000000000000000000.index").write_bytes(b"")
    assert find_target(tmp_path / "ld" / "demo-0").partitions[0].modern_files == [
        "00000000000000000000.index"]


# -- generate ------------------------------------------------------------------------------

def test_generate_is_deterministic_and_follows_0_7_rolls(tmp_path):
    spec = Gen07Spec(records=120, batch_records=7, codecs=["none", "gzip", "snappy"],
                     segment_bytes=1500, seed=5)
    leos, _ = generate(tmp_path / "a", spec)
    generate(tmp_path / "b", spec)
    files_a = segments(tmp_path / "a" / "demo-0")
    assert [p.read_bytes() for p in files_a] == \
        [p.read_bytes() for p in segments(tmp_path / "b" / "demo-0")]
    start = 0
    for i, p in enumerate(files_a):
        assert p.name == f"{start:020d}.kafka"  # each name is the previous end
        size = p.stat().st_size
        if i < len(files_a) - 1:
            assert size > 1500  # rolls only once a segment is strictly larger
        start += size
    assert leos[("demo", 0)] == start
    # every message, in order, through the scanner and the codec
    got = [bytes(m.payload) for p in files_a for _pos, w in iter_entries(p)
           for m in inner_messages(w)]
    assert [g.split(b" ")[0] for g in got] == [f"demo-0#{i}".encode() for i in range(120)]


def test_generate_refuses_what_0_7_cannot_write(tmp_path):
    for spec in (Gen07Spec(codecs=["lz4"]), Gen07Spec(magic=0, codecs=["gzip"]),
                 Gen07Spec(damage=["swap-leftover"]), Gen07Spec(damage=["name-gap"],
                                                                  segment_bytes=10**9)):
        with pytest.raises(UsageError):
            generate(tmp_path / "x", spec)


def test_payload_identity():
    assert payload("t", 3, 42, random.Random(1), 0) == b"t-3#42"
    assert len(payload("t", 3, 42, random.Random(1), 64)) == 64


# -- the scanner, one test per damage path -------------------------------------------------

def test_clean_file(tmp_path):
    p = write(tmp_path, ALL)
    got, dmg = scan(p)
    assert [pos for pos, _ in got] == [pos for pos, _ in positions(ALL)] and not dmg


def test_short_header_is_a_torn_tail(tmp_path):
    p = write(tmp_path, ALL, b"\x00\x00")
    got, dmg = scan(p)
    assert len(got) == 3 and [(d.position, d.code, d.size) for d in dmg] == \
        [(len(ALL), "torn-tail", 2)]


def test_entry_cut_short_is_a_torn_tail(tmp_path):
    p = write(tmp_path, ALL, GOOD[0][:-3])
    _got, dmg = scan(p)
    assert [(d.position, d.code) for d in dmg] == [(len(ALL), "torn-tail")]


def test_size_past_end_mid_file(tmp_path):
    bad = bytearray(GOOD[1])
    struct.pack_into(">i", bad, 0, 10**6)
    p = write(tmp_path, GOOD[0], bytes(bad), GOOD[2])
    got, dmg = scan(p, resync=True)
    assert [(d.position, d.code) for d in dmg] == [(len(GOOD[0]), "size-past-end")]
    assert [pos for pos, _ in got] == [0, len(GOOD[0]) + len(GOOD[1])]  # resynced


@pytest.mark.parametrize("size", [0, 4, -7])
def test_bad_size(tmp_path, size):
    p = write(tmp_path, GOOD[0], struct.pack(">i", size), b"zz" * 10, GOOD[2])
    got, dmg = scan(p)
    assert [(d.position, d.code) for d in dmg] == [(len(GOOD[0]), "bad-size")]
    assert len(got) == 1


def test_magic_1_shorter_than_its_header(tmp_path):
    p = write(tmp_path, GOOD[0], struct.pack(">i", 5) + b"\x01\x00\x00\x00\x00", GOOD[2])
    _got, dmg = scan(p)
    assert [d.code for d in dmg] == ["bad-size"]


def test_zero_tail(tmp_path):
    p = write(tmp_path, ALL, bytes(100))
    _got, dmg = scan(p)
    assert [(d.position, d.code, d.size) for d in dmg] == [(len(ALL), "zero-tail", 100)]


def test_bad_magic(tmp_path):
    bad = bytearray(GOOD[1])
    bad[4] = 7
    p = write(tmp_path, GOOD[0], bytes(bad), GOOD[2])
    got, dmg = scan(p, resync=True)
    assert [(d.position, d.code) for d in dmg] == [(len(GOOD[0]), "bad-magic")]
    assert len(got) == 2


def test_crc_mismatch_then_resync(tmp_path):
    p = write(tmp_path, GOOD[0], entry(b"b" * 30, crc=1), GOOD[2])
    got, dmg = scan(p)
    assert [(d.position, d.code) for d in dmg] == [(len(GOOD[0]), "crc-mismatch")]
    assert len(got) == 1  # without resync the scan stops there, as 0.7's recovery does
    got, _ = scan(p, resync=True)
    assert [g for _, g in got] == [b"a" * 20, b"c" * 40]


def test_crc_mismatch_at_the_tail_is_not_torn(tmp_path):
    p = write(tmp_path, GOOD[0], entry(b"b" * 30, crc=1))
    _got, dmg = scan(p)
    assert [d.code for d in dmg] == ["crc-mismatch"]


def test_entry_too_big(tmp_path):
    p = write(tmp_path, entry(b"x" * 100), GOOD[0])
    got, dmg = scan(p, max_entry=50, resync=True)
    assert [(d.position, d.code) for d in dmg] == [(0, "entry-too-big")]
    assert [g for _, g in got] == [b"a" * 20]


def test_start_and_chunk_boundaries(tmp_path):
    big = [entry(bytes([i]) * (100 + i)) for i in range(50)]
    p = write(tmp_path, *big)
    got, dmg = scan(p, chunk=64)  # every entry crosses a chunk edge
    assert not dmg and [g for _, g in got] == [bytes([i]) * (100 + i) for i in range(50)]
    start = len(big[0]) + len(big[1])
    got, _ = scan(p, start=start)
    assert got[0][0] == start and len(got) == 48


# -- verify and recovery on generated damage -------------------------------------------------

def gen(tmp_path, damage, **kw):
    spec = dict(records=200, batch_records=5, codecs=["none", "gzip"], segment_bytes=2000,
                damage=[damage] if damage else [])
    spec.update(kw)
    generate(tmp_path / "ld", Gen07Spec(**spec))
    return tmp_path / "ld" / "demo-0"


def findings(target):
    f = Findings()
    check_target(find_target(target), f, CheckOptions(), Stats())
    return [(x.code, x.file.rsplit("/", 1)[-1], x.position) for x in f.items
            if x.severity == "error"]


@pytest.mark.parametrize("damage, code", [("torn-tail", "V07_TORN_TAIL"),
                                          ("crc", "V07_CRC_MISMATCH"),
                                          ("bit-flip", "V07_CRC_MISMATCH"),
                                          ("size-past-end", "V07_TORN_TAIL")])
def test_damage_found_at_its_position(tmp_path, damage, code):
    pdir = gen(tmp_path, None)
    clean = segments(pdir)[-1].read_bytes()
    whole = positions(clean)
    pdir = gen(tmp_path / "d", damage)
    newest = segments(pdir)[-1]
    want = whole[len(whole) // 2][0] if damage == "bit-flip" else whole[-1][0]
    assert findings(pdir) == [(code, newest.name, want)]


def test_recovery_cuts_at_the_tail_and_quarantines_the_bytes(tmp_path):
    pdir = gen(tmp_path, "torn-tail")
    newest = segments(pdir)[-1]
    before = newest.read_bytes()
    cut_at = positions(before)[-1][0] + positions(before)[-1][1] + 4  # after the last whole
    part = find_target(pdir).partitions[0]
    plan = plan_partition(part)
    assert not plan.problems and [(a.kind, a.start, a.end) for a in plan.actions] == \
        [("truncate", cut_at, len(before))]
    start = int(newest.name[:20])
    assert plan.log_end_offset == start + cut_at
    q = Quarantine(pdir.parent, tmp_path / "q")
    apply_plan(plan, q, fsync=False)
    assert newest.read_bytes() == before[:cut_at]
    saved = list((tmp_path / "q").rglob("*.bytes-*"))
    assert len(saved) == 1 and saved[0].read_bytes() == before[cut_at:]
    assert plan_partition(find_target(pdir).partitions[0]).empty  # idempotent


def test_recovery_with_valid_data_after_needs_force(tmp_path):
    pdir = gen(tmp_path, "bit-flip")
    newest = segments(pdir)[-1]
    data = newest.read_bytes()
    at = positions(data)[len(positions(data)) // 2][0]
    part = find_target(pdir).partitions[0]
    plan = plan_partition(part)
    assert plan.empty and len(plan.problems) == 1 and plan.problems[0].position == at
    assert "valid data follows" in plan.problems[0].message
    plan = plan_partition(part, force=True)  # 0.7's own rule: cut at the first bad entry
    assert [(a.kind, a.start) for a in plan.actions] == [("truncate", at)]
    apply_plan(plan, Quarantine(pdir.parent, tmp_path / "q"), fsync=False)
    assert newest.read_bytes() == data[:at]


def test_only_the_newest_segment_unless_full(tmp_path):
    pdir = gen(tmp_path, None)
    first = segments(pdir)[0]
    data = first.read_bytes()
    pos, n = positions(data)[-1]
    flip(first, pos + 4 + n - 1)  # the last payload byte of its last entry
    assert payload_of(first.read_bytes(), pos, n) != payload_of(data, pos, n)
    part = find_target(pdir).partitions[0]
    assert plan_partition(part).empty and not plan_partition(part).problems  # 0.7 never looks
    plan = plan_partition(part, full=True)
    assert "valid data follows" in plan.problems[0].message
    plan = plan_partition(part, full=True, force=True)
    kinds = [a.kind for a in plan.actions]
    assert kinds.count("remove") == len(segments(pdir)) - 1 and kinds[-1] == "truncate"
    apply_plan(plan, Quarantine(pdir.parent, tmp_path / "q"), fsync=False)
    assert segments(pdir) == [first] and first.read_bytes() == data[:pos]
    assert findings(pdir) == []


def test_name_gap_and_mixed_are_problems_not_guesses(tmp_path):
    pdir = gen(tmp_path, "name-gap")
    assert [c for c, *_ in findings(pdir)] == ["V07_SEGMENT_NAME_MISMATCH"]
    plan = plan_partition(find_target(pdir).partitions[0])
    assert plan.empty and "does not follow on" in plan.problems[0].message
    pdir = gen(tmp_path / "m", "mixed")
    assert [c for c, *_ in findings(pdir)] == ["V07_MIXED_DIR"]
    assert find_target(pdir).partitions[0].mixed
    plan = plan_partition(find_target(pdir).partitions[0], force=True, full=True)
    assert plan.empty and "does not guess" in plan.problems[0].message


def test_log_dir_level_findings(tmp_path):
    generate(tmp_path / "ld", Gen07Spec(records=20, damage=["crc"]))
    (tmp_path / "ld" / "demo-7").mkdir()  # 0.7 would start it with an empty segment
    (tmp_path / "ld" / "junk").mkdir()  # 0.7's getTopicPartition fails on it
    (tmp_path / "ld" / "notes.txt").write_text("x")
    f = Findings()
    check_target(find_target(tmp_path / "ld"), f, CheckOptions(), Stats())
    got = {(x.severity, x.code, x.file.rsplit("/", 1)[-1]) for x in f.items}
    assert {("warning", "V07_EMPTY_PARTITION", "demo-7"), ("error", "V07_BAD_DIR", "junk"),
            ("warning", "UNKNOWN_FILE", "notes.txt"),
            ("info", "V07_UNCLEAN_SHUTDOWN", "ld")} <= got
