"""Deterministic, seeded log dirs for tests, fixtures and runbook drills.

Everything derives from the spec and its seed: the same spec writes the same bytes.
"""

from __future__ import annotations

import base64
import hashlib
import random
from dataclasses import dataclass, field
from pathlib import Path

from kafkalog_cli.codec import compression
from kafkalog_cli.codec.batch_v2 import encode_batch
from kafkalog_cli.codec.control import encode_end_txn
from kafkalog_cli.codec.message_v01 import encode_message_set
from kafkalog_cli.storage.disk import naming
from kafkalog_cli.storage.disk.checkpoints import update_offsets
from kafkalog_cli.storage.disk.files import atomic_write
from kafkalog_cli.storage.maintenance.log_config import LogConfig
from kafkalog_cli.storage.maintenance.writer import PartitionWriter


@dataclass
class GenSpec:
    topics: list[str] = field(default_factory=lambda: ["demo"])
    partitions: int = 1
    records: int = 1000  # per partition
    batch_records: int = 20
    value_bytes: int = 100
    keys: int = 50  # key cardinality; 0 = no keys
    null_key_ratio: float = 0.05
    tombstone_ratio: float = 0.05
    headers: bool = True
    codecs: list[str] = field(default_factory=lambda: ["none"])  # cycled per batch
    magic: int = 2
    transactions: bool = False  # every 4th batch in a transaction; every other one aborted
    idempotent: bool = False
    log_append_time: bool = False
    leader_epoch: int = 0
    start_ms: int = 1_700_000_000_000
    step_ms: int = 10
    jitter_ms: int = 0  # > 0 makes CreateTime non-monotonic
    seed: int = 1
    segment_bytes: int = 16 * 1024
    segment_ms: int = 7 * 24 * 3600 * 1000
    index_interval_bytes: int = 4096
    clean_shutdown: bool = True


def _topic_id(topic: str, seed: int) -> str:
    digest = hashlib.sha256(f"{topic}/{seed}".encode()).digest()[:16]
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def _value(rng: random.Random, n: int) -> bytes:
    words = ("kafka", "log", "segment", "offset", "index", "batch", "record", "broker", "epoch")
    out = []
    size = 0
    while size < n:
        w = rng.choice(words)
        out.append(w)
        size += len(w) + 1
    return " ".join(out).encode()[:n]


# The fixture `make demo` and the tests use: every codec, headers, nulls, tombstones,
# transactions with commits and aborts, an idempotent producer, legacy magic 0 and 1.
PRESETS: dict[str, list[tuple[str, GenSpec]]] = {
    "sample": [
        ("demo", GenSpec(topics=["demo"], partitions=2, records=600, codecs=list(compression.NAMES),
                         transactions=True, idempotent=True, seed=11)),
        ("legacy", GenSpec(topics=["legacy-v0"], records=200, magic=0, keys=20,
                           codecs=["none", "gzip", "snappy", "lz4"], headers=False, seed=12)),
        ("legacy", GenSpec(topics=["legacy-v1"], records=200, magic=1, keys=20,
                           codecs=["none", "gzip", "snappy", "lz4"], headers=False, seed=13)),
        ("logappend", GenSpec(topics=["appendtime"], records=100, log_append_time=True,
                              codecs=["none", "zstd"], seed=14)),
    ],
}


def generate(log_dir: Path, spec: GenSpec) -> dict[tuple[str, int], int]:
    """Write the log dir; returns each partition's log end offset."""
    log_dir.mkdir(parents=True, exist_ok=True)
    rng = random.Random(spec.seed)
    cfg = LogConfig(segment_bytes=spec.segment_bytes, segment_ms=spec.segment_ms,
                    index_interval_bytes=spec.index_interval_bytes)
    leos: dict[tuple[str, int], int] = {}
    codecs = [compression.BY_NAME[c] for c in spec.codecs]
    for topic in spec.topics:
        for p in range(spec.partitions):
            w = PartitionWriter(log_dir / naming.partition_dir_name(topic, p), topic, p, cfg,
                                now_ms=spec.start_ms, topic_id=_topic_id(topic, spec.seed))
            with w:
                _fill(w, spec, rng, codecs)
            leos[(topic, p)] = w.next_offset
    _root_files(log_dir, spec, leos)
    return leos


def _fill(w: PartitionWriter, spec: GenSpec, rng: random.Random, codecs: list[int]) -> None:
    ts = spec.start_ms
    n = 0
    batch_no = 0
    seq = {1000: 0, 2000: 0}
    while n < spec.records:
        count = min(spec.batch_records, spec.records - n)
        recs = []
        for i in range(count):
            ts += spec.step_ms
            t = ts + (rng.randint(-spec.jitter_ms, spec.jitter_ms) if spec.jitter_ms else 0)
            key = None if spec.keys == 0 or rng.random() < spec.null_key_ratio \
                else f"key-{rng.randrange(spec.keys):05d}".encode()
            value = None if key is not None and rng.random() < spec.tombstone_ratio \
                else _value(rng, spec.value_bytes)
            headers = [("trace", f"{n + i}".encode()), ("empty", None)] \
                if spec.headers and rng.random() < 0.3 else []
            recs.append((w.next_offset + i, max(t, 0), key, value, headers))
        codec = codecs[batch_no % len(codecs)]
        txn = spec.transactions and spec.magic == 2 and batch_no % 4 == 1
        if spec.magic < 2:
            if codec == compression.ZSTD:
                codec = compression.NONE
            data = encode_message_set([(o, t if spec.magic else -1, k, v)
                                       for o, t, k, v, _ in recs],
                                      magic=spec.magic, codec=codec,
                                      timestamp_type=1 if spec.log_append_time else 0,
                                      log_append_time=ts)
            if codec == compression.NONE:
                # a broker writes one entry per message; append them as one write like an append
                pass
            w.append_many(data) if codec == compression.NONE else w.append(data)
        else:
            pid = 1000 if txn else (2000 if spec.idempotent else -1)
            base_seq = seq[pid] if pid >= 0 else -1
            if pid >= 0:
                seq[pid] += count
            w.append(encode_batch(recs, codec=codec,
                                  timestamp_type=1 if spec.log_append_time else 0,
                                  log_append_time=ts, producer_id=pid,
                                  producer_epoch=0 if pid >= 0 else -1, base_sequence=base_seq,
                                  partition_leader_epoch=spec.leader_epoch, transactional=txn))
            if txn:
                commit = batch_no % 8 == 1
                k, v = encode_end_txn(commit, 0)
                ts += spec.step_ms
                w.append(encode_batch([(w.next_offset, ts, k, v, [])], producer_id=1000,
                                      producer_epoch=0, partition_leader_epoch=spec.leader_epoch,
                                      transactional=True, control=True))
        n += count
        batch_no += 1


def _root_files(log_dir: Path, spec: GenSpec, leos: dict[tuple[str, int], int]) -> None:
    meta = log_dir / naming.META
    if not meta.exists():
        atomic_write(meta, b"#Generated by kafkalog\nversion=0\nbroker.id=0\n"
                     b"cluster.id=" + _topic_id("cluster", spec.seed).encode() + b"\n",
                     root=log_dir)
    update_offsets(log_dir / naming.RECOVERY_POINT, dict(leos))
    update_offsets(log_dir / naming.REPLICATION, dict(leos))
    update_offsets(log_dir / naming.LOG_START, {k: None for k in leos})
    if not (log_dir / naming.CLEANER).exists():
        atomic_write(log_dir / naming.CLEANER, b"0\n0\n", root=log_dir)
    (log_dir / naming.LOCK).touch()
    if spec.clean_shutdown:
        atomic_write(log_dir / naming.CLEAN_SHUTDOWN, b'{"version":0,"brokerEpoch":0}',
                     root=log_dir)
