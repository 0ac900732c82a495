"""Spark read throughput: the `kafkalog` data source on local[1] vs local[2], and vs the CLI.

    .venv/bin/python bench/bench_spark.py [--partitions 8] [--mb 32] [--runs 3]

Input: PARTITIONS partition dirs of one MB-sized uncompressed segment each (bench/data.py,
120 records a batch). Each Spark run is a fresh process: start a session, read everything
once to warm the Python workers, read until the JIT settles (settle()), then time full
reads (best of --runs), each materialising every column of every row through the `noop`
sink. The reference is
`kafkalog dump --records --format jsonl` on one core over the same dirs.
Goals: local[2] >= 1.7x local[1] confined to one CPU (scaling; unconfined, local[1] uses
more than one core); the records/s ratio to the CLI is reported.
Not a test. Needs PySpark (pip install 'kafkalog[spark]').
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
OUT = HERE / "out" / "spark"
PY = sys.executable
RUNS = 3  # timed reads per Spark run (the CLI dump: one fewer)
SKIPPED = "skipped (pip install 'kafkalog[spark]')"


def make_input(partitions: int, mb: int) -> tuple[Path, int]:
    from data import write_segment

    total = 0
    for p in range(partitions):
        _, n = write_segment(OUT / f"bench-{p}" / "00000000000000000000.log", mb << 20)
        total += n
    return OUT, total


def _stat(path: Path) -> tuple[int, int]:
    """(parent pid, user+system clock ticks) from a /proc .../stat file (a process or a
    thread); OSError when it has gone."""
    text = path.read_text()
    f = text[text.rindex(")") + 2:].split()  # the name in parentheses may hold spaces
    return int(f[1]), int(f[11]) + int(f[12])


def _cpu_ticks() -> dict[int, tuple[int, int]]:
    """pid -> (parent pid, user+system clock ticks) for every process (Linux /proc)."""
    out: dict[int, tuple[int, int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            out[int(stat.parent.name)] = _stat(stat)
        except OSError:
            continue
    return out


def _tree_cpu(before: dict[int, tuple[int, int]], after: dict[int, tuple[int, int]],
              root: int) -> float:
    """CPU seconds used between the snapshots by `root`'s descendants (JVM, Python workers)."""
    kids: dict[int, list[int]] = {}
    for pid, (ppid, _) in after.items():
        kids.setdefault(ppid, []).append(pid)
    todo, total = list(kids.get(root, [])), 0
    while todo:
        pid = todo.pop()
        total += after[pid][1] - before.get(pid, (0, 0))[1]
        todo.extend(kids.get(pid, []))
    return total / os.sysconf("SC_CLK_TCK")


def _jit_seconds() -> float:
    """CPU seconds the JIT compiler threads of this process's JVM children have used."""
    total = 0
    for comm in Path("/proc").glob("[0-9]*/task/[0-9]*/comm"):
        try:
            if comm.read_text().startswith(("C1 Compiler", "C2 Compiler")) and \
                    _stat(comm.parents[2] / "stat")[0] == os.getpid():
                total += _stat(comm.parent / "stat")[1]
        except OSError:
            continue
    return total / os.sysconf("SC_CLK_TCK")


def settle(read: Callable[[], object], tries: int = 12) -> int:
    """Full reads until the JVM's JIT has settled: its compiler threads keep a core busy
    for several reads after the first, which would be timed otherwise. Stops after a read
    during which they used under 2% of its time (at most `tries` reads); returns the count."""
    for n in range(1, tries + 1):
        jit, t0 = _jit_seconds(), time.perf_counter()
        read()
        if _jit_seconds() - jit < 0.02 * (time.perf_counter() - t0):
            return n
    return tries


def worker(master: str, path: str, runs: int) -> dict[str, Any]:
    """One Spark run (in its own process): seconds for a full read, best of `runs` (and each
    of them), and the CPU seconds the JVM and its Python workers spent in the best."""
    from kafkalog_cli.spark.session import Session

    with Session(master, app_name="kafkalog-bench") as spark:
        df = spark.read.format("kafkalog").option("includeHeaders", "true").load(path)
        t0 = time.perf_counter()
        rows = df.count()  # warm-up: Python workers, imports, planning
        warm = time.perf_counter() - t0
        settled = settle(lambda: df.write.format("noop").mode("overwrite").save())
        best, cpu, each = float("inf"), 0.0, []
        for _ in range(runs):
            before = _cpu_ticks()
            t0 = time.perf_counter()
            df.write.format("noop").mode("overwrite").save()
            dt = time.perf_counter() - t0
            each.append(dt)
            if dt < best:
                best, cpu = dt, _tree_cpu(before, _cpu_ticks(), os.getpid())
    return {"rows": rows, "seconds": best, "cpu_s": cpu, "warmup_s": warm,
            "settle_reads": settled, "runs_s": each}


def _pin(cpus: str) -> list[str]:
    """taskset prefix restricting a command to `cpus` (empty when taskset is missing)."""
    return ["taskset", "-c", cpus] if shutil.which("taskset") else []


def run_worker(master: str, path: Path, runs: int, cpus: str | None = None
               ) -> dict[str, Any]:
    """One Spark run in its own process (JVM and Python workers inherit `cpus`, if given)."""
    pin = _pin(cpus) if cpus else []
    p = subprocess.run([*pin, PY, __file__, "--worker", master, "--path", str(path),
                        "--runs", str(runs)], capture_output=True, text=True, check=False)
    if p.returncode:
        raise SystemExit(f"bench worker {master} failed:\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def cli_dump(path: Path, runs: int) -> float:
    return min(cli_dump_runs(path, runs))


def cli_dump_runs(path: Path, runs: int) -> list[float]:
    """Seconds of each of `runs` CLI dumps on one core."""
    cmd = [PY, "-m", "kafkalog_cli", "dump", str(path), "--records", "--no-batches",
           "--format", "jsonl", "--payload", "base64"]
    pin = _pin("0")
    each = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(pin + cmd, stdout=subprocess.DEVNULL, check=True)
        each.append(time.perf_counter() - t0)
    return each


def bench(partitions: int = 8, mb: int = 32, runs: int = RUNS) -> dict[str, Any]:
    path, records = make_input(partitions, mb)
    one = run_worker("local[1]", path, runs)
    two = run_worker("local[2]", path, runs)
    # local[1] uses more than one core (the task thread and its Python worker overlap):
    # the same run confined to one CPU shows how throughput follows cores
    core = run_worker("local[1]", path, runs, cpus="0")
    assert one["rows"] == two["rows"] == core["rows"] == records, (one, two, core, records)
    dumps = cli_dump_runs(path, max(1, runs - 1))
    dump_s = min(dumps)
    return {"records": records, "partitions": partitions, "mb": mb,
            # each timed read, for bench/RESULTS.md's median (min-max)
            "local1_s": one["runs_s"], "local2_s": two["runs_s"],
            "one_core_s": core["runs_s"], "dump_s": dumps,
            "local1_rps": records / one["seconds"],
            "local2_rps": records / two["seconds"], "dump_rps": records / dump_s,
            "scaling": one["seconds"] / two["seconds"],
            "one_core_rps": records / core["seconds"],
            "core_scaling": core["seconds"] / two["seconds"],
            "local1_vs_dump": dump_s / one["seconds"],
            "local2_vs_dump": dump_s / two["seconds"], "warmup_s": two["warmup_s"],
            "settle_reads": max(one["settle_reads"], two["settle_reads"]),
            "local1_cores": one["cpu_s"] / one["seconds"],
            "local2_cores": two["cpu_s"] / two["seconds"],
            "cpu_us_per_record_1": one["cpu_s"] / records * 1e6,
            "cpu_us_per_record_2": two["cpu_s"] / records * 1e6,
            "machine_cores": os.cpu_count() or 0, "load_avg": os.getloadavg()[0]}


def report(r: dict[str, Any]) -> str:
    return (f"{r['records']:,} records: local[1] {r['local1_rps']:,.0f} rec/s, local[2] "
            f"{r['local2_rps']:,.0f} rec/s -> {r['scaling']:.2f}x (goal >= 1.7); "
            f"local[1] confined to one CPU {r['one_core_rps']:,.0f} rec/s -> local[2] on two "
            f"is {r['core_scaling']:.2f}x of it; "
            f"CLI dump --records jsonl on one core {r['dump_rps']:,.0f} rec/s -> local[1] "
            f"{r['local1_vs_dump']:.2f}x, local[2] {r['local2_vs_dump']:.2f}x of it. "
            f"CPU: local[1] keeps {r['local1_cores']:.2f} cores busy (JVM task thread and its "
            f"Python worker run side by side), local[2] {r['local2_cores']:.2f}; "
            f"{r['cpu_us_per_record_1']:.2f} vs {r['cpu_us_per_record_2']:.2f} CPU-us/record; "
            f"machine: {r['machine_cores']} cores, load average {r['load_avg']:.1f} at the end "
            f"(first action incl. worker start-up {r['warmup_s']:.1f}s; timed after up to "
            f"{r['settle_reads']} reads for the JIT to settle)")


def summary() -> str:
    """One line for bench/run.py (default sizes)."""
    return report(bench()) if available() else SKIPPED


def available() -> bool:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return False
    return True


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--mb", type=int, default=32, help="segment size per partition")
    ap.add_argument("--runs", type=int, default=RUNS)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--path", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        print(json.dumps(worker(a.worker, a.path, a.runs)))
        return
    print(report(bench(a.partitions, a.mb, a.runs)) if available() else SKIPPED)


if __name__ == "__main__":
    main()
