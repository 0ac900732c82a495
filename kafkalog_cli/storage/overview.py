"""A one-screen summary of log dirs and partitions (read-only; headers only)."""

from __future__ import annotations

import fcntl
import os
from dataclasses import dataclass, field
from typing import Any

from kafkalog_cli.codec import compression
from kafkalog_cli.errors import CorruptDataError
from kafkalog_cli.storage import naming
from kafkalog_cli.storage.logdir import LogDir, PartitionDir


@dataclass
class PartitionInfo:
    topic: str
    partition: int
    path: str
    segments: int = 0
    bytes: int = 0
    start_offset: int | None = None
    end_offset: int | None = None
    records_batches: int = 0
    first_timestamp: int | None = None
    max_timestamp: int | None = None
    codecs: set[str] = field(default_factory=set)
    magics: set[int] = field(default_factory=set)
    recovery_point: int | None = None
    high_watermark: int | None = None
    log_start_offset: int | None = None
    leftovers: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["codecs"] = sorted(self.codecs)
        d["magics"] = sorted(self.magics)
        return d


def lock_state(ld: LogDir) -> str:
    """'held' if another process holds .lock, 'free' if not, 'absent' without a .lock file."""
    p = ld.path / naming.LOCK
    if not p.exists():
        return "absent"
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


def partition_info(part: PartitionDir) -> PartitionInfo:
    info = PartitionInfo(part.topic, part.partition, str(part.path), len(part.segments))
    for seg in part.segments:
        info.bytes += seg.size
        for _pos, b in seg.batches():
            info.records_batches += 1
            if info.start_offset is None:
                info.start_offset = b.base_offset if b.magic == 2 else b.last_offset
            info.end_offset = b.last_offset + 1
            info.codecs.add(compression.name(b.compression))
            info.magics.add(b.magic)
            ts = b.max_timestamp
            if ts >= 0:
                if info.first_timestamp is None:
                    info.first_timestamp = ts
                info.max_timestamp = ts if info.max_timestamp is None \
                    else max(info.max_timestamp, ts)
    if info.end_offset is None and part.segments:
        info.end_offset = part.segments[-1].base_offset
    info.leftovers = [f.name for f in part.temp_files] + [f.name for f in part.orphan_indexes]
    if part.log_dir is not None:
        for attr, name in (("recovery_point", naming.RECOVERY_POINT),
                           ("high_watermark", naming.REPLICATION),
                           ("log_start_offset", naming.LOG_START)):
            try:
                cp = part.log_dir.checkpoint(name) or {}
            except CorruptDataError:
                cp = {}
            setattr(info, attr, cp.get(part.key))
    return info
