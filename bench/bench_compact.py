"""Compaction rate and peak memory for 1 M distinct keys (goal: <= 64 MiB above baseline).

Peak RSS is read from the child process that runs `kafkalog compact` (ru_maxrss), against a
child that only starts kafkalog and exits: the difference is what compaction itself costs.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "out" / "compact"
KEYS = 1_000_000


def build(d: Path) -> None:
    from kafkalog_cli.codec.batch_v2 import encode_batch
    from kafkalog_cli.storage.maintenance.writer import LogConfig, PartitionWriter

    with PartitionWriter(d / "t-0", "t", 0, LogConfig(segment_bytes=64 << 20), now_ms=0) as w:
        off = 0
        # every key once, then 10% of them again: 1.1 M records, 1 M distinct keys
        for start in range(0, KEYS + KEYS // 10, 500):
            recs = [(off + i, 1_700_000_000_000, b"key-%08d" % ((start + i) % KEYS), b"v" * 40, [])
                    for i in range(500)]
            w.append(encode_batch(recs))
            off += 500
        w.roll(w.next_offset)


def child_peak(args: list[str]) -> tuple[float, int]:
    code = ("import resource, subprocess, sys, time\n"
            "t = time.perf_counter()\n"
            "p = subprocess.run(sys.argv[1:], capture_output=True)\n"
            "dt = time.perf_counter() - t\n"
            "assert p.returncode == 0, p.stderr\n"
            "print(dt, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                         check=True).stdout.split()
    return float(out[0]), int(out[1])


def main() -> None:
    d = OUT / "ld"
    if not (d / "t-0").exists():
        shutil.rmtree(d, ignore_errors=True)
        t = time.perf_counter()
        build(d)
        print(f"built {KEYS:,} distinct keys (1.1 M records) in {time.perf_counter() - t:.1f}s")
    work = OUT / "work"
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(d, work)
    _, base_kib = child_peak([sys.executable, "-m", "kafkalog_cli", "--version"])
    secs, peak_kib = child_peak([sys.executable, "-m", "kafkalog_cli", "compact", str(work / "t-0"),
                                 "--force", "--now", "1700000000000", "--no-quarantine"])
    records = KEYS + KEYS // 10
    extra = (peak_kib - base_kib) / 1024
    print(f"compaction: {records / secs:,.0f} records/s ({secs:.1f}s for {records:,} records); "
          f"peak RSS {peak_kib / 1024:.0f} MiB, {extra:.0f} MiB above the baseline "
          f"{base_kib / 1024:.0f} MiB (goal <= 64)")


if __name__ == "__main__":
    main()
