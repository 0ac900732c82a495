"""`kafkalog recover`: a broker's start-up recovery, offline, explained, losing nothing."""

from __future__ import annotations

import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import click

from kafkalog_cli.commands import options, parallel, v07
from kafkalog_cli.commands.common import (
    lock_dirs,
    partition_bytes,
    partition_fields,
    quarantines,
    ticked,
)
from kafkalog_cli.errors import (
    EXIT_FIXED,
    EXIT_UNFIXED,
    CorruptDataError,
    LogDirIOError,
    UsageError,
)
from kafkalog_cli.output.console import progress, settings
from kafkalog_cli.output.render import write_report
from kafkalog_cli.storage.disk import naming
from kafkalog_cli.storage.checks.check import CheckOptions, Stats, check_log_dir_files, check_partition
from kafkalog_cli.storage.disk.checkpoints import read_offsets, recovery_point, update_offsets
from kafkalog_cli.storage.checks.findings import ERROR, Findings
from kafkalog_cli.storage.disk.logdir import PartitionDir, open_target, scan_log_dir, scan_partition
from kafkalog_cli.storage.maintenance.quarantine import Quarantine
from kafkalog_cli.storage.maintenance.rebuild import DEFAULT_INDEX_INTERVAL, IndexCapacity
from kafkalog_cli.storage.maintenance.recovery import Plan, apply_plan, plan_partition
from kafkalog_cli.storage.maintenance.replace import apply_loader_actions

# csv and tables: a row for each
LISTS = {"actions": "action", "problems": "problem", "left": "left"}


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


def _text(rows: list[dict[str, Any]], problems: list[dict[str, Any]],
          left: list[dict[str, Any]], dry: bool) -> str:
    lines = []
    for r in rows:
        what = r["action"]
        extra = ""
        if "positions" in r:
            extra += f" bytes {r['positions'][0]}..{r['positions'][1]}"
        if r.get("offsets"):
            extra += f" offsets {r['offsets'][0]}..{r['offsets'][1]}"
        if r.get("records") is not None:
            extra += f" ({r['records']} records)"
        if r.get("splitAt"):
            extra += " at offsets " + ", ".join(map(str, r["splitAt"]))
        if "to" in r:
            extra += f" -> {r['to']}"
        lines.append(f"{'would ' if dry else ''}{what:<13} {r['file']}{extra}: {r['reason']}")
    for p in problems:
        at = f":{p['position']}" if p["position"] is not None else ""
        lines.append(f"problem       {p['file']}{at}: {p['message']}")
    for x in left:
        at = f":{x['position']}" if x["position"] is not None else ""
        fix = f"fix: {x['fix']}" if x["fix"] else "no kafkalog command fixes this"
        lines.append(f"left          {x['file']}{at}: {x['code']}: {x['message']}; {fix}")
    return "\n".join(lines)


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


@click.command("recover", epilog="Exit codes (fsck): 0 nothing to do, 1 repaired, 4 problems "
               "left (verify would still report errors), or --dry-run found work, "
               "8 operational error (e.g. lock held), 16 usage." + options.NO_LINKS)
@options.paths_argument
@click.option("--full", is_flag=True,
              help="Validate every segment, not just from the recovery point.")
@click.option("--force", is_flag=True,
              help="Also truncate where valid data follows the damage (as a broker would).")
@click.option("--dry-run", is_flag=True, help="Print the plan; change nothing.")
@click.option("--quarantine", "quarantine_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Where removed files and cut bytes go (default: "
                   "<log dir>/../.kafkalog-quarantine/<log dir name>/<UTC time>/).")
@click.option("--no-quarantine", is_flag=True, help="Delete instead of quarantining.")
@click.option("--index-interval-bytes", type=options.CONFIGS["index.interval.bytes"],
              default=DEFAULT_INDEX_INTERVAL, show_default=True)
@click.option("--segment-index-bytes", type=options.CONFIGS["segment.index.bytes"],
              help="The topics' segment.index.bytes: a segment whose recovery would overflow "
                   "indexes of this size is cut where the broker should have rolled it "
                   "(default: the size a killed broker preallocated the last segment's indexes "
                   "to, else 10485760).")
@options.format_option()
@options.jobs_option
def command(paths: tuple[str, ...], full: bool, force: bool, dry_run: bool,
            quarantine_dir: Path | None, no_quarantine: bool, index_interval_bytes: int,
            segment_index_bytes: int | None, fmt: str, jobs: int = 1) -> int:
    """Do offline, and explain, what a broker does at start-up after an unclean shutdown:
    finish or undo interrupted replacements (.cleaned/.swap/.deleted), drop orphan indexes,
    validate segments from the recovery point, cut a torn or corrupt tail (or one whose
    records do not decode, or whose offsets go backwards), rebuild indexes, rebuild producer
    snapshots and the leader-epoch checkpoint that do not parse, rewrite a log dir's
    unreadable checkpoints and move the recovery point to the log end. Every removed file,
    cut byte and rewritten file goes to a quarantine folder first, with a manifest.

    Then it verifies what it leaves: whatever `kafkalog verify` would still report as an
    error is listed as `left`, with the command that fixes it (often this one with --full
    or --force), and the exit code is 4. Running it twice changes nothing the second time.

    \b
    Examples:
      kafkalog recover /var/lib/kafka --dry-run
      kafkalog recover /var/lib/kafka/orders-0 --full
      kafkalog recover /var/lib/kafka --quarantine /mnt/spare/quarantine
    """
    if quarantine_dir and no_quarantine:
        raise UsageError("--quarantine and --no-quarantine contradict each other")
    if (t07 := v07.targets(paths)) is not None:  # Kafka 0.7: its own recovery rule
        return v07.recover(t07, full=full, force=force, dry_run=dry_run,
                           quarantine_dir=quarantine_dir, no_quarantine=no_quarantine, fmt=fmt)
    capacity = IndexCapacity.of(segment_index_bytes) if segment_index_bytes else None
    report: list[dict[str, Any]] = []
    root_report: list[dict[str, Any]] = []
    changed = problems = 0
    out = sys.stdout
    with ExitStack() as stack:
        targets = [open_target(p) for p in paths]
        parts = [x for t in targets for x in t.partitions(linked=True)]
        if not parts:
            raise UsageError("no partition dirs found under " + ", ".join(paths))
        # root files are repaired and checked where the target is a log dir, as verify does
        roots = list(dict.fromkeys(ld.path.resolve() for t in targets for ld in t.log_dirs))
        parts = lock_dirs(parts, stack, dry_run=dry_run, interrupted_ok=True,
                          writes=naming.ROOT_CHECKPOINTS if roots else
                          (naming.RECOVERY_POINT, naming.REPLICATION))
        qs = quarantines(parts, quarantine_dir, enabled=not no_quarantine, log_dirs=roots)
        rp_updates: dict[Path, dict[tuple[str, int], int | None]] = {}
        hw_updates: dict[Path, dict[tuple[str, int], int | None]] = {}
        validated: dict[Path, frozenset[int]] = {}  # segments recover validated deeply

        def one(part: PartitionDir) -> tuple[dict[str, Any], int | None, int | None,
                                               frozenset[int], int]:
            """Recover a partition (perhaps in a worker process: commands/parallel.py): its
            report entry, new recovery point and high watermark (None: unchanged), the
            segments validated, and the changes counted."""
            log_dir = part.path.parent.resolve()
            q = qs[log_dir]
            rp = recovery_point(part)
            rows_corrupt = rp == 0 and part.log_dir is not None and \
                _corrupt(log_dir / naming.RECOVERY_POINT)
            plan = plan_partition(part, rp, full=full, force=force,
                                  interval=index_interval_bytes, capacity=capacity)
            rows = _describe(plan)
            if not dry_run and not plan.empty:
                # finish the loader passes first, then plan the rest on the real files
                apply_loader_actions(plan.loader, q)
                plan2 = plan_partition(scan_partition(part.path, part.log_dir), rp, full=full,
                                       force=force, interval=index_interval_bytes,
                                       capacity=capacity)
                apply_plan(plan2, q)
                rows = _describe(plan) [:len(plan.loader)] + _describe(plan2)
                plan = plan2
            probs = [p.as_dict() for p in plan.problems]
            if part.topic_error is not None:
                probs.append({"file": str(part.path), "position": None,
                              "message": f"{part.topic_error}: its recovery point is not "
                                         "written (rename the dir)"})
            changed = int(bool(rows))
            rp_new = hw_new = None
            if part.log_dir is not None and plan.log_end_offset is not None and not probs:
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
                    rows.append({"action": "checkpoint",
                                 "file": str(log_dir / naming.REPLICATION),
                                 "reason": f"high watermark {hw} -> {plan.log_end_offset} (the "
                                           "broker clamps it to the log end at load)"})
                    changed += 1
            entry: dict[str, Any] = {**partition_fields(part), "recoveryPoint": rp,
                     "logEndOffset": plan.log_end_offset, "actions": rows, "problems": probs,
                     "left": []}
            return entry, rp_new, hw_new, frozenset(plan.validated), changed

        bar = stack.enter_context(progress(partition_bytes(parts), "recover"))
        for part, (entry, rp_new, hw_new, checked, n) in zip(parts, parallel.ordered(
                parts, one, jobs, done=ticked(bar)), strict=True):
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
        left = _check_after(parts, report, root_report, validated, dry_run, jobs)
    if fmt != "text":
        write_report(fmt, {"dryRun": dry_run}, report, LISTS, log_dirs=root_report)
    else:
        for r in [*report, *root_report]:
            if r["actions"] or r.get("problems") or r["left"]:
                out.write(_text(r["actions"], r.get("problems", []), r["left"], dry_run) + "\n")
        if not changed and not problems and not left and not settings.quiet:
            out.write("nothing to do\n")
    if problems or left or (dry_run and changed):
        return EXIT_UNFIXED
    return EXIT_FIXED if changed else 0


def _check_after(parts: list[PartitionDir], report: list[dict[str, Any]],
                 root_report: list[dict[str, Any]], validated: dict[Path, frozenset[int]],
                 dry_run: bool, jobs: int = 1) -> int:
    """Verify what recover leaves, so it never says "nothing to do" or "repaired" while
    verify would still report errors; fills each report's "left", returns how many. A dry
    run can tell only for a partition it would not change. Records of the segments recover
    has just validated with verify's own batch rules are not decoded a second time."""
    n = 0
    leos: dict[Path, dict[tuple[str, int], int | None]] = {}
    def check(part: PartitionDir) -> tuple[int | None, list[dict[str, Any]]]:
        f = Findings()
        fresh = scan_partition(part.path, part.log_dir)
        leo = check_partition(fresh, f, CheckOptions(), Stats(),
                              validated=validated.get(part.path, frozenset()))
        return leo, _left(f)

    todo = [(part, r) for part, r in zip(parts, report, strict=True)
            if not (dry_run and r["actions"])]
    for (part, r), (leo, left) in zip(todo, parallel.ordered(
            [part for part, _ in todo], check, jobs), strict=True):
        leos.setdefault(part.path.parent.resolve(), {})[part.key] = leo
        r["left"] = left
        n += len(r["left"])
    for r in root_report:
        if dry_run and r["actions"]:
            continue
        ld = scan_log_dir(Path(r["logDir"]))
        f = Findings()
        known = leos.get(Path(r["logDir"]), {})
        for part in ld.partitions:
            if part.key not in known:  # a dry run skipped it: its log end as it is now
                known[part.key] = check_partition(part, Findings(), CheckOptions(), Stats())
        check_log_dir_files(ld, f, known, {})
        r["left"] = _left(f)
        n += len(r["left"])
    return n
