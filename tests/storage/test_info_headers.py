"""`info` reads a clean v2 segment's headers in one compiled call (check.clean_headers): its
rows are the pure loop's, on broker-written dirs, a damaged generated one and the legacy
corpus; and with -j's workers they are -j 1's."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalog_cli.commands import chunked
from kafkalog_cli.storage.checks import check
from kafkalog_cli.storage.formats import open_target
from kafkalog_cli.storage.queries import overview
from tests.cli.run import run
from tests.conftest import CORPUS, FIXTURE, compiled

DIRS = [FIXTURE, *sorted(d for d in CORPUS.iterdir() if d.is_dir())]


@pytest.fixture(scope="module")
def damaged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("info") / "ld"
    r = run("generate", out, "--force", "--partitions", "4", "--records", "600", "--codec",
            "zstd", "--codec", "none", "--codec", "lz4", "--transactions", "--segment-bytes",
            "4096", "--damage", "torn-tail", "--damage", "bit-flip", "--damage",
            "missing-index")
    assert r.code == 0, r.err
    return out


def _rows(path: Path, mapper=None) -> list:  # type: ignore[no-untyped-def]
    t = open_target(path)
    return t.format.info(t, mapper)


@pytest.mark.skipif(compiled("fastscan") is None, reason="the compiled scanner is not built")
@pytest.mark.parametrize("path", [*DIRS, "damaged"], ids=lambda p: Path(p).name)
def test_compiled_headers_give_the_pure_loops_rows(path, damaged, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    path = damaged if path == "damaged" else path
    fast_hits = []
    real = check.clean_headers

    def counting(p, base):  # type: ignore[no-untyped-def]
        got = real(p, base)
        fast_hits.append(got is not None)
        return got

    monkeypatch.setattr(overview, "clean_headers", counting)
    fast = _rows(path)
    monkeypatch.setattr(overview, "clean_headers", lambda p, base: None)
    assert fast == _rows(path)
    if path.name != "kafka-0.9-legacy":  # magic 0/1 entries are the pure loop's alone
        assert any(fast_hits)  # the compiled call answered, so two ways were compared
    if path == damaged:
        assert not all(fast_hits)  # and a damaged segment went the pure way


@pytest.mark.parametrize("path", [FIXTURE, "damaged", CORPUS / "nomanazeem-kraft"],
                         ids=lambda p: Path(p).name)
def test_workers_give_one_jobs_rows(path, damaged) -> None:  # type: ignore[no-untyped-def]
    path = damaged if path == "damaged" else path
    assert _rows(path, chunked.mapper(2)) == _rows(path)  # min_bytes 0: in the workers
