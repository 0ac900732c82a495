"""commands/chunked.py: runs of small partitions as one -j work item, results as -j 1's."""

from __future__ import annotations

import os
from dataclasses import dataclass

import pytest

from kafkalog_cli.commands import chunked


@dataclass
class _Part:
    """What chunking asks of a partition of any format: its .log bytes."""

    n: int
    log_bytes: int


def _parts(sizes: list[int]) -> list[_Part]:
    return [_Part(n, s) for n, s in enumerate(sizes)]


def test_runs_end_at_the_byte_or_item_cap() -> None:
    big = chunked.CHUNK_BYTES
    parts = _parts([10, big, 10, 10] + [1] * (chunked.CHUNK_ITEMS + 1))
    runs = chunked.chunks(parts)
    assert [[p.n for p in r] for r in runs[:2]] == [[0, 1], list(range(2, 2 + 256))]
    assert [p.n for r in runs for p in r] == list(range(len(parts)))  # all, in order
    assert len(runs) == 3


@pytest.mark.parametrize("n", [3, chunked.FEW + 1, 700])
def test_same_values_and_done_calls_as_one_job(n: int) -> None:
    parts = _parts([100_000] * n)  # more than one run of CHUNK_BYTES
    done: list[int] = []
    got = list(chunked.ordered(parts, lambda p: (p.n, os.getpid()), 2,
                               done=lambda p: done.append(p.n)))
    assert [v for v, _pid in got] == list(range(n)) == done
    pids = {pid for _v, pid in got}
    assert os.getpid() not in pids and 1 <= len(pids) <= 2  # in the workers


def test_an_error_ends_the_run_after_the_items_before_it() -> None:
    parts = _parts([100_000] * 200)
    seen: list[int] = []

    def work(p: _Part) -> int:
        if p.n == 150:
            raise ValueError("bad partition")
        return p.n

    with pytest.raises(ValueError, match="bad partition"):
        for v in chunked.ordered(parts, work, 2):
            seen.append(v)
    assert seen == list(range(len(seen))) and len(seen) <= 150


def test_one_job_is_a_plain_loop() -> None:
    assert chunked.mapper(1) is None
    m = chunked.mapper(2)
    assert m is not None
    assert list(m(_parts([1] * 100), lambda p: p.n * 2)) == [2 * i for i in range(100)]


@pytest.mark.parametrize(("min_bytes", "in_workers"), [(10_000_001, False), (10_000_000, True)])
def test_little_data_in_all_stays_in_this_process(min_bytes: int, in_workers: bool) -> None:
    parts = _parts([100_000] * 100)  # 10 000 000 bytes
    got = list(chunked.ordered(parts, lambda p: (p.n, os.getpid()), 2, min_bytes=min_bytes))
    assert [v for v, _pid in got] == list(range(100))
    assert (os.getpid() not in {pid for _v, pid in got}) is in_workers
