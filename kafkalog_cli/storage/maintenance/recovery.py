"""Offline recovery of a partition: what a broker does at start-up after an unclean shutdown
(LogLoader.load), planned first and explained, then applied crash-safely.

Plan, in the broker's order:
  1. the temp-file passes of replace.py (finish or undo interrupted replacements)
  2. orphan index files (no `.log` beside them) are removed
  3. segments from the one holding the recovery point onwards (all with --full, plus any
     whose `.index` is missing) are validated batch by batch (LogSegment.recover): the log
     is cut at the first torn batch, or the first breaking any rule of batch_rules.py
     (verify's own: CRC, offset order, records that do not decode...), and every later
     segment goes
  4. indexes that are missing or differ from a rebuild are rewritten; a segment on which
     the broker's own recovery would find an index full (and not start) is cut where its
     append path should have rolled (rebuild.py, split.py)
  5. producer snapshots the broker's load deletes (stray ones, those past the log end or
     at or below the log start: snapshot_rules.py) are removed, those that do not decode
     rebuilt from the log, a leader-epoch checkpoint that does not parse
     (or is out of order) from the batches' epochs
  6. the recovery point becomes the log end offset (commands/recover.py)
Kafka cuts wherever the first bad batch is. We do that only at the tail: when valid batches
follow the damage (in the segment or in later ones) the cut would drop good records, so it
is left as a problem unless `force` is given, and the plan counts what would be dropped.
Everything removed, cut or rewritten goes to the quarantine first (quarantine.py).
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafkalog_cli.codec import compression
from kafkalog_cli.codec import index_entry as ie
from kafkalog_cli.codec.checkpoint import (
    epoch_order_errors,
    format_leader_epochs,
    parse_leader_epochs,
)
from kafkalog_cli.codec.entry import Batch
from kafkalog_cli.codec.snapshot import decode_snapshot, encode_snapshot
from kafkalog_cli.errors import CorruptDataError, LogDirIOError
from kafkalog_cli.storage.checks.batch_rules import BatchRules
from kafkalog_cli.storage.checks.log_state import LogEnd, epochs_from_log, state_at
from kafkalog_cli.storage.checks.snapshot_rules import (
    AT_OR_BELOW_START,
    PAST_END,
    STRAY,
    snapshots_the_load_deletes,
)
from kafkalog_cli.storage.disk import naming, safety
from kafkalog_cli.storage.disk.checkpoints import log_start_offset
from kafkalog_cli.storage.disk.files import atomic_write, fsync_dir, read_regular
from kafkalog_cli.storage.disk.logdir import PartitionDir
from kafkalog_cli.storage.disk.scan import CURRENT
from kafkalog_cli.storage.disk.segment import Segment, log_end_offset, scan_after
from kafkalog_cli.storage.drills.faults import crash_point
from kafkalog_cli.storage.maintenance.floor import validation_floor
from kafkalog_cli.storage.maintenance.quarantine import Quarantine
from kafkalog_cli.storage.maintenance.rebuild import (
    DEFAULT_INDEX_INTERVAL,
    IndexCapacity,
    Rebuilt,
    rebuild_segment,
    txn_on_disk,
)
from kafkalog_cli.storage.maintenance.replace import (
    LoaderAction,
    apply_loader_actions,
    plan_temp_file_passes,
)
from kafkalog_cli.storage.maintenance.split import Split, split_segment
from kafkalog_cli.storage.queries.producers import ProducerState


@dataclass
class Action:
    kind: str  # remove, rename, truncate, rebuild-index, rewrite
    path: Path
    reason: str
    to: Path | None = None
    start: int | None = None  # byte range cut
    end: int | None = None
    offsets: tuple[int, int] | None = None
    records: int | None = None
    data: bytes | None = None  # new bytes of an index, snapshot or epoch checkpoint
    split: Split | None = None

    def as_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"action": self.kind, "file": str(self.path), "reason": self.reason}
        if self.split is not None:
            d["splitAt"] = [off for off, _pos in self.split.cuts]
        if self.to is not None:
            d["to"] = str(self.to)
        if self.start is not None:
            d["positions"] = [self.start, self.end]  # the byte range cut
        if self.offsets is not None:
            d["offsets"] = list(self.offsets)
        if self.records is not None:
            d["records"] = self.records
        return d


@dataclass
class Problem:
    path: Path
    position: int | None
    message: str

    def as_dict(self) -> dict[str, Any]:
        return {"file": str(self.path), "position": self.position, "message": self.message}


def cut_refused(problems: list[Problem], path: Path, pos: int, stop: str, unsearched: bool,
                follows: str | None, who: str) -> bool:
    """Whether cutting at `pos` must wait for --force: valid data follows (`follows` says
    what), or whether any does is unknown; the problem says so."""
    if unsearched:
        problems.append(Problem(path, pos, f"{stop}; whether valid data follows is unknown: "
                                "the search for entries after the damage gave up (too many "
                                "look-alike headers to check). Salvage what follows first "
                                "(kafkalog dump), or rerun with --force to truncate"))
    elif follows:
        problems.append(Problem(path, pos, f"{stop}; valid data follows ({follows}): cutting "
                                f"here, as {who} would, drops them. Salvage them first "
                                "(kafkalog dump), or rerun with --force to truncate"))
    return unsearched or bool(follows)


@dataclass
class Plan:
    part: PartitionDir
    loader: list[LoaderAction] = field(default_factory=list)
    actions: list[Action] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    log_end_offset: int | None = None
    # base offsets of segments that hold only batches passing batch_rules.py once the plan
    # is applied (validated whole, or cut where the first bad batch was)
    validated: set[int] = field(default_factory=set)

    @property
    def empty(self) -> bool:
        return not self.loader and not self.actions


def _count_after(path: Path, start: int) -> tuple[int, int, int | None, bool]:
    """Batches passing their CRC that lie after byte `start` (skipping damage; -1: all of
    them), their records and last offset: what a cut at `start` drops besides the bad
    batch there; and whether the search for them gave up somewhere (its work cap spent:
    more may follow)."""
    batches = records = 0
    last: int | None = None

    def count(b: Batch) -> None:
        nonlocal batches, records, last
        if b.is_valid():
            batches += 1
            with contextlib.suppress(CorruptDataError):
                records += b.count
            last = b.last_offset
    _n, unsearched = scan_after(path, CURRENT, start, count)
    return batches, records, last, unsearched


def _effective_segments(part: PartitionDir, loader: list[LoaderAction]) -> list[Segment]:
    """The segments the partition will have once the loader actions are applied."""
    removed = {a.path.name for a in loader if a.action == "remove"}
    renamed = {a.path.name: a.to.name for a in loader if a.action == "rename" and a.to}
    segs: dict[int, Segment] = {}
    for p in part.path.iterdir():
        if not p.is_file() or p.name in removed:
            continue
        name = renamed.get(p.name, p.name)
        fn = naming.parse_file_name(name)
        if fn.kind is not naming.FileKind.SEGMENT or fn.temp or fn.offset is None:
            continue
        seg = segs.setdefault(fn.offset, Segment(part.path, fn.offset))
        if p.name in renamed and fn.suffix == naming.LOG:
            seg.temp = naming.SWAP  # read the log where it is until the rename happens
        if fn.suffix == naming.LOG:
            seg.has_log = True
        elif fn.suffix == naming.INDEX:
            seg.has_index = True
        elif fn.suffix == naming.TIMEINDEX:
            seg.has_timeindex = True
        elif fn.suffix == naming.TXNINDEX:
            seg.has_txnindex = True
    return [segs[k] for k in sorted(segs)]


def _last_offset_before(segs: list[Segment], i: int) -> int | None:
    """The largest offset in the segments before segs[i] (the newest one holding a batch)."""
    leo = log_end_offset(segs[:i])
    return None if leo is None else leo - 1


def _preallocated_size(path: Path, slot: int) -> int | None:
    """The size of an index file that still ends in a zero slot (the preallocated tail a
    killed broker leaves; a closed index is trimmed to its last real entry), else None.
    Reads one slot: an active index is segment.index.bytes long (10 MiB by default)."""
    try:
        size = os.stat(path).st_size
        if size < slot:
            return None
        with open(path, "rb") as f:
            f.seek(size - slot)
            tail = f.read(slot)
    except OSError:
        return None
    return size if tail == bytes(slot) else None


def index_capacity(segs: list[Segment]) -> IndexCapacity | None:
    """What segment.index.bytes allows, from the last segment's indexes if they still have
    the zero tail a killed broker leaves (preallocated to that size); None if unknown."""
    last = next((s for s in reversed(segs) if s.has_log), None)
    if last is None:
        return None
    sizes = [_preallocated_size(last.path(kind), entry.size)
             for kind, entry in ((naming.INDEX, ie.OFFSET_ENTRY),
                                 (naming.TIMEINDEX, ie.TIME_ENTRY))]
    found = [IndexCapacity.of(n) for n in sizes if n is not None]
    if not found:
        return None
    return IndexCapacity(min(c.offset_entries for c in found),
                         min(c.time_entries for c in found))


def plan_partition(part: PartitionDir, recovery_point: int, *, full: bool = False,
                   force: bool = False, interval: int = DEFAULT_INDEX_INTERVAL,
                   max_decompressed: int = compression.DEFAULT_MAX_DECOMPRESSED,
                   capacity: IndexCapacity | None = None) -> Plan:
    """`capacity`: the broker's index sizes (default: index_capacity(), else Kafka's)."""
    plan = Plan(part)
    plan.loader = plan_temp_file_passes(part.path)
    segs = _effective_segments(part, plan.loader)
    for fn in part.orphan_indexes:
        if not any(s.base_offset == fn.offset and s.has_log for s in segs):
            plan.actions.append(Action("remove", part.path / fn.name,
                                       "orphan index file (its .log is gone)"))
    segs = [s for s in segs if s.has_log]
    if not segs:
        return plan
    cap = capacity or index_capacity(segs) or IndexCapacity()
    log_start = log_start_offset(part, segs[0].base_offset)  # no cut removes segs[0]
    floor = validation_floor([s.base_offset for s in segs], recovery_point)
    state: ProducerState | None = None
    rules: BatchRules | None = None
    end: LogEnd | None = None
    for i, seg in enumerate(segs):
        if not (full or seg.base_offset >= floor or not seg.has_index):
            state = rules = None  # the next segment validated starts afresh
            continue
        if state is None or rules is None:
            state = state_at(part, segs, seg.base_offset)
            rules = BatchRules(max_decompressed=max_decompressed,
                               prev_last=_last_offset_before(segs, i))
        r = rebuild_segment(seg, interval, state, txn_on_disk=txn_on_disk(seg), capacity=cap,
                            rules=rules)
        if r.truncated:
            if not _plan_cut(plan, segs, i, r, force, cap, interval, log_start):
                return plan
            plan.validated.add(seg.base_offset)
            end = (seg.base_offset, r.valid_bytes)
            break
        plan.validated.add(seg.base_offset)
        _index_actions(plan, seg, r, cap, interval)
        if r.next_offset is not None:
            plan.log_end_offset = r.next_offset
    if end is None:
        last_seg = segs[-1]
        plan.log_end_offset = log_end_offset(segs)
        if plan.log_end_offset is None:
            plan.log_end_offset = last_seg.base_offset
        _snapshots_the_load_deletes(plan, segs, log_start)
    _snapshot_actions(plan, segs, end)
    _epoch_actions(plan, segs, end)
    return plan


def _plan_cut(plan: Plan, segs: list[Segment], i: int, r: Rebuilt, force: bool,
              cap: IndexCapacity, interval: int, log_start: int) -> bool:
    """Plan cutting segs[i] at the first bad batch and removing every later segment, as
    LogLoader does; False (and a problem) when whole batches follow and not `force`."""
    seg, later = segs[i], segs[i + 1:]
    stop = r.stop.reason if r.stop else "incomplete batch at the end"
    nb, nrec, last, unsearched = _count_after(seg.log_path, r.valid_bytes)
    later_batches = later_records = 0
    for s in later:
        b, n, _last, gave_up = _count_after(s.log_path, -1)
        later_batches += b
        later_records += n
        unsearched = unsearched or gave_up
    follows = (f"{nrec} records in {nb} batches after it in this segment, {later_records} "
               f"records in {later_batches} batches in {len(later)} later segments"
               if nb or later_batches else None)
    if not force and cut_refused(plan.problems, seg.log_path, r.valid_bytes, stop,
                                 unsearched, follows, "a broker"):
        return False
    # every offset from the new log end on goes, the damaged batch's too (its records cannot
    # be counted: `records` are those of the whole batches after it)
    cut_from = r.next_offset if r.next_offset is not None else seg.base_offset
    plan.actions.append(Action(
        "truncate", seg.log_path, f"{stop} (everything from here on is invalid)",
        start=r.valid_bytes, end=r.file_size,
        offsets=(cut_from, last) if last is not None else None, records=nrec))
    _index_actions(plan, seg, r, cap, interval)
    for s in later:
        for kind in (naming.LOG, naming.INDEX, naming.TIMEINDEX, naming.TXNINDEX):
            p = s.path(kind)
            if p.exists():
                plan.actions.append(Action("remove", p, "segment after the truncation "
                                           "point (the broker deletes it)"))
    plan.log_end_offset = r.next_offset if r.next_offset is not None else seg.base_offset
    _snapshots_the_load_deletes(plan, segs[:i + 1], log_start, "new ")
    return True


def _snapshots_the_load_deletes(plan: Plan, segs: list[Segment], log_start: int,
                                new: str = "") -> None:
    """Remove the producer snapshots the broker's load deletes (snapshot_rules.py), `segs`
    (and the pieces of planned splits) being the segments left: beyond the log end also
    those a run stopped between its cut and their removal left. A log start past the log
    end takes none from below it: there the broker deletes every segment instead (verify's
    LOG_START_PAST_END), which recover does not do."""
    leo = plan.log_end_offset
    assert leo is not None
    bases = {s.base_offset for s in segs} | \
        {off for a in plan.actions if a.split is not None for off, _pos in a.split.cuts}
    why = {STRAY: "stray producer snapshot: its offset is no segment's base offset (the "
                  "broker keeps only the largest such one, if above the last segment's)",
           PAST_END: f"producer snapshot beyond the {new}log end offset",
           AT_OR_BELOW_START: f"producer snapshot at or below the log start offset {log_start}"}
    doomed = snapshots_the_load_deletes(plan.part.snapshots, bases, log_start, leo)
    for off, rule in sorted(doomed.items()):
        plan.actions.append(Action(
            "remove", plan.part.path / naming.segment_file_name(off, naming.SNAPSHOT), why[rule]))


def _snapshot_actions(plan: Plan, segs: list[Segment], end: LogEnd | None) -> None:
    """A snapshot that does not decode is replaced by one rebuilt from the log (the broker
    deletes it and rebuilds producer state from an older snapshot and the log:
    ProducerStateManager.loadFromSnapshot). One below the first segment that the load keeps
    (a log start past the end) has no log to rebuild it from, so it only goes."""
    part = plan.part
    removed = {a.path for a in plan.actions if a.kind == "remove"}
    for off in sorted(part.snapshots):
        p = part.path / naming.segment_file_name(off, naming.SNAPSHOT)
        if p in removed:
            continue  # out of the log's range: it goes as it is
        try:
            decode_snapshot(read_regular(p))
            continue
        except CorruptDataError as e:
            why = f"producer snapshot does not decode ({e.reason})"
        except (OSError, LogDirIOError):
            continue  # unreadable: verify reports it; nothing here can fix that
        if off < segs[0].base_offset:
            plan.actions.append(Action("remove", p, why + "; below the log start, there is "
                                       "no log to rebuild it from"))
            continue
        state = state_at(part, segs, off, end)
        plan.actions.append(Action("rewrite", p, why + "; rebuilt from the log",
                                   data=encode_snapshot(state.snapshot_entries())))


def _epoch_actions(plan: Plan, segs: list[Segment], end: LogEnd | None) -> None:
    """A leader-epoch checkpoint that does not parse, or whose entries are out of order, is
    written again from the batches' leader epochs (what LogSegment.recover assigns). A
    broker reading a corrupt one takes the whole log dir offline (KafkaStorageException)."""
    p = plan.part.path / naming.LEADER_EPOCH
    if not plan.part.has(naming.LEADER_EPOCH):
        return
    try:
        entries = parse_leader_epochs(read_regular(p))
    except CorruptDataError:
        why = "leader-epoch checkpoint does not parse"
    except (OSError, LogDirIOError):
        return
    else:
        if not epoch_order_errors(entries):
            return
        why = "leader-epoch checkpoint entries are out of order"
    data = format_leader_epochs(epochs_from_log(segs, end)).encode()
    plan.actions.append(Action("rewrite", p, why + "; rebuilt from the batches' leader epochs",
                               data=data))


def _index_actions(plan: Plan, seg: Segment, r: Rebuilt, cap: IndexCapacity,
                   interval: int) -> None:
    if r.splits:  # the pieces get their own indexes
        plan.actions.append(Action(
            "split", seg.log_path,
            f"the broker's recovery would find an index full at offset {r.splits[0][0]} "
            f"({cap.offset_entries} offset / {cap.time_entries} time index entries) and not "
            f"start: cut into {len(r.splits) + 1} segments where it should have rolled",
            split=Split(seg.base_offset, r.splits, r.valid_bytes, interval, r.txn_entries)))
        return
    oi, ti, tx = r.index_bytes()
    for kind, data in ((naming.INDEX, oi), (naming.TIMEINDEX, ti), (naming.TXNINDEX, tx)):
        p = seg.path(kind)
        if kind == naming.TXNINDEX and not data and not p.exists():
            continue
        try:
            current = p.read_bytes() if p.exists() else None
        except OSError:
            current = None
        if current != data:
            target = seg.directory / naming.segment_file_name(seg.base_offset, kind)
            plan.actions.append(Action("rebuild-index", target,
                                       "missing" if current is None else "differs from a rebuild",
                                       data=data))


def apply_plan(plan: Plan, quarantine: Quarantine, *, fsync: bool = True) -> None:
    """Carry the plan out; every step is a crash point, and each leaves a state that the
    next run of plan+apply completes."""
    apply_loader_actions(plan.loader, quarantine, fsync=fsync)
    root = plan.part.path.parent
    truncated: set[Path] = set()
    for a in plan.actions:
        if a.kind == "truncate":
            assert a.start is not None and a.end is not None
            safety.ensure_mutable(a.path, root)  # before its bytes are saved
            quarantine.save_range(a.path, a.start, a.end, a.reason,
                                  offsets=list(a.offsets) if a.offsets else None,
                                  records=a.records)
            crash_point("recover.truncate.before")
            with safety.open_file(a.path, root, "existing") as f:
                f.truncate(a.start)
                if fsync:
                    os.fsync(f.fileno())
            crash_point("recover.truncate.after")
            truncated.add(a.path)
        elif a.kind == "rebuild-index":
            crash_point("recover.index.before")
            atomic_write(a.path, a.data or b"", root=root, fsync=fsync)
            crash_point("recover.index.after")
        elif a.kind == "rewrite":  # a copy of the old file goes to the quarantine first
            safety.ensure_mutable(a.path, root)
            quarantine.save_range(a.path, 0, a.path.stat().st_size, a.reason)
            crash_point("recover.rewrite.before")
            atomic_write(a.path, a.data or b"", root=root, fsync=fsync)
            crash_point("recover.rewrite.after")
        elif a.kind == "split":
            assert a.split is not None
            split_segment(plan.part.path, a.split, quarantine, fsync=fsync)
    # later segments go newest first, `.log` before its indexes, so a crash leaves at most
    # orphan indexes (which the next run removes), never a log missing its predecessors
    removals = [a for a in plan.actions if a.kind == "remove"]
    removals.sort(key=lambda a: (-(naming.parse_file_name(a.path.name).offset or 0),
                                 not a.path.name.endswith(naming.LOG)))
    for a in removals:
        if a.path.exists():
            quarantine.remove(a.path, a.reason)
    if fsync:
        fsync_dir(plan.part.path)
