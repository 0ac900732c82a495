"""`kafkalog verify` (deep and --shallow) gives the same output and exit code with the compiled
segment pass (fastscan.scan_clean) as with the pure pass alone: on the fixtures, the corpus,
generated multi-codec and transactional dirs, and every `generate --damage` drill."""

from __future__ import annotations

import contextlib

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import root
from kafkalog_cli.storage.checks import check
from kafkalog_cli.storage.drills.damage import KINDS
from tests.conftest import CORPUS, FIXTURE

pytestmark = pytest.mark.skipif(check._fastscan is None, reason="compiled fastscan not built "
                                "(tests/storage/test_fastscan.py::test_extension_is_built)")


@contextlib.contextmanager
def _pure():
    saved = check._fastscan
    check._fastscan = None
    try:
        yield
    finally:
        check._fastscan = saved


def kafkalog(*args):
    r = CliRunner().invoke(root, [str(a) for a in args], standalone_mode=False)
    assert r.exception is None, (args, r.exception, r.stderr)
    return r.return_value or 0, r.stdout_bytes, r.stderr_bytes


def both(*args):
    with _pure():
        want = kafkalog(*args)
    got = kafkalog(*args)
    assert got == want, args
    return got


def _verify_all_ways(d):
    for extra in ([], ["--shallow"]):
        both("verify", d, *extra)
        both("verify", d, "--format", "json", *extra)


def _roots():
    return [FIXTURE] + (sorted(p for p in CORPUS.iterdir() if p.is_dir())
                        if CORPUS.is_dir() else [])


@pytest.mark.parametrize("d", _roots(), ids=lambda p: p.name)
def test_fixtures_and_corpus(d):
    _verify_all_ways(d)


def test_generated_codecs_and_transactions(tmp_path):
    d = tmp_path / "gen"
    assert kafkalog("generate", d, "--records", "3000", "--partitions", "2", "--segment-bytes",
                    "40000", "--codec", "none", "--codec", "gzip", "--codec", "snappy",
                    "--codec", "lz4", "--codec", "zstd", "--transactions", "--idempotent")[0] == 0
    rc, out, _ = both("verify", d)
    assert rc == 0 and b" 0 errors" in out
    _verify_all_ways(d)


def test_the_fast_path_is_taken(tmp_path, monkeypatch):
    """A clean dir is answered by the compiled pass, deep included (else the tests above would
    compare the pure pass with itself)."""
    d = tmp_path / "gen"
    kafkalog("generate", d, "--records", "500", "--codec", "zstd", "--codec", "none",
             "--transactions")
    real, calls = check._fastscan, []

    class Spy:
        def scan_clean(self, *a, **kw):
            r = real.scan_clean(*a, **kw)
            calls.append((kw["deep"], r is not None))
            return r

    monkeypatch.setattr(check, "_fastscan", Spy())
    kafkalog("verify", d)
    kafkalog("verify", d, "--shallow")
    assert (True, True) in calls and (False, True) in calls
    assert all(clean for _, clean in calls)


@pytest.mark.parametrize("kind", KINDS)
def test_damage_drills(tmp_path, kind):
    d = tmp_path / "drill"
    assert kafkalog("generate", d, "--records", "600", "--segment-bytes", "9000", "--codec",
                    "none", "--codec", "lz4", "--transactions", "--damage", kind)[0] == 0
    _verify_all_ways(d)
