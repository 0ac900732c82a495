"""The compiled pass of rebuild_segment (fastscan.scan_rebuild) against the pure one, which is
the specification: wherever the compiled pass answers, the Rebuilt it gives and the producer
state it leaves are the pure pass's; where the pure pass stops early, the compiled one must
not answer. Compared on the corpus (real brokers' segments), generated dirs with
transactions, idempotent producers, codecs and damage, small index capacities (splits) and
caps on entries, and mutated copies of a transactional segment."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

from kafkalog_cli.storage.disk.logdir import open_target
from kafkalog_cli.storage.drills.generate import GenSpec, generate
from kafkalog_cli.storage.maintenance import rebuild
from kafkalog_cli.storage.maintenance.rebuild import IndexCapacity, rebuild_segment, txn_on_disk
from kafkalog_cli.storage.queries.producers import ProducerState
from tests.conftest import CORPUS, FIXTURE, compiled

fs = compiled("fastscan")
pytestmark = pytest.mark.skipif(fs is None, reason="compiled fastscan not built "
                                "(test_fastscan.py::test_extension_is_built reports it)")
# (Kafka 0.7 dirs have a layout of their own, and no indexes to rebuild)
CORPUS_DIRS = sorted(d for d in CORPUS.iterdir()
                     if d.is_dir() and not any(d.rglob("*.kafka")))


def _state(s: ProducerState) -> tuple[object, ...]:
    return s.entries, s.ongoing, s.last_batch, s.before_txn


def _both(monkeypatch: pytest.MonkeyPatch, root: Path, **kw: object) -> tuple[int, int]:
    """Rebuild every segment of every partition under `root` both ways, producer state
    carried across a partition's segments as reindex does; (segments, taken by C)."""
    calls = taken = 0
    real = rebuild._compiled

    def counting(*a: object) -> object:
        nonlocal taken
        got = real(*a)  # type: ignore[arg-type]
        taken += got is not None
        return got

    for part in open_target(root).partitions():
        fast, pure = ProducerState(), ProducerState()
        for seg in part.segments:
            if not seg.has_log:
                continue
            calls += 1
            monkeypatch.setattr(rebuild, "_compiled", counting)
            a = rebuild_segment(seg, state=fast, txn_on_disk=txn_on_disk(seg), **kw)
            monkeypatch.setattr(rebuild, "_fastscan", None)
            b = rebuild_segment(seg, state=pure, txn_on_disk=txn_on_disk(seg), **kw)
            monkeypatch.setattr(rebuild, "_fastscan", fs)
            assert a == b, seg.log_path
            assert _state(fast) == _state(pure), seg.log_path
    return calls, taken


@pytest.mark.parametrize("d", CORPUS_DIRS, ids=lambda d: d.name)
def test_the_corpus_rebuilds_the_same(monkeypatch: pytest.MonkeyPatch, d: Path) -> None:
    _both(monkeypatch, d)


def test_the_fixture_rebuilds_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    _both(monkeypatch, FIXTURE)


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Transactions (commits and aborts), idempotent producers, three codecs, small batches
    in many segments."""
    out = tmp_path_factory.mktemp("fast-rebuild") / "ld"
    generate(out, GenSpec(partitions=3, records=3000, batch_records=7, keys=50,
                          codecs=["none", "zstd", "lz4"], transactions=True, idempotent=True,
                          segment_bytes=32768, jitter_ms=40))
    return out


@pytest.mark.parametrize("kw", [{}, {"interval": 1}, {"interval": 100000},
                                {"max_entries": 3},
                                {"capacity": IndexCapacity(4, 4)},
                                {"capacity": IndexCapacity(2, 9), "interval": 512}],
                         ids=str)
def test_generated_segments_rebuild_the_same_and_in_c(monkeypatch: pytest.MonkeyPatch,
                                                      generated: Path,
                                                      kw: dict[str, object]) -> None:
    calls, taken = _both(monkeypatch, generated, **kw)
    assert calls > 20 and taken == calls  # every clean v2 segment takes the compiled pass


def test_splits_are_found_in_c(generated: Path) -> None:
    seg = next(s for p in open_target(generated).partitions() for s in p.segments if s.has_log)
    r = rebuild_segment(seg, capacity=IndexCapacity(2, 9), interval=512)
    assert r.splits  # a capacity this small must split: the comparison above covers them


def test_a_mutated_segment_rebuilds_the_same(monkeypatch: pytest.MonkeyPatch, generated: Path,
                                             tmp_path: Path) -> None:
    """Bytes flipped, cut or zeroed anywhere: the compiled pass answers only where the pure
    one reads to the end, and then with the same result."""
    src = next(p for p in open_target(generated).partitions()).path
    rng = random.Random(17)
    answered = 0
    for i in range(150):
        d = tmp_path / f"m{i}" / src.name
        shutil.copytree(src, d)
        log = sorted(d.glob("*.log"))[rng.randrange(2)]
        data = bytearray(log.read_bytes())
        pos = rng.randrange(len(data))
        kind = rng.randrange(3)
        if kind == 0:
            data[pos] ^= 1 << rng.randrange(8)
        elif kind == 1:
            del data[pos:]
        else:
            data[pos:pos + 64] = bytes(len(data[pos:pos + 64]))
        log.write_bytes(bytes(data))
        answered += _both(monkeypatch, d.parent)[1]
        shutil.rmtree(d.parent)
    assert answered  # the untouched segments, at least
