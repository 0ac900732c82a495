"""Index rebuild with LogSegment.recover's algorithm; produces the bytes Kafka writes.

    for each batch, stopping at the first torn, corrupt or out-of-range one:
      max timestamp so far grows strictly -> remember (ts, batch last offset)
      if valid_bytes - last_indexed_position > index.interval.bytes:     (strict)
          offset index += (batch last offset, batch start position)
          time index maybe += (max timestamp so far, its offset)         (only if ts grew)
      valid_bytes += batch size
      producer state; an ABORT marker adds a .txnindex entry (if data of it was seen)
    finally: time index maybe += (max ts, its offset) -- the entry retention reads
Given the `.txnindex` entries on disk, an entry the cleaner kept for a marker whose data it
removed is kept too (producers.reconcile_txn_entries): Kafka's recovery would drop it.

Where the broker's recovery finds its index full it throws ("Attempt to append to a full
time index") instead of rolling, and the broker does not start: its append path counts index
entries from where it last (re)started, so a segment written across restarts can hold more
interval crossings than segment.index.bytes allows. `Rebuilt.splits` says where to cut the
segment so every piece recovers: at a crossing that finds the offset index full (entries >=
max) or the time index full (entries >= max - 1: one slot is kept for the entry written on
roll), the next piece starts with that batch, as a roll there would have.
Entries in the time index need a strictly larger timestamp than the last one; the first
needs ts >= 0 (an empty index's last entry is (-1, base)).
With `rules` (recover), a batch also stops the scan when it breaks any rule verify checks
(batch_rules.py), not only the CRC and the offset range a broker checks.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from kafkalog_cli import _speedups
from kafkalog_cli.codec import index_entry as ie
from kafkalog_cli.codec.batch_v2 import RecordBatch
from kafkalog_cli.codec.entry import Batch
from kafkalog_cli.codec.layout import INT32_MAX
from kafkalog_cli.codec.model import Damage
from kafkalog_cli.errors import CorruptDataError, LogDirIOError
from kafkalog_cli.storage.checks.batch_rules import BatchRules
from kafkalog_cli.storage.disk import fs, naming
from kafkalog_cli.storage.disk.files import open_regular
from kafkalog_cli.storage.disk.segment import Segment
from kafkalog_cli.storage.queries.producers import AbortMarker, ProducerState, reconcile_txn_entries

DEFAULT_INDEX_INTERVAL = 4096
DEFAULT_INDEX_BYTES = 10 * 1024 * 1024
# the pass over a clean v2 segment in C (fastscan.scan_rebuild): a Python step per batch was
# 4 us, and two of them at once slowed each other by 15 % where compiled scans did not
_fastscan = _speedups.compiled("fastscan")
# its read size: two 1 MiB slots (one huge page's worth) stay in a shared L3 beside another
# worker's, where 4 MiB ones did not: at -j 2 the CPU a byte costs rose 18 % with 4 MiB and
# 3 % with 1 MiB (broker dir, EPYC, 1 MiB L2); -j 1 as fast. Under 1 MiB the buffer misses
# the huge page, and the kernel's copy into it was 3 times slower
REBUILD_CHUNK = 1 << 20


@dataclass
class Rebuilt:
    offset_entries: list[tuple[int, int]] = field(default_factory=list)  # (relative, position)
    time_entries: list[tuple[int, int]] = field(default_factory=list)  # (timestamp, relative)
    txn_entries: list[ie.AbortedTxn] = field(default_factory=list)
    abort_markers: list[AbortMarker] = field(default_factory=list)
    splits: list[tuple[int, int]] = field(default_factory=list)  # (base offset, position)
    valid_bytes: int = 0
    file_size: int = 0
    max_timestamp: int = -1
    offset_of_max_timestamp: int = -1
    next_offset: int | None = None
    stop: Damage | None = None  # why the scan stopped before the end, if it did
    batches: int = 0

    @property
    def truncated(self) -> int:
        return self.file_size - self.valid_bytes

    def index_bytes(self) -> tuple[bytes, bytes, bytes]:
        return (ie.encode_offset_entries(self.offset_entries),
                ie.encode_time_entries(self.time_entries),
                ie.encode_txn_entries(self.txn_entries))


class _TimeIndexBuilder:
    def __init__(self, base: int) -> None:
        self.base = base
        self.entries: list[tuple[int, int]] = []
        self.last = (-1, base)

    def maybe_append(self, ts: int, offset: int) -> None:
        if ts > self.last[0]:
            self.entries.append((ts, offset - self.base))
            self.last = (ts, offset)


@dataclass
class IndexCapacity:
    """Entries the broker's indexes hold (AbstractIndex: maxIndexSize // entry size)."""

    offset_entries: int = DEFAULT_INDEX_BYTES // ie.OFFSET_ENTRY.size
    time_entries: int = DEFAULT_INDEX_BYTES // ie.TIME_ENTRY.size

    @classmethod
    def of(cls, index_bytes: int) -> IndexCapacity:
        """From segment.index.bytes, or a preallocated index file's size (a lower bound)."""
        return cls(index_bytes // ie.OFFSET_ENTRY.size, index_bytes // ie.TIME_ENTRY.size)


class _Pieces:
    """LogSegment.recover's index counting on the segment cut at the splits made so far."""

    def __init__(self, interval: int, cap: IndexCapacity) -> None:
        self.interval, self.cap = interval, cap
        self.start = self.last_index = self.offsets = self.times = 0
        self.max_ts = self.last_ts = -1

    def starts_piece(self, pos: int, b: Batch) -> bool:
        self.max_ts = max(self.max_ts, b.max_timestamp)
        if pos - self.start - self.last_index <= self.interval:
            return False
        if self.offsets >= self.cap.offset_entries or self.times >= self.cap.time_entries - 1:
            self.start, self.last_index, self.offsets, self.times = pos, 0, 0, 0
            self.max_ts, self.last_ts = b.max_timestamp, -1
            return True
        self.offsets += 1
        if self.max_ts > self.last_ts:
            self.times, self.last_ts = self.times + 1, self.max_ts
        self.last_index = pos - self.start
        return False


def txn_on_disk(seg: Segment) -> list[ie.AbortedTxn]:
    """The segment's `.txnindex` entries as they are (none if absent or unreadable)."""
    try:
        idx = seg.txn_index()
    except OSError:
        return []
    return list(idx.entries) if idx is not None else []


def rebuild_segment(seg: Segment, interval: int = DEFAULT_INDEX_INTERVAL,
                    state: ProducerState | None = None,
                    max_entries: int = DEFAULT_INDEX_BYTES // 8,
                    txn_on_disk: list[ie.AbortedTxn] | None = None,
                    capacity: IndexCapacity | None = None,
                    rules: BatchRules | None = None) -> Rebuilt:
    """Recompute a segment's indexes from its `.log`, as LogSegment.recover does;
    `txn_on_disk`: the segment's current `.txnindex` entries, `capacity`: the broker's, to
    find the splits (see the module doc); `rules` (recover): verify's batch rules, each
    batch checked against them too."""
    state = state if state is not None else ProducerState()
    if rules is None:
        fast = _compiled(seg, interval, state, max_entries, txn_on_disk, capacity)
        if fast is not None:
            return fast
    base = seg.base_offset
    r = Rebuilt(file_size=seg.size)
    tb = _TimeIndexBuilder(base)
    last_index_pos = 0
    max_ts, max_ts_off = -1, base
    stops: list[Damage] = []
    pieces = _Pieces(interval, capacity) if capacity is not None else None
    for pos, b in seg.batches(on_damage=stops.append):
        if stops:
            break
        if rules is not None:
            fault = rules.fault(b, base, r.batches == 0)
            if fault is not None:
                stops.append(Damage(pos, fault.code, fault.message, b.size))
                break
        elif not b.is_valid():
            stops.append(Damage(pos, "crc", "batch fails its CRC check", b.size))
            break
        last = b.last_offset
        if not 0 <= last - base <= INT32_MAX:
            stops.append(Damage(pos, "offset-overflow",
                                f"offset {last} does not fit relative to base {base}", b.size))
            break
        if pieces is not None and pieces.starts_piece(pos, b):
            r.splits.append((b.base_offset, pos))
        if b.max_timestamp > max_ts:
            max_ts, max_ts_off = b.max_timestamp, last
        if r.valid_bytes - last_index_pos > interval:
            if r.offset_entries and last - base <= r.offset_entries[-1][0]:
                stops.append(Damage(pos, "invalid-offset",
                                    f"offset {last} is not above the previous indexed offset",
                                    b.size))
                break
            if len(r.offset_entries) < max_entries:
                r.offset_entries.append((last - base, r.valid_bytes))
                tb.maybe_append(max_ts, max_ts_off)
            last_index_pos = r.valid_bytes
        r.valid_bytes += b.size
        r.batches += 1
        r.next_offset = last + 1
        try:
            marker = state.append_batch(b)
        except CorruptDataError:
            marker = None
        if marker is not None:
            r.abort_markers.append(marker)
    r.txn_entries = reconcile_txn_entries(r.abort_markers, txn_on_disk or [])
    tb.maybe_append(max_ts, max_ts_off)
    r.time_entries = tb.entries
    r.max_timestamp, r.offset_of_max_timestamp = max_ts, max_ts_off
    r.stop = stops[0] if stops else None
    return r


def _compiled(seg: Segment, interval: int, state: ProducerState, max_entries: int,
              txn_on_disk: list[ie.AbortedTxn] | None,
              capacity: IndexCapacity | None) -> Rebuilt | None:
    """rebuild_segment by fastscan.scan_rebuild where it finds the segment clean (None: the
    pure pass, which also says where it stops); `state` is changed only on success."""
    path = seg.file(naming.LOG)
    if _fastscan is None or fs.is_remote(path):
        return None
    got = _fastscan.scan_rebuild(path, seg.base_offset, interval, max_entries,
                                 capacity.offset_entries if capacity else None,
                                 capacity.time_entries if capacity else None,
                                 chunk=REBUILD_CHUNK)
    if got is None:
        return None
    offsets, times, splits, valid, batches, last, max_ts, max_ts_off, replay = got
    work = state.copy()
    markers = _replay(path, replay, work)
    if markers is None:
        return None
    state.__dict__.update(work.__dict__)
    return Rebuilt(offset_entries=offsets, time_entries=times,
                   txn_entries=reconcile_txn_entries(markers, txn_on_disk or []),
                   abort_markers=markers, splits=splits, valid_bytes=valid, file_size=seg.size,
                   max_timestamp=max_ts, offset_of_max_timestamp=max_ts_off,
                   next_offset=None if last is None else last + 1, batches=batches)


def _replay(path: fs.FilePath, replay: list[tuple[int, int]],
            state: ProducerState) -> list[AbortMarker] | None:
    """ProducerState.append_batch on the batches at `replay`'s (position, size), read again
    (None: one could not be read whole, the file changed since)."""
    markers: list[AbortMarker] = []
    if not replay:
        return markers
    try:
        fd = open_regular(path)
    except (OSError, LogDirIOError):
        return None
    try:
        for pos, size in replay:
            data = os.pread(fd, size, pos)
            if len(data) != size:
                return None
            try:
                marker = state.append_batch(RecordBatch(data))
            except CorruptDataError:
                marker = None
            if marker is not None:
                markers.append(marker)
    except OSError:
        return None
    finally:
        os.close(fd)
    return markers
