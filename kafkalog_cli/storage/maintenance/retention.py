"""Kafka's retention, offline (UnifiedLog.deleteOldSegments).

Three passes, in this order, each walking from the oldest remaining segment and stopping at
the first that does not qualify:
  1. log start offset: the next segment's base <= log start offset
  2. size (retention.bytes >= 0 and total >= retention.bytes): with diff = total -
     retention.bytes, a segment goes while diff - its size >= 0
  3. time (retention.ms >= 0): now - largest timestamp > retention.ms (strict); largest
     timestamp = the last time-index entry, else the .log mtime
A segment may only go if the high watermark is >= its upper bound (next base, or the log
end for the last one), and the last segment never goes while empty. When every segment
goes, a new empty active segment is rolled at the log end first. The log start offset moves
to the base of the first surviving segment. Only pass 1 runs for compact-only topics.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafkalog_cli.codec.snapshot import encode_snapshot
from kafkalog_cli.storage.disk import naming, safety
from kafkalog_cli.storage.disk.files import atomic_write, fsync_dir
from kafkalog_cli.storage.disk.logdir import PartitionDir
from kafkalog_cli.storage.disk.segment import Segment
from kafkalog_cli.storage.drills.faults import crash_point
from kafkalog_cli.storage.maintenance.quarantine import Quarantine
from kafkalog_cli.storage.maintenance.replace import to_deleted


@dataclass
class Policy:
    retention_ms: int = -1
    retention_bytes: int = -1
    compact_only: bool = False


@dataclass
class Victim:
    segment: Segment
    rule: str  # log-start, size, time
    reason: str
    size: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {"segment": str(self.segment.log_path), "baseOffset": self.segment.base_offset,
                "bytes": self.size, "rule": self.rule, "reason": self.reason}


@dataclass
class RetentionPlan:
    part: PartitionDir
    victims: list[Victim] = field(default_factory=list)
    roll_at: int | None = None
    new_log_start: int | None = None
    notes: list[str] = field(default_factory=list)
    log_end_offset: int = 0


def largest_timestamp(seg: Segment, now: int, max_future_ms: int | None,
                      notes: list[str]) -> tuple[int, str]:
    """LogSegment.largestTimestamp: last time-index entry if >= 0, else the .log mtime."""
    ts = -1
    if seg.has_timeindex:
        try:
            tidx = seg.time_index()
            if tidx is not None:
                ts = tidx.last_entry()[0]
        except OSError:
            ts = -1
    mtime = int(os.stat(seg.log_path).st_mtime * 1000)
    if ts < 0:
        return mtime, "mtime"
    if max_future_ms is not None and ts > now + max_future_ms:
        notes.append(f"{seg.log_path}: largest timestamp {ts} is {ts - now} ms in the future; "
                     f"using the file's mtime {mtime} instead (--max-future-ms)")
        return mtime, "mtime (future timestamp)"
    return ts, "time index"


def _leo(part: PartitionDir) -> int:
    from kafkalog_cli.storage.queries.timelookup import log_end_offset

    return log_end_offset(part)


def plan_retention(part: PartitionDir, policy: Policy, *, now: int, log_start: int | None,
                   high_watermark: int | None, max_future_ms: int | None = None) -> RetentionPlan:
    plan = RetentionPlan(part)
    segs = list(part.segments)
    if not segs:
        return plan
    leo = _leo(part)
    plan.log_end_offset = leo
    hw = leo if high_watermark is None else min(high_watermark, leo)
    remaining = segs

    def walk(rule: str,
             predicate: Callable[[Segment, Segment | None], tuple[bool, str]]) -> None:
        nonlocal remaining
        gone = 0
        for i, seg in enumerate(remaining):
            nxt = remaining[i + 1] if i + 1 < len(remaining) else None
            upper = nxt.base_offset if nxt else leo
            if hw < upper:
                break
            ok, why = predicate(seg, nxt)
            if not ok or (nxt is None and seg.size == 0):
                break
            plan.victims.append(Victim(seg, rule, why, seg.size))
            gone += 1
        remaining = remaining[gone:]

    start = log_start if log_start is not None else segs[0].base_offset
    walk("log-start", lambda s, n: (n is not None and n.base_offset <= start,
                                    f"lies entirely below the log start offset {start}"))
    if not policy.compact_only and policy.retention_bytes >= 0:
        total = sum(s.size for s in remaining)
        if total >= policy.retention_bytes:
            diff = [total - policy.retention_bytes]

            def by_size(s: Segment, _n: Segment | None) -> tuple[bool, str]:
                if diff[0] - s.size >= 0:
                    diff[0] -= s.size
                    return True, (f"the log stays >= retention.bytes {policy.retention_bytes} "
                                  "without it")
                return False, ""
            walk("size", by_size)
    if not policy.compact_only and policy.retention_ms >= 0:
        def by_time(s: Segment, _n: Segment | None) -> tuple[bool, str]:
            ts, src = largest_timestamp(s, now, max_future_ms, plan.notes)
            return now - ts > policy.retention_ms, (
                f"largest timestamp {ts} ({src}) is more than retention.ms "
                f"{policy.retention_ms} before now {now}")
        walk("time", by_time)
    if plan.victims:
        if len(plan.victims) == len(segs):
            plan.roll_at = leo
            plan.new_log_start = leo
        else:
            plan.new_log_start = segs[len(plan.victims)].base_offset
    return plan


# a retired segment's files in the order they become `.deleted` (apply_retention)
_RETIRED_KINDS = (naming.INDEX, naming.TIMEINDEX, naming.TXNINDEX, naming.SNAPSHOT, naming.LOG)


def apply_retention(plan: RetentionPlan, quarantine: Quarantine | None, *, delete_now: bool,
                    log_dir: Path, fsync: bool = True) -> None:
    """Roll if needed, move the log start, rename victims to `.deleted`, then remove them
    (into the quarantine) unless a delete delay keeps them for a later run."""
    d = plan.part.path
    if plan.roll_at is not None:
        _roll_empty(plan, log_dir, fsync)
    if plan.new_log_start is not None:
        from kafkalog_cli.storage.disk.checkpoints import read_offsets, update_offsets

        cp = log_dir / naming.LOG_START
        current = read_offsets(cp).get(plan.part.key, -1)
        if plan.new_log_start > current:
            crash_point("retain.checkpoint.before")
            update_offsets(cp, {plan.part.key: plan.new_log_start}, fsync=fsync)
            crash_point("retain.checkpoint.after")
    for v in plan.victims:
        # the .log last: a run stopped before it leaves a segment whose lost index or
        # snapshot a broker rebuilds (and the next run retires), never index files or a
        # snapshot with no .log, which no run would see again
        for kind in _RETIRED_KINDS:
            p = d / naming.segment_file_name(v.segment.base_offset, kind)
            if p.exists():
                to_deleted(p, quarantine, "retain.to-deleted")
    if fsync:
        fsync_dir(d)
    if delete_now:
        remove_deleted(d, quarantine, older_than_ms=None, log_dir=log_dir)


def _roll_empty(plan: RetentionPlan, log_dir: Path, fsync: bool) -> None:
    """LocalLog.roll: a new empty active segment at the log end, with a producer snapshot."""
    from kafkalog_cli.storage.checks.log_state import state_at

    base = plan.roll_at
    assert base is not None
    d = plan.part.path
    state = state_at(plan.part, plan.part.segments, base)
    crash_point("retain.roll.before")
    for kind in (naming.INDEX, naming.TIMEINDEX):
        atomic_write(d / naming.segment_file_name(base, kind), b"", root=log_dir, fsync=fsync)
    atomic_write(d / naming.segment_file_name(base, naming.SNAPSHOT),
                 encode_snapshot(state.snapshot_entries()), root=log_dir, fsync=fsync)
    atomic_write(d / naming.segment_file_name(base, naming.LOG), b"", root=log_dir, fsync=fsync)
    crash_point("retain.roll.after")


def remove_deleted(d: Path, quarantine: Quarantine | None, *, older_than_ms: int | None,
                   log_dir: Path, now_s: float | None = None,
                   reason: str = "deleted by retention") -> list[Path]:
    """Remove `.deleted` segment files (renaming updates ctime, so ctime says when)."""
    now_s = time.time() if now_s is None else now_s
    gone = []
    for p in sorted(d.iterdir()):
        fn = naming.parse_file_name(p.name)
        if fn.kind is not naming.FileKind.SEGMENT or fn.temp != naming.DELETED:
            continue
        if older_than_ms is not None and (now_s - os.stat(p).st_ctime) * 1000 < older_than_ms:
            continue
        if quarantine is not None:
            quarantine.remove(p, reason)
        else:
            safety.unlink(p, log_dir)
        gone.append(p)
    return gone
