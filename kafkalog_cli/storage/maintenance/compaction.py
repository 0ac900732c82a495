"""Kafka's log cleaner, offline (LogCleaner.Cleaner, LogCleanerManager, MemoryRecords.filterTo).

One round for one partition:
  1. range: first dirty offset (cleaner checkpoint, clamped to [log start, LEO]) up to the
     first uncleanable offset = min(LSO, active segment base, min.compaction.lag bound),
     rounded down to a segment base; dirty ratio = cleanable bytes / total bytes
  2. offset map (offset_map.py) over the dirty range, aborted data excluded; when it fills,
     the round ends at the last mapped offset (end offset) and a later round continues
  3. every segment below the end offset, grouped by segment.bytes and index limits, is
     rewritten: records kept by Kafka's rules (latest per key; keyless dropped; tombstones
     until the delete horizon, which the first rewrite sets on v2 batches; aborted data
     dropped; markers kept or discarded per CleanedTransactionMetadata; the last batch of
     an active producer kept as an empty batch), batches whose records all survive copied
     verbatim, others rebuilt with the same base/last offsets, producer fields, codec and
     timestamp type; each group goes through replace.py's `.cleaned` -> `.swap` protocol
  4. the cleaner checkpoint becomes the end offset
Index entries of cleaned segments are written per batch (LogSegment.recover's rule), where
the broker writes them per read-buffer chunk; both are valid.
"""

from __future__ import annotations

import contextlib
import heapq
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from kafkalog_cli.codec import compression
from kafkalog_cli.codec import index_entry as ie
from kafkalog_cli.codec.batch_v2 import RecordBatch, assemble_batch, encode_batch
from kafkalog_cli.codec.control import ABORT, COMMIT, parse_control
from kafkalog_cli.codec.entry import Batch
from kafkalog_cli.codec.message_v01 import LegacyBatch, encode_message_set
from kafkalog_cli.codec.model import Header, Record
from kafkalog_cli.errors import CorruptDataError, KafkalogError, locating
from kafkalog_cli.storage.disk import naming, safety
from kafkalog_cli.storage.disk.files import EarlySync, fsync_dir
from kafkalog_cli.storage.disk.logdir import PartitionDir
from kafkalog_cli.storage.disk.segment import Segment, log_end_offset
from kafkalog_cli.storage.drills.faults import crash_point
from kafkalog_cli.storage.maintenance import offset_map
from kafkalog_cli.storage.maintenance.offset_map import ENTRY, FullError, OffsetMap
from kafkalog_cli.storage.maintenance.quarantine import Quarantine
from kafkalog_cli.storage.maintenance.rebuild import rebuild_segment, txn_on_disk
from kafkalog_cli.storage.maintenance.replace import SEGMENT_FILE_KINDS, replace_segments
from kafkalog_cli.storage.maintenance.retention import largest_timestamp
from kafkalog_cli.storage.queries.producers import ProducerState, reconcile_txn_entries

INT32_MAX = 2**31 - 1


@dataclass
class CleanerConfig:
    dedupe_buffer_size: int = 128 * 1024 * 1024
    load_factor: float = 0.9
    delete_retention_ms: int = 86_400_000
    min_compaction_lag_ms: int = 0
    min_cleanable_ratio: float = 0.5
    segment_bytes: int = 1024 * 1024 * 1024
    segment_index_bytes: int = 10 * 1024 * 1024
    index_interval_bytes: int = 4096
    producer_id_expiration_ms: int = 86_400_000


@dataclass
class CleanRange:
    first_dirty: int
    first_uncleanable: int
    clean_bytes: int
    cleanable_bytes: int
    checkpoint_reset: bool = False

    @property
    def ratio(self) -> float:
        total = self.clean_bytes + self.cleanable_bytes
        return self.cleanable_bytes / total if total else 0.0


@dataclass
class RoundResult:
    end_offset: int
    records_in: int = 0
    records_out: int = 0
    batches_in: int = 0
    batches_out: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    groups: list[list[int]] = field(default_factory=list)
    map_full: bool = False


class Replayed(NamedTuple):
    state: ProducerState
    aborted: list[ie.AbortedTxn]
    log_end: int | None  # segment.log_end_offset's, from the same pass
    # per segment base offset, per offset asked for: the records of its batches ending at
    # or past it (clean_round's count of the dirty range, from the same pass)
    records_from: dict[int, dict[int, int]]


def replay(part: PartitionDir, count_from: tuple[int, ...] = ()) -> Replayed:
    """Producer state at the log end and every aborted transaction, from the log itself and
    the `.txnindex` entries it admits (the broker's cleaner reads only those: an earlier
    round's entry keeps the original first offset of data it removed). From the same pass,
    what would each take one more over every batch: the log end offset, and per segment the
    records ending at or past each offset of `count_from` (where the dirty range may
    start)."""
    st = ProducerState()
    aborted: list[ie.AbortedTxn] = []
    log_end = None
    records_from: dict[int, dict[int, int]] = {}
    for seg in part.segments:
        markers = []
        counts = records_from[seg.base_offset] = dict.fromkeys(count_from, 0)
        prev_last = seg.base_offset - 1
        for _p, b in seg.batches():
            log_end = b.last_offset + 1
            n = _records_at_most(b, prev_last)
            prev_last = b.last_offset
            for at in counts:
                if b.last_offset >= at:
                    counts[at] += n
            try:
                m = st.append_batch(b)
            except CorruptDataError:
                m = None
            if m is not None:
                markers.append(m)
        aborted.extend(reconcile_txn_entries(markers, txn_on_disk(seg)))
    return Replayed(st, aborted, log_end, records_from)


def dirty_records(part: PartitionDir, rng: CleanRange,
                  records_from: dict[int, dict[int, int]] | None = None) -> int:
    """The records of the batches in the round's range: what the offset map is sized for.
    From replay's counts when they hold rng.first_dirty and the range ends at a segment's
    base (cleanable_range's always do), else by a pass over the batches."""
    if records_from is not None and \
            any(s.base_offset == rng.first_uncleanable for s in part.segments) and \
            all(rng.first_dirty in records_from.get(s.base_offset, ()) for s in part.segments):
        return sum(records_from[s.base_offset][rng.first_dirty] for s in part.segments
                   if s.base_offset < rng.first_uncleanable)
    expected = 0
    for s in part.segments:
        log_path = s.log_path
        prev_last = s.base_offset - 1
        for pos, b in s.batches():
            with locating(log_path, pos):
                if b.last_offset >= rng.first_dirty and b.base_offset < rng.first_uncleanable:
                    expected += _records_at_most(b, prev_last)
            prev_last = b.last_offset
    return expected


def _records_at_most(b: Batch, prev_last: int) -> int:
    """How many records batch `b` holds, at most, without inflating it: a v2 batch says; a
    compressed legacy wrapper's inner messages have offsets above the entry before it
    (`prev_last`) and up to its own. Never fewer than it holds: a map sized short would
    fill, and clean in more rounds than the broker's."""
    if b.magic == 2:
        return b.count
    if b.compression == compression.NONE:
        return 1
    return max(1, b.last_offset - prev_last)


def cleanable_range(part: PartitionDir, checkpoint: int | None, log_start: int,
                    high_watermark: int | None, state: ProducerState, now: int,
                    cfg: CleanerConfig, log_end: int | None = None) -> CleanRange:
    """`high_watermark` None means the log end (a quiesced copy with no checkpoint);
    `log_end`: replay's, else read here."""
    segs = part.segments
    leo = log_end if log_end is not None else log_end_offset(segs)
    leo = leo if leo is not None else segs[-1].base_offset
    high_watermark = leo if high_watermark is None else min(high_watermark, leo)
    reset = False
    ckpt = log_start if checkpoint is None else checkpoint
    if ckpt < log_start or ckpt > leo:
        first_dirty, reset = log_start, True
    else:
        first_dirty = ckpt
    lso = min(state.ongoing.values()) if state.ongoing else high_watermark
    lso = min(lso, high_watermark)
    bounds = [lso, segs[-1].base_offset]
    if cfg.min_compaction_lag_ms > 0:
        for i, s in enumerate(segs[:-1]):
            nxt = segs[i + 1].base_offset
            if nxt <= first_dirty:
                continue
            if largest_timestamp(s, now, None, [])[0] > now - cfg.min_compaction_lag_ms:
                bounds.append(s.base_offset)
                break
    unclean = max(first_dirty, min(bounds))
    # round down to the base of the segment holding it (or the active segment)
    base_of = segs[-1].base_offset
    for s in segs:
        if s.base_offset <= unclean:
            base_of = s.base_offset
    unclean = base_of  # LogToClean: the base of the first uncleanable segment
    clean_bytes = sum(s.size for s in segs if s.base_offset < first_dirty and
                      s is not segs[-1])
    cleanable = 0
    for i, s in enumerate(segs[:-1]):
        nxt = segs[i + 1].base_offset
        if nxt > first_dirty and s.base_offset < unclean:
            cleanable += s.size
    return CleanRange(first_dirty, unclean, clean_bytes, cleanable, reset)


@dataclass
class _OngoingAborted:
    """AbortedTransactionMetadata: an aborted transaction whose marker is not reached yet."""

    txn: ie.AbortedTxn
    seen_data: bool = False  # a batch of it was read (lastObservedBatchOffset is defined)


class _TxnTracker:
    """CleanedTransactionMetadata: which batches are aborted data, which markers can go."""

    def __init__(self, aborted: list[ie.AbortedTxn], lo: int, hi: int) -> None:
        self.heap = [(t.first_offset, t.last_offset, t) for t in aborted
                     if t.last_offset >= lo and t.first_offset < hi]
        heapq.heapify(self.heap)
        self.ongoing_aborted: dict[int, _OngoingAborted] = {}
        self.ongoing_committed: set[int] = set()
        self.retained: list[ie.AbortedTxn] = []

    def on_batch(self, b: Batch) -> bool:
        """True if the batch is discardable (aborted data, or a marker with nothing left)."""
        while self.heap and self.heap[0][0] <= b.last_offset:
            _f, _l, t = heapq.heappop(self.heap)
            self.ongoing_aborted[t.producer_id] = _OngoingAborted(t)
        if b.magic < 2:
            return False
        pid = b.producer_id
        if b.is_control:
            rec = next(b.records(), None)
            if rec is None:
                return True
            info = parse_control(rec.key, rec.value)
            if info.type == ABORT:
                ongoing = self.ongoing_aborted.pop(pid, None)
                if ongoing is not None and ongoing.seen_data:
                    self.retained.append(ongoing.txn)
                    return False
                return True
            if info.type == COMMIT:
                had = pid in self.ongoing_committed
                self.ongoing_committed.discard(pid)
                return not had
            return False
        if not b.is_transactional:
            return False
        ongoing = self.ongoing_aborted.get(pid)
        if ongoing is not None:
            ongoing.seen_data = True
            return True
        self.ongoing_committed.add(pid)
        return False


# the compiled map notes, per record of the dirty range, the slot of its key (4 bytes): the
# rewrite then needs no second MD5; past this many bytes it hashes again (memory stays bound)
MEMO_BUDGET = 16 << 20
Memos = dict[tuple[int, int], bytearray]  # (segment base, batch position) -> slot per record


def build_offset_map(part: PartitionDir, rng: CleanRange, aborted: list[ie.AbortedTxn],
                     cfg: CleanerConfig, expected_keys: int,
                     memos: Memos | None = None) -> tuple[OffsetMap, int, bool]:
    """Returns (map, end offset, whether the map filled). `memos`, if given, gets the
    compiled map's slot notes (see filter_section)."""
    # only as big as the dirty range needs (results are the same; RSS is not)
    need = int(max(expected_keys, 2) / cfg.load_factor) + 2
    memory = min(cfg.dedupe_buffer_size, need * ENTRY)
    m = offset_map.OffsetMap(memory, cfg.load_factor)
    fast = offset_map.FAST
    budget = MEMO_BUDGET if memos is not None else 0
    start, end = rng.first_dirty, rng.first_uncleanable
    tracker = _TxnTracker(aborted, start, end)
    latest = start - 1
    segs = [s for i, s in enumerate(part.segments)
            if s.base_offset < end and (i + 1 == len(part.segments) or
                                        part.segments[i + 1].base_offset > start)]
    for i, seg in enumerate(segs):
        nxt = segs[i + 1].base_offset if i + 1 < len(segs) else end
        log_path = seg.log_path  # a Path built once, not per batch
        for pos, b in seg.batches():
            with locating(log_path, pos):
                if b.base_offset >= end if b.magic == 2 else b.last_offset >= end:
                    break
                discard = tracker.on_batch(b)
                recs: Iterable[Record] = ()
                if not b.is_control and not discard:
                    st = None
                    if fast is not None and isinstance(b, RecordBatch):
                        data, lat = b.records_section()
                        memo = None
                        if memos is not None and 0 < 4 * b.count <= budget:
                            memo = memos[seg.base_offset, pos] = bytearray(4 * b.count)
                            budget -= 4 * b.count
                        st = fast.map_section(m, data, b.count, b.base_offset,
                                              b.base_timestamp, lat is None, start, memo)
                        if st == fast.FULL:
                            return m, m.latest_offset + 1, True
                    if st is None or st == fast.NOT_SURE:
                        recs = b.records()
            for r in recs:
                if r.key is not None and r.offset >= start:
                    try:
                        m.put(r.key, r.offset)
                    except FullError:
                        return m, m.latest_offset + 1, True
            if b.last_offset >= start:
                latest = max(latest, b.last_offset)
                m.latest_offset = b.last_offset  # the map's updateLatestOffset, per batch
        latest = max(latest, nxt - 1)
        # and past any offset gap at the segment's end: the filter then judges every record
        # of the round (a keyless one at the tail goes), not only those up to the last key
        m.latest_offset = nxt - 1
    return m, min(latest + 1, end), False


def group_segments(segs: list[Segment], first_uncleanable: int,
                   cfg: CleanerConfig) -> list[list[Segment]]:
    def entries(s: Segment, kind: str, size: int) -> int:
        p = s.path(kind)
        return (p.stat().st_size // size) * size if p.exists() else 0

    groups = []
    segs = list(segs)
    while segs:
        g = [segs.pop(0)]
        log_b = g[0].size
        oi_b = entries(g[0], naming.INDEX, 8)
        ti_b = entries(g[0], naming.TIMEINDEX, 12)
        while segs:
            c = segs[0]
            est_last = (segs[1].base_offset - 1) if len(segs) > 1 else first_uncleanable - 1
            c_oi, c_ti = entries(c, naming.INDEX, 8), entries(c, naming.TIMEINDEX, 12)
            if log_b + c.size <= cfg.segment_bytes and \
                    oi_b + c_oi <= cfg.segment_index_bytes and \
                    ti_b + c_ti <= cfg.segment_index_bytes and \
                    (c.size == 0 or est_last - g[0].base_offset <= INT32_MAX):
                g.append(segs.pop(0))
                log_b += c.size
                oi_b += c_oi
                ti_b += c_ti
            else:
                break
        groups.append(g)
    return groups


def _filter_batch(b: Batch, discardable: bool, m: OffsetMap, now: int, cfg: CleanerConfig,
                  active: dict[int, tuple[int, int]], first_uncleanable: int,
                  legacy_keep_tombstones: bool,
                  memo: bytearray | None = None) -> tuple[bytes | None, int]:
    """filterTo for one batch: (bytes to write or None, records kept)."""
    retain_empty = False
    if b.magic == 2 and b.producer_id >= 0 and b.producer_id in active:
        last_data, epoch = active[b.producer_id]
        if (last_data >= 0 and last_data == b.last_offset) or \
                (last_data < 0 and b.is_control and b.producer_epoch == epoch):
            retain_empty = True
    if b.next_offset == first_uncleanable:
        retain_empty = True
    horizon = b.delete_horizon_ms
    if b.is_control:
        if discardable and horizon is not None and horizon <= now and not retain_empty:
            return None, 0
        recs = list(b.records())
        if not (discardable and horizon is None):
            return bytes(b.data), len(recs)
        # a marker with nothing left gets a delete horizon first, and goes in a later round
        kept = [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in recs]
        return _rebuild(b, kept, now + cfg.delete_retention_ms), len(kept)
    if discardable and not retain_empty:
        return None, 0
    if offset_map.FAST is not None and not discardable and isinstance(b, RecordBatch):
        done = _filter_compiled(b, m, now, cfg, retain_empty, memo)
        if done is not None:
            return done
    kept_recs = []
    has_tombstone = False
    total = 0
    for r in b.records() if not discardable else ():
        total += 1
        if r.offset > m.latest_offset:
            kept_recs.append(r)
            continue
        if r.key is None:
            continue
        if r.offset < m.get(r.key):
            continue
        if r.value is None:
            keep_tomb = (horizon is None or now < horizon) if b.magic >= 2 \
                else legacy_keep_tombstones
            if not keep_tomb:
                continue
            has_tombstone = True
        kept_recs.append(r)
    if not kept_recs:
        return _nothing_kept(b, retain_empty)
    needs_horizon = b.magic == 2 and has_tombstone and horizon is None
    if len(kept_recs) == total and not needs_horizon:
        return bytes(b.data), len(kept_recs)
    new_horizon = horizon if horizon is not None else (
        now + cfg.delete_retention_ms if needs_horizon else None)
    kept = [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in kept_recs]
    return _rebuild(b, kept, new_horizon), len(kept)


def _nothing_kept(b: Batch, retain_empty: bool) -> tuple[bytes | None, int]:
    if retain_empty and isinstance(b, RecordBatch):
        return encode_batch([], base_offset=b.base_offset,
                            last_offset_delta=b.last_offset_delta,
                            timestamp_type=b.timestamp_type, producer_id=b.producer_id,
                            producer_epoch=b.producer_epoch, base_sequence=b.base_sequence,
                            partition_leader_epoch=b.partition_leader_epoch,
                            transactional=b.is_transactional, control=b.is_control,
                            max_timestamp=b.max_timestamp), 0
    return None, 0


def _filter_compiled(b: RecordBatch, m: OffsetMap, now: int, cfg: CleanerConfig,
                     retain_empty: bool, memo: bytearray | None
                     ) -> tuple[bytes | None, int] | None:
    """_filter_batch's record loop in the compiled core (offset_map.FAST): the same bytes,
    or None when it is not sure (a section that does not decode cleanly: the pure loop then
    raises what it always raised)."""
    data, lat = b.records_section()
    horizon = b.delete_horizon_ms
    res = offset_map.FAST.filter_section(
        m, data, b.count, b.base_offset, b.base_timestamp, lat,
        not (horizon is None or now < horizon), horizon, now + cfg.delete_retention_ms,
        memo if memo is not None and len(memo) == 4 * b.count else None)
    if res is None:
        return None
    kept, has_tombstone, body, base_ts, max_ts = res
    if not kept:
        return _nothing_kept(b, retain_empty)
    if body is None:  # every record stays and no horizon is due
        return bytes(b.data), kept
    lat_type = b.timestamp_type == 1
    return assemble_batch(body, kept, base_offset=b.base_offset,
                          last_offset_delta=b.last_offset_delta, base_timestamp=base_ts,
                          max_timestamp=max_ts, codec=b.compression,
                          timestamp_type=b.timestamp_type,
                          log_append_time=b.max_timestamp if lat_type else None,
                          producer_id=b.producer_id, producer_epoch=b.producer_epoch,
                          base_sequence=b.base_sequence,
                          partition_leader_epoch=b.partition_leader_epoch,
                          transactional=b.is_transactional, control=b.is_control,
                          delete_horizon=horizon is not None or has_tombstone), kept


def _rebuild(b: Batch, kept: list[tuple[int, int, bytes | None, bytes | None, list[Header]]],
             horizon: int | None) -> bytes:
    if isinstance(b, LegacyBatch):
        return encode_message_set([(o, t, k, v) for o, t, k, v, _h in kept], magic=b.magic,
                                  codec=b.compression, timestamp_type=b.timestamp_type,
                                  log_append_time=b.max_timestamp)
    lat = b.timestamp_type == 1
    return encode_batch(kept, base_offset=b.base_offset, last_offset_delta=b.last_offset_delta,
                        codec=b.compression, timestamp_type=b.timestamp_type,
                        log_append_time=b.max_timestamp if lat else None,
                        producer_id=b.producer_id, producer_epoch=b.producer_epoch,
                        base_sequence=b.base_sequence,
                        partition_leader_epoch=b.partition_leader_epoch,
                        transactional=b.is_transactional, control=b.is_control,
                        delete_horizon_ms=horizon,
                        max_timestamp=None if not lat else b.max_timestamp)


def clean_round(part: PartitionDir, rng: CleanRange, cfg: CleanerConfig, now: int,
                state: ProducerState, aborted: list[ie.AbortedTxn], quarantine: Quarantine | None,
                *, dry_run: bool = False, fsync: bool = True,
                records_from: dict[int, dict[int, int]] | None = None) -> RoundResult:
    """`records_from`: replay's counts (see dirty_records)."""
    expected = dirty_records(part, rng, records_from)
    memos: Memos = {}
    m, end, full = build_offset_map(part, rng, aborted, cfg, expected, memos)
    res = RoundResult(end, map_full=full)
    active = {pid: (e.last_offset, e.epoch) for pid, e in state.entries.items()
              if e.timestamp < 0 or now - e.timestamp < cfg.producer_id_expiration_ms}
    segs = [s for s in part.segments[:-1] if s.base_offset < end]
    dirty_first = [s for s in part.segments if s.base_offset < rng.first_dirty]
    legacy_horizon = (int(os.stat(dirty_first[-1].log_path).st_mtime * 1000)
                      - cfg.delete_retention_ms) if dirty_first else 0
    for group in group_segments(segs, rng.first_uncleanable, cfg):
        res.groups.append([s.base_offset for s in group])
        hi = group[-1].base_offset
        idx = part.segments.index(group[-1])
        hi = part.segments[idx + 1].base_offset if idx + 1 < len(part.segments) else end
        tracker = _TxnTracker(aborted, group[0].base_offset, hi)
        base = group[0].base_offset
        out_path = part.path / naming.segment_file_name(base, naming.LOG, naming.CLEANED)
        if not dry_run:
            _remove_cleaned(part.path, base)
        out = None if dry_run else safety.open_file(out_path, part.path.parent, "temp")
        early = None if out is None or not fsync else EarlySync(out.fileno())
        try:
            for seg in group:
                log_path = seg.log_path
                seg_mtime = int(os.stat(log_path).st_mtime * 1000)
                keep_tomb = seg_mtime > legacy_horizon
                for pos, b in seg.batches():
                    res.batches_in += 1
                    res.bytes_in += b.size
                    with locating(log_path, pos):
                        res.records_in += b.count
                        data, n_out = _filter_batch(b, tracker.on_batch(b), m, now, cfg,
                                                    active, rng.first_uncleanable, keep_tomb,
                                                    memos.pop((seg.base_offset, pos), None))
                    if data is None:
                        continue
                    res.batches_out += 1
                    res.bytes_out += len(data)
                    res.records_out += n_out
                    if out is not None:
                        out.write(data)
                        if early is not None:
                            early.wrote(len(data))
            if out is not None:
                crash_point("compact.cleaned.written")
                out.flush()
                if early is not None:
                    early.wait()
                if fsync:
                    os.fsync(out.fileno())
                out.close()
                _finish_cleaned(part, group, base, tracker.retained, cfg, fsync)
        except BaseException:
            # a failed write (a full disk, a batch that does not decode) leaves no .cleaned
            # behind: until it reaches .swap the old segments are the log
            if out is not None:
                if early is not None:  # its thread syncs `out`'s fd: done before the close
                    with contextlib.suppress(OSError):
                        early.wait()
                out.close()
                _remove_cleaned(part.path, base)
            raise
        if dry_run:
            continue
        replace_segments(part.path, [base], [s.base_offset for s in group],
                         quarantine or _NullQuarantine(part.path.parent), fsync=fsync)
    return res


def _remove_cleaned(directory: Path, base: int) -> None:
    for kind in SEGMENT_FILE_KINDS:
        safety.remove_stale(directory / naming.segment_file_name(base, kind, naming.CLEANED),
                            directory.parent)


def _finish_cleaned(part: PartitionDir, group: list[Segment], base: int,
                    retained: list[ie.AbortedTxn], cfg: CleanerConfig, fsync: bool) -> None:
    """Indexes of the new segment, then the mtime Kafka gives it (the newest source's)."""
    tmp = Segment(part.path, base, has_log=True, temp=naming.CLEANED)
    r = rebuild_segment(tmp, cfg.index_interval_bytes)
    if r.stop is not None:
        raise KafkalogError(f"{tmp.log_path}: the cleaned segment does not read back "
                            f"({r.stop.reason}); nothing was replaced")
    oi, ti, _tx = r.index_bytes()
    files = {naming.INDEX: oi, naming.TIMEINDEX: ti}
    if retained:
        files[naming.TXNINDEX] = ie.encode_txn_entries(sorted(retained,
                                                              key=lambda t: t.last_offset))
    root = part.path.parent
    for kind, data in files.items():
        with safety.open_file(part.path / naming.segment_file_name(base, kind, naming.CLEANED),
                              root, "temp") as f:
            f.write(data)
            f.flush()
            if fsync:
                os.fsync(f.fileno())
    mtime = os.stat(group[-1].log_path).st_mtime
    for kind in (naming.LOG, naming.INDEX, naming.TIMEINDEX):
        safety.set_mtime(part.path / naming.segment_file_name(base, kind, naming.CLEANED), root,
                         mtime)
    if fsync:
        fsync_dir(part.path)


class _NullQuarantine(Quarantine):
    def __init__(self, log_dir: Path) -> None:
        super().__init__(log_dir, enabled=False)
