"""Peak RSS and CPU time of dump, verify, find-by-time and recover on hostile inputs (issue 14).

    .venv/bin/python bench/bench_hostile.py

Goal: peak RSS <= 2 x the decompression cap + 64 MiB on any input, and time linear in the
file size. The inputs are tests/faults/hostile.py's at the sizes the issue reported
(written under bench/out/hostile/); each command runs in a process of its own. Not a test
(tests/faults/test_memory.py asserts the bounds on smaller inputs).
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # the tests package

from tests.faults import hostile  # noqa: E402
from tests.faults.hostile import BASE_TS, MiB, measure, rss_bound  # noqa: E402

OUT = HERE / "out" / "hostile"
GiB = 1 << 30


def _inputs() -> list[tuple[str, Path, list[list[object]]]]:
    """(what, partition dir, commands) for each input, made once."""
    def made(name: str, build: Callable[[Path, int], Path], size: int) -> Path:
        root = OUT / f"{name}-{size}"
        done = root / ".done"
        if not done.exists():
            shutil.rmtree(root, ignore_errors=True)
            root.mkdir(parents=True)
            build(root, size)
            done.touch()
        return next(p for p in root.iterdir() if p.is_dir())

    n = 6_000_000
    many = made("records", hostile.records_batch, n)
    legacy = made("legacy", hostile.legacy_wrapper, 1_000_000)
    z100 = made("zero-index", hostile.zero_indexes, 100 * MiB)
    z1g = made("zero-index", hostile.zero_indexes, GiB)
    last = sorted(z100.glob("*.index"))[-1]
    return [
        (f"one zstd batch of {n // 1_000_000} M empty records", many, [
            ["dump", many, "--records", "--no-batches"],
            ["dump", many, "--records", "--format", "jsonl"],
            ["verify", many], ["find-by-time", many, "-t", BASE_TS + 1],
            ["recover", many, "--dry-run"]]),
        ("one gzip magic-1 wrapper of 1 M empty messages", legacy, [
            ["dump", legacy, "--records", "--format", "jsonl"], ["verify", legacy],
            ["find-by-time", legacy, "-t", BASE_TS + 1]]),
        ("100 MB zero-filled .index and .timeindex", z100, [
            ["verify", z100], ["dump", last], ["dump", last.with_suffix(".timeindex")],
            ["find-by-time", z100, "-t", "0"]]),
        ("1 GiB zero-filled .index and .timeindex", z1g, [["verify", z1g]]),
        ("0.7 segment, 8 MiB tail of repeated lz4 blocks",
         made("v07-lz4", hostile.v07_lz4_tail, 8 * MiB), [["recover", "--dry-run"],
                                                           ["verify"]]),
        ("v2 log, 8 MiB of look-alike batch headers",
         made("lookalike", hostile.v2_lookalike_tail, 8 * MiB), [["verify"],
                                                                 ["recover", "--dry-run"]]),
        ("v2 log, a junk byte after each of 128000 batches",
         made("dense", hostile.v2_dense_damage, 128_000), [["verify"]]),
    ]


def run() -> dict:
    """The bound and, per input and command, peak RSS (MiB), CPU seconds and exit code of one
    run (bench/RESULTS.md's rows)."""
    got: dict = {"bound_mib": round(rss_bound() / MiB, 1), "goal_text": "2 x cap + 64 MiB",
                 "runs": []}
    print(bound_line(got["bound_mib"]), flush=True)
    for what, pdir, commands in _inputs():
        size = sum(p.stat().st_blocks * 512 for p in pdir.rglob("*") if p.is_file())
        for cmd in commands:
            args = cmd if any(isinstance(a, Path) for a in cmd) else [*cmd, pdir]
            m = measure(*args)
            got["runs"].append({
                "input": what, "size_mib": round(size / MiB, 1),
                "command": " ".join(str(a.name) if isinstance(a, Path) else str(a)
                                    for a in args),
                "peak_rss_mib": round(m.peak_rss / MiB, 1), "cpu_s": round(m.cpu, 2),
                "exit": m.code})
            print(line(got["runs"][-1], got["bound_mib"]), flush=True)
    return got


def line(r: dict, bound_mib: float) -> str:
    return (f"{r['input']} ({r['size_mib']:.1f} MiB on disk): {r['command']}: peak RSS "
            f"{r['peak_rss_mib']:.0f} MiB, CPU {r['cpu_s']:.2f} s, exit {r['exit']}"
            + ("" if r["peak_rss_mib"] <= bound_mib else "  ** over the bound **"))


def bound_line(bound_mib: float) -> str:
    return f"bound: peak RSS <= {bound_mib:.0f} MiB (default cap)"


def main() -> list[str]:
    """One line per input and command; also printed."""
    got = run()
    return [bound_line(got["bound_mib"]),
            *(line(r, got["bound_mib"]) for r in got["runs"])]


if __name__ == "__main__":
    main()
