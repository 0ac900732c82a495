"""Verification of segments and partitions: everything a broker and kafka-dump-log check, and more.

Per segment, one streaming pass over the `.log` checks framing, CRCs, offsets and (unless
shallow) record structure, and walks the offset and time indexes alongside, so memory
stays flat however large the segment is. Index rules: an offset-index entry must point at
a batch start and name that batch's last offset, or the last offset of a later batch of the
same broker append (LogSegment.append indexes a multi-batch append at its first batch); a
time-index entry must name a batch's last offset and the segment's running max timestamp
there (LogSegment.recover/append); the last entry should carry the segment's max timestamp,
which retention reads (LogSegment.maxTimestampSoFar).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from kafkalog_cli import _speedups
from kafkalog_cli.codec import compression
from kafkalog_cli.codec.checkpoint import epoch_order_errors, parse_leader_epochs
from kafkalog_cli.codec.model import Damage
from kafkalog_cli.codec.snapshot import decode_snapshot
from kafkalog_cli.errors import CorruptDataError
from kafkalog_cli.storage.checks.batch_rules import (
    OVER_CAP,
    first_offset,
    header_faults,
    record_faults,
)
from kafkalog_cli.storage.checks.findings import ERROR, INFO, WARNING, Findings
from kafkalog_cli.storage.checks.snapshot_rules import (
    AT_OR_BELOW_START,
    PAST_END,
    STRAY,
    snapshots_the_load_deletes,
)
from kafkalog_cli.storage.disk import fs, naming
from kafkalog_cli.storage.disk.checkpoints import log_start_offset, recovery_point
from kafkalog_cli.storage.disk.files import read_small
from kafkalog_cli.storage.disk.index import OffsetIndex, TimeIndex, TxnIndex
from kafkalog_cli.storage.disk.logdir import LogDir, PartitionDir, RemoteIndexCache
from kafkalog_cli.storage.disk.segment import Segment, iter_batches
from kafkalog_cli.storage.maintenance.floor import recover_command, validation_floor

# compiled clean-segment fast path (kafkalog_cli/_speedups/fastscan.pyx), shallow and deep
_fastscan = _speedups.compiled("fastscan")


@dataclass
class CheckOptions:
    shallow: bool = False  # headers and CRCs only: no decompression, no record parsing
    max_decompressed: int = compression.DEFAULT_MAX_DECOMPRESSED


@dataclass
class Stats:
    partitions: int = 0
    segments: int = 0
    batches: int = 0
    records: int = 0
    bytes: int = 0

    def add(self, other: Stats) -> None:
        """Count in what a partition checked elsewhere (a -j worker) counted."""
        for k in vars(self):
            setattr(self, k, getattr(self, k) + getattr(other, k))


@dataclass
class SegmentSummary:
    """What later checks need from a segment pass."""

    first_offset: int | None = None
    last_offset: int | None = None
    max_timestamp: int = -1
    valid_end: int = 0
    epochs: list[tuple[int, int]] = field(default_factory=list)  # (epoch, first base offset)
    magics: set[int] = field(default_factory=set)
    damaged: bool = False
    first_bad: int | None = None  # where recover would cut: first damage or faulty batch
    whole: int = 0  # batches that pass their CRC
    whole_after_bad: int = 0  # of which after first_bad: what a cut there drops

    first_pos: int | None = None  # the first batch's
    first_whole: bool = False  # whether the first batch passes its CRC

    def note_bad(self, pos: int) -> None:
        if self.first_bad is None:
            self.first_bad = pos

    def note_whole(self, pos: int) -> None:
        self.whole += 1
        if self.first_bad is not None and pos > self.first_bad:
            self.whole_after_bad += 1

    def note_bad_segment(self) -> None:
        """The segment as a whole is bad: the cut goes before its first batch."""
        if self.first_pos is not None and (self.first_bad is None
                                           or self.first_pos < self.first_bad):
            self.first_bad = self.first_pos
            self.whole_after_bad = self.whole - self.first_whole


_DAMAGE_CODES = {"torn-tail": "LOG_TORN_TAIL", "zero-tail": "LOG_ZERO_TAIL",
                 "garbage-tail": "LOG_GARBAGE_TAIL", "corrupt": "LOG_CORRUPT_MID_FILE",
                 "bad-size": "LOG_BAD_SIZE", "bad-batch": "LOG_BAD_BATCH",
                 "entry-too-big": "LOG_ENTRY_TOO_BIG", "unsearched": "LOG_UNSEARCHED"}


class _OffsetIndexWalk:
    """Matches offset-index entries against batches as the log streams by (by position)."""

    def __init__(self, idx: OffsetIndex, f: Findings, fix: str) -> None:
        self.entries = idx.entries
        self.i = 0
        self.pending: tuple[int, int] | None = None  # multi-batch entry awaiting its offset
        self.f = f
        self.path = idx.path
        self.fix = fix
        prev = None
        for n, (off, _pos) in enumerate(self.entries):
            if prev is not None and off <= prev:
                f.add(ERROR, "INDEX_ORDER", self.path, n * 8,
                      f"entry {n}: offset {off} does not increase (previous {prev})",
                      fix=fix)
            prev = off

    def batch(self, pos: int, prev_last: int | None, last: int) -> None:
        """An entry at this batch is sound if prev_last < offset <= last: the broker's own
        choices (the batch's last offset, a 0.9 wrapper's first inner offset, a later
        batch's last offset for a multi-batch append) all satisfy it, and it is exactly what
        makes the lookup land at or before the batch holding any offset >= the entry's."""
        entries = self.entries
        if self.pending is not None:
            want, at = self.pending
            if want <= last:
                self.pending = None
            elif self.i < len(entries) and pos >= entries[self.i][1]:
                self._mismatch(at, want, None)
                self.pending = None
        while self.i < len(entries) and entries[self.i][1] < pos:
            off, epos = entries[self.i]
            self.f.add(ERROR, "INDEX_NOT_BATCH_START", self.path, self.i * 8,
                       f"entry {self.i} (offset {off}) points at byte {epos} of the log, "
                       "which is not the start of a batch", fix=self.fix)
            self.i += 1
        if self.i < len(entries) and entries[self.i][1] == pos:
            off, _ = entries[self.i]
            if off > last:
                self.pending = (off, self.i)
            elif prev_last is not None and off <= prev_last:
                self._mismatch(self.i, off, last)
            self.i += 1

    def _mismatch(self, slot: int, want: int, found: int | None) -> None:
        self.f.add(ERROR, "INDEX_OFFSET_MISMATCH", self.path, slot * 8,
                   f"entry {slot} names offset {want}, which is not in the batch it points "
                   "at (nor in a later batch of the same append): lookups would land too late",
                   expected=want, found=found, fix=self.fix)

    def finish(self, valid_end: int, base: int) -> None:
        if self.pending is not None:
            self._mismatch(self.pending[1], self.pending[0], None)
        for n, (off, pos) in enumerate(self.entries.iter_from(self.i), self.i):
            if n == 0 and (off, pos) == (base, 0) and valid_end == 0:
                continue  # an empty segment's zero-filled, preallocated first slot
            self.f.add(ERROR, "INDEX_PAST_LOG_END", self.path, n * 8,
                       f"entry {n} (offset {off}) points at byte {pos}, past the last whole "
                       f"batch (log ends at {valid_end})", fix=self.fix)


class _TimeIndexWalk:
    """Matches time-index entries against the running max timestamp (by offset)."""

    def __init__(self, idx: TimeIndex, f: Findings, fix: str) -> None:
        self.entries = idx.entries
        self.i = 0
        self.f = f
        self.path = idx.path
        self.fix = fix
        prev = None
        for n, (ts, off) in enumerate(self.entries):
            if prev is not None and (ts <= prev[0] or off < prev[1]):
                f.add(ERROR, "TIMEINDEX_ORDER", self.path, n * 12,
                      f"entry {n} ({ts}, offset {off}) is not after the previous entry "
                      f"({prev[0]}, offset {prev[1]})", fix=fix)
            prev = (ts, off)

    def batch(self, prev_last: int | None, last: int, running_max: int) -> None:
        """Entries naming an offset in this batch must carry the running max timestamp.
        Newer brokers name the batch's last offset, older ones the record holding the max."""
        entries = self.entries
        floor = -1 if prev_last is None else prev_last
        while self.i < len(entries) and entries[self.i][1] <= last:
            ts, off = entries[self.i]
            if off <= floor:
                self.f.add(ERROR, "TIMEINDEX_OFFSET_NOT_FOUND", self.path, self.i * 12,
                           f"entry {self.i} names offset {off}, which is in no batch of "
                           "this segment", fix=self.fix)
            elif ts != running_max:
                self.f.add(ERROR, "TIMEINDEX_MISMATCH", self.path, self.i * 12,
                           f"entry {self.i} at offset {off} says timestamp {ts}, but the "
                           f"segment's max timestamp there is {running_max}",
                           expected=running_max, found=ts, fix=self.fix)
            self.i += 1

    def finish(self, segment_max: int, base: int, empty: bool) -> None:
        for n, (ts, off) in enumerate(self.entries.iter_from(self.i), self.i):
            if n == 0 and (ts, off) == (0, base) and empty:
                continue  # an empty segment's zero-filled, preallocated first slot
            self.f.add(ERROR, "TIMEINDEX_OFFSET_NOT_FOUND", self.path, n * 12,
                       f"entry {n} names offset {off}, past the last batch", fix=self.fix)
        last_ts = self.entries[-1][0] if self.entries else -1
        if segment_max >= 0 and last_ts < segment_max:
            self.f.add(WARNING, "TIMEINDEX_NO_FINAL_ENTRY", self.path, None,
                       "the last entry does not hold the segment's largest timestamp, so "
                       "time retention would use an older one", expected=segment_max,
                       found=last_ts, fix=self.fix)


def clean_headers(path: fs.FilePath, base: int) -> tuple[int, int, int, int, int, int,
                                                  list[str]] | None:
    """A segment's batch headers in one compiled call, for `info`: (file bytes, batches,
    first offset, last offset, first max timestamp >= 0, largest max timestamp, codec names;
    -1 for no timestamp), or None when the compiled shallow pass is missing or finds anything to
    report (legacy entries, damage, an unreadable file): the caller then reads the batches
    itself."""
    if _fastscan is None or fs.is_remote(path):
        return None
    got = _fastscan.scan_clean(path, base, extra=True)
    if got is None:
        return None
    first, last, max_ts, end, _epochs, batches, _bytes, _records, mask, first_ts = got
    codecs = [compression.name(c) for c in range(8) if mask >> c & 1]
    return end, batches, first, last, first_ts, max_ts, codecs  # clean: it ends at its end


def check_log_file(path: fs.FilePath, base: int, f: Findings, opts: CheckOptions,
                   stats: Stats, prev_last: int | None = None,
                   offset_index: OffsetIndex | None = None,
                   time_index: TimeIndex | None = None,
                   fix_log: str = "", fix_index: str = "") -> SegmentSummary:
    """One streaming pass over a `.log` (or KRaft `.checkpoint`) file."""
    if _fastscan is not None and not fs.is_remote(path):  # it reads an fd
        # None unless this pass would add no finding; then it gives the same values
        fast = _fastscan.scan_clean(path, base, prev_last,
                                    offset_index.entries if offset_index else None,
                                    time_index.entries if time_index else None,
                                    deep=not opts.shallow,
                                    max_decompressed=opts.max_decompressed)
        if fast is not None:
            first, last_off, max_ts, valid_end, epochs, nbatches, nbytes, nrecords = fast
            stats.batches += nbatches
            stats.bytes += nbytes
            stats.records += nrecords
            return SegmentSummary(first_offset=first, last_offset=last_off,
                                  max_timestamp=max_ts, valid_end=valid_end, epochs=epochs,
                                  magics={2} if nbatches else set(), whole=nbatches,
                                  first_pos=0 if nbatches else None, first_whole=nbatches > 0)
    s = SegmentSummary()
    oi = _OffsetIndexWalk(offset_index, f, fix_index) if offset_index else None
    ti = _TimeIndexWalk(time_index, f, fix_index) if time_index else None
    running_max = -1

    def on_damage(d: Damage) -> None:
        s.damaged = True
        s.note_bad(d.position)
        f.add(ERROR, _DAMAGE_CODES.get(d.code, "LOG_DAMAGE"), path, d.position,
              d.reason + (f" ({d.size} bytes affected)" if d.size else ""), fix=fix_log)

    last = prev_last
    prev_batch_last: int | None = None  # within this segment
    for pos, b in iter_batches(path, on_damage=on_damage, resync=True):
        stats.batches += 1
        stats.bytes += b.size
        s.valid_end = pos + b.size
        s.magics.add(b.magic)
        faults = header_faults(b, base, last, s.first_offset is None)
        if not opts.shallow:
            deep, n = record_faults(b, opts.max_decompressed)
            faults += deep
            stats.records += n
        for x in faults:
            if x.code == OVER_CAP:
                f.add(WARNING, x.code, path, pos, x.message,
                      fix="rerun with a larger --max-decompressed-bytes to check them")
                continue
            f.add(ERROR, x.code, path, pos, x.message, expected=x.expected, found=x.found,
                  fix=fix_log)
        faults = [x for x in faults if x.code != OVER_CAP]
        if faults:
            s.note_bad(pos)
        if not faults or faults[0].code != "LOG_CRC_MISMATCH":
            s.note_whole(pos)
        b_last = b.last_offset
        if s.first_offset is None:
            s.first_offset = first_offset(b)
            s.first_pos, s.first_whole = pos, s.whole > 0
        last = b_last if last is None else max(last, b_last)
        s.last_offset = last
        if b.max_timestamp > running_max:
            running_max = b.max_timestamp
        if b.magic == 2 and b.partition_leader_epoch >= 0 and (
                not s.epochs or b.partition_leader_epoch > s.epochs[-1][0]):
            s.epochs.append((b.partition_leader_epoch, b.base_offset))
        if oi:
            oi.batch(pos, prev_batch_last, b_last)
        if ti:
            ti.batch(prev_batch_last, b_last, running_max)
        prev_batch_last = b_last
    s.max_timestamp = running_max
    if oi:
        oi.finish(s.valid_end, base)
    if ti:
        ti.finish(running_max, base, s.valid_end == 0)
    return s


def _read_index(seg: Segment, kind: str, f: Findings, fix: str):  # type: ignore[no-untyped-def]
    reader = {naming.INDEX: seg.offset_index, naming.TIMEINDEX: seg.time_index,
              naming.TXNINDEX: seg.txn_index}[kind]
    try:
        return reader()
    except OSError as e:
        f.add(ERROR, "INDEX_UNREADABLE", seg.path(kind), None, f"cannot read: {e.strerror}",
              fix=fix)
        return None


_STATE_NOTES = {
    "stray": "a partition its broker no longer hosts (Kafka 3.7+ renames such a dir -stray at "
             "start-up and deletes it later); its data is checked, the checkpoints are the "
             "live partition's",
    "delete": "a deleted partition awaiting removal (file.delete.delay.ms); its data is "
              "checked, the checkpoints are the live partition's",
    "future": "a replica moving in from another log dir (alter replica log dirs); it replaces "
              "the current one when it has caught up",
}


def check_partition(part: PartitionDir, f: Findings, opts: CheckOptions, stats: Stats,
                    progress: Callable[[int], None] | None = None,
                    floor_base: int | None = None,
                    validated: frozenset[int] = frozenset()) -> int | None:
    """Check a partition dir; returns its log end offset (None if it holds no batch).
    `floor_base`: the base offset of the segment plain `recover` starts validating at,
    when `part` holds only some of the partition's segments. `validated`: base offsets of
    segments whose every batch recover has just passed through the same rules
    (batch_rules.py), whose records need not be decoded again."""
    shallow = replace(opts, shallow=True) if validated else opts  # only for `validated`
    stats.partitions += 1
    pdir = part.path
    start = len(f.items)
    fix_log = recover_command(pdir)  # a placeholder until the options it needs are known
    why = naming.topic_name_error(part.name.topic) if part.name is not None else None
    if why is not None:
        f.add(ERROR, "TOPIC_NAME_ILLEGAL", pdir, None,
              f"{why}: a broker loads the dir, but the checkpoint lines it then writes for it "
              "do not parse back (Topic.validate); kafkalog writes it into no checkpoint",
              fix="rename the dir to <legal topic>-<partition>")
    if part.state:
        f.add(INFO, "PARTITION_" + part.state.upper(), pdir, None, _STATE_NOTES[part.state])
    last: int | None = None
    leo: int | None = None
    summaries: list[SegmentSummary] = []
    interrupted = any(t.temp in (naming.CLEANED, naming.SWAP) for t in part.temp_files)
    index_fixes: list[tuple[int, str]] = []  # where each segment's findings start, its fix
    for n, seg in enumerate(part.segments):
        stats.segments += 1
        is_last = n == len(part.segments) - 1
        log = seg.file(naming.LOG)
        # index-rebuild refuses a partition holding an interrupted replacement
        fix_index = fix_log if interrupted else \
            f"kafkalog index-rebuild {shlex.quote(str(log))}"
        index_fixes.append((len(f.items), fix_index))
        size = seg.size
        oidx = _read_index(seg, naming.INDEX, f, fix_index) if seg.has_index else None
        tidx = _read_index(seg, naming.TIMEINDEX, f, fix_index) if seg.has_timeindex else None
        for idx in (oidx, tidx):
            if idx is None:
                continue
            for err in idx.sanity_errors():
                f.add(ERROR, "INDEX_SANITY", idx.path, None, f"fails Kafka's sanity check: {err}",
                      fix=fix_index)
            if idx.untrimmed:
                # zero slots preallocated for the active segment while a broker runs, and
                # left so when it is killed (it recovers them); on roll and clean shutdown
                # Kafka trims them
                used = 0 if size == 0 and idx.first_slot_zero() else idx.used
                why = "the active segment of a running or killed broker" if is_last else \
                    "an older segment: Kafka trims on roll and clean shutdown"
                f.add(INFO if is_last else WARNING, "INDEX_UNTRIMMED", idx.path,
                      used * (8 if idx is oidx else 12),
                      f"{idx.slot_count - used} zero-filled preallocated slots after {used} "
                      f"entries ({why})", fix=None if is_last else fix_index)
        s = check_log_file(log, seg.base_offset, f,
                           shallow if seg.base_offset in validated else opts, stats, last, oidx,
                           tidx, fix_log, fix_index)
        summaries.append(s)
        if s.first_offset is not None and last is not None and seg.base_offset <= last:
            f.add(ERROR, "SEGMENT_OVERLAP", seg.log_path, None,
                  f"segment base offset {seg.base_offset} is not above the previous "
                  f"segment's last offset {last}", fix=fix_log)
            s.note_bad_segment()  # recover cuts at its first batch
        if s.last_offset is not None:
            last = s.last_offset
            leo = last + 1
        if size > 0 and not seg.has_index:
            f.add(WARNING, "INDEX_MISSING", seg.path(naming.INDEX), None,
                  "offset index is missing (the broker rebuilds it at start-up, truncating "
                  "invalid batches)", fix=fix_index)
        if size > 0 and not seg.has_timeindex:
            if s.magics == {0}:
                f.add(INFO, "TIMEINDEX_ABSENT_V0", seg.path(naming.TIMEINDEX), None,
                      "no time index: magic-0 data has no timestamps (Kafka < 0.10.1 wrote none)")
            else:
                f.add(WARNING, "TIMEINDEX_MISSING", seg.path(naming.TIMEINDEX), None,
                      "time index is missing: the broker creates it empty, and time retention "
                      "then falls back to the file's mtime", fix=fix_index)
        if seg.has_txnindex:
            tx = _read_index(seg, naming.TXNINDEX, f, fix_index)
            if tx is not None:
                _check_txnindex(tx, f, fix_index)
        if size == 0 and not is_last:
            f.add(INFO, "SEGMENT_EMPTY", seg.log_path, None, "empty segment that is not the "
                  "active one")
        if progress:
            progress(size)
    bad = next((n for n, s in enumerate(summaries) if s.first_bad is not None), None)
    fix = _recover_fix(part, summaries, bad, floor_base, interrupted)
    f.refix(start, fix_log, fix)
    if bad is not None:
        # recover cuts the first damaged segment and removes the later ones: rebuilding
        # their indexes first is wasted (or fails, on a segment an earlier fix removed)
        for at, fix_index in index_fixes[bad:]:
            f.refix(at, fix_index, fix)
    _check_partition_files(part, f, opts, stats, leo, summaries, fix)
    return leo if leo is not None else (part.segments[-1].base_offset if part.segments else None)


def _recover_fix(part: PartitionDir, summaries: list[SegmentSummary], bad: int | None,
                 floor_base: int | None, interrupted: bool) -> str:
    """The `recover` command line that repairs this partition: recover cuts the log where
    the first damage is, which needs --force when whole batches follow it and --full when
    it lies in an indexed segment below the one holding the recovery point."""
    full = force = False
    if bad is not None:
        force = summaries[bad].whole_after_bad > 0 or any(s.whole for s in summaries[bad + 1:])
        if floor_base is None:
            floor_base = validation_floor([s.base_offset for s in part.segments],
                                          recovery_point(part))
        seg = part.segments[bad]
        full = seg.base_offset < floor_base and seg.has_index
    # the loader passes may change which segments there are: validate them all
    return recover_command(part.path, full=full or interrupted, force=force)


def _check_txnindex(tx: TxnIndex, f: Findings, fix: str) -> None:
    for err in tx.sanity_errors():
        f.add(ERROR, "TXNINDEX_CORRUPT", tx.path, None, err, fix=fix)


def _check_partition_files(part: PartitionDir, f: Findings, opts: CheckOptions, stats: Stats,
                           leo: int | None, summaries: list[SegmentSummary],
                           fix_recover: str) -> None:
    pdir = part.path
    for fn in part.temp_files:
        temp = fn.temp or ""  # set for every file in temp_files
        f.add(WARNING, "LEFTOVER_" + temp.lstrip(".").upper(), pdir / fn.name, None,
              f"{temp} file left by an interrupted cleaner, split or deletion; the broker "
              "completes or discards it at start-up", fix=fix_recover)
    for fn in part.orphan_indexes:
        f.add(WARNING, "ORPHAN_INDEX", pdir / fn.name, None,
              "index file without its .log (the broker deletes it at start-up)", fix=fix_recover)
    for name in part.unknown:
        f.add(WARNING, "UNKNOWN_FILE", pdir / name, None,
              "not a file Kafka writes in a partition dir")
    for name, what in part.not_files:
        f.add(ERROR, "NOT_A_FILE", pdir / name, None,
              f"{what} where Kafka keeps a segment's file: a broker's load lists only "
              "files, so it leaves out a .log so named and fails to open an index",
              fix="move it out of the log dir")
    doomed, messages = _snapshots_the_load_deletes(part, leo)
    for off in part.snapshots:
        p = fs.child(pdir, naming.segment_file_name(off, naming.SNAPSHOT))
        try:
            decode_snapshot(read_small(p))
        except CorruptDataError as e:
            f.add(ERROR, "SNAPSHOT_CORRUPT", p, e.pos, e.reason + " (the broker deletes it and "
                  "rebuilds producer state from the log)", fix=fix_recover)
        except OSError as e:
            f.add(ERROR, "SNAPSHOT_UNREADABLE", p, None, f"cannot read: {e.strerror}")
        if off in doomed:  # what recover removes (to its quarantine), as the broker's load
            severity, code, message = messages[doomed[off]]
            f.add(severity, code, p, None, f"producer snapshot at {off}, {message}",
                  fix=fix_recover)
    for fn in part.kraft_snapshots:
        p = pdir / fn.name
        if fn.kind is naming.FileKind.KRAFT_SNAPSHOT and not fn.temp:
            check_log_file(p, 0, f, opts, stats, fix_log=f"inspect {p}; the controller rewrites it")
        else:
            f.add(INFO, "KRAFT_SNAPSHOT_TEMP", p, None, "in-progress or deleted KRaft snapshot")
    if part.has(naming.LEADER_EPOCH):
        _check_leader_epochs(fs.child(pdir, naming.LEADER_EPOCH), f, leo, summaries,
                             fix_recover)
    if part.has(naming.PARTITION_METADATA):
        _check_partition_metadata(fs.child(pdir, naming.PARTITION_METADATA), f)


def _snapshots_the_load_deletes(part: PartitionDir, leo: int | None
                                ) -> tuple[dict[int, str], dict[str, tuple[str, str, str]]]:
    """The snapshots a broker's load deletes (snapshot_rules.py), offset -> rule, and each
    rule's severity, finding code and message. A running broker leaves stray ones (the one
    a clean shutdown wrote, once a later segment is rolled) and ones at or below the log
    start (retention and delete-records move it past them), so those are info; one past the
    log end it never leaves (truncation deletes them)."""
    if not part.segments:
        return {}, {}
    bases = [s.base_offset for s in part.segments]
    end = leo if leo is not None else bases[-1]
    start = log_start_offset(part, bases[0])
    load = "(the broker deletes it at load)"
    messages = {
        STRAY: (INFO, "SNAPSHOT_STRAY", "which is no segment's base offset: the broker's "
                "load deletes every such one but the largest, and that one too unless it "
                f"lies above the last segment's base offset {bases[-1]}"),
        PAST_END: (WARNING, "SNAPSHOT_PAST_END", f"beyond the log end offset {end} {load}"),
        AT_OR_BELOW_START: (INFO, "SNAPSHOT_AT_OR_BELOW_START",
                            f"at or below the log start offset {start} {load}")}
    return snapshots_the_load_deletes(part.snapshots, bases, start, end), messages


def _check_leader_epochs(p: fs.FilePath, f: Findings, leo: int | None,
                         summaries: list[SegmentSummary], fix: str) -> None:
    try:
        entries = parse_leader_epochs(read_small(p))
    except CorruptDataError as e:
        f.add(ERROR, "LEADER_EPOCH_CORRUPT", p, e.pos, e.reason + " (a broker reading it takes "
              "the log dir offline; recover writes it again from the batches)", fix=fix)
        return
    for (e1, o1), (e2, o2) in epoch_order_errors(entries):
        f.add(ERROR, "LEADER_EPOCH_ORDER", p, None,
              f"entry ({e2}, {o2}) does not follow ({e1}, {o1})", fix=fix)
    if leo is not None:
        for epoch, o in entries:
            if o > leo:
                f.add(WARNING, "LEADER_EPOCH_PAST_END", p, None,
                      f"epoch {epoch} starts at {o}, past the log end offset {leo} (the broker "
                      "truncates such entries)")
    known = {e for e, _ in entries}
    for s in summaries:
        for epoch, start in s.epochs:
            if epoch not in known and entries and epoch > entries[-1][0]:
                f.add(WARNING, "LEADER_EPOCH_MISSING", p, None,
                      f"batches carry leader epoch {epoch} (from offset {start}) that the "
                      "checkpoint does not list")
                break


def _check_partition_metadata(p: fs.FilePath, f: Findings) -> None:
    try:
        text = read_small(p).decode("utf-8")  # its lines split as read_text's would
    except CorruptDataError as e:
        f.add(ERROR, "PARTITION_METADATA_CORRUPT", p, e.pos, e.reason)
        return
    except (OSError, UnicodeDecodeError) as e:
        f.add(ERROR, "PARTITION_METADATA_CORRUPT", p, None, str(e))
        return
    fields = dict(line.split(": ", 1) for line in text.splitlines() if ": " in line)
    if "version" not in fields or "topic_id" not in fields:
        f.add(ERROR, "PARTITION_METADATA_CORRUPT", p, None,
              "expected `version: 0` and `topic_id: <uuid>` lines")
    elif fields["topic_id"].strip() == "AAAAAAAAAAAAAAAAAAAAAA":
        f.add(ERROR, "PARTITION_METADATA_CORRUPT", p, None, "topic id is the zero UUID")


def check_log_dir_files(ld: LogDir, f: Findings, leos: dict[tuple[str, int], int | None],
                        firsts: dict[tuple[str, int], int]) -> None:
    """Root files of a log dir: checkpoints against the partitions, stray dirs and files."""
    for name in ld.bad_dirs:
        f.add(ERROR, "LOGDIR_BAD_DIR", ld.path / name, None,
              "directory name does not parse as <topic>-<partition>: the broker refuses to "
              "start (KafkaException in LogManager.loadLogs)" if naming.is_utf8(name) else
              "directory name is not UTF-8: Java decodes it lossily, so a broker cannot open "
              "the partition's files", fix="move it out of the log dir")
    for name in ld.unknown:
        f.add(WARNING, "UNKNOWN_FILE", ld.path / name, None, "not a file Kafka writes in a log dir")
    if naming.CLEAN_SHUTDOWN not in ld.root_files and ld.partitions:
        f.add(INFO, "UNCLEAN_SHUTDOWN", ld.path, None,
              "no .kafka_cleanshutdown: a broker would recover every partition from its "
              "recovery point (run `kafkalog recover` to do it offline)")
    rules = {
        naming.RECOVERY_POINT: ("RECOVERY_POINT_PAST_END", WARNING,
                                "recovery point {v} is past the log end offset {leo} (the "
                                "broker clamps it)"),
        naming.REPLICATION: ("HIGH_WATERMARK_PAST_END", WARNING,
                             "high watermark {v} is past the log end offset {leo}"),
        naming.LOG_START: ("LOG_START_PAST_END", ERROR,
                           "log start offset {v} is past the log end offset {leo}: a broker "
                           "deletes every segment of this partition at start-up"),
        naming.CLEANER: ("CLEANER_OFFSET_PAST_END", WARNING,
                         "cleaner checkpoint {v} is past the log end offset {leo}"),
    }
    for name, (code, sev, msg) in rules.items():
        try:
            cp = ld.checkpoint(name)
        except CorruptDataError as e:
            f.add(ERROR, "CHECKPOINT_CORRUPT", e.path or ld.path / name, e.pos,
                  f"{e.reason} (the broker treats it as empty)", fix=recover_command(ld.path))
            continue
        if cp is None:
            continue
        for key, v in cp.items():
            if key not in leos:
                f.add(INFO, "CHECKPOINT_UNKNOWN_PARTITION", ld.path / name, None,
                      f"entry for {key[0]}-{key[1]}, which has no partition dir here")
                continue
            leo = leos[key]
            if leo is not None and v > leo:
                f.add(sev, code, ld.path / name, None,
                      f"{key[0]}-{key[1]}: " + msg.format(v=v, leo=leo))
    if ld.remote_index_cache is not None:
        _check_remote_index_cache(ld.remote_index_cache, f)


_IndexReader = Callable[[fs.FilePath, int], OffsetIndex | TimeIndex | TxnIndex]
_REMOTE_INDEX_READERS: dict[str, _IndexReader] = {
    naming.INDEX: OffsetIndex.read, naming.TIMEINDEX: TimeIndex.read,
    naming.TXNINDEX: TxnIndex.read}


def _check_remote_index_cache(cache: RemoteIndexCache, f: Findings) -> None:
    """Tiered storage's cache: at start-up a broker deletes its `.deleted`/`.tmp` files, then
    parses every other name and sanity-checks the indexes (RemoteIndexCache.init)."""
    live = [fn for fn in cache.files if not fn.temp]
    f.add(INFO, "REMOTE_INDEX_CACHE", cache.path, None,
          f"tiered storage: {len(live)} cached index files of remote segments, "
          f"{len(cache.files) - len(live)} on their way out ({cache.bytes} bytes)")
    for name in cache.unknown:
        f.add(WARNING, "UNKNOWN_FILE", cache.path / name, None,
              "not a file Kafka writes in remote-log-index-cache/ (a broker parses every name "
              "there at start-up)")
    fix = "delete it: the broker fetches it again from remote storage"
    for fn in live:
        p = cache.path / fn.name
        assert fn.suffix is not None and fn.offset is not None  # set for REMOTE_INDEX names
        try:
            idx = _REMOTE_INDEX_READERS[fn.suffix](p, fn.offset)
        except OSError as e:
            f.add(ERROR, "INDEX_UNREADABLE", p, None, f"cannot read: {e.strerror}", fix=fix)
            continue
        for err in idx.sanity_errors():
            f.add(ERROR, "REMOTE_INDEX_CORRUPT", p, None,
                  f"fails the sanity check a broker runs on it at start-up: {err}", fix=fix)
