"""The fuzz harness (tests/faults/fuzzing.py) on fixed seeds: the bounded run of `make test`.
`make fuzz` runs the same harness with a fresh seed and >= 100 000 cases."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.faults import fuzz_inputs, fuzzing

ROOT = Path(__file__).resolve().parents[2]
# about a minute per decoder on two busy cores; KAFKALOG_FUZZ_TEST_CASES to change
CASES = int(os.environ.get("KAFKALOG_FUZZ_TEST_CASES", "2000"))


@pytest.mark.parametrize("pure", ["0", "1"], ids=["compiled", "pure"])
def test_every_reader_on_mutated_files(tmp_path, pure):
    env = {**os.environ, "KAFKALOG_PURE": pure}
    env.pop("KAFKALOG_DEBUG", None)
    p = subprocess.run([sys.executable, "-m", "tests.faults.fuzzing", "--seed",
                        f"make-test-{pure}", "--cases", str(CASES), "--jobs", "1", "--json",
                        "--work", str(tmp_path)], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=1800)
    assert p.returncode in (0, 1), p.stderr
    report = json.loads(p.stdout)
    assert report["cases"] >= CASES
    assert report["error_lines"] > 0  # the mutations do reach the error paths
    assert report["failures"] == [], json.dumps(report["failures"][:4], indent=1)
    assert report["unlocated_error_lines"] == 0
    assert p.returncode == 0


# -- the harness's own checks: each one catches what it is there for ----------------------

def _run(err="", code=0, rss_mib=30, seconds=0.1, argv=("dump", "/x/ld/t-0"), size=1000):
    return fuzzing.Run(list(argv), code, err, rss_mib * 1024, seconds, size)


CASE = Path("/x")


@pytest.mark.parametrize(("run", "problem"), [
    (_run("Traceback (most recent call last):\n  File ..."), "traceback"),
    (_run("kafkalog: error: internal error: KeyError: 3 (run with --debug ...)", 8),
     "internal-error"),
    (_run(code=1), "exit 1 not documented for dump"),
    (_run(code=-9), "signal 9"),
    (_run("kafkalog: error: <bytes>: unknown compression codec 7\n", 4),
     "error line without file:position"),
    (_run("kafkalog: error: /x/ld/t-0/00000000000000000000.log: truncated\n", 4),
     "error line without file:position"),
    (_run("kafkalog: error: /elsewhere/a.log:12: bad\n", 4), "error line without file:position"),
    (_run(rss_mib=81, argv=("dump", "/x/ld/t-0", "--max-decompressed-bytes", str(8 << 20))),
     "peak RSS 81 MiB > 80 MiB"),
    (_run(rss_mib=193), "peak RSS 193 MiB > 192 MiB"),
    (_run(seconds=fuzzing.time_bound(10**6) + 1, size=10**6), "took"),
])
def test_the_checks_catch_what_they_are_for(run, problem):
    assert any(p.startswith(problem) for p in run.problems(CASE)), run.problems(CASE)


@pytest.mark.parametrize("run", [
    _run("kafkalog: warning: /x/ld/t-0/0.log:0: torn tail\n", 4),
    _run("kafkalog: error: /x/ld/t-0/00000000000000000000.log:4096: bad batch\n", 4),
    _run("kafkalog: error: Invalid value for '--timestamp': no zone\n", 16),
    _run("kafkalog: error: no partition dirs found under /x/ld\n", 16),
    _run(rss_mib=80, argv=("verify", "/x/ld", "--max-decompressed-bytes", str(8 << 20))),
    _run(code=1, argv=("recover", "/x/ld", "--dry-run")),
])
def test_what_the_checks_let_pass(run):
    assert run.problems(CASE) == []


def test_a_case_is_replayed_from_its_seed(tmp_path):
    """The same (seed, number) gives the same input and the same commands."""
    import random

    templates = fuzz_inputs.build_templates(tmp_path / "t")
    by_kind = fuzz_inputs.inputs(templates)
    kinds = set(by_kind)
    assert {"log-v0", "log-v1", "log-v2", "kraft-checkpoint", "kafka07", "index", "timeindex",
            "txnindex", "snapshot", "leader-epoch", "root-checkpoint"} <= kinds
    for n in range(20):
        inp = by_kind[sorted(kinds)[n % len(kinds)]][0]
        a = fuzz_inputs.mutate(random.Random(f"s:{n}"), inp)
        b = fuzz_inputs.mutate(random.Random(f"s:{n}"), inp)
        assert a == b
