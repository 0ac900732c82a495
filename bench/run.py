"""The first speed goals, each as a ratio against a reference measured in the same run
(`make bench` is bench/results.py now, which times them alternating; this prints more detail).

Not part of the test suite. Inputs are generated under bench/out/ (git-ignored).
  1. verify --shallow vs a bare crc32c loop over the same batches          (goal >= 0.7x)
  2. record decoding, library level, vs kafka-python on the same batches   (goal >= 8x)
  3. dump --records --format jsonl vs a kafka-python script doing the same (goal >= 3x)
  4. append rate vs kafka-python's batch builder; index-rebuild MB/s;
     find-by-time latency on a 1-segment vs a 1000-segment partition       (goal <= 2x)
  5. compaction (bench_compact.py)
  6. peak RSS and CPU on hostile inputs (bench_hostile.py)   (goal RSS <= 2 x cap + 64 MiB)
"""

from __future__ import annotations

import gc
import mmap
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
OUT = HERE / "out"
PY = sys.executable
SEG_MB = int(os.environ.get("KAFKALOG_BENCH_MB", "512"))

from data import RECORDS_PER_BATCH, write_segment  # noqa: E402


def best(fn, runs: int = 3) -> float:
    times = []
    for _ in range(runs):
        gc.collect()
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def wall(cmd: list[str], runs: int = 3, stdout=subprocess.DEVNULL) -> float:
    def go() -> None:
        subprocess.run(cmd, stdout=stdout, check=True)
    return best(go, runs)


def bench_verify(seg: Path) -> dict[str, float]:
    from crc32c import crc32c

    from kafkalog_cli.storage.checks.check import CheckOptions, Stats, check_log_file
    from kafkalog_cli.storage.checks.findings import Findings

    spans = []
    with open(seg, "rb") as f:
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        pos, n = 0, len(mm)
        while pos + 12 <= n:
            size = int.from_bytes(mm[pos + 8:pos + 12], "big") + 12
            spans.append((pos + 21, pos + size))
            pos += size
        mv = memoryview(mm)

        def reference() -> None:
            for a, b in spans:
                crc32c(mv[a:b])  # noqa: F821 - ruff misreads the `del mv` below, run after this
        ref = best(reference)
        del mv
        mm.close()

    def reference_reading() -> None:
        # the same loop, but the bytes come from the file each run, as verify's must
        with open(seg, "rb") as f2:
            m2 = mmap.mmap(f2.fileno(), 0, access=mmap.ACCESS_READ)
            v2 = memoryview(m2)
            for a, b in spans:
                crc32c(v2[a:b])
            del v2
            m2.close()
    ref_read = best(reference_reading)

    def ours() -> None:
        f = Findings()
        check_log_file(seg, 0, f, CheckOptions(shallow=True), Stats())
        assert not f.items
    t = best(ours)
    cli = wall([PY, "-m", "kafkalog_cli", "verify", "--shallow", str(seg.parent)], runs=2)
    size = seg.stat().st_size
    return {"crc_loop_GBps": size / ref / 1e9, "verify_shallow_GBps": size / t / 1e9,
            "ratio": ref / t, "cli_wall_s": cli, "crc_read_loop_GBps": size / ref_read / 1e9,
            "ratio_read": ref_read / t}


def bench_codec() -> str:
    p = subprocess.run([PY, str(HERE / "bench_codec.py")], capture_output=True, text=True)
    return p.stdout.strip() or p.stderr.strip()




def bench_dump(seg: Path) -> dict[str, float]:
    ref = wall([PY, str(HERE / "kp_dump.py"), str(seg)], runs=1)
    ours = wall([PY, "-m", "kafkalog_cli", "dump", str(seg.parent), "--records", "--no-batches",
                 "--format", "jsonl", "--payload", "base64"], runs=2)
    return {"kafka_python_s": ref, "kafkalog_s": ours, "ratio": ref / ours}


def bench_write_path() -> dict[str, float]:
    import random

    from kafka.record.default_records import DefaultRecordBatchBuilder

    from kafkalog_cli.codec.batch_v2 import encode_batch
    from kafkalog_cli.storage.disk.logdir import open_target
    from kafkalog_cli.storage.maintenance.rebuild import rebuild_segment
    from kafkalog_cli.storage.maintenance.writer import LogConfig, PartitionWriter
    from kafkalog_cli.storage.queries.timelookup import offset_for_time

    rng = random.Random(1)
    recs = [(i, 1_700_000_000_000 + i, f"k{i % 1000}".encode(), rng.randbytes(100), [])
            for i in range(200_000)]

    def kp() -> None:
        for s in range(0, len(recs), 500):
            b = DefaultRecordBatchBuilder(2, 0, 0, -1, -1, -1, 1 << 24)
            for o, t, k, v, h in recs[s:s + 500]:
                b.append(o - s, t, k, v, h)
            b.build()

    def ours() -> None:
        d = OUT / "append"
        shutil.rmtree(d, ignore_errors=True)
        with PartitionWriter(d / "t-0", "t", 0, LogConfig(segment_bytes=64 << 20), now_ms=0) as w:
            for s in range(0, len(recs), 500):
                w.append(encode_batch(recs[s:s + 500]))
    t_kp, t_ours = best(kp, 2), best(ours, 2)
    seg = open_target(OUT / "append" / "t-0").partition.segments[0]
    size = seg.size
    t_rb = best(lambda: rebuild_segment(seg), 3)
    # find-by-time: the same data in 1 segment vs 1000 segments
    lat = {}
    for nseg in (1, 1000):
        d = OUT / f"fbt-{nseg}"
        if not d.exists():
            per = max(1, 100_000 // nseg)
            with PartitionWriter(d / "t-0", "t", 0, LogConfig(segment_bytes=1 << 30),
                                 now_ms=0) as w:
                for s in range(0, 100_000, 100):
                    if s and s % per == 0:
                        w.roll(w.next_offset)
                    w.append(encode_batch([(s + i, 1_700_000_000_000 + s + i, None, b"v" * 50, [])
                                           for i in range(100)]))
        part = open_target(d / "t-0").partition
        targets = [1_700_000_000_000 + x for x in range(0, 100_000, 997)]

        def look(part=part, targets=targets) -> None:
            for t in targets:
                offset_for_time(part, t)
        lat[nseg] = best(look, 3) / len(targets)
        lat[f"cli{nseg}"] = wall([PY, "-m", "kafkalog_cli", "find-by-time", str(d / "t-0"), "-t",
                                  str(1_700_000_050_000)], runs=3)
    return {"find_by_time_cli_1seg_s": lat["cli1"], "find_by_time_cli_1000seg_s": lat["cli1000"],
            "append_rec_per_s": len(recs) / t_ours, "kp_builder_rec_per_s": len(recs) / t_kp,
            "append_vs_kp_builder": t_kp / t_ours, "index_rebuild_MBps": size / t_rb / 1e6,
            "find_by_time_1seg_ms": lat[1] * 1e3, "find_by_time_1000seg_ms": lat[1000] * 1e3,
            "find_by_time_ratio": lat[1000] / lat[1]}


def main() -> None:
    OUT.mkdir(exist_ok=True)
    seg = OUT / "seg" / "t-0" / "00000000000000000000.log"
    nb, nr = write_segment(seg, SEG_MB << 20)
    print(f"input: {seg.stat().st_size / 2**20:.0f} MiB, {nb} batches, {nr} records "
          f"({RECORDS_PER_BATCH}/batch, uncompressed)")
    v = bench_verify(seg)
    print(f"1. verify --shallow: {v['verify_shallow_GBps']:.2f} GB/s vs bare crc32c loop "
          f"{v['crc_loop_GBps']:.2f} GB/s over an already-mapped file -> ratio "
          f"{v['ratio']:.2f}x (goal >= 0.7); vs the same loop mapping the file each run "
          f"{v['crc_read_loop_GBps']:.2f} GB/s -> {v['ratio_read']:.2f}x; "
          f"CLI wall {v['cli_wall_s']:.2f}s")
    print("2. record decoding (library level):")
    print("   " + bench_codec().replace("\n", "\n   "))
    small = OUT / "seg-small" / "t-0" / "00000000000000000000.log"
    write_segment(small, 64 << 20)
    d = bench_dump(small)
    print(f"3. dump --records --format jsonl (64 MiB): kafkalog {d['kafkalog_s']:.2f}s vs "
          f"kafka-python script {d['kafka_python_s']:.2f}s -> ratio {d['ratio']:.2f}x (goal >= 3)")
    w = bench_write_path()
    print(f"4. append {w['append_rec_per_s']:,.0f} rec/s vs kafka-python builder "
          f"{w['kp_builder_rec_per_s']:,.0f} rec/s -> {w['append_vs_kp_builder']:.2f}x; "
          f"index-rebuild {w['index_rebuild_MBps']:.0f} MB/s; find-by-time "
          f"{w['find_by_time_1seg_ms']:.2f} ms (1 segment) vs "
          f"{w['find_by_time_1000seg_ms']:.2f} ms "
          f"(1000 segments) -> {w['find_by_time_ratio']:.2f}x per lookup (goal <= 2); one CLI "
          f"lookup {w['find_by_time_cli_1seg_s'] * 1e3:.0f} ms vs "
          f"{w['find_by_time_cli_1000seg_s'] * 1e3:.0f} ms -> "
          f"{w['find_by_time_cli_1000seg_s'] / w['find_by_time_cli_1seg_s']:.2f}x")
    import bench_spark

    print(f"Spark data source: {bench_spark.summary()}")


if __name__ == "__main__":
    main()
    import bench_compact

    print("5. ", end="")
    bench_compact.main()
    import bench_hostile

    print("6. hostile inputs, each command in a process of its own (issue 14):")
    bench_hostile.main()
