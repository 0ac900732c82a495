"""Benchmark inputs: large segments made fast by replicating a few batches.

A v2 batch's CRC does not cover its base offset, so one set of encoded batches can be
re-stamped with new base offsets and written many times: real, valid, broker-shaped data
at disk speed.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

from kafkalog_cli.codec.batch_v2 import encode_batch

RECORDS_PER_BATCH = 120  # ~16 KiB uncompressed batches, like a producer's default batch.size


def template_batches(codec: int = 0, n: int = 32, seed: int = 7) -> list[bytes]:
    rng = random.Random(seed)
    out = []
    for b in range(n):
        recs = []
        for i in range(RECORDS_PER_BATCH):
            key = None if i % 10 == 0 else f"user-{rng.randrange(100_000):06d}".encode()
            pad = "x" * rng.randrange(40, 100)
            value = f'{{"event":"click","n":{i},"pad":"{pad}"}}'.encode()
            headers = [("trace", rng.randbytes(8))] if i % 3 == 0 else []
            recs.append((i, 1_700_000_000_000 + b * 1000 + i, key, value, headers))
        out.append(encode_batch(recs, codec=codec))
    return out


def write_segment(path: Path, total_bytes: int, codec: int = 0) -> tuple[int, int]:
    """Write ~total_bytes of batches; returns (batches, records)."""
    if path.exists() and path.stat().st_size >= total_bytes * 0.95:
        n = 0
        with open(path, "rb") as f:
            while True:
                head = f.read(12)
                if len(head) < 12:
                    break
                size = int.from_bytes(head[8:12], "big")
                f.seek(size, os.SEEK_CUR)
                n += 1
        return n, n * RECORDS_PER_BATCH
    path.parent.mkdir(parents=True, exist_ok=True)
    temps = template_batches(codec)
    offset = 0
    written = 0
    n = 0
    with open(path, "wb") as f:
        while written < total_bytes:
            t = temps[n % len(temps)]
            f.write(offset.to_bytes(8, "big") + t[8:])
            offset += RECORDS_PER_BATCH
            written += len(t)
            n += 1
    return n, offset
