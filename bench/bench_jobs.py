"""-j scaling: wall time of `-j 1` and `-j N` on one log dir, as JSON
{command: {"j1_s": median, "jN_s": median, "ratio": j1/jN, "jobs": N}}.

    python bench/bench_jobs.py LOGDIR [--jobs N] [--runs 5] [--only verify ...]

Runs alternate (j1, jN, j1, ...) so load from elsewhere hits both alike; medians. Output
goes to /dev/null (its writing is not what is measured). index-rebuild runs --dry-run: the
same reading and rebuilding, and the dir stays as it was. The JSON also gives the load
average before and after (other work on the machine takes cores -j N counts on).
bench/results.py times COMMANDS itself, on bench/datasets.py's jobs_dir and the broker dir,
or on hard-linked copies of them (datasets.linked_copies) where a -j 1 run is under 4 s;
this script times the dir it is given as it is.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

COMMANDS: dict[str, list[str]] = {
    "verify": ["verify"],
    "dump": ["dump", "--records", "--print-data"],
    "dump-jsonl": ["dump", "--records", "--format", "jsonl"],
    "index-rebuild": ["index-rebuild", "--dry-run"],
}


def _time(args: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "kafkalog_cli", *args], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - t


def bench_jobs(log_dir: Path, jobs: int | None = None, runs: int = 5,
               commands: dict[str, list[str]] = COMMANDS) -> dict[str, dict[str, float]]:
    n = jobs or len(os.sched_getaffinity(0))
    result = {}
    for name, args in commands.items():
        one: list[float] = []
        many: list[float] = []
        for _ in range(runs):
            one.append(_time([*args, str(log_dir), "-j", "1"]))
            many.append(_time([*args, str(log_dir), "-j", str(n)]))
        j1, jn = statistics.median(one), statistics.median(many)
        result[name] = {"j1_s": round(j1, 3), "jN_s": round(jn, 3),
                        "ratio": round(j1 / jn, 2), "jobs": n}
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("log_dir", type=Path)
    ap.add_argument("--jobs", type=int, default=None, help="N (default: every core)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--only", action="append", choices=sorted(COMMANDS),
                    help="time this command only (repeatable)")
    a = ap.parse_args()
    commands = {k: v for k, v in COMMANDS.items() if not a.only or k in a.only}
    before = os.getloadavg()
    result: dict[str, object] = dict(bench_jobs(a.log_dir, a.jobs, a.runs, commands))
    result["loadavg"] = {"before": [round(x, 2) for x in before],
                         "after": [round(x, 2) for x in os.getloadavg()]}
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
