"""Hostile inputs for issue 14's bounds, small on disk or quick to write, and a runner that
measures a command's peak RSS and CPU time. Each input once made a command hold gigabytes
or spin for seconds: tests/faults/test_memory.py asserts the bounds, bench/run.py prints
the figures.

Bound (the goal): peak RSS <= 2 x the decompression cap + 64 MiB, time linear in the size.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from kafkalog_cli.codec import compression
from kafkalog_cli.codec.batch_v2 import encode_batch
from kafkalog_cli.codec.message_v01 import encode_message_set
from tests.v07.bytes07 import entry

MiB = 1 << 20
DEFAULT_CAP = compression.DEFAULT_MAX_DECOMPRESSED
SAMPLE = Path(__file__).resolve().parents[2] / "fixtures" / "sample"
BASE_TS = 1_700_000_000_000


def rss_bound(cap: int = DEFAULT_CAP) -> int:
    """The goal, in bytes."""
    return 2 * cap + 64 * MiB


# -- inputs ---------------------------------------------------------------------------------

def records_batch(root: Path, n: int) -> Path:
    """A partition holding one valid zstd batch of `n` empty records, all at BASE_TS but the
    last at BASE_TS + 1 (so that finding it reads them all). 1 M records: 0.8 MB on disk,
    9 MB inflated; 6 M: 4.8 MB, 59 MB (under the default 64 MiB cap)."""
    pdir = root / "many-0"
    pdir.mkdir(parents=True)
    (pdir / "00000000000000000000.log").write_bytes(encode_batch(
        ((i, BASE_TS + (i == n - 1), None, None, ()) for i in range(n)),
        codec=compression.ZSTD))
    return pdir


def legacy_wrapper(root: Path, n: int) -> Path:
    """A partition holding one magic-1 gzip wrapper of `n` empty messages (300 000: 10 MB
    inflated), the last at BASE_TS + 1."""
    pdir = root / "legacy-0"
    pdir.mkdir(parents=True)
    (pdir / "00000000000000000000.log").write_bytes(encode_message_set(
        [(i, BASE_TS + (i == n - 1), None, b"") for i in range(n)], codec=compression.GZIP))
    return pdir


def zero_indexes(root: Path, size: int) -> Path:
    """The sample's demo-0 with its last segment's .index and .timeindex grown to `size`
    zero bytes (sparse: a crashed broker leaves them preallocated like this)."""
    pdir = root / "demo-0"
    shutil.copytree(SAMPLE / "demo-0", pdir)
    last = sorted(pdir.glob("*.index"))[-1]
    for p in (last, last.with_suffix(".timeindex")):
        with open(p, "r+b") as f:
            f.truncate(size)
    return pdir


def v07_lz4_tail(root: Path, tail: int) -> Path:
    """A Kafka 0.7 segment: 100 valid entries, then `tail` bytes of one lz4 block repeated
    (it looks like an entry header every few bytes)."""
    import lz4.block

    pdir = root / "old-0"
    pdir.mkdir(parents=True)
    rng = random.Random(1)
    block = lz4.block.compress(bytes(rng.randrange(4) for _ in range(3000)))
    head = b"".join(entry(b"message %d" % i) for i in range(100))
    (pdir / "00000000000000000000.kafka").write_bytes(
        head + (block * (tail // len(block) + 1))[:tail])
    return pdir


def v2_lookalike_tail(root: Path, tail: int) -> Path:
    """A v2 log: one batch, then `tail` bytes of entry headers claiming 64 KiB batches every
    17 bytes (each one a checksum to compute when resyncing)."""
    pdir = root / "look-0"
    pdir.mkdir(parents=True)
    unit = (1).to_bytes(8, "big") + (0xFFF0).to_bytes(4, "big") + bytes(4) + b"\x02"
    (pdir / "00000000000000000000.log").write_bytes(
        encode_batch([(0, BASE_TS, b"k", b"v", [])]) + b"\0\0\0\1"
        + (unit * (tail // len(unit) + 1))[:tail])
    return pdir


def v2_dense_damage(root: Path, n: int) -> Path:
    """A v2 log of `n` one-record batches with a junk byte after each: n damaged regions,
    each followed by a valid batch (a batch's CRC does not cover its base offset, so one
    encoded batch is restamped)."""
    pdir = root / "dense-0"
    pdir.mkdir(parents=True)
    one = encode_batch([(0, BASE_TS, b"k", b"v", [])])
    (pdir / "00000000000000000000.log").write_bytes(
        b"".join(i.to_bytes(8, "big") + one[8:] + b"\xff" for i in range(n)))
    return pdir


# -- measuring ------------------------------------------------------------------------------

_WRAPPER = """
import json, resource, subprocess, sys
out = subprocess.DEVNULL if sys.argv[1] == '-' else open(sys.argv[1], 'wb')
p = subprocess.run([sys.executable, '-m', 'kafkalog_cli', *sys.argv[2:]], stdout=out,
                   stderr=subprocess.PIPE)
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps([p.returncode, ru.ru_maxrss * 1024, ru.ru_utime + ru.ru_stime,
                  p.stderr.decode('utf-8', 'replace')[-4000:]]))
"""


@dataclass
class Run:
    code: int
    peak_rss: int  # bytes
    cpu: float  # seconds, user + system
    err: str

    def __str__(self) -> str:
        return f"exit {self.code}, peak RSS {self.peak_rss / MiB:.0f} MiB, CPU {self.cpu:.2f} s"


def measure(*args: object, out: Path | None = None, timeout: float = 300) -> Run:
    """Run `kafkalog ARGS` in a process of its own (stdout to `out`, else discarded)."""
    p = subprocess.run([sys.executable, "-c", _WRAPPER, str(out) if out else "-",
                        *map(str, args)], capture_output=True, text=True, timeout=timeout,
                       check=True)
    code, rss, cpu, err = json.loads(p.stdout)
    return Run(code, rss, cpu, err)
