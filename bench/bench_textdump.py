"""Text dump vs kafka-dump-log: `kafkalog dump FILE --records --print-data` against Kafka
3.9's `kafka-dump-log --deep-iteration --print-data-log --files FILE`, the same lines
(tests/conformance/test_conformance_dump4.py), wall time of the whole process, output to
/dev/null. Goal (issue 17): ratio <= 0.5.

    python bench/bench_textdump.py [--runs 5] [--size-mib 256]

The input: one segment of ~size_mib MiB, v2 batches of 120 records cycling through the five
codecs (bench/data.py's templates, re-stamped), cached in bench/out/. kafka-dump-log runs
with bin/kafka-run-class.sh's default JVM options (tests/conformance/kafka_ref.py), as a user
gets it; needs `make kafka-ref`. Runs alternate (Kafka, kafkalog, Kafka, ...) so load from
elsewhere hits both alike. `run()` returns the figures for bench/RESULTS.md; `main()` prints
them as JSON.
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
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "out"
GOAL = 0.5
CODECS = (0, 1, 2, 3, 4)  # none, gzip, snappy, lz4, zstd


def segment(size_mib: int) -> tuple[Path, int]:
    """The multi-codec segment (written once, then reused) and its record count."""
    sys.path.insert(0, str(HERE))
    sys.path.insert(0, str(ROOT))
    from data import RECORDS_PER_BATCH, template_batches

    path = OUT / f"textdump-{size_mib}MiB" / "bench-0" / "00000000000000000000.log"
    want = size_mib << 20
    if path.exists() and path.stat().st_size >= want:
        return path, _records(path)
    # one template set per codec, interleaved: every codec all along the file
    sets = [template_batches(codec) for codec in CODECS]
    temps = [s[i] for i in range(len(sets[0])) for s in sets]
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    offset = written = n = 0
    with open(tmp, "wb") as f:
        while written < want:
            t = temps[n % len(temps)]
            f.write(offset.to_bytes(8, "big") + t[8:])  # the CRC does not cover the offset
            offset += RECORDS_PER_BATCH
            written += len(t)
            n += 1
    tmp.replace(path)
    return path, offset


def _records(path: Path) -> int:
    """Records in a segment this module wrote: the last batch's last offset + 1."""
    last = 0
    with open(path, "rb") as f:
        while len(head := f.read(12)) == 12:
            size = int.from_bytes(head[8:12], "big")
            batch = f.read(size)
            last = int.from_bytes(head[:8], "big") + int.from_bytes(batch[11:15], "big")
    return last + 1


def kafka_dump_log() -> tuple[list[str], str]:
    """The command line of Kafka's kafka-dump-log (the reference's 3.9.x), and its version."""
    sys.path.insert(0, str(ROOT / "tests" / "conformance"))
    import kafka_ref

    java = kafka_ref.java_bin()
    if java is None:
        raise SystemExit("bench_textdump: no `java` on PATH (make kafka-ref)")
    return ([java, *kafka_ref.KAFKA_RUN_CLASS_JVM_OPTS,
             f"-Dlog4j.configuration=file:{kafka_ref.TOOLS_LOG4J}", "-cp",
             kafka_ref.classpath(), kafka_ref.ref_info()["dump_log_class"]],
            kafka_ref.kafka_version())


def _wall(cmd: list[str], env: dict[str, str] | None = None) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=True, env=env)
    return time.perf_counter() - t


def _stats(xs: list[float]) -> dict[str, Any]:
    return {"median": round(statistics.median(xs), 3), "min": round(min(xs), 3),
            "max": round(max(xs), 3), "runs": [round(x, 6) for x in xs]}


def run(runs: int = 5, size_mib: int = 256) -> dict[str, Any]:
    """Alternating runs of both; medians, minima and maxima in seconds, and the ratio of the
    medians (kafkalog / kafka-dump-log: < 1 is faster)."""
    seg, records = segment(size_mib)
    kdl, version = kafka_dump_log()
    ref_cmd = [*kdl, "--deep-iteration", "--print-data-log", "--files", str(seg)]
    ours_cmd = [sys.executable, "-m", "kafkalog_cli", "dump", str(seg), "--records",
                "--print-data"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    env.pop("KAFKALOG_PURE", None)
    load_before = os.getloadavg()
    ref: list[float] = []
    ours: list[float] = []
    for _ in range(runs):
        ref.append(_wall(ref_cmd))
        ours.append(_wall(ours_cmd, env))
    ratio = statistics.median(ours) / statistics.median(ref)
    return {
        "what": "kafkalog dump --records --print-data vs kafka-dump-log --deep-iteration "
                "--print-data-log, one multi-codec segment, output to /dev/null",
        "input": str(seg), "bytes": seg.stat().st_size, "records": records,
        "kafka_version": version, "runs": runs,
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        "cpus": os.cpu_count(),
        "kafka_dump_log_s": _stats(ref), "kafkalog_s": _stats(ours),
        "ratio": round(ratio, 3), "goal": GOAL, "ok": ratio <= GOAL,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--size-mib", type=int, default=256)
    a = ap.parse_args()
    print(json.dumps(run(a.runs, a.size_mib), indent=2))


if __name__ == "__main__":
    main()
