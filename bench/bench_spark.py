"""Spark read throughput: the `kafkalog` data source on local[1] vs local[2], and vs the CLI.

    .venv/bin/python bench/bench_spark.py [--partitions 8] [--mb 32] [--runs 3]

Input: PARTITIONS partition dirs of one MB-sized uncompressed segment each (bench/data.py,
120 records a batch). Each Spark run is a fresh process: start a session, read everything
once to warm the Python workers, then time full reads (best of --runs), each materialising
every column of every row through the `noop` sink. The reference is
`kafkalog dump --records --format jsonl` on one core over the same dirs.
Goals: local[2] >= 1.7x local[1] (scaling); the records/s ratio to the CLI is reported.
Not a test. Needs PySpark (pip install 'kafkalog[spark]').
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
OUT = HERE / "out" / "spark"
PY = sys.executable


def make_input(partitions: int, mb: int) -> tuple[Path, int]:
    from data import write_segment

    total = 0
    for p in range(partitions):
        _, n = write_segment(OUT / f"bench-{p}" / "00000000000000000000.log", mb << 20)
        total += n
    return OUT, total


def worker(master: str, path: str, runs: int) -> dict[str, float]:
    """One Spark run (in its own process): seconds for a full read, best of `runs`."""
    from kafkalog_cli.spark.session import Session

    with Session(master, app_name="kafkalog-bench") as spark:
        df = spark.read.format("kafkalog").option("includeHeaders", "true").load(path)
        t0 = time.perf_counter()
        rows = df.count()  # warm-up: Python workers, imports, planning
        warm = time.perf_counter() - t0
        best = float("inf")
        for _ in range(runs):
            t0 = time.perf_counter()
            df.write.format("noop").mode("overwrite").save()
            best = min(best, time.perf_counter() - t0)
    return {"rows": rows, "seconds": best, "warmup_s": warm}


def run_worker(master: str, path: Path, runs: int) -> dict[str, float]:
    p = subprocess.run([PY, __file__, "--worker", master, "--path", str(path),
                        "--runs", str(runs)], capture_output=True, text=True, check=False)
    if p.returncode:
        raise SystemExit(f"bench worker {master} failed:\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def cli_dump(path: Path, runs: int) -> float:
    cmd = [PY, "-m", "kafkalog_cli", "dump", str(path), "--records", "--no-batches",
           "--format", "jsonl", "--payload", "base64"]
    pin = ["taskset", "-c", "0"] if hasattr(os, "sched_setaffinity") and \
        subprocess.run(["which", "taskset"], capture_output=True).returncode == 0 else []
    best = float("inf")
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(pin + cmd, stdout=subprocess.DEVNULL, check=True)
        best = min(best, time.perf_counter() - t0)
    return best


def bench(partitions: int = 8, mb: int = 32, runs: int = 3) -> dict[str, float]:
    path, records = make_input(partitions, mb)
    one = run_worker("local[1]", path, runs)
    two = run_worker("local[2]", path, runs)
    assert one["rows"] == two["rows"] == records, (one, two, records)
    dump_s = cli_dump(path, max(1, runs - 1))
    return {"records": records, "local1_rps": records / one["seconds"],
            "local2_rps": records / two["seconds"], "dump_rps": records / dump_s,
            "scaling": one["seconds"] / two["seconds"], "local1_vs_dump": dump_s / one["seconds"],
            "local2_vs_dump": dump_s / two["seconds"], "warmup_s": two["warmup_s"]}


def report(r: dict[str, float]) -> str:
    return (f"{r['records']:,} records: local[1] {r['local1_rps']:,.0f} rec/s, local[2] "
            f"{r['local2_rps']:,.0f} rec/s -> {r['scaling']:.2f}x (goal >= 1.7); "
            f"CLI dump --records jsonl on one core {r['dump_rps']:,.0f} rec/s -> local[1] "
            f"{r['local1_vs_dump']:.2f}x, local[2] {r['local2_vs_dump']:.2f}x of it "
            f"(first action incl. worker start-up {r['warmup_s']:.1f}s)")


def summary() -> str:
    """One line for bench/run.py (default sizes)."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return "skipped (pip install 'kafkalog[spark]')"
    return report(bench())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--mb", type=int, default=32, help="segment size per partition")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--path", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        print(json.dumps(worker(a.worker, a.path, a.runs)))
        return
    try:
        import pyspark  # noqa: F401
    except ImportError:
        print("skipped (pip install 'kafkalog[spark]')")
        return
    print(report(bench(a.partitions, a.mb, a.runs)))


if __name__ == "__main__":
    main()
