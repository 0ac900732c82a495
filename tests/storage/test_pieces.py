"""dump -j's cuts of a big .log (storage/disk/pieces.py): every cut is a batch start the
scanner reaches from the start of the file, pieces are as long as asked, and cutting stops
where the scanner would see anything but a whole v2 batch."""

import itertools
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kafkalog_cli.storage.disk import pieces
from kafkalog_cli.storage.disk.segment import iter_batches


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One segment of 20 000 records in batches of three codecs (kafkalog generate)."""
    out = tmp_path_factory.mktemp("pieces") / "ld"
    p = subprocess.run([sys.executable, "-m", "kafkalog_cli", "generate", str(out),
                        "--partitions", "1", "--records", "20000", "--codec", "none",
                        "--codec", "zstd", "--codec", "gzip", "--segment-bytes", "1073741824"],
                       capture_output=True, check=False)
    assert p.returncode == 0, p.stderr
    (seg,) = (out / "demo-0").glob("*.log")
    return seg


@pytest.fixture(autouse=True)
def small(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pieces, "MIN_PIECE", 4096)
    monkeypatch.setattr(pieces, "PIECE_BYTES", 16384)
    monkeypatch.setattr(pieces, "PIECE_RECORDS", 500)


def _starts(log: Path) -> dict[int, int]:
    """Batch start -> its record count, as the scanner reads the whole file."""
    return {pos: b.last_offset - b.base_offset + 1 for pos, b in iter_batches(log)}


def test_every_cut_is_a_batch_start_and_each_piece_as_long_as_asked(log: Path) -> None:
    starts = _starts(log)
    got = pieces.cuts(log, 0, pieces.HopBudget(1 << 20))
    assert len(got) > 5 and set(got) <= set(starts)
    size = log.stat().st_size
    bounds = [0, *got]
    for a, b in itertools.pairwise(bounds):
        records = sum(n for pos, n in starts.items() if a <= pos < b)
        assert b - a >= pieces.PIECE_BYTES or records >= pieces.PIECE_RECORDS
    assert size - got[-1] >= pieces.MIN_PIECE
    # from a later batch start, as --to-offset's segments give: still batch starts
    later = sorted(starts)[len(starts) // 2]
    assert set(pieces.cuts(log, later, pieces.HopBudget(1 << 20))) <= {
        p for p in starts if p > later}


def test_cutting_stops_at_damage_and_at_a_budget_spent(log: Path, tmp_path: Path) -> None:
    data = bytearray(log.read_bytes())
    starts = sorted(_starts(log))
    bad = starts[len(starts) // 2]
    for name, patch in (("size", lambda d: d.__setitem__(slice(bad + 8, bad + 12),
                                                          (7).to_bytes(4, "big"))),
                        ("magic", lambda d: d.__setitem__(bad + 16, 1))):
        copy = bytearray(data)
        patch(copy)
        damaged = tmp_path / f"{name}.log"
        damaged.write_bytes(bytes(copy))
        got = pieces.cuts(damaged, 0, pieces.HopBudget(1 << 20))
        assert got and max(got) <= bad, name  # nothing past what the scanner may not reach
    budget = pieces.HopBudget(40)
    got = pieces.cuts(log, 0, budget)
    assert budget.left == 0 and (not got or max(got) <= starts[40])


def test_nothing_to_cut_where_there_is_no_file_to_walk(log: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.log"
    os.mkfifo(fifo)
    budget = pieces.HopBudget(1 << 20)
    assert pieces.cuts(fifo, 0, budget) == []  # opened without blocking, not walked
    assert pieces.cuts(tmp_path / "missing.log", 0, budget) == []
    assert pieces.cuts(tmp_path, 0, budget) == []
    assert pieces.cuts(log, log.stat().st_size - 4096, budget) == []  # under 2 MIN_PIECE


@pytest.mark.skipif(pieces._fastscan is None, reason="compiled core not built")
def test_the_compiled_walk_cuts_where_the_pure_one_does(log: Path, tmp_path: Path) -> None:
    """fastscan.walk_cuts against pieces._walk_pure: the same cuts and hops spent, on the
    whole file, from later starts, under small budgets, and on copies with a size field, a
    magic or a record count changed at batch starts and elsewhere."""
    data = log.read_bytes()
    starts = sorted(_starts(log))
    rng = __import__("random").Random(17)
    copies = [data]
    for _ in range(60):
        copy = bytearray(data)
        at = rng.choice(starts) if rng.random() < 0.7 else rng.randrange(len(data))
        field = rng.choice([8, 16, 57, rng.randrange(61)])
        copy[min(at + field, len(copy) - 1)] = rng.randrange(256)
        if rng.random() < 0.2:
            copy = copy[:rng.randrange(len(copy))]
        copies.append(bytes(copy))
    compared = 0
    for n, body in enumerate(copies):
        f = tmp_path / f"{n}.log"
        f.write_bytes(body)
        fd = os.open(f, os.O_RDONLY)
        try:
            for start, hops in ((0, 1 << 20), (0, 7), (starts[3], 1 << 20), (starts[3], 0)):
                got = []
                for walk in (pieces._walk, pieces._walk_pure):
                    budget = pieces.HopBudget(hops)
                    got.append((walk(fd, start, len(body), budget), budget.left))
                assert got[0] == got[1], (n, start, hops)
                compared += bool(got[0][0])
        finally:
            os.close(fd)
    assert compared > 40  # most walks found cuts to compare
