"""Reading log dirs from S3 vs local disk: `kafkalog dump --format jsonl` and the Spark source.

    .venv/bin/python bench/bench_s3.py [--partitions 4] [--mb 16] [--runs 3]

Input: the bench_spark.py input (PARTITIONS uncompressed segments of MB each), read from
local disk and from S3Proxy (`make s3proxy`, transient backend) on 127.0.0.1. Loopback: the
ratios measure our overhead on the ranged-read path (pyarrow's S3 client, one GET per scanner
read), not a network. Prints one JSON object: seconds, MB/s and s3/local ratios (throughput,
so 1.0 is parity and lower is slower). Not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import bench_spark  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--mb", type=int, default=16)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()

    from tests.s3.server import aws_env, start

    local, records = bench_spark.make_input(a.partitions, a.mb)
    mb = sum(f.stat().st_size for f in local.rglob("*.log")) / (1 << 20)
    proc, server = start(Path(tempfile.mkdtemp(prefix="kafkalog-bench-s3-")))
    try:
        os.environ.update(aws_env(server.endpoint))
        server.fs.create_dir(server.bucket)
        url = server.upload(local, "bench")
        out: dict[str, float | int] = {"mb": round(mb, 1), "records": records}
        for name, path in (("local", str(local)), ("s3", url)):
            out[f"dump_{name}_s"] = round(bench_spark.cli_dump(path, a.runs), 3)
            out[f"spark_{name}_s"] = round(
                bench_spark.run_worker("local[2]", path, a.runs)["seconds"], 3)
        for what in ("dump", "spark"):
            out[f"{what}_local_mb_s"] = round(mb / out[f"{what}_local_s"], 1)
            out[f"{what}_s3_mb_s"] = round(mb / out[f"{what}_s3_s"], 1)
            out[f"{what}_s3_vs_local"] = round(out[f"{what}_local_s"] / out[f"{what}_s3_s"], 2)
        print(json.dumps(out))
    finally:
        proc.terminate()
        proc.wait()


if __name__ == "__main__":
    main()
