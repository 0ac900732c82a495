"""A recover run over current-format targets: the loader's passes, the plan of each
partition (recovery.py) applied under the lock with a quarantine, the root checkpoints, and
then verify over what is left, so recover never calls a dir clean that verify would not."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafkalog_cli.errors import CorruptDataError, LogDirIOError, UsageError
from kafkalog_cli.storage.checks.check import (
    CheckOptions,
    Stats,
    check_log_dir_files,
    check_partition,
)
from kafkalog_cli.storage.checks.findings import ERROR, Findings
from kafkalog_cli.storage.disk import naming
from kafkalog_cli.storage.disk.checkpoints import read_offsets, recovery_point, update_offsets
from kafkalog_cli.storage.disk.logdir import PartitionDir, Target, scan_log_dir
from kafkalog_cli.storage.maintenance.guard import lock_dirs, quarantines
from kafkalog_cli.storage.maintenance.quarantine import Quarantine
from kafkalog_cli.storage.maintenance.rebuild import DEFAULT_INDEX_INTERVAL, IndexCapacity
from kafkalog_cli.storage.maintenance.recovery import Plan, apply_plan, plan_partition
from kafkalog_cli.storage.maintenance.replace import apply_loader_actions

Row = dict[str, Any]
Ordered = Callable[..., Iterator[Any]]


def in_turn(items: list[Any], work: Callable[[Any], Any],
            done: Callable[[Any], None] | None = None) -> Iterator[Any]:
    """`work` over `items` in order, in this process (the -j map's signature)."""
    for item in items:
        yield work(item)
        if done is not None:
            done(item)
Progress = Callable[[int], AbstractContextManager[Callable[[int], None]]]


@dataclass
class RecoverOptions:
    full: bool = False
    force: bool = False
    dry_run: bool = False
    quarantine_dir: Path | None = None
    no_quarantine: bool = False
    index_interval_bytes: int = DEFAULT_INDEX_INTERVAL
    segment_index_bytes: int | None = None
    warn: Callable[[str], None] = lambda _msg: None
    ordered: Ordered | None = None  # the command's -j map over partitions (None: in turn)


@dataclass
class Outcome:
    """What recover did (or would do) per partition and per log dir, and what is left."""

    partitions: list[Row] = field(default_factory=list)
    log_dirs: list[Row] = field(default_factory=list)
    changed: int = 0
    problems: int = 0
    left: int = 0


def _corrupt(path: Path) -> bool:
    try:
        read_offsets(path)
        return False
    except CorruptDataError:
        return True
    except LogDirIOError:
        return False  # not a regular file: nothing here rewrites that


def _describe(plan: Plan) -> list[dict[str, Any]]:
    rows = [{"action": a.action, "file": str(a.path), "reason": a.reason,
             **({"to": str(a.to)} if a.to else {})} for a in plan.loader]
    return rows + [a.as_dict() for a in plan.actions]


def _left(findings: Findings) -> list[dict[str, Any]]:
    """Errors verify still reports: what recover leaves, with the command that fixes each."""
    return [x.as_dict() for x in findings.items if x.severity == ERROR]


def _fix_root_checkpoints(ld: Path, names: tuple[str, ...],
                          rp_updates: dict[tuple[str, int], int | None], q: Quarantine,
                          dry_run: bool) -> list[dict[str, Any]]:
    """Rewrite the log dir's checkpoints that do not parse. A broker treats such a file as
    empty (LogManager.loadLogs: recovery points 0, log start offsets from the first
    segments; LogCleanerManager: no cleaner offsets; no high watermarks, so 0), so one
    holding no entries (the recovery points just computed) says the same, readably."""
    rows = []
    for name in names:
        cp = ld / name
        updates = rp_updates if name == naming.RECOVERY_POINT else {}
        if not _corrupt(cp):
            if updates and not dry_run:
                update_offsets(cp, updates)
            continue
        rows.append({"action": "rewrite", "file": str(cp),
                     "reason": "checkpoint that does not parse (the broker reads it as empty); "
                               f"rewritten with {len(updates)} entries"})
        if not dry_run:
            q.remove(cp, "checkpoint that does not parse; rewritten")
            update_offsets(cp, updates, replace_corrupt=True)
    return rows


def _size(part: PartitionDir) -> int:
    return sum(s.size for s in part.segments)


def recover(targets: list[Target], o: RecoverOptions, stack: ExitStack,
            progress: Progress) -> Outcome:
    full, force, dry_run = o.full, o.force, o.dry_run
    quarantine_dir, no_quarantine = o.quarantine_dir, o.no_quarantine
    index_interval_bytes = o.index_interval_bytes
    capacity = IndexCapacity.of(o.segment_index_bytes) if o.segment_index_bytes else None
    report: list[Row] = []
    root_report: list[Row] = []
    changed = problems = 0
    parts = [x for t in targets for x in t.partitions(linked=True)]
    if not parts:
        raise UsageError("no partition dirs found under " +
                         ", ".join(str(t.path) for t in targets))
    # root files are repaired and checked where the target is a log dir, as verify does
    roots = list(dict.fromkeys(ld.path.resolve() for t in targets for ld in t.log_dirs))
    parts = lock_dirs(parts, stack, dry_run=dry_run, interrupted_ok=True, warn=o.warn,
                      writes=naming.ROOT_CHECKPOINTS if roots else
                      (naming.RECOVERY_POINT, naming.REPLICATION))
    qs = quarantines(parts, quarantine_dir, enabled=not no_quarantine, log_dirs=roots)
    rp_updates: dict[Path, dict[tuple[str, int], int | None]] = {}
    hw_updates: dict[Path, dict[tuple[str, int], int | None]] = {}
    validated: dict[Path, frozenset[int]] = {}  # segments recover validated deeply

    def one(part: PartitionDir) -> tuple[Row, int | None, int | None, frozenset[int], int]:
        """Recover a partition (perhaps in a -j worker process): its report entry, new
        recovery point and high watermark (None: unchanged), the segments validated, and
        the changes counted."""
        log_dir = part.path.parent.resolve()
        q = qs[log_dir]
        rp = recovery_point(part)
        rows_corrupt = rp == 0 and part.log_dir is not None and \
            _corrupt(log_dir / naming.RECOVERY_POINT)
        plan = plan_partition(part, rp, full=full, force=force, interval=index_interval_bytes,
                              capacity=capacity)
        rows = _describe(plan)
        if not dry_run and not plan.empty:
            # finish the loader passes first, then plan the rest on the real files
            apply_loader_actions(plan.loader, q)
            plan2 = plan_partition(part.rescan(), rp, full=full, force=force,
                                   interval=index_interval_bytes, capacity=capacity)
            apply_plan(plan2, q)
            rows = _describe(plan)[:len(plan.loader)] + _describe(plan2)
            plan = plan2
        probs = [p.as_dict() for p in plan.problems]
        if part.topic_error is not None:
            probs.append({"file": str(part.path), "position": None,
                          "message": f"{part.topic_error}: its recovery point is not "
                                     "written (rename the dir)"})
        changed = int(bool(rows))
        rp_new = hw_new = None
        # a -delete, -stray or -future copy is recovered, but the checkpoints' entry for
        # its topic-partition is the live partition's (verify reads them so too)
        if part.log_dir is not None and plan.log_end_offset is not None and not probs \
                and not part.state:
            if rp != plan.log_end_offset or rows_corrupt:
                rp_new = plan.log_end_offset
                rows.append({"action": "checkpoint",
                             "file": str(log_dir / naming.RECOVERY_POINT),
                             "reason": f"recovery point {rp} -> {plan.log_end_offset}"})
                changed += 1
            try:
                hw = read_offsets(log_dir / naming.REPLICATION).get(part.key)
            except (CorruptDataError, LogDirIOError):
                hw = None
            if hw is not None and hw > plan.log_end_offset:
                hw_new = plan.log_end_offset
                rows.append({"action": "checkpoint", "file": str(log_dir / naming.REPLICATION),
                             "reason": f"high watermark {hw} -> {plan.log_end_offset} (the "
                                       "broker clamps it to the log end at load)"})
                changed += 1
        entry = {"topic": part.topic, "partition": part.partition, "path": str(part.path),
                 "recoveryPoint": rp, "logEndOffset": plan.log_end_offset, "actions": rows,
                 "problems": probs, "left": []}
        return entry, rp_new, hw_new, frozenset(plan.validated), changed

    bar = stack.enter_context(progress(sum(s.size for x in parts for s in x.segments)))
    for part, (entry, rp_new, hw_new, checked, n) in zip(
            parts, (o.ordered or in_turn)(parts, one, done=lambda x: bar(_size(x))), strict=True):
        log_dir = part.path.parent.resolve()
        changed += n
        problems += len(entry["problems"])
        if rp_new is not None:
            rp_updates.setdefault(log_dir, {})[part.key] = rp_new
        if hw_new is not None:
            hw_updates.setdefault(log_dir, {})[part.key] = hw_new
        validated[part.path] = checked
        report.append(entry)
    for log_dir in dict.fromkeys([*rp_updates, *roots]):
        # beneath a partition target only the recovery points are its business
        names = naming.ROOT_CHECKPOINTS if log_dir in roots else (naming.RECOVERY_POINT,)
        rows = _fix_root_checkpoints(log_dir, names, rp_updates.get(log_dir, {}),
                                     qs[log_dir], dry_run)
        changed += len(rows)
        if log_dir in roots:
            root_report.append({"logDir": str(log_dir), "actions": rows, "left": []})
    if not dry_run:
        for log_dir, updates in hw_updates.items():
            update_offsets(log_dir / naming.REPLICATION, updates)
    left = _check_after(parts, report, root_report, validated, dry_run, o)
    return Outcome(report, root_report, changed, problems, left)


def _check_after(parts: list[PartitionDir], report: list[dict[str, Any]],
                 root_report: list[dict[str, Any]], validated: dict[Path, frozenset[int]],
                 dry_run: bool, o: RecoverOptions) -> int:
    """Verify what recover leaves, so it never says "nothing to do" or "repaired" while
    verify would still report errors; fills each report's "left", returns how many. A dry
    run can tell only for a partition it would not change. Records of the segments recover
    has just validated with verify's own batch rules are not decoded a second time."""
    n = 0
    leos: dict[Path, dict[tuple[str, int], int | None]] = {}

    def check(part: PartitionDir) -> tuple[int | None, list[Row]]:
        f = Findings()
        leo = check_partition(part.rescan(), f, CheckOptions(), Stats(),
                              validated=validated.get(part.path, frozenset()))
        return leo, _left(f)

    todo = [(part, r) for part, r in zip(parts, report, strict=True)
            if not (dry_run and r["actions"])]
    for (part, r), (leo, left) in zip(todo, (o.ordered or in_turn)([x for x, _ in todo], check),
                                      strict=True):
        if not part.state:  # a copy's log end is not its topic-partition's (as verify)
            leos.setdefault(part.path.parent.resolve(), {})[part.key] = leo
        r["left"] = left
        n += len(left)
    for r in root_report:
        if dry_run and r["actions"]:
            continue
        ld = scan_log_dir(Path(r["logDir"]))
        f = Findings()
        known = leos.get(Path(r["logDir"]), {})
        for part in ld.partitions:
            if part.key not in known and not part.state:  # a dry run skipped it: as it is
                known[part.key] = check_partition(part, Findings(), CheckOptions(), Stats())
        check_log_dir_files(ld, f, known, {})
        r["left"] = _left(f)
        n += len(r["left"])
    return n
