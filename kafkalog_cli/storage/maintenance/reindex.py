"""Rewrite a partition's index files from its logs (never the `.log` bytes)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kafkalog_cli.storage.disk import naming
from kafkalog_cli.storage.disk.files import atomic_write
from kafkalog_cli.storage.disk.logdir import PartitionDir
from kafkalog_cli.storage.maintenance.rebuild import (
    DEFAULT_INDEX_BYTES,
    DEFAULT_INDEX_INTERVAL,
    rebuild_segment,
    txn_on_disk,
)
from kafkalog_cli.storage.queries.producers import ProducerState


@dataclass
class IndexChange:
    segment: Path
    file: Path
    kind: str  # index / timeindex / txnindex
    entries: int
    before: int | None  # bytes before (None: file absent)
    after: int
    changed: bool
    damage: str | None = None  # where the log stops being valid, if it does


def reindex_partition(part: PartitionDir, *, bases: set[int] | None = None,
                      interval: int = DEFAULT_INDEX_INTERVAL,
                      index_bytes: int = DEFAULT_INDEX_BYTES, dry_run: bool = False,
                      fsync: bool = True) -> list[IndexChange]:
    """Rebuild the chosen segments' indexes (all when `bases` is None), oldest first, carrying
    producer state across segments so `.txnindex` first offsets are right."""
    state = ProducerState()
    changes: list[IndexChange] = []
    for seg in part.segments:
        if bases is not None and seg.base_offset not in bases:
            for _pos, b in seg.batches():  # keep producer state current
                state.append(b)
            continue
        r = rebuild_segment(seg, interval, state, max_entries=index_bytes // 8,
                            txn_on_disk=txn_on_disk(seg))
        damage = None
        if r.stop is not None or r.truncated:
            damage = (f"{seg.log_path}:{r.valid_bytes}: "
                      f"{r.stop.reason if r.stop else 'incomplete batch'}")
        oi, ti, tx = r.index_bytes()
        for kind, suffix, data, n in (("index", naming.INDEX, oi, len(r.offset_entries)),
                                      ("timeindex", naming.TIMEINDEX, ti, len(r.time_entries)),
                                      ("txnindex", naming.TXNINDEX, tx, len(r.txn_entries))):
            path = seg.path(suffix)
            before = path.read_bytes() if path.exists() else None
            if suffix == naming.TXNINDEX and before is None and not data:
                continue  # Kafka creates a .txnindex only when there is an abort to record
            changed = before != data
            if changed and not dry_run:
                atomic_write(path, data, root=part.path.parent, fsync=fsync)
            changes.append(IndexChange(seg.log_path, path, kind, n,
                                       None if before is None else len(before), len(data),
                                       changed, damage))
    return changes
