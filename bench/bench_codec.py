"""v2 record decoding throughput: kafka-python vs kafkalog (pure Python and compiled).

    .venv/bin/python bench/bench_codec.py [--records 200000] [--per-batch 500] [--runs 5]

Builds uncompressed v2 batches with kafka-python's DefaultRecordBatchBuilder (~100-byte
values, a third of the records with headers), then, for each decoder, iterates every batch and
reads offset, timestamp, key, value and headers of every record. Prints records/s (best of
--runs) and the ratio to kafka-python. Not a test.
"""

from __future__ import annotations

import argparse
import gc
import random
import sys
import time

from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from kafkalog_cli.codec import batch_v2
from kafkalog_cli.codec.batch_v2 import RecordBatch


def build_batches(n_records: int, per_batch: int, seed: int = 1) -> list[bytes]:
    rnd = random.Random(seed)
    batches = []
    offset = 0
    ts = 1_700_000_000_000
    while offset < n_records:
        builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                            producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                            batch_size=1 << 30)
        for _ in range(min(per_batch, n_records - offset)):
            key = None if offset % 10 == 0 else f"user-{rnd.randrange(100_000):06d}".encode()
            value = rnd.randbytes(rnd.randint(80, 120))
            headers = []
            if offset % 3 == 0:
                headers = [("trace-id", rnd.randbytes(16)), ("source", b"bench")]
            ts += rnd.randint(0, 5)
            builder.append(offset, timestamp=ts, key=key, value=value, headers=headers)
            offset += 1
        batches.append(bytes(builder.build()))
    return batches


def read_kafka_python(batches: list[bytes]) -> int:
    n = 0
    for data in batches:
        for r in DefaultRecordBatch(data):
            r.offset, r.timestamp, r.key, r.value, r.headers  # noqa: B018 - touch every field
            n += 1
    return n


def read_kafkalog(batches: list[bytes]) -> int:
    n = 0
    for data in batches:
        for r in RecordBatch(data).records():
            r.offset, r.timestamp, r.key, r.value, r.headers  # noqa: B018 - touch every field
            n += 1
    return n


def best_rate(fn, batches: list[bytes], runs: int, gc_enabled: bool = True) -> float:
    best = float("inf")
    for _ in range(runs):
        gc.collect()
        if not gc_enabled:
            gc.disable()
        try:
            t0 = time.perf_counter()
            n = fn(batches)
            best = min(best, time.perf_counter() - t0)
        finally:
            gc.enable()
    return n / best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--per-batch", type=int, default=500)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()

    batches = build_batches(args.records, args.per_batch)
    size = sum(map(len, batches))
    print(f"{args.records} records in {len(batches)} batches, {size / 1e6:.1f} MB, "
          f"best of {args.runs}; Python {sys.version.split()[0]}")

    compiled = batch_v2.decode_records if batch_v2.ACCELERATED else None
    pure = batch_v2.decode_records_pure

    # same records from all three
    ref = [(r.offset, r.timestamp, r.key, r.value, r.headers)
           for d in batches[:3] for r in DefaultRecordBatch(d)]
    for fn in filter(None, (pure, compiled)):
        batch_v2.decode_records = fn
        got = [(r.offset, r.timestamp, r.key, r.value, r.headers)
               for d in batches[:3] for r in RecordBatch(d).records()]
        assert got == ref, f"{fn} disagrees with kafka-python"

    def kafkalog_with(decoder, untracked=False):
        def run(batches):
            batch_v2.decode_records = decoder
            old = fastcodec.set_untracked_records(untracked) if fastcodec else None
            try:
                return read_kafkalog(batches)
            finally:
                if fastcodec:
                    fastcodec.set_untracked_records(old)
                batch_v2.decode_records = compiled or pure
        return run

    fastcodec = None
    contenders = {"kafka-python DefaultRecordBatch": read_kafka_python,
                  "kafkalog pure Python": kafkalog_with(pure)}
    if compiled is not None:
        from kafkalog_cli._speedups import fastcodec
        contenders["kafkalog compiled (default)"] = kafkalog_with(compiled, untracked=True)
        contenders["  ... records GC-tracked"] = kafkalog_with(compiled, untracked=False)
    else:
        print("(compiled decoder not available: build it with pip install -e .)")

    print(f"  {'':32s} {'GC enabled (default)':>24s}   {'GC disabled':>22s}")
    base = {}
    for name, fn in contenders.items():
        cells = []
        for gc_on in (True, False):
            rate = best_rate(fn, batches, args.runs, gc_on)
            base.setdefault(gc_on, rate)
            cells.append(f"{rate / 1e6:7.3f} M rec/s {rate / base[gc_on]:5.1f}x")
        print(f"  {name:32s} {cells[0]:>24s}   {cells[1]:>22s}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
