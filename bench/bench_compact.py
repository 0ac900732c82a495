"""Compaction rate and peak memory on a 1 M-key compacted partition.

Goals (issue 17): >= 1 M records/s, and <= 64 MiB peak RSS above the baseline.

Input: one 64 MiB segment of 1.1 M records (every one of 1 M keys once, then 10 % of them
again: 100 k records go), built once under bench/out/compact/ (git-ignored). Each run compacts
a fresh copy in a child process (`kafkalog compact`, the whole command: start-up, offset map,
rewrite, index rebuild, fsyncs and the segment replacement) and takes its wall time, CPU time
and peak RSS (ru_maxrss). The baseline is a child that imports the same command and stops
before any work (`kafkalog compact --help`): the difference is what compaction itself costs.

Children run with bytecode caching on (PYTHONDONTWRITEBYTECODE dropped from their
environment), as an installed kafkalog has its .pyc files: compiling kafkalog's sources on
every start would add ~0.2 s to each run. KAFKALOG_PURE=1 in the environment measures the
pure-Python cleaner instead.

`run(runs)` returns the figures as a dict (median, min and max over the runs); `main()`
prints it as JSON.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT = HERE / "out" / "compact"
KEYS = 1_000_000
RECORDS = KEYS + KEYS // 10
NOW_MS = "1700000000000"
GOAL_RECORDS_PER_S = 1_000_000
GOAL_ABOVE_BASELINE_MIB = 64


def build(d: Path) -> None:
    from kafkalog_cli.codec.batch_v2 import encode_batch
    from kafkalog_cli.storage.maintenance.writer import LogConfig, PartitionWriter

    with PartitionWriter(d / "t-0", "t", 0, LogConfig(segment_bytes=64 << 20), now_ms=0) as w:
        off = 0
        # every key once, then 10% of them again: 1.1 M records, 1 M distinct keys
        for start in range(0, RECORDS, 500):
            recs = [(off + i, 1_700_000_000_000, b"key-%08d" % ((start + i) % KEYS), b"v" * 40, [])
                    for i in range(500)]
            w.append(encode_batch(recs))
            off += 500
        w.roll(w.next_offset)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    root = str(HERE.parent)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def child_peak(args: list[str]) -> tuple[float, int, float]:
    """(wall seconds, peak RSS in KiB, CPU seconds) of `args` run in a child of a small
    runner. CPU time is the figure to read on a busy machine: wall time waits for a core."""
    code = ("import resource, subprocess, sys, time\n"
            "t = time.perf_counter()\n"
            "p = subprocess.run(sys.argv[1:], capture_output=True)\n"
            "dt = time.perf_counter() - t\n"
            "assert p.returncode == 0, p.stderr\n"
            "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
            "print(dt, u.ru_maxrss, u.ru_utime + u.ru_stime)\n")
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                         check=True, env=_env()).stdout.split()
    return float(out[0]), int(out[1]), float(out[2])


def _spread(xs: list[float], digits: int = 1) -> dict[str, float]:
    return {"median": round(statistics.median(xs), digits), "min": round(min(xs), digits),
            "max": round(max(xs), digits)}


def _compiled() -> bool:
    code = ("from kafkalog_cli.storage.maintenance import offset_map as m\n"
            "print(m.FAST is not None)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env=_env()).stdout.strip()
    return out == "True"


def run(runs: int = 5) -> dict[str, Any]:
    """Compact a fresh copy `runs` times; the figures, each as median, min and max."""
    d = OUT / "ld"
    if not (d / "t-0").exists():
        shutil.rmtree(d, ignore_errors=True)
        build(d)
    kafkalog = [sys.executable, "-m", "kafkalog_cli"]
    child_peak([*kafkalog, "compact", "--help"])  # writes the .pyc files once
    load_before = os.getloadavg()
    rates, secs, cpu_rates, cpus, peaks, bases = [], [], [], [], [], []
    work = OUT / "work"
    for _ in range(runs):
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(d, work)
        _, base_kib, _ = child_peak([*kafkalog, "compact", "--help"])
        dt, peak_kib, cpu = child_peak([*kafkalog, "compact", str(work / "t-0"), "--force",
                                        "--now", NOW_MS, "--no-quarantine"])
        secs.append(dt)
        rates.append(RECORDS / dt)
        cpus.append(cpu)
        cpu_rates.append(RECORDS / cpu)
        peaks.append(peak_kib / 1024)
        bases.append(base_kib / 1024)
    shutil.rmtree(work, ignore_errors=True)
    above = [p - b for p, b in zip(peaks, bases, strict=True)]
    rate = statistics.median(rates)
    extra = statistics.median(above)
    return {
        "name": "compact",
        "records": RECORDS,
        "keys": KEYS,
        "runs": runs,
        "compiled": _compiled(),
        "records_per_s": _spread(rates, 0),
        "seconds": _spread(secs, 3),
        "records_per_cpu_s": _spread(cpu_rates, 0),
        "cpu_seconds": _spread(cpus, 3),
        "peak_rss_mib": _spread(peaks),
        "baseline_rss_mib": _spread(bases),
        "above_baseline_mib": _spread(above),
        "goal_records_per_s": GOAL_RECORDS_PER_S,
        "goal_above_baseline_mib": GOAL_ABOVE_BASELINE_MIB,
        "meets_goals": rate >= GOAL_RECORDS_PER_S and extra <= GOAL_ABOVE_BASELINE_MIB,
        "cpus": os.cpu_count(),
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    print(json.dumps(run(runs), indent=2))


if __name__ == "__main__":
    main()
