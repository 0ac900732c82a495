"""A one-screen summary of log dirs and partitions (read-only; headers only)."""

from __future__ import annotations

import contextlib
import fcntl
import os
from dataclasses import dataclass, field
from typing import Any

from kafkalog_cli.codec import compression
from kafkalog_cli.codec.entry import Batch
from kafkalog_cli.errors import CorruptDataError
from kafkalog_cli.storage.checks.batch_rules import first_offset
from kafkalog_cli.storage.checks.check import clean_headers
from kafkalog_cli.storage.disk import fs, naming
from kafkalog_cli.storage.disk.checkpoints import log_start_offset
from kafkalog_cli.storage.disk.logdir import LogDir, PartitionDir


@dataclass
class PartitionInfo:
    topic: str
    partition: int
    path: str
    segments: int = 0
    bytes: int = 0
    batches: int = 0
    log_start_offset: int | None = None  # as the broker loads it (UnifiedLog.logStartOffset)
    first_offset: int | None = None  # of the first batch on disk
    log_end_offset: int | None = None
    recovery_point: int | None = None
    high_watermark: int | None = None
    first_timestamp: int | None = None
    max_timestamp: int | None = None
    codecs: set[str] = field(default_factory=set)
    magics: set[int] = field(default_factory=set)
    leftovers: list[str] = field(default_factory=list)
    state: str = ""  # "stray", "delete", "future": a dir the broker renamed
    kraft_snapshots: list[str] = field(default_factory=list)  # complete ones, oldest first

    def as_dict(self) -> dict[str, Any]:
        """Machine output: camelCase, Kafka's names (docs/json.md)."""
        return {"topic": self.topic, "partition": self.partition, "path": self.path,
                "segments": self.segments, "bytes": self.bytes, "batches": self.batches,
                "logStartOffset": self.log_start_offset, "firstOffset": self.first_offset,
                "logEndOffset": self.log_end_offset, "recoveryPoint": self.recovery_point,
                "highWatermark": self.high_watermark, "firstTimestamp": self.first_timestamp,
                "maxTimestamp": self.max_timestamp, "codecs": sorted(self.codecs),
                "magics": sorted(self.magics), "leftovers": self.leftovers,
                "state": self.state, "kraftSnapshots": len(self.kraft_snapshots),
                "lastKraftSnapshot": self.kraft_snapshots[-1] if self.kraft_snapshots else None}


def _add(info: PartitionInfo, batches: int, first: int, last: int, first_ts: int,
         max_ts: int, codecs: list[str], magic: int) -> None:
    """Batches in log order (one, or a clean segment's all) added to the overview: their
    count, first and last offsets, first and largest max timestamps (-1: none), codecs."""
    if not batches:
        return
    info.batches += batches
    if info.first_offset is None:
        info.first_offset = first
    info.log_end_offset = last + 1
    info.codecs.update(codecs)
    info.magics.add(magic)
    if info.first_timestamp is None and first_ts >= 0:
        info.first_timestamp = first_ts
    if max_ts >= 0:
        info.max_timestamp = max_ts if info.max_timestamp is None \
            else max(info.max_timestamp, max_ts)


def _first_offset(b: Batch, needed: bool) -> int:
    """A batch's first offset. A compressed magic 0/1 wrapper's header carries only its last
    inner offset (batch_rules.first_offset): where `needed` (the partition's first batch,
    which firstOffset shows) it is read from the inner messages, as Kafka's baseOffset()
    and dump do."""
    if needed and b.magic < 2 and b.compression:
        with contextlib.suppress(CorruptDataError):
            b.records()  # under the default cap; a wrapper that does not inflate keeps its own
            return b.base_offset
    return first_offset(b)


def lock_state(ld: LogDir) -> str:
    """'held' if another process holds .lock, 'free' if not, 'absent' without a .lock file."""
    p = ld.path / naming.LOCK
    if not p.exists():
        return "absent"
    if fs.is_remote(p):  # no process holds a lock on an object (no broker runs there)
        return "free"
    try:
        fd = os.open(p, os.O_RDWR)
    except OSError:
        return "unreadable"
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.lockf(fd, fcntl.LOCK_UN)
        return "free"
    except OSError:
        return "held"
    finally:
        os.close(fd)


def partition_info(part: PartitionDir, bases: set[int] | None = None) -> PartitionInfo:
    """The overview of a partition, or of its segments at `bases` only."""
    segments = [s for s in part.segments if bases is None or s.base_offset in bases]
    info = PartitionInfo(part.topic, part.partition, str(part.path), len(segments),
                         state=part.state)
    for seg in segments:
        fast = clean_headers(seg.file(naming.LOG), seg.base_offset)
        if fast is not None:  # a clean v2 segment: the same values, ~10x sooner
            size, batches, first, last, first_ts, max_ts, codecs = fast
            info.bytes += size
            _add(info, batches, first, last, first_ts, max_ts, codecs, 2)
            continue
        info.bytes += seg.size
        for _pos, b in seg.batches():
            ts = b.max_timestamp
            _add(info, 1, _first_offset(b, info.first_offset is None), b.last_offset,
                 ts, ts, [compression.name(b.compression)], b.magic)
    if info.log_end_offset is None and segments:
        info.log_end_offset = segments[-1].base_offset
    if bases is None:
        info.leftovers = [f.name for f in part.temp_files] + \
            [f.name for f in part.orphan_indexes]
        info.kraft_snapshots = [f.name for f in part.kraft_snapshots
                                if f.kind is naming.FileKind.KRAFT_SNAPSHOT and not f.temp]
    if part.log_dir is not None:
        for attr, name in (("recovery_point", naming.RECOVERY_POINT),
                           ("high_watermark", naming.REPLICATION)):
            try:
                cp = part.log_dir.checkpoint(name) or {}
            except CorruptDataError:
                cp = {}
            setattr(info, attr, cp.get(part.key))
    # as the broker loads it, so a partition that retention emptied still shows where it
    # starts; where tiered storage leaves that unknown, where the local log starts
    info.log_start_offset = log_start_offset(
        part, part.segments[0].base_offset if part.segments else None, local_if_unknown=True)
    return info
