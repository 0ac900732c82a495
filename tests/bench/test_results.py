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
import tables  # noqa: E402

SECS = re.compile(r"^(\d+\.\d{3})(?: CPU-s)? \((?:(\d+\.\d{3})-(\d+\.\d{3})|1 run)\)$")


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
    judged = [f for f in raw["figures"] if f["goal"] is not None]
    assert f"**Goals: {sum(f['holds'] for f in judged)} of {len(judged)} hold**" in text
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
        med = float(ours.group(1))
        runs = f["ours_s"]["runs"]
        assert len(runs) == 1 and ours.group(2) is None  # one run: no min-max
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
            value = f["ours_s"]["median"] if op.startswith("abs") else f["ratio"]
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


META = {"machine": {"cpu": "c", "cores": 2, "usable_cores": 2, "ram_gib": 1, "kernel": "k",
                    "python": "3", "compiled_core": "no", "kafka_ref": "none"},
        "date": "d", "seconds": 1, "quick": False, "runs": 3,
        "load_before": [1, 1, 1], "load_after": [1, 1, 1]}
LOAD = {"loadavg_before": [1.0, 1.0, 1.0], "loadavg_after": [2.0, 2.0, 2.0]}
# the other bench modules' result dicts, as their run()/bench() give them (made-up values)
TEXTDUMP = {"what": "text vs Kafka", "input": "/x/textdump-1MiB/bench-0/0.log", "bytes": 1 << 20,
            "records": 1000, "kafka_version": "3.9.2", "runs": 3, **LOAD,
            "kafka_dump_log_s": {"median": 4.0, "min": 4.0, "max": 5.0, "runs": [4.0, 4.0, 5.0]},
            "kafkalog_s": {"median": 2.5, "min": 1.0, "max": 3.0, "runs": [1.0, 2.5, 3.0]},
            "ratio": 0.625, "goal": 0.5, "ok": False}
COMPACT = {"records": 1100, "keys": 1000, "runs": 3, "compiled": True,
           "records_per_s": {"median": 1_200_000.0, "min": 1_100_000.0, "max": 1_300_000.0},
           "records_per_cpu_s": {"median": 1_500_000.0, "min": 1_400_000.0, "max": 1_600_000.0},
           "baseline_rss_mib": {"median": 26.0, "min": 26.0, "max": 26.0},
           "above_baseline_mib": {"median": 70.0, "min": 69.0, "max": 71.0},
           "goal_records_per_s": 1_000_000, "goal_above_baseline_mib": 64,
           "load_average_before": [1.0, 1.0, 1.0], "load_average_after": [1.0, 1.0, 1.0]}
HOSTILE = {"bound_mib": 192.0, "goal_text": "2 x cap + 64 MiB", "runs": [
    {"input": "big batch", "size_mib": 4.6, "command": "verify many-0", "peak_rss_mib": 150.0,
     "cpu_s": 0.5, "exit": 0},
    {"input": "big batch", "size_mib": 4.6, "command": "dump many-0", "peak_rss_mib": 200.0,
     "cpu_s": 2.0, "exit": 0}]}
SPARK = {"records": 1000, "partitions": 2, "mb": 1, "local1_s": [2.0, 2.2, 2.1],
         "local2_s": [1.0, 1.1, 1.2], "one_core_s": [4.0, 4.0, 4.0], "dump_s": [3.0, 3.0],
         "settle_reads": 2, "local1_cores": 1.3, "local2_cores": 1.9,
         "cpu_us_per_record_1": 1.5, "cpu_us_per_record_2": 1.6, "warmup_s": 9.0,
         "load_avg": 1.0}


def _render(raw: dict) -> dict[str, str]:
    text = report.markdown(raw, [name for name, _, _ in results.SECTIONS])
    return {"": text.split("\n## ", 1)[0], **_sections(text)}


def _rows(body: str) -> list[list[str]]:
    assert report.HEADER in body
    return [[c.strip() for c in line.strip("|").split("|")] for line in body.splitlines()
            if line.startswith("| ") and not line.startswith("| figure |")]


def test_other_modules_results_are_table_rows_with_goals() -> None:
    """Text dump, compaction, hostile inputs and Spark: rows with median (min-max), the ratio
    where a peer ran, the goal and whether it holds (judged on the numbers), no key: value
    dumps; the top of the page counts the goals and names the ones that miss."""
    notes: dict[str, list[str]] = {}
    figures: list[dict] = []
    for fn, got in ((tables.textdump, TEXTDUMP), (tables.compact, COMPACT),
                    (tables.hostile, HOSTILE), (tables.spark, SPARK)):
        lines, figs = fn(got)
        notes[figs[0]["section"]] = lines
        figures += figs
    got = _render({**META, "figures": figures, "notes": notes})
    text = _rows(got[tables.TEXTDUMP])
    assert text == [["dump --records --print-data (1 MiB segment)", "kafkalog",
                     "kafka-dump-log --deep-iteration --print-data-log", "2.500 (1.000-3.000)",
                     "4.000 (4.000-5.000)", "0.62", "≤ 0.5", "✗"]]
    rate, cpu, mem = _rows(got[tables.COMPACT])
    assert rate[2:] == ["—", "1,200,000 records/s (1,100,000-1,300,000)", "—", "—",
                        "≥ 1,000,000 records/s", "✓"]
    assert cpu[6:] == ["—", "—"]  # no goal on CPU time
    assert mem[3:] == ["70.0 MiB (69.0-71.0)", "—", "—", "≤ 64 MiB", "✗"]
    ok, over = _rows(got[tables.HOSTILE])
    assert ok[0] == "big batch (4.6 MiB on disk): verify many-0 (CPU 0.50 s, exit 0)"
    assert ok[3:] == ["150.0 MiB (1 run)", "—", "—", "≤ 192 MiB (2 x cap + 64 MiB)", "✓"]
    assert over[-1] == "✗"
    # scaling is judged against local[1] confined to one CPU (unpinned, it uses more)
    unpinned, pinned, *vs = _rows(got[tables.SPARK])
    assert unpinned[1:] == ["local[2]", "local[1]", "1.100 (1.000-1.200)",
                            "2.100 (2.000-2.200)", "0.52", "—", "—"]
    assert pinned[1:3] == ["local[2]", "local[1], one CPU"]
    assert pinned[5:] == ["0.28", "≤ 0.588 (≥ 1.7x faster)", "✓"]
    assert [r[5] for r in vs] == ["0.70", "0.37"] and all(r[6] == "—" for r in vs)
    for sec in (tables.TEXTDUMP, tables.COMPACT, tables.HOSTILE, tables.SPARK):
        assert not re.search(r"^- \w+: \{|_s median:|^- ok: ", got[sec], re.M), sec
    assert "- 3 runs of each, Kafka's first every time; load average (1, 5, 15 min): " \
           "1.00 1.00 1.00 before, 2.00 2.00 2.00 after" in got[tables.TEXTDUMP]
    top = got[""]
    assert "**Goals: 3 of 6 hold**, these do not:" in top
    assert f"- {tables.TEXTDUMP}: dump --records --print-data (1 MiB segment): 0.62, goal ≤ 0.5" \
        in top
    assert f"- {tables.COMPACT}: peak RSS above baseline, 0.001 M keys (baseline: " not in top
    assert re.search(rf"^- {re.escape(tables.HOSTILE)}: .*dump many-0: 200.0 MiB, goal ≤ 192 MiB",
                     top, re.M)
    # sections with no figures are named, not counted
    assert "Not measured in this run (no figures): Broker-written data vs kafka-dump-log;" in top


def test_render_only_turns_an_older_results_json_into_tables(tmp_path: Path) -> None:
    """--render-only FILE measures nothing: RESULTS.md (and the README block) from a saved
    results.json, also one from before these sections were tables (text dump and compaction
    kept in "extra", hostile inputs and Spark as text lines)."""
    spark_line = ("1,000 records: local[1] 500 rec/s, local[2] 800 rec/s -> 1.60x (goal >= 1.7); "
                  "local[1] confined to one CPU 250 rec/s -> local[2] on two is 3.20x of it; "
                  "CLI dump --records jsonl on one core 400 rec/s -> local[1] 1.25x, local[2] "
                  "2.00x of it. CPU: local[1] keeps 1.30 cores busy (JVM task thread and its "
                  "Python worker run side by side), local[2] 1.86; 1.49 vs 1.58 CPU-us/record; "
                  "machine: 2 cores, load average 2.1 at the end (first action incl. worker "
                  "start-up 10.1s; timed after up to 12 reads for the JIT to settle)")
    old = {**META, "figures": [], "extra": {"bench_textdump": TEXTDUMP, "bench_compact": COMPACT},
           "notes": {tables.TEXTDUMP: ["what: x", "kafkalog_s median: 2.5"],
                     tables.HOSTILE: ["bound: peak RSS <= 192 MiB (default cap)",
                                      "big batch (4.6 MiB on disk): verify many-0: peak RSS "
                                      "161 MiB, CPU 2.49 s, exit 4"],
                     tables.SPARK: [spark_line]}}
    saved = tmp_path / "results.json"
    saved.write_text(json.dumps(old))
    readme = tmp_path / "README.md"
    shutil.copy(ROOT / "README.md", readme)
    assert results.main(["--render-only", str(saved), "--out", str(tmp_path),
                         "--readme", str(readme)]) == 0
    text = (tmp_path / "RESULTS.md").read_text()
    assert report.readme_current(readme.read_text()) == report.readme_block(text)
    got = _sections(text)
    assert "kafkalog_s median" not in got[tables.TEXTDUMP]
    assert _rows(got[tables.TEXTDUMP])[0][3:6] == ["2.500 (1.000-3.000)", "4.000 (4.000-5.000)",
                                                   "0.62"]
    assert len(_rows(got[tables.COMPACT])) == 3
    assert _rows(got[tables.HOSTILE]) == [[
        "big batch (4.6 MiB on disk): verify many-0 (CPU 2.49 s, exit 4)", "kafkalog", "—",
        "161.0 MiB (1 run)", "—", "—", "≤ 192 MiB (2 x cap + 64 MiB)", "✓"]]
    # the older Spark line kept only the best of the runs: seconds = records / (records/s)
    assert _rows(got[tables.SPARK])[0][3:7] == ["1.250 (best of 3)", "2.000 (best of 3)",
                                                "0.62", "—"]
    assert "**Goals: 3 of 5 hold**" in text  # text dump and memory miss; Spark on one CPU holds


def test_linked_copies_multiply_a_dirs_partitions_with_the_same_bytes(tmp_path: Path) -> None:
    """-j scaling's bigger dirs: each topic partition k times under new topic names, files as
    hard links; an internal topic and the dir's own files once; made once and reused."""
    import datasets

    d = tmp_path / "broker" / "logs"
    subprocess.run([sys.executable, "-m", "kafkalog_cli", "generate", str(d), "--topic", "t",
                    "--partitions", "2", "--records", "50"], check=True,
                   env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True)
    (d / "__cluster_metadata-0").mkdir()
    (d / "meta.properties").write_text("version=1\n")
    got = datasets.linked_copies(d, 3)
    assert got == tmp_path / "broker-x3" / "logs"
    names = sorted(p.name for p in got.iterdir())
    assert names == sorted(["__cluster_metadata-0", "meta.properties", "t-0", "t-1",
                            "t.c1-0", "t.c1-1", "t.c2-0", "t.c2-1",
                            *(p.name for p in d.iterdir() if p.is_file() and
                              p.name != "meta.properties")])
    for copy in ("t-1", "t.c1-1", "t.c2-1"):
        for f in (d / "t-1").iterdir():
            assert (got / copy / f.name).stat().st_ino == f.stat().st_ino
    def verify(target: Path) -> tuple[int, int]:
        p = subprocess.run([sys.executable, "-m", "kafkalog_cli", "verify", str(target)],
                           env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
                           text=True)
        m = re.search(r"verified (\d+) partitions, .* (\d+) records", p.stdout + p.stderr)
        assert m is not None and p.returncode == 0, p.stdout + p.stderr
        return int(m[1]), int(m[2])

    parts, records = verify(d)
    assert verify(got) == (1 + 3 * (parts - 1), 3 * records) and records > 0
    (got / "t.c2-1" / "extra").write_text("")  # made once: a second call keeps the dir
    assert datasets.linked_copies(d, 3) == got and (got / "t.c2-1" / "extra").exists()


def test_copies_are_timed_until_the_j1_run_is_long_enough(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """-j scaling's copies: a -j 1 run pays its start-up once, so the guess from one copy
    falls short; the copies are timed themselves and raised until MIN_J1_S holds (at most
    MAX_COPIES)."""
    def fake(start: float, per_copy: float):
        def process(cmd: list, ok: tuple) -> object:
            where = Path(cmd[cmd.index("-j") - 1])
            n = int(where.name.rsplit("-x", 1)[1]) if "-x" in where.name else 1
            return lambda: start + per_copy * n
        return process

    monkeypatch.setattr(results, "MIN_J1_S", 4.0)
    monkeypatch.setattr(results, "MAX_COPIES", 16)
    made: list[int] = []
    monkeypatch.setattr(results.datasets, "linked_copies",
                        lambda d, n: made.append(n) or d.parent / f"{d.name}-x{n}")
    d = tmp_path / "jobs"
    # 0.5 s alone guesses 8 copies; 8 take 0.2 + 8 * 0.3 = 2.6 s, so 13 (4.1 s)
    monkeypatch.setattr(results, "process", fake(0.2, 0.3))
    assert results._copies(d, ["verify"], (0,)) == 13 and made == [8, 13]
    made.clear()
    monkeypatch.setattr(results, "process", fake(0.1, 0.1))  # 1.7 s at the cap: the cap
    assert results._copies(d, ["verify"], (0,)) == results.MAX_COPIES
    made.clear()
    monkeypatch.setattr(results, "process", fake(0.2, 5.0))  # long enough alone: no copies
    assert results._copies(d, ["verify"], (0,)) == 1 and made == []


def test_close_figures_take_more_runs_and_their_count_is_kept(tmp_path: Path) -> None:
    """The -j and small-partition sections run CLOSE_RUNS of each figure (never fewer than
    --runs; one with --quick), and a figure's JSON holds every run it took."""
    assert results.Run(5, False, tmp_path).close_runs() == results.CLOSE_RUNS > 5
    assert results.Run(12, False, tmp_path).close_runs() == 12
    assert results.Run(1, True, tmp_path).close_runs() == 1
    r = results.Run(5, False, tmp_path)
    calls: list[str] = []
    fig = results.Figure("s", "f", "ours", "peer", goal=results.LE1)
    r.figure(fig, lambda: calls.append("o") or 1.0, lambda: calls.append("p") or 2.0,
             r.close_runs())
    assert calls.count("o") == calls.count("p") == results.CLOSE_RUNS
    got = r.figures[-1]
    assert len(got["ours_s"]["runs"]) == len(got["peer_s"]["runs"]) == results.CLOSE_RUNS
    r.figure(results.Figure("s", "g", "ours", ""), lambda: 1.0, None)
    assert len(r.figures[-1]["ours_s"]["runs"]) == 5


def test_a_pinned_process_runs_on_its_cpu_only(tmp_path: Path) -> None:
    """'-j 1 on CPU b vs on CPU a': measure.process(cpu=) confines the command (and what it
    starts) to that one CPU, and without it the command may use every CPU it was given."""
    import measure

    out = tmp_path / "affinity"
    cmd = [sys.executable, "-c", f"import os; open({str(out)!r}, 'a').write("
           "str(sorted(os.sched_getaffinity(0))) + chr(10))"]
    mine = sorted(os.sched_getaffinity(0))
    for cpu in mine[:2]:
        assert measure.process(cmd, cpu=cpu)() > 0
    measure.process(cmd)()
    assert out.read_text().splitlines() == [str([c]) for c in mine[:2]] + [str(mine)]


def test_a_process_s_cpu_time_counts_its_workers() -> None:
    """'CPU time of -j 2 vs -j 1': measure.process(cpu_s=) adds each run's CPU seconds, those
    of the children it forks and reaps (-j's workers) included, and not the wall time."""
    import measure

    spin = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass\n"
    forks = ("import os\npid = os.fork()\n" + spin +
             "if pid == 0: os._exit(0)\nos.waitpid(pid, 0)\n")
    sleeps = "import time; time.sleep(0.3)"
    got: list[float] = []
    for code in (spin, forks, sleeps):
        measure.process([sys.executable, "-c", code], cpu_s=got)()
    assert 0.3 <= got[0] < 0.55
    assert 0.6 <= got[1] < 0.9  # the parent's 0.3 s and its child's
    assert got[2] < 0.15


def test_a_copy_names_the_partition_it_was_made_from() -> None:
    """'two -j 1 on its halves at once' times each partition once: a linked copy
    (`topic.cC-p`) weighs what its original does; other names are their own."""
    import datasets

    assert datasets.original("t.c3-11") == "t-11"
    assert datasets.original("bench-lz4.c12-0") == "bench-lz4-0"
    assert datasets.original("t-0") == "t-0"
    assert datasets.original("__cluster_metadata-0") == "__cluster_metadata-0"
    assert datasets.original("t.cx-1") == "t.cx-1"


def test_halves_split_partitions_by_cost_costliest_first() -> None:
    """Longest first, each to the lighter half: every partition in exactly one half, each half
    in name order, and the longer half within the costliest partition's cost of the shorter
    (here the best split there is); one partition leaves the other half empty."""
    import datasets

    cost = {Path(f"t-{i}"): c for i, c in enumerate([10, 96, 14, 20, 12, 48, 6, 8, 128, 10,
                                                      16, 24, 64, 20, 8, 80])}
    a, b = datasets.halves(cost)
    assert sorted(a + b) == sorted(cost) and not set(a) & set(b)
    assert a == sorted(a) and b == sorted(b)
    sa, sb = sum(cost[p] for p in a), sum(cost[p] for p in b)
    assert abs(sa - sb) <= max(cost.values()) and sa + sb == 564
    assert (sa, sb) == (282, 282)
    assert Path("t-8") in a and Path("t-1") in b  # the two costliest apart
    assert datasets.halves({Path("x-0"): 3.0}) == ([Path("x-0")], [])
    uneven = {Path("a-0"): 9.0, Path("a-1"): 1.0, Path("a-2"): 1.0, Path("a-3"): 1.0}
    assert datasets.halves(uneven) == ([Path("a-0")], [Path("a-1"), Path("a-2"), Path("a-3")])


def test_at_once_starts_every_command_together_and_checks_their_exits(tmp_path: Path) -> None:
    """measure.at_once: the commands run side by side (wall time near the longest, not the
    sum), each its own command; an exit outside ok raises."""
    import measure

    marks = [tmp_path / "a", tmp_path / "b"]
    cmds = [[sys.executable, "-c", f"import time; time.sleep(1); open({str(m)!r}, 'w')"]
            for m in marks]
    took = measure.at_once(cmds)()
    assert all(m.exists() for m in marks) and 1.0 <= took < 1.9  # one after the other: 2 s
    with pytest.raises(RuntimeError, match="exited"):
        measure.at_once([[sys.executable, "-c", "raise SystemExit(3)"]])()
    assert measure.at_once([[sys.executable, "-c", "raise SystemExit(3)"]], ok=(3,))() > 0


def test_halves_are_timed_once_per_original_less_the_start_up(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """results._halves times the empty partition (the start-up) and each original partition
    once, its copies not again, and splits by what is left."""
    d = tmp_path / "jobs-x2"
    for name in ("t-0", "t-1", "t-2", "t.c1-0", "t.c1-1", "t.c1-2"):
        (d / name).mkdir(parents=True)
    (d / "meta.properties").write_text("")
    work_s = {"empty-0": 0.0, "t-0": 4.0, "t-1": 1.0, "t-2": 2.0}
    timed: list[str] = []

    def process(cmd: list, ok: tuple) -> object:
        name = Path(cmd[cmd.index("-j") - 1]).name
        timed.append(name)
        return lambda: 0.5 + work_s[name]

    monkeypatch.setattr(results, "process", process)
    a, b = results._halves(d, ["verify"], (0, 1), tmp_path)
    assert timed == ["empty-0", "t-0", "t-1", "t-2"]
    assert (tmp_path / "empty-0").is_dir()
    # costs 4, 1, 2 for each original and copy: 4+2+1 = 7 a half
    assert [p.name for p in a] == ["t-0", "t-1", "t-2"]
    assert [p.name for p in b] == ["t.c1-0", "t.c1-1", "t.c1-2"]


def test_rotate_runs_one_of_each_a_round_and_turns_who_goes_first() -> None:
    """measure.rotate: the -j 2, -j 1 and halves figures share rounds; each callable runs
    `runs` times, once a round, the first of a round turning by one, and each callable's
    own seconds come back in its list."""
    import measure

    calls: list[str] = []

    def fn(name: str, secs: float):  # type: ignore[no-untyped-def]
        return lambda: calls.append(name) or secs

    got = measure.rotate([fn("a", 1.0), fn("b", 2.0), fn("c", 3.0)], 4)
    assert got == [[1.0] * 4, [2.0] * 4, [3.0] * 4]
    assert calls == list("abc" "bca" "cab" "abc")


def test_the_loop_floor_is_the_harmonic_share_of_two_loops_over_twice_one(
        tmp_path: Path) -> None:
    """measure.loop_pair / loop_alone: from the loops' own seconds, two at once give
    2 / (1/t0 + 1/t1) (the two-run work shared at their speeds) and one alone twice its
    seconds; so with one loop 2 s alone, two at once at 2 s and 6 s: 3 s for 4 s alone,
    0.75. A loop that fails raises."""
    import measure

    fake = tmp_path / "loop.py"  # the first to create the mark took 2 s, any later one 6 s
    fake.write_text("import json, os, sys\n"
                    "try:\n    os.close(os.open(sys.argv[1], os.O_CREAT | os.O_EXCL))\n"
                    "    s = 2.0\nexcept FileExistsError:\n    s = 6.0\n"
                    "print(json.dumps({'seconds': s, 'checksum': 0}))\n")
    mark = tmp_path / "mark"
    cmd = [sys.executable, str(fake), str(mark)]
    assert measure.loop_alone(cmd)() == 4.0
    mark.unlink()
    assert measure.loop_pair(cmd)() == 3.0
    assert measure.loop_alone(cmd)() == 12.0  # the mark is there: 6 s
    with pytest.raises(RuntimeError, match="exited"):
        measure.loop_pair([sys.executable, "-c", "raise SystemExit(3)"])()


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc (make peers builds it)")
def test_the_compute_loop_builds_and_reports_its_seconds(tmp_path: Path) -> None:
    """bench/peers/cpu_loop.c, as `make peers` builds it: its seconds grow with the
    iterations given and its checksum depends on them only (the loop is not optimised out)."""
    exe = tmp_path / "cpu_loop"
    subprocess.run(["gcc", "-O2", "-o", str(exe), str(ROOT / "bench/peers/cpu_loop.c")],
                   check=True)
    runs = {n: json.loads(subprocess.run([str(exe), str(n)], capture_output=True, text=True,
                                         check=True).stdout) for n in (1, 2_000_000, 20_000_000)}
    again = json.loads(subprocess.run([str(exe), "2000000"], capture_output=True, text=True,
                                      check=True).stdout)
    assert again["checksum"] == runs[2_000_000]["checksum"] != runs[20_000_000]["checksum"]
    assert runs[1]["seconds"] < runs[2_000_000]["seconds"] < runs[20_000_000]["seconds"]
