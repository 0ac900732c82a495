"""recover cuts a segment whose recovery would overflow the broker's indexes (LogSegment.recover
throws "Attempt to append to a full time index" and the broker does not start): the pieces,
the option and its inference from preallocated indexes, dry run, a crash at every step.

Here: 36 single-record batches of ~230 bytes, an index entry every 300 bytes (a crossing
every second batch, 17 in all), segment.index.bytes=96: 12 offset entries, 8 time entries
of which the broker fills 7 before it counts the time index full: three pieces.
"""

import os
from pathlib import Path

import pytest

from kafkalog_cli.codec.batch_v2 import encode_batch
from kafkalog_cli.storage.disk.logdir import scan_partition
from kafkalog_cli.storage.maintenance.rebuild import IndexCapacity, rebuild_segment
from tests.cli.run import run_forked as run
from tests.faults.test_recover_retain import assert_clean, crash_points, records, run_env

INDEX = ("--index-interval-bytes", "300")
SMALL = (*INDEX, "--segment-index-bytes", "96")
TS = 1_700_000_000_000


def _log_bytes() -> bytes:
    return b"".join(encode_batch([(o, TS + o, b"k%d" % o, b"v" * 150, [])]) for o in range(36))


def make_dir(root: Path) -> Path:
    pdir = root / "ld" / "t-0"
    pdir.mkdir(parents=True)
    (pdir / "00000000000000000000.log").write_bytes(_log_bytes())
    return root / "ld"


def pieces_fit(pdir: Path) -> list[int]:
    """Base offsets; asserts the broker's recovery of every piece fits 96-byte indexes."""
    part = scan_partition(pdir)
    for seg in part.segments:
        r = rebuild_segment(seg, 300, capacity=IndexCapacity.of(96))
        assert r.splits == [] and r.stop is None, seg.base_offset
        assert len(r.offset_entries) <= 12 and len(r.time_entries) <= 8, seg.base_offset
    return [s.base_offset for s in part.segments]


def test_recover_cuts_where_the_broker_should_have_rolled(tmp_path):
    d = make_dir(tmp_path)
    before = records(d)
    r = run("recover", d, *SMALL, "--no-quarantine")
    assert r.code == 1, r.err
    assert "split" in r.text and "index full" in r.text
    bases = pieces_fit(d / "t-0")
    assert len(bases) == 3 and bases[0] == 0
    assert records(d) == before
    logs = sorted((d / "t-0").glob("*.log"))
    assert b"".join(p.read_bytes() for p in logs) == _log_bytes()  # cut, not rewritten
    assert_clean(d)
    assert run("recover", d, *SMALL).code == 0  # nothing left to do
    assert run("recover", d, *INDEX).code == 0  # the default size is no smaller


def test_recover_takes_the_size_from_indexes_a_killed_broker_preallocated(tmp_path):
    d = make_dir(tmp_path)
    for suffix in (".index", ".timeindex"):  # the active segment's, preallocated
        (d / "t-0" / f"00000000000000000000{suffix}").write_bytes(bytes(96))
    r = run("recover", d, *INDEX, "--no-quarantine", "--format", "json")
    assert r.code == 1, r.err
    assert len(pieces_fit(d / "t-0")) == 3


def test_recover_leaves_a_segment_that_fits_as_it_is(tmp_path):
    d = make_dir(tmp_path)
    r = run("recover", d, *INDEX, "--segment-index-bytes", "4096", "--no-quarantine")
    assert r.code == 1 and "split" not in r.text, r.text  # only its indexes are written
    assert [p.name for p in (d / "t-0").glob("*.log")] == ["00000000000000000000.log"]


def test_dry_run_only_says_it_would_split(tmp_path):
    d = make_dir(tmp_path)
    r = run("recover", d, *SMALL, "--dry-run")
    assert r.code == 4 and "would split" in r.text, r.text
    assert sorted(p.name for p in (d / "t-0").iterdir()) == ["00000000000000000000.log"]


def test_the_replaced_segment_goes_to_the_quarantine(tmp_path):
    d = make_dir(tmp_path)
    q = tmp_path / "q"
    assert run("recover", d, *SMALL, "--quarantine", q).code == 1
    kept = [p for p in q.rglob("00000000000000000000.log*") if p.is_file()]
    assert [p.read_bytes() for p in kept] == [_log_bytes()]


def test_crash_at_every_step_of_a_split_then_recover(tmp_path):
    durable = records(make_dir(tmp_path / "ref"))
    points = crash_points(["-m", "kafkalog_cli", "recover", make_dir(tmp_path / "probe"),
                           *SMALL], tmp_path)
    names = {n for n, _ in points}
    assert {"split.piece", "replace.cleaned-to-swap.after", "replace.strip-swap.after"} <= names
    # the first and the last time each point is reached (replace.py's protocol has its own
    # full matrix in test_recover_retain)
    last = {n: k for n, k in points}
    for name, nth in [(n, k) for n, k in points if k in (1, last[n])]:
        d = make_dir(tmp_path / f"c-{name}-{nth}")
        p = run_env(["-m", "kafkalog_cli", "recover", d, *SMALL],
                    {"KAFKALOG_CRASH_AT": f"{name}:{nth}"})
        assert p.returncode == 99, (name, nth, p.stderr)
        r = run("recover", d, *SMALL)
        assert r.code in (0, 1), (name, nth, r.err)
        assert records(d) == durable, (name, nth)
        pieces_fit(d / "t-0")
        assert run("recover", d, *SMALL).code == 0, (name, nth)  # nothing left to do
    assert_clean(d)


@pytest.mark.parametrize("point", ["split.piece", "replace.swapped"])
def test_a_full_disk_mid_split_fails_cleanly_and_recover_completes(tmp_path, point):
    d = make_dir(tmp_path)
    durable = records(d)
    p = run_env(["-m", "kafkalog_cli", "recover", d, *SMALL], {"KAFKALOG_FAIL_AT": point})
    assert p.returncode == 8 and b"Traceback" not in p.stderr, p.stderr
    assert run("recover", d, *SMALL).code == 1
    assert records(d) == durable
    pieces_fit(d / "t-0")
    assert os.listdir(d / "t-0")
