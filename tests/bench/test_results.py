"""`make bench`'s driver (bench/results.py): its --quick run writes every section with numbers
that parse and agree with its raw JSON, and the README quotes the committed RESULTS.md."""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import report  # noqa: E402
import results  # noqa: E402

SECS = re.compile(r"^(\d+\.\d{3}) \((\d+\.\d{3})-(\d+\.\d{3})\)$")


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict, Path]:
    out = tmp_path_factory.mktemp("bench")
    readme = out / "README.md"
    shutil.copy(ROOT / "README.md", readme)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KAFKALOG_BENCH_QUICK": "1"}
    p = subprocess.run([sys.executable, str(ROOT / "bench" / "results.py"), "--out", str(out),
                        "--readme", str(readme)], env=env, capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    text = (out / "RESULTS.md").read_text()
    raw = json.loads((out / "out" / "results.json").read_text())
    return text, raw, readme


def _sections(text: str) -> dict[str, str]:
    parts = re.split(r"^## (.+)$", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_quick_run_has_every_section_in_order(quick: tuple[str, dict, Path]) -> None:
    text, raw, _ = quick
    assert text.startswith(report.TITLE + "\n")
    assert "QUICK MODE" in text
    assert re.search(r"^- Machine: .+, \d+ cores .*Python 3\.", text, re.M)
    assert re.search(r"^- Load average \(1, 5, 15 min\): [\d.]+ [\d.]+ [\d.]+ before, "
                     r"[\d.]+ [\d.]+ [\d.]+ after$", text, re.M)
    names = [name for name, _, _ in results.SECTIONS]
    assert list(_sections(text)) == names
    for name, body in _sections(text).items():
        # each section measured something or says why not
        assert "| figure |" in body or "not measured" in body, name
    assert raw["quick"] is True and raw["runs"] == 1


def test_quick_run_figures_parse_and_agree_with_the_json(quick: tuple[str, dict, Path]) -> None:
    text, raw, _ = quick
    rows = [line for line in text.splitlines()
            if line.startswith("| ") and not line.startswith("| figure |")]
    figs = raw["figures"]
    assert len(rows) == len(figs) >= 10  # more where `make peers` built the native floors
    measured = {f["section"] for f in figs}
    # what needs nothing beyond the venv is always measured
    assert {"2 000 small partitions", "-j scaling", "kafka-python", "find-by-time"} <= measured
    for line, f in zip(rows, figs, strict=True):
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert len(cells) == 8, line
        ours = SECS.match(cells[3])
        assert ours, line
        med, lo, hi = map(float, ours.groups())
        runs = f["ours_s"]["runs"]
        assert len(runs) == 1 and lo <= med <= hi
        assert med == pytest.approx(statistics.median(runs), abs=6e-4)
        if f["peer_s"] is None:
            assert cells[4] == cells[5] == "—"
        else:
            peer = SECS.match(cells[4])
            assert peer, line
            ratio = f["ours_s"]["median"] / f["peer_s"]["median"]
            assert float(cells[5]) == pytest.approx(ratio, abs=0.006, rel=1e-3)
            assert f["ratio"] == pytest.approx(ratio, rel=1e-3)
        # the ✓/✗ is the goal applied to the figures, not a claim
        if f["goal"] is None:
            assert cells[6] == cells[7] == "—"
        else:
            op, bound = f["goal"]
            value = f["ours_s"]["median"] if op == "s<=" else f["ratio"]
            ok = value >= bound if op == ">=" else value <= bound
            assert cells[7] == ("✓" if ok else "✗"), line


def test_quick_run_rewrites_the_readme_block(quick: tuple[str, dict, Path]) -> None:
    text, _, readme = quick
    got = readme.read_text()
    assert report.readme_current(got) == report.readme_block(text)
    # only the block changed
    before = (ROOT / "README.md").read_text()
    strip = re.compile(re.escape(report.BEGIN) + ".*?" + re.escape(report.END), re.S)
    assert strip.sub("", got) == strip.sub("", before)
    assert "### -j scaling" in got


def test_readme_quotes_the_committed_results() -> None:
    """The README's figures are bench/RESULTS.md's, as `make bench` wrote them."""
    committed = (ROOT / "bench" / "RESULTS.md").read_text()
    assert "QUICK MODE" not in committed
    assert report.readme_current((ROOT / "README.md").read_text()) == \
        report.readme_block(committed)


def test_other_modules_figures_and_values_are_rendered() -> None:
    """bench_textdump / bench_compact give run(runs) -> dict: figures in it become rows, the
    rest `key: value` lines."""
    got = {"figures": [{"name": "text dump", "ours_s": [1.0, 2.0, 3.0],
                        "peer_s": [4.0, 4.0, 5.0], "goal": ["<=", 0.5],
                        "peer": "kafka-dump-log --print-data-log"}],
           "records": 10, "rss": {"peak_mib": 40}}
    figs = report.figures_from("Text dump", got)
    assert [(f.name, f.ratio, f.holds) for f in figs] == [("text dump", 0.5, True)]
    assert report.lines_from(got) == ["records: 10", "rss peak_mib: 40"]
    text = report.markdown({"machine": {"cpu": "c", "cores": 2, "usable_cores": 2,
                                        "ram_gib": 1, "kernel": "k", "python": "3",
                                        "compiled_core": "no", "kafka_ref": "none"},
                            "date": "d", "seconds": 1, "quick": False, "runs": 3,
                            "load_before": (1, 1, 1), "load_after": (1, 1, 1)},
                           ["Text dump"], figs, {"Text dump": report.lines_from(got)})
    assert "| text dump | kafkalog | kafka-dump-log --print-data-log | 2.000 (1.000-3.000) " \
           "| 4.000 (4.000-5.000) | 0.50 | ≤ 0.5 | ✓ |" in text
