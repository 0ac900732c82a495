"""Appending to a partition the way a broker does (UnifiedLog/LocalLog/LogSegment append path).

Roll before an append when (UnifiedLog.maybeRoll / LogSegment.shouldRoll):
  1. active size + incoming bytes > segment.bytes
  2. the active segment is not empty and
     (incoming max timestamp - first batch's max timestamp) > segment.ms - jitter
     (wall clock since the segment was opened when the first batch has no timestamp)
  3. the offset index is full, or the time index holds maxEntries - 1 entries
  4. the incoming last offset is not representable relative to the base offset
The new segment's base is max(incoming base offset, log end offset).
Per append: an index entry (append's last offset -> its start position) when more than
index.interval.bytes were appended since the last entry (never for the first batch); a
time entry (max timestamp so far, its offset) only when that max grew. Active indexes are
preallocated to segment.index.bytes (rounded down to whole entries) and trimmed to their
entries on roll and close, which also add the final time entry retention relies on.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from kafkalog_cli.codec import index_entry as ie
from kafkalog_cli.codec.checkpoint import format_leader_epochs, parse_leader_epochs
from kafkalog_cli.codec.entry import Batch, decode_entry
from kafkalog_cli.codec.layout import INT32_MAX, INT64_MAX
from kafkalog_cli.codec.snapshot import decode_snapshot, encode_snapshot
from kafkalog_cli.errors import CorruptDataError, KafkalogError, LogDirIOError, UsageError
from kafkalog_cli.storage.disk import naming, safety
from kafkalog_cli.storage.disk.files import atomic_write, fsync_dir, read_regular
from kafkalog_cli.storage.disk.logdir import PartitionDir, scan_partition
from kafkalog_cli.storage.disk.segment import Segment
from kafkalog_cli.storage.drills.faults import crash_point
from kafkalog_cli.storage.maintenance.log_config import LogConfig
from kafkalog_cli.storage.maintenance.rebuild import Rebuilt, rebuild_segment
from kafkalog_cli.storage.queries.producers import ProducerState


class _Active:
    """The active segment's open files and in-memory counters."""

    def __init__(self, directory: Path, base: int, cfg: LogConfig, now_ms: int) -> None:
        self.base = base
        self.dir = directory
        self.root = directory.parent  # the log dir every write stays in
        self.cfg = cfg
        self.created_ms = now_ms
        self.log = safety.open_file(self._p(naming.LOG), self.root, "append")
        self.size = self.log.tell()
        self.max_offset_entries = cfg.segment_index_bytes // ie.OFFSET_ENTRY.size
        self.max_time_entries = cfg.segment_index_bytes // ie.TIME_ENTRY.size
        self.offset_entries: list[tuple[int, int]] = []
        self.time_entries: list[tuple[int, int]] = []
        self.txn_entries: list[ie.AbortedTxn] = []
        self.bytes_since_index = 0
        self.max_ts = -1
        self.max_ts_offset = -1
        self.rolling_ts: int | None = None

    def _p(self, suffix: str) -> Path:
        return self.dir / naming.segment_file_name(self.base, suffix)

    def preallocate(self) -> None:
        """The live broker's active indexes: sparse files at their maximum size."""
        for suffix, n, entry in ((naming.INDEX, self.max_offset_entries, ie.OFFSET_ENTRY),
                                 (naming.TIMEINDEX, self.max_time_entries, ie.TIME_ENTRY)):
            with safety.open_file(self._p(suffix), self.root, "update") as f:
                f.truncate(n * entry.size)

    def write_indexes(self, trimmed: bool) -> None:
        oi = ie.encode_offset_entries(self.offset_entries)
        ti = ie.encode_time_entries(self.time_entries)
        for suffix, data, entry, n in (
                (naming.INDEX, oi, ie.OFFSET_ENTRY, self.max_offset_entries),
                (naming.TIMEINDEX, ti, ie.TIME_ENTRY, self.max_time_entries)):
            with safety.open_file(self._p(suffix), self.root, "update") as f:
                f.seek(0)
                f.write(data)
                f.truncate(len(data) if trimmed else n * entry.size)
                if self.cfg.fsync:
                    os.fsync(f.fileno())
        if self.txn_entries:
            with safety.open_file(self._p(naming.TXNINDEX), self.root, "replace") as f:
                f.write(ie.encode_txn_entries(self.txn_entries))

    def time_maybe_append(self, ts: int, offset: int) -> None:
        last_ts = self.time_entries[-1][0] if self.time_entries else -1
        if ts > last_ts:
            self.time_entries.append((ts, offset - self.base))

    def finish(self) -> None:
        """onBecomeInactiveSegment / close: final time entry, trimmed indexes."""
        if self.max_ts >= 0:
            self.time_maybe_append(self.max_ts, self.max_ts_offset)
        self.log.flush()
        if self.cfg.fsync:
            os.fsync(self.log.fileno())
        self.log.close()
        self.write_indexes(trimmed=True)


@dataclass
class PartitionWriter:
    """A partition dir opened for appending. Use as a context manager, or call close()."""

    directory: Path
    topic: str
    partition: int
    cfg: LogConfig = field(default_factory=LogConfig)
    now_ms: int | None = None  # fixed clock for reproducible fixtures
    topic_id: str | None = None
    active: _Active | None = None
    next_offset: int = 0
    log_start_offset: int = 0
    state: ProducerState = field(default_factory=ProducerState)
    epochs: list[tuple[int, int]] = field(default_factory=list)
    last_snapshot: int = -1
    rolls: int = 0
    _checked: tuple[PartitionDir, Rebuilt | None] | None = None

    @property
    def root(self) -> Path:
        """The log dir, which no write may leave."""
        return self.directory.parent

    def clock(self) -> int:
        return self.now_ms if self.now_ms is not None else int(time.time() * 1000)

    def check(self, records: int = 0) -> None:
        """Refuse, changing nothing, a partition that cannot take appends: a topic name
        or partition number Kafka refuses, an interrupted replacement, an active segment that
        ends in damage, a partition dir that is a symlink or holds one, or a log end offset
        with no room for `records` more offsets. open() checks too; call this first to do
        something before the first write once the checks pass."""
        why = naming.topic_name_error(self.topic)
        if why is not None:
            raise UsageError(why)
        if not 0 <= self.partition <= INT32_MAX:
            raise UsageError(f"partition {self.partition} is out of range [0, {INT32_MAX}]")
        d = self.directory
        safety.refuse_links(d)
        part = scan_partition(d) if d.exists() else PartitionDir(d, None)
        part.refuse_if_interrupted()
        part.refuse_if_not_files()
        r = None
        if part.segments:
            seg = part.segments[-1]
            r = rebuild_segment(seg, self.cfg.index_interval_bytes)
            if r.stop is not None or r.truncated:
                raise KafkalogError(f"{seg.log_path}:{r.valid_bytes}: the active segment ends "
                                    "in damage; run `kafkalog recover` first")
            end = r.next_offset if r.next_offset is not None else seg.base_offset
            if records > INT64_MAX - end:  # the log end offset after them is an INT64 too
                raise UsageError(f"{d}: the log end offset {end} leaves room for "
                                 f"{INT64_MAX - end} more records (offsets are INT64), "
                                 f"not {records}")
        self._checked = (part, r)

    def open(self) -> PartitionWriter:
        if self._checked is None:
            self.check()
        assert self._checked is not None
        part, r = self._checked
        self._checked = None  # a later open() looks again
        d = self.directory
        if not d.exists():
            d.parent.mkdir(parents=True, exist_ok=True)  # the log dir itself
            safety.mkdir(d, d.parent)
            if self.cfg.fsync:
                fsync_dir(d.parent)
        self._write_partition_metadata()
        if r is None:
            self.active = _Active(d, 0, self.cfg, self.clock())
            self.active.preallocate()
            return self
        seg = part.segments[-1]
        self.log_start_offset = part.segments[0].base_offset
        self._load_producer_state(part.snapshots, part.segments)
        a = _Active(d, seg.base_offset, self.cfg, self.clock())
        # Kafka keeps the existing entries of a reopened segment and restarts its counter
        try:
            oidx, tidx = seg.offset_index(), seg.time_index()
        except OSError:
            oidx = tidx = None
        if oidx is not None and tidx is not None and not oidx.sanity_errors() \
                and not tidx.sanity_errors():
            a.offset_entries = [(o - seg.base_offset, p) for o, p in oidx.entries]
            a.time_entries = [(t, o - seg.base_offset) for t, o in tidx.entries]
        else:
            a.offset_entries = r.offset_entries
            a.time_entries = r.time_entries
        txn_index = seg.txn_index()  # None unless seg.has_txnindex
        a.txn_entries = list(txn_index.entries) if txn_index is not None else []
        a.max_ts, a.max_ts_offset = r.max_timestamp, r.offset_of_max_timestamp
        for _pos, b in seg.batches(0, None):
            a.rolling_ts = b.max_timestamp
            break
        self.active = a
        self.next_offset = r.next_offset if r.next_offset is not None else seg.base_offset
        self._load_epochs()
        return self

    def _load_producer_state(self, snapshots: list[int], segments: list[Segment]) -> None:
        usable = sorted(s for s in snapshots)
        start = segments[0].base_offset
        for off in reversed(usable):
            p = self.directory / naming.segment_file_name(off, naming.SNAPSHOT)
            try:
                self.state = ProducerState.from_snapshot(decode_snapshot(read_regular(p)))
                start = off
                self.last_snapshot = off
                break
            except (CorruptDataError, OSError):
                continue
        for seg in segments:
            for _pos, b in seg.batches():
                if b.last_offset >= start:
                    self.state.append(b)

    def _load_epochs(self) -> None:
        p = self.directory / naming.LEADER_EPOCH
        if p.exists():
            try:
                self.epochs = parse_leader_epochs(read_regular(p))
            except CorruptDataError:
                self.epochs = []

    def _write_partition_metadata(self) -> None:
        p = self.directory / naming.PARTITION_METADATA
        if p.exists():
            return
        import base64
        import uuid

        tid = self.topic_id or base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        atomic_write(p, f"version: 0\ntopic_id: {tid}".encode(), root=self.root,
                     fsync=self.cfg.fsync)

    # -- appending ----------------------------------------------------------------------
    def should_roll(self, b: Batch, size: int) -> bool:
        a = self.active
        assert a is not None
        cfg = self.cfg
        if a.size > cfg.segment_bytes - size:
            return True
        if a.size > 0:
            rolling = a.rolling_ts if a.rolling_ts is not None else -1
            waited = b.max_timestamp - rolling if rolling >= 0 else self.clock() - a.created_ms
            if waited > cfg.segment_ms - cfg.segment_jitter_ms:
                return True
        if len(a.offset_entries) >= a.max_offset_entries or \
                len(a.time_entries) >= a.max_time_entries - 1:
            return True
        return not 0 <= b.last_offset - a.base <= INT32_MAX

    def append(self, data: bytes) -> Batch:
        """Append one batch (offsets already assigned); returns it decoded."""
        b = decode_entry(data)
        if b.last_offset < self.next_offset:
            raise KafkalogError(f"batch offset {b.last_offset} is below the log end offset "
                                f"{self.next_offset}")
        if self.should_roll(b, len(data)):
            self.roll(max(b.base_offset, self.next_offset))
        a = self.active
        assert a is not None
        pos = a.size
        if pos == 0:
            a.rolling_ts = b.max_timestamp
        try:
            a.log.write(data)
        except OSError as e:
            raise LogDirIOError(f"{a._p(naming.LOG)}: write failed: {e.strerror}") from None
        crash_point("writer.appended")
        a.size += len(data)
        if b.max_timestamp > a.max_ts:
            a.max_ts, a.max_ts_offset = b.max_timestamp, b.last_offset
        if a.bytes_since_index > self.cfg.index_interval_bytes:
            a.offset_entries.append((b.last_offset - a.base, pos))
            a.time_maybe_append(a.max_ts, a.max_ts_offset)
            a.bytes_since_index = 0
        a.bytes_since_index += len(data)
        aborted = self.state.append(b)
        if aborted is not None:
            a.txn_entries.append(aborted)
        ple = b.partition_leader_epoch
        if b.magic == 2 and ple >= 0 and (not self.epochs or ple > self.epochs[-1][0]):
            self.epochs.append((ple, b.base_offset))
        self.next_offset = b.last_offset + 1
        return b

    def append_many(self, data: bytes) -> None:
        """Append a message set one entry at a time (legacy producers' uncompressed sets)."""
        from kafkalog_cli.codec.entry import split_entries

        for b in split_entries(data):
            self.append(bytes(b.data))

    def roll(self, new_base: int) -> None:
        a = self.active
        assert a is not None
        if a.size == 0 and new_base == a.base:
            return
        a.finish()
        self._snapshot(new_base)
        for suffix in (naming.LOG, naming.INDEX, naming.TIMEINDEX, naming.TXNINDEX):
            p = self.directory / naming.segment_file_name(new_base, suffix)
            if p.exists() and new_base != a.base:
                safety.unlink(p, self.root)
        self.active = _Active(self.directory, new_base, self.cfg, self.clock())
        self.active.preallocate()
        self.rolls += 1

    def _snapshot(self, offset: int) -> None:
        if offset <= self.last_snapshot:
            return
        p = self.directory / naming.segment_file_name(offset, naming.SNAPSHOT)
        atomic_write(p, encode_snapshot(self.state.snapshot_entries()),
                     root=self.root, fsync=self.cfg.fsync)
        self.last_snapshot = offset

    def close(self) -> None:
        """Leave the partition as a cleanly shut-down broker does."""
        a = self.active
        if a is None:
            return
        a.finish()
        self._snapshot(self.next_offset)
        root = self.root
        if self.epochs:
            atomic_write(self.directory / naming.LEADER_EPOCH,
                         format_leader_epochs(self.epochs).encode(), root=root,
                         fsync=self.cfg.fsync)
        elif not (self.directory / naming.LEADER_EPOCH).exists():
            atomic_write(self.directory / naming.LEADER_EPOCH, b"0\n0\n", root=root,
                         fsync=self.cfg.fsync)
        if self.cfg.fsync:
            fsync_dir(self.directory)
        self.active = None

    def __enter__(self) -> PartitionWriter:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()
