"""Deterministic Kafka 0.7 log dirs (tests, fixtures, drills), optionally damaged.

Appending follows 0.7's Log.append/maybeRoll: a producer's message set (plain entries, or
one compressed wrapper) is appended whole; before an append the active segment rolls when
its size is already *greater than* the segment size (strict), and the new segment is named
after the log end, so each name follows on from the previous segment's end. A clean
shutdown leaves an empty `.kafka_cleanshutdown` in the log dir; a damaged dir gets none.

Damage (applied to the newest segment of every partition, after writing):
  torn-tail      the last entry is cut in the middle of its payload
  crc            one payload byte of the last entry is flipped
  bit-flip       one payload byte of the middle entry is flipped (valid entries follow)
  size-past-end  the last entry's size claims more bytes than the file has
  name-gap       the newest segment is renamed to start 7 bytes after the previous end
  mixed          an empty 0.8+ `.log` file is put beside the segments
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

from kafkalog_cli.codec import compression
from kafkalog_cli.codec.message_v07 import SIZE, SIZE_LEN, encode_message_set, split_entries
from kafkalog_cli.errors import UsageError
from kafkalog_cli.storage.formats.kafka07.layout import (
    CLEAN_SHUTDOWN,
    scan_partition,
    segment_name,
)

DAMAGES = ("torn-tail", "crc", "bit-flip", "size-past-end", "name-gap", "mixed")
_WORDS = ("kafka", "log", "segment", "offset", "byte", "message", "broker", "zookeeper",
          "consumer")


@dataclass
class Gen07Spec:
    topics: list[str] = field(default_factory=lambda: ["demo"])
    partitions: int = 1
    records: int = 1000  # messages per partition
    batch_records: int = 20  # messages per producer message set
    value_bytes: int = 100
    codecs: list[str] = field(default_factory=lambda: ["none"])  # cycled per message set
    magic: int = 1  # 0.7 producers write 1; 0 is what 0.6 wrote (never compressed)
    segment_bytes: int = 16 * 1024
    seed: int = 1
    damage: list[str] = field(default_factory=list)


@dataclass
class DamageDone:
    kind: str
    path: Path
    position: int | None


def payload(topic: str, partition: int, n: int, rng: random.Random, size: int) -> bytes:
    """Message n of a partition: its identity first, so tests can check order and content."""
    head = f"{topic}-{partition}#{n}".encode()
    words: list[str] = []
    total = len(head)
    while total < size:
        w = rng.choice(_WORDS)
        words.append(w)
        total += len(w) + 1
    return (head + b" " + " ".join(words).encode())[:max(size, len(head))]


def generate(log_dir: Path, spec: Gen07Spec) -> tuple[dict[tuple[str, int], int],
                                                      list[DamageDone]]:
    """Write the log dir; returns each partition's log end offset and the damage done."""
    for c in spec.codecs:
        if c not in ("none", "gzip", "snappy"):
            raise UsageError(f"Kafka 0.7 has no {c} codec (it knows none, gzip, snappy)")
    if spec.magic not in (0, 1):
        raise UsageError("Kafka 0.7 messages have magic 0 or 1")
    if spec.magic == 0 and any(c != "none" for c in spec.codecs):
        raise UsageError("magic-0 messages cannot be compressed; use --magic 1")
    for d in spec.damage:
        if d not in DAMAGES:
            raise UsageError(f"--damage {d} is not a Kafka 0.7 damage kind (those are "
                             f"{', '.join(DAMAGES)})")
    log_dir.mkdir(parents=True, exist_ok=True)
    rng = random.Random(spec.seed)
    codecs = [compression.BY_NAME[c] for c in spec.codecs]
    leos: dict[tuple[str, int], int] = {}
    done: list[DamageDone] = []
    for topic in spec.topics:
        for p in range(spec.partitions):
            pdir = log_dir / f"{topic}-{p}"
            leos[(topic, p)] = _write_partition(pdir, topic, p, spec, rng, codecs)
            for kind in spec.damage:
                done.append(_damage(pdir, kind))
    if not spec.damage:
        (log_dir / CLEAN_SHUTDOWN).write_bytes(b"")
    return leos, done


def _write_partition(pdir: Path, topic: str, p: int, spec: Gen07Spec, rng: random.Random,
                     codecs: list[int]) -> int:
    pdir.mkdir(parents=True, exist_ok=True)
    start, size = 0, 0
    f = open(pdir / segment_name(0), "wb")  # noqa: SIM115 - rolled below
    try:
        n = 0
        sets = 0
        while n < spec.records:
            count = min(spec.batch_records, spec.records - n)
            data = encode_message_set(
                [payload(topic, p, n + i, rng, spec.value_bytes) for i in range(count)],
                codec=codecs[sets % len(codecs)], magic=spec.magic)
            if size > spec.segment_bytes:  # Log.maybeRoll: strictly greater
                f.close()
                start += size
                size = 0
                f = open(pdir / segment_name(start), "wb")  # noqa: SIM115
            f.write(data)
            size += len(data)
            n += count
            sets += 1
    finally:
        f.close()
    return start + size


def _entries(path: Path) -> list[tuple[int, int]]:
    """(position, size N) of each entry of a whole, undamaged segment."""
    return [(pos, msg.size) for pos, msg in split_entries(path.read_bytes())]


def _damage(pdir: Path, kind: str) -> DamageDone:
    part = scan_partition(pdir)
    seg = part.segments[-1]
    if kind == "mixed":
        p = pdir / "00000000000000000000.log"
        p.write_bytes(b"")
        return DamageDone(kind, p, None)
    if kind == "name-gap":
        if len(part.segments) < 2:
            raise UsageError("name-gap needs at least two segments (more --records or a "
                             "smaller --segment-bytes)")
        to = seg.path.with_name(segment_name(seg.start + 7))
        seg.path.rename(to)
        return DamageDone(kind, to, None)
    entries = _entries(seg.path)
    if not entries:
        raise UsageError(f"{seg.path}: no entry to damage (write some --records)")
    data = bytearray(seg.path.read_bytes())
    pos, n = entries[len(entries) // 2] if kind == "bit-flip" else entries[-1]
    if kind == "torn-tail":
        del data[pos + SIZE_LEN + n // 2:]
    elif kind in ("crc", "bit-flip"):
        data[pos + SIZE_LEN + n - 1] ^= 0x01  # the last payload byte: CRC-covered
    elif kind == "size-past-end":
        SIZE.pack_into(data, pos, n + 1000)
    seg.path.write_bytes(bytes(data))
    return DamageDone(kind, seg.path, pos)
