"""Read planning: which byte ranges of which segments one query reads (runs on the driver).

  1. expand each path or glob; scan log dirs, archives, partition dirs or single `.log` files
  2. keep the partitions the subscription (and pushed-down topic/partition filters) selects
  3. per partition, turn the starting/ending options into an offset range [lo, hi): offsets
     as given, times through the time index (timelookup.offset_for_time); a pushed-down
     offset range narrows it further
  4. read_committed: one header pass over the partition replays producer state
     (storage.producers) to list aborted transactions and the last stable offset; hi stops
     at the LSO, as a read_committed consumer's fetch does
  5. segments outside [lo, hi) are skipped by file name (reader.segments_in_range); the
     first one starts at the offset-index position for lo; a pushed-down lower time bound
     skips segments whose time index ends below it
  6. minPartitions: big segments are cut at offset-index entries (each a batch start,
     checked by reader.seek_position) until there are at least that many splits

A Split is small and picklable: Spark ships one to each task.
"""

from __future__ import annotations

import glob
import heapq
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from kafkalog_cli.errors import CorruptDataError, KafkalogError, UsageError
from kafkalog_cli.spark.options import EARLIEST, LATEST, ReadOptions
from kafkalog_cli.storage.disk import fs, naming
from kafkalog_cli.storage.disk.logdir import PartitionDir, open_target, scan_partition
from kafkalog_cli.storage.disk.reader import seek_position, segments_in_range
from kafkalog_cli.storage.disk.segment import Segment
from kafkalog_cli.storage.queries.producers import ProducerState
from kafkalog_cli.storage.queries.timelookup import offset_for_time

# (producer id, first offset, offset of the ABORT marker)
Aborted = tuple[int, int, int]


@dataclass
class Pruning:
    """Bounds taken from pushed-down filters; every one only ever removes whole batches."""

    topics: set[str] | None = None
    partitions: set[int] | None = None
    min_offset: int | None = None  # inclusive
    max_offset: int | None = None  # inclusive
    min_timestamp_ms: int | None = None  # inclusive; rows below it are filtered by Spark

    def wants(self, topic: str, partition: int) -> bool:
        return (self.topics is None or topic in self.topics) and \
            (self.partitions is None or partition in self.partitions)


@dataclass(frozen=True)
class Split:
    """Bytes [start, end) of one `.log`; offsets [from_offset, until_offset) of them."""

    topic: str
    partition: int
    log_path: str
    base_offset: int
    start: int
    end: int | None  # None: to the end of the file (a torn tail there is not an error)
    from_offset: int | None = None
    until_offset: int | None = None
    min_timestamp_ms: int | None = None
    aborted: tuple[Aborted, ...] = ()

    @property
    def size_hint(self) -> int:
        end = self.end if self.end is not None else _file_size(self.log_path)
        return max(0, end - self.start)


@dataclass
class Plan:
    splits: list[Split] = field(default_factory=list)
    partitions: int = 0  # partition dirs selected


def _file_size(path: str) -> int:
    try:
        return fs.size(fs.as_path(path))
    except (OSError, KafkalogError):
        return 0


def expand_paths(paths: Iterable[str], absolute: bool = True) -> list[str]:
    """Each path, or every match of a glob; a pattern that matches nothing fails."""
    out: list[str] = []
    fix = fs.absolute if absolute else str
    for p in paths:
        if fs.is_url(p):  # every executor opens the URL itself (no glob over a store)
            out.append(p)
        elif glob.has_magic(p):
            hits = sorted(glob.glob(p))
            if not hits:
                raise UsageError(f"{p}: the pattern matches nothing")
            out.extend(fix(h) for h in hits)
        else:
            out.append(fix(p))
    return out


def find_partitions(paths: Iterable[str], absolute: bool = True,
                    with_empty: bool = False) -> list[PartitionDir]:
    """Partition dirs named by the paths, each once, in path order then name order."""
    seen: set[str] = set()
    out: list[PartitionDir] = []
    for p in expand_paths(paths, absolute):
        target = open_target(p)
        parts = [_single_segment(target.path)] if target.kind == "file" else \
            target.partitions()
        for part in parts:
            key = str(part.path.resolve())
            if (part.segments or with_empty) and key not in seen:
                seen.add(key)
                out.append(part)
    return out


def _single_segment(path: Path) -> PartitionDir:
    fn = naming.parse_file_name(path.name)
    if fn.kind is not naming.FileKind.SEGMENT or fn.suffix != naming.LOG or fn.temp:
        raise UsageError(f"{path}: name a log dir, a partition dir or a segment .log file")
    part = scan_partition(path.parent)
    part.segments = [s for s in part.segments if s.base_offset == fn.offset]
    return part


def _bound(part: PartitionDir, value: int, by_time: bool) -> int | None:
    """An offset for one side of the range: None for latest (the log end)."""
    if by_time:
        return offset_for_time(part, value).offset
    if value == LATEST:
        return None
    if value == EARLIEST:
        return part.segments[0].base_offset
    return value


def transactions(part: PartitionDir, until: int | None) -> tuple[list[Aborted], int | None]:
    """Aborted transactions and the last stable offset (None: no open transaction)."""
    state = ProducerState()
    aborted: list[Aborted] = []
    for seg in part.segments:
        for _pos, b in seg.batches():
            if b.magic < 2:
                continue
            try:
                a = state.append(b)
            except CorruptDataError:
                continue  # a marker that does not decode is not a marker a consumer sees
            if a is not None:
                aborted.append((a.producer_id, a.first_offset, a.last_offset))
    lso = min(state.ongoing.values()) if state.ongoing else None
    if lso is not None and until is not None:
        lso = min(lso, until)
    return aborted, lso


def plan(opts: ReadOptions, pruning: Pruning | None = None) -> Plan:
    pruning = pruning or Pruning()
    out = Plan()
    for part in find_partitions(opts.paths):
        topic, partition = part.topic, part.partition
        if not opts.wants(topic, partition) or not pruning.wants(topic, partition):
            continue
        out.partitions += 1
        out.splits.extend(_partition_splits(part, opts, pruning))
    if opts.min_partitions and len(out.splits) < opts.min_partitions:
        out.splits = split_for(out.splits, opts.min_partitions)
    return out


def _partition_splits(part: PartitionDir, opts: ReadOptions,
                      pruning: Pruning) -> Iterator[Split]:
    topic, partition = part.topic, part.partition
    start_v, start_t = opts.starting.for_partition(topic, partition)
    if start_v == LATEST and not start_t:
        return  # a batch read from `latest` reads nothing
    lo = _bound(part, start_v, start_t)
    if lo is None:
        return  # no record at or after the starting time
    end_v, end_t = opts.ending.for_partition(topic, partition)
    hi = _bound(part, end_v, end_t)  # exclusive; None = log end
    if pruning.min_offset is not None:
        lo = max(lo, pruning.min_offset)
    if pruning.max_offset is not None:
        hi = pruning.max_offset + 1 if hi is None else min(hi, pruning.max_offset + 1)
    aborted: list[Aborted] = []
    if opts.read_committed and opts.mode == "records":
        aborted, lso = transactions(part, hi)
        if lso is not None:
            hi = lso
    if hi is not None and hi <= lo:
        return
    segs = part.segments
    nexts = {s.base_offset: (segs[i + 1].base_offset if i + 1 < len(segs) else None)
             for i, s in enumerate(segs)}
    for seg, pos in segments_in_range(part, lo, None if hi is None else hi - 1):
        size = seg.size
        if size == 0 or pos >= size:
            continue
        nxt = nexts[seg.base_offset]
        if pruning.min_timestamp_ms is not None and \
                _ends_before(seg, pruning.min_timestamp_ms, nxt is None):
            continue
        mine = tuple(a for a in aborted if a[2] >= seg.base_offset and
                     (nxt is None or a[1] < nxt))
        yield Split(topic, partition, fs.location(seg.log_path), seg.base_offset, pos, None,
                    lo if lo > seg.base_offset else None, hi, pruning.min_timestamp_ms, mine)


def _ends_before(seg: Segment, ts: int, last: bool) -> bool:
    """True if the segment's time index proves every batch's max timestamp is below ts.

    Only a rolled segment's index counts: the broker appends the segment's largest
    timestamp to it on roll (LogSegment.onBecomeInactiveSegment), while the active
    segment's last entries may lag behind its newest batches.
    """
    if not seg.has_timeindex or last:
        return False
    try:
        tidx = seg.time_index()
    except OSError:
        return False
    if tidx is None or not len(tidx.entries) or tidx.sanity_errors():
        return False
    # the last entry holds the segment's largest timestamp (LogSegment.maxTimestampSoFar)
    return max(t for t, _ in tidx.entries) < ts


def split_for(splits: list[Split], min_partitions: int) -> list[Split]:
    """Cut big splits at offset-index entries so that about min_partitions result.

    As Spark's KafkaOffsetRangeCalculator: each split gets a share of min_partitions in
    proportion to its size (bytes here), rounded, at least 1.
    """
    sizes = [s.size_hint for s in splits]
    total = sum(sizes)
    if total == 0:
        return splits
    out: list[Split] = []
    for s, size in zip(splits, sizes, strict=True):
        parts = max(1, round(size / total * min_partitions))
        out.extend(cut(s, parts) if parts > 1 else [s])
    return out


def cut(s: Split, parts: int) -> list[Split]:
    """Split `s` into up to `parts` pieces at offset-index positions inside it."""
    seg = Segment(fs.as_path(s.log_path).parent, s.base_offset, has_log=True, has_index=True)
    try:
        idx = seg.offset_index()
    except OSError:
        return [s]
    if idx is None:
        return [s]
    end = s.end if s.end is not None else _file_size(s.log_path)
    entries = [(off, pos) for off, pos in idx.entries if s.start < pos < end]
    if not entries:
        return [s]
    step = (end - s.start) / parts
    cuts: list[int] = []
    j = 0
    for i in range(1, parts):
        target = s.start + step * i
        while j + 1 < len(entries) and entries[j + 1][1] <= target:
            j += 1
        off, pos = entries[j]
        if pos <= target + step / 2 and (not cuts or pos > cuts[-1]) and \
                seek_position(seg, off) == pos:
            cuts.append(pos)
    ends: list[int | None] = [*cuts, s.end]
    return [Split(s.topic, s.partition, s.log_path, s.base_offset, a, b, s.from_offset,
                  s.until_offset, s.min_timestamp_ms, s.aborted)
            for a, b in zip([s.start, *cuts], ends, strict=True)]


# -- mode=check -----------------------------------------------------------------------------

CHECK_GROUP_BYTES = 256 << 20  # without minPartitions, about this much data per check task


@dataclass(frozen=True)
class CheckGroup:
    """Partition dirs one task checks (storage.check.check_partition), paths as given."""

    partition_dirs: tuple[str, ...]


def plan_checks(opts: ReadOptions) -> list[CheckGroup]:
    """Partition dirs in balanced groups; paths stay as given, so findings name files as the
    local `kafkalog verify` does (give absolute paths when executors run elsewhere)."""
    parts = [p for p in find_partitions(opts.paths, absolute=False, with_empty=True)
             if opts.wants(p.topic, p.partition)]
    if not parts:
        return []
    sizes = [sum(s.size for s in p.segments) for p in parts]
    groups = opts.min_partitions or -(-sum(sizes) // CHECK_GROUP_BYTES)
    return [CheckGroup(tuple(g)) for g in balanced(
        [fs.location(p.path) for p in parts], sizes, max(1, min(groups, len(parts))))]


def balanced(items: list[str], sizes: list[int], groups: int) -> list[list[str]]:
    """Longest processing time first: each item, biggest first, to the lightest group."""
    heap = [(0, g) for g in range(groups)]
    out: list[list[str]] = [[] for _ in range(groups)]
    for size, item in sorted(zip(sizes, items, strict=True), key=lambda x: -x[0]):
        load, g = heapq.heappop(heap)
        out[g].append(item)
        heapq.heappush(heap, (load + size + 1, g))
    return [g for g in out if g]
