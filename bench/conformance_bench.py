"""kafkalog vs Kafka's own kafka-dump-log on broker-written segments (wall time).

    .venv/bin/python bench/conformance_bench.py                  # >= 1 GiB, generated once
    .venv/bin/python bench/conformance_bench.py --size-mib 32    # smoke test
    .venv/bin/python bench/conformance_bench.py --logs DIR       # reuse any log dir

Needs `make kafka-ref`. The input is written by the reference broker (KRaft, Kafka 3.9.x,
1 GiB segments by default), produced with kafka-python (mix of codecs: --mix), and cached in
.kafka-ref/bench-<kafka version>-<size>MiB-<mix>/logs. Then, for every command, the wall time
of the whole process (JVM / Python start-up included), best of --repeat, output to /dev/null:

    kafkalog verify LOGS --format json
    kafkalog dump LOGS --records --format jsonl
    kafka-dump-log --deep-iteration --files <every .log>
    kafka-dump-log --deep-iteration --print-data-log --files <every .log>

kafka-dump-log runs with bin/kafka-run-class.sh's default JVM options (-Xmx256M, G1), as a
user would get it. Ratios > 1 mean kafkalog is slower (the goal is < 1 on every line).
Not part of the test suite; `make bench` (bench/results.py) takes its broker-written input
from generate() and times the same commands in alternating runs.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "conformance"))

import kafka_ref  # noqa: E402

MIB = 1 << 20


def _parse_mix(mix: str) -> dict[str, float]:
    out = {}
    for part in mix.split(","):
        codec, _, share = part.partition(":")
        out[codec.strip()] = float(share or 1)
    total = sum(out.values())
    return {k: v / total for k, v in out.items()}


def generate(dest: Path, size_mib: int, mix: dict[str, float], segment_mib: int) -> None:
    """Produce until the topics (one per codec) hold size_mib MiB of .log, stop cleanly."""
    from kafka import KafkaProducer
    tmp = dest.with_name(dest.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    broker = kafka_ref.KafkaBroker(log_dir=tmp / "logs", work_dir=tmp / "work", props={
        "log.segment.bytes": segment_mib * MIB, "message.max.bytes": 4 * MIB,
        "log.retention.ms": -1, "log.retention.bytes": -1}, name="bench")
    rnd = random.Random(42)
    words = [b"kafka", b"log", b"segment", b"offset", b"batch", b"index", b"record",
             b"broker", b"topic", b"partition", b"consumer", b"producer"]
    # a pool of semi-compressible values (~1 KiB): text with some random bytes
    pool = [b" ".join(rnd.choice(words) for _ in range(120))[:900] + rnd.randbytes(124)
            for _ in range(256)]
    t0 = time.monotonic()
    try:
        broker.start()
        for codec, share in mix.items():
            topic = f"bench-{codec}"
            broker.create_topic(topic, partitions=2)
            target = int(size_mib * MIB * share)
            p = KafkaProducer(bootstrap_servers=broker.bootstrap, acks=1, linger_ms=20,
                              batch_size=256 * 1024,
                              enable_idempotence=False,
                              compression_type=None if codec == "none" else codec)
            on_disk = i = 0
            while on_disk < target:  # on-disk bytes, whatever the codec achieves
                for _ in range(4000):
                    v = pool[i % len(pool)]
                    hdrs = [("trace-id", v[:16])] if i % 4 == 0 else []
                    p.send(topic, key=b"key-%06d" % (i % 100000), value=v, headers=hdrs)
                    i += 1
                p.flush()
                on_disk = sum(f.stat().st_size for f in broker.log_dir.glob(f"{topic}-*/*.log"))
            p.close()
            print(f"  {topic}: {i} records, {on_disk / MIB:.0f} MiB on disk "
                  f"({time.monotonic() - t0:.0f}s)", file=sys.stderr)
        broker.stop()
    finally:
        broker.close()
    shutil.rmtree(tmp / "work", ignore_errors=True)
    shutil.rmtree(dest, ignore_errors=True)
    tmp.rename(dest)


def timed(cmd: list[str], repeat: int, cwd: Path = ROOT) -> tuple[float, int]:
    best, rc = float("inf"), 0
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LC_ALL": "C.UTF-8"}
    for _ in range(repeat):
        t0 = time.perf_counter()
        with open(os.devnull, "wb") as devnull:
            res = subprocess.run(cmd, cwd=cwd, env=env, stdout=devnull,
                                 stderr=subprocess.PIPE)
        best = min(best, time.perf_counter() - t0)
        rc = res.returncode
        if rc not in (0,):
            print(f"  ! {' '.join(cmd[:6])}... exited {rc}: "
                  f"{res.stderr.decode(errors='replace')[-500:]}", file=sys.stderr)
    return best, rc


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mib", type=int, default=1024,
                    help="MiB of segments on disk (default 1024)")
    ap.add_argument("--mix", default="none:2,lz4:1,zstd:1,gzip:0.5,snappy:0.5",
                    help="codec shares (default %(default)s)")
    ap.add_argument("--segment-mib", type=int, default=256)
    ap.add_argument("--logs", type=Path, help="benchmark this log dir instead")
    ap.add_argument("--repeat", type=int, default=1, help="best of N runs (default 1)")
    ap.add_argument("--json", type=Path, help="also write the results here")
    args = ap.parse_args()

    kafka_ref.ref_info()
    if args.logs:
        logs = args.logs.resolve()
    else:
        mix = _parse_mix(args.mix)
        tag = "-".join(f"{k}{round(v * 100)}" for k, v in mix.items())
        dest = kafka_ref.REF_DIR / (f"bench-{kafka_ref.kafka_version()}-{args.size_mib}MiB-"
                                    f"{args.segment_mib}seg-{tag}")
        if not (dest / "logs").is_dir():
            print(f"generating {args.size_mib} MiB with the reference broker into {dest}",
                  file=sys.stderr)
            t0 = time.monotonic()
            generate(dest, args.size_mib, mix, args.segment_mib)
            print(f"generated in {time.monotonic() - t0:.0f}s", file=sys.stderr)
        logs = dest / "logs"
    files = sorted(str(p) for p in logs.glob("*/*.log"))
    size = sum(os.path.getsize(f) for f in files)
    print(f"input: {logs}\n       {len(files)} .log files, {size / MIB:.1f} MiB on disk")

    java_cp = [kafka_ref.java_bin(), *kafka_ref.KAFKA_RUN_CLASS_JVM_OPTS,
               f"-Dlog4j.configuration=file:{kafka_ref.TOOLS_LOG4J}", "-cp",
               kafka_ref.classpath(), kafka_ref.ref_info()["dump_log_class"]]
    kl = [sys.executable, "-m", "kafkalog_cli"]
    runs = {
        "jvm start-up (kafka-dump-log --version)": [*java_cp, "--version"],
        "kafka-dump-log --deep-iteration": [*java_cp, "--deep-iteration", "--files",
                                            ",".join(files)],
        "kafka-dump-log --deep-iteration --print-data-log":
            [*java_cp, "--deep-iteration", "--print-data-log", "--files", ",".join(files)],
        "kafkalog verify": [*kl, "verify", str(logs), "--format", "json"],
        "kafkalog dump --records --format jsonl": [*kl, "dump", str(logs), "--records",
                                                   "--format", "jsonl"],
        # informational: the default --payload utf8 escapes invalid UTF-8 (binary values)
        "kafkalog dump --records --format jsonl --payload base64":
            [*kl, "dump", str(logs), "--records", "--format", "jsonl", "--payload", "base64"],
    }
    results = {}
    for name, cmd in runs.items():
        secs, rc = timed(cmd, args.repeat)
        results[name] = {"seconds": round(secs, 3), "returncode": rc,
                         "MiB_per_s": round(size / MIB / secs, 1) if secs else None}
        print(f"  {name:<52} {secs:8.2f} s  {size / MIB / secs:8.1f} MiB/s  rc={rc}")

    def ratio(a, b):
        return results[a]["seconds"] / results[b]["seconds"]

    ratios = {
        "kafkalog verify / kafka-dump-log --deep-iteration":
            ratio("kafkalog verify", "kafka-dump-log --deep-iteration"),
        "kafkalog dump --records / kafka-dump-log --deep-iteration":
            ratio("kafkalog dump --records --format jsonl", "kafka-dump-log --deep-iteration"),
        "kafkalog dump --records / kafka-dump-log --print-data-log":
            ratio("kafkalog dump --records --format jsonl",
                  "kafka-dump-log --deep-iteration --print-data-log"),
    }
    info = {
        "kafkalog dump --records --payload base64 / kafka-dump-log --print-data-log":
            ratio("kafkalog dump --records --format jsonl --payload base64",
                  "kafka-dump-log --deep-iteration --print-data-log"),
    }
    print("ratios (kafkalog / Kafka; > 1 = kafkalog slower; goal: < 1 for every line):")
    for k, v in ratios.items():
        print(f"  {k:<60} {v:6.2f}  {'ok' if v < 1 else 'GOAL MISSED'}")
    for k, v in info.items():
        print(f"  {k:<60} {v:6.2f}  (information)")
    if args.json:
        args.json.write_text(json.dumps({"input": str(logs), "bytes": size, "files": len(files),
                                         "kafka_version": kafka_ref.kafka_version(),
                                         "results": results, "ratios": ratios, "information": info},
                                        indent=2))
    return 0 if all(r["returncode"] == 0 for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
