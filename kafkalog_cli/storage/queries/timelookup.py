"""ListOffsets offline: the first offset whose timestamp is at or after T, found as the broker
finds it (UnifiedLog.fetchOffsetByTimestamp, LogSegment.findOffsetByTimestamp):

  1. the first segment whose largest timestamp >= T (last time-index entry, else the
     log's max found by scanning, as the in-memory maxTimestampSoFar would hold). Kafka
     walks the segments; we bisect a running maximum of their largest timestamps, which
     is non-decreasing, so the first segment reaching T is found in O(log segments)
     lookups once a partition's values are loaded (one 12-byte pread per segment)
  2. time index lookup(T) -> offset; offset index lookup(max(that, log start)) -> position
  3. scan batches from there to the first with maxTimestamp >= T, then the first record
     in it with timestamp >= T (CreateTime need not be monotonic inside a batch)

The answer is ListOffsets's (offset, timestamp, leaderEpoch): a found record's own timestamp
and its batch's partitionLeaderEpoch (FileRecords.searchForTimestamp); for earliest and
latest no timestamp, and the epoch the leader-epoch cache holds for that offset.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from kafkalog_cli.codec import index_entry as ie
from kafkalog_cli.codec.checkpoint import parse_leader_epochs
from kafkalog_cli.errors import CorruptDataError, locating
from kafkalog_cli.storage.disk import fs, naming
from kafkalog_cli.storage.disk.files import read_regular
from kafkalog_cli.storage.disk.logdir import PartitionDir
from kafkalog_cli.storage.disk.reader import seek_position
from kafkalog_cli.storage.disk.segment import Segment
from kafkalog_cli.storage.disk.segment import log_end_offset as segments_log_end


@dataclass(frozen=True)
class Found:
    offset: int | None
    timestamp: int | None
    leader_epoch: int | None = None


def _epoch(partition_leader_epoch: int) -> int | None:
    """RecordBatch.NO_PARTITION_LEADER_EPOCH (-1, also every magic 0/1 batch) is no epoch."""
    return partition_leader_epoch if partition_leader_epoch >= 0 else None


def epoch_for_offset(part: PartitionDir, offset: int | None) -> int | None:
    """LeaderEpochFileCache.epochForOffset: the epoch of the last entry starting at or before
    `offset` (None before the first; `offset` None: the latest epoch). No readable
    leader-epoch-checkpoint: None."""
    if not part.has(naming.LEADER_EPOCH):
        return None
    try:
        entries = parse_leader_epochs(read_regular(part.path / naming.LEADER_EPOCH))
    except (CorruptDataError, OSError):
        return None
    if offset is None:
        return entries[-1][0] if entries else None
    found = None
    for epoch, start in entries:
        if start > offset:
            break
        found = epoch
    return found


def largest_timestamp(seg: Segment) -> int:
    """LogSegment.maxTimestampSoFar: the last time-index entry, read with one 12-byte pread."""
    if seg.has_timeindex:
        p = seg.path(naming.TIMEINDEX)
        try:
            f = fs.open_ranges(p)
            try:
                size = f.size
                # the last entry of a trimmed index; an untrimmed one needs the full read
                last = f.pread(ie.TIME_ENTRY.size,
                               size - size % ie.TIME_ENTRY.size - ie.TIME_ENTRY.size) \
                    if size >= ie.TIME_ENTRY.size else b""
            finally:
                f.close()
            if len(last) == ie.TIME_ENTRY.size:
                ts, rel = ie.TIME_ENTRY.unpack(last)
                if rel != 0 or size == ie.TIME_ENTRY.size:
                    return int(ts)
                tidx = seg.time_index()
                if tidx is not None and len(tidx.entries):
                    return tidx.last_entry()[0]
        except OSError:
            pass
    best = -1
    for _pos, b in seg.batches():
        if b.max_timestamp > best:
            best = b.max_timestamp
    return best


_RUNNING_MAX: dict[int, tuple[PartitionDir, list[int]]] = {}


def running_max(part: PartitionDir) -> list[int]:
    """max(largest timestamp of segments 0..i) for each i, cached per partition object."""
    hit = _RUNNING_MAX.get(id(part))
    if hit is not None and hit[0] is part:
        return hit[1]
    out: list[int] = []
    top = -1
    for seg in part.segments:
        top = max(top, largest_timestamp(seg))
        out.append(top)
    _RUNNING_MAX[id(part)] = (part, out)
    return out


def offset_for_time(part: PartitionDir, target: int, log_start: int | None = None) -> Found:
    segs = part.segments
    start = log_start if log_start is not None else (segs[0].base_offset if segs else 0)
    first = bisect.bisect_left(running_max(part), target)
    for seg in segs[first:]:
        found = _in_segment(seg, target, start)
        if found.offset is not None:
            return found
    return Found(None, None)


def _in_segment(seg: Segment, target: int, log_start: int) -> Found:
    offset_hint = seg.base_offset
    if seg.has_timeindex:
        try:
            tidx = seg.time_index()
            if tidx is not None:
                offset_hint = tidx.lookup(target)[1]
        except OSError:
            pass
    pos = seek_position(seg, max(offset_hint, log_start))
    for bpos, b in seg.batches(pos):
        if b.max_timestamp < target or b.last_offset < log_start:
            continue
        with locating(seg.log_path, bpos):  # records that do not decode: an error, as Kafka's
            recs = b.records()
        for r in recs:
            if r.timestamp >= target and r.offset >= log_start:
                return Found(r.offset, r.timestamp, _epoch(b.partition_leader_epoch))
    return Found(None, None)


def max_timestamp_offset(part: PartitionDir) -> Found:
    """The first record carrying the partition's largest timestamp (ListOffsets MAX_TIMESTAMP)."""
    best_seg, best = None, -1
    for seg in part.segments:
        ts = largest_timestamp(seg)
        if ts > best:
            best_seg, best = seg, ts
    if best_seg is None:
        return Found(None, None)
    return _in_segment(best_seg, best, best_seg.base_offset)


def log_end_offset(part: PartitionDir) -> int:
    leo = segments_log_end(part.segments)
    if leo is not None:
        return leo
    return part.segments[-1].base_offset if part.segments else 0
