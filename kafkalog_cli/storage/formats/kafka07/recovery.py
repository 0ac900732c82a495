"""Recovering a Kafka 0.7 partition offline, by 0.7's own rule, planned first, then applied.

0.7's rule (Log.loadSegments + FileMessageSet.recover): only the newest segment is
validated; entries are read in order and the file is truncated at the first one whose size
is below 5, runs past the end of the file, or whose payload CRC does not match (we also
cut at a compressed entry whose inner messages do not decode, which verify reports). Older
segments are never looked at, and a name that does not follow on from the previous
segment stops the broker.

Plan, per partition:
  1. a mixed dir (0.8+ files beside the segments) is a problem; nothing is touched
  2. the newest segment (every segment with `full`) is scanned up to its first damage
  3. damage at the tail (nothing valid after it in the segment or in later segments) is
     cut; when valid entries follow, cutting (as 0.7 would) drops them, so it is left as
     a problem unless `force`; later segments then go too
  4. segment names that do not follow on are a problem recover cannot fix
Apply, in this order so a crash at any point leaves a state the next run completes:
  a. later segments go to the quarantine, newest first (the damaged one becomes newest,
     so a rerun, even without `full`, finds and cuts its damage)
  b. the cut bytes are copied to the quarantine (manifest first), then the file is
     truncated and fsynced; the directory is fsynced at the end
"""

from __future__ import annotations

import os
from contextlib import ExitStack
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

from kafkalog_cli.codec.message_v07 import inner_messages
from kafkalog_cli.codec.model import Damage
from kafkalog_cli.errors import CorruptDataError
from kafkalog_cli.storage.checks.check import CheckOptions, Stats
from kafkalog_cli.storage.checks.findings import ERROR, Findings
from kafkalog_cli.storage.disk import naming
from kafkalog_cli.storage.disk.files import fsync_dir
from kafkalog_cli.storage.disk.safety import ensure_mutable, open_file
from kafkalog_cli.storage.disk.segment import scan_after
from kafkalog_cli.storage.drills.faults import crash_point
from kafkalog_cli.storage.formats.kafka07.check import check_target, target_problems
from kafkalog_cli.storage.formats.kafka07.layout import (
    Partition07,
    Segment07,
    Target07,
    find_target,
)
from kafkalog_cli.storage.formats.kafka07.scan import FRAMING, iter_entries
from kafkalog_cli.storage.maintenance.guard import lock_dirs, quarantines
from kafkalog_cli.storage.maintenance.quarantine import Quarantine
from kafkalog_cli.storage.maintenance.recover_run import Outcome, Progress, RecoverOptions
from kafkalog_cli.storage.maintenance.recovery import Action, Problem, cut_refused

Row = dict[str, Any]


@dataclass
class Plan07:
    part: Partition07
    actions: list[Action] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    log_end_offset: int | None = None

    @property
    def empty(self) -> bool:
        return not self.actions


def _first_damage(seg: Segment07) -> tuple[int, Damage | None]:
    """(bytes valid from the start, the damage that ends them or None). A compressed entry
    whose inner messages do not decode ends them too: 0.7 checks only sizes and CRCs, but
    verify reports it and a consumer fails on it just the same."""
    found: list[Damage] = []
    valid = 0
    for pos, msg in iter_entries(seg.path, on_damage=found.append):
        if found:
            break
        try:
            inner_messages(msg)
        except CorruptDataError as e:
            found.append(Damage(pos, "inner-invalid", f"compressed message does not decode: "
                                f"{e.reason}", msg.entry_size))
            break
        valid = pos + msg.entry_size
    return valid, (found[0] if found else None)


def plan_partition(part: Partition07, *, full: bool = False, force: bool = False) -> Plan07:
    plan = Plan07(part)
    if part.mixed:
        plan.problems.append(Problem(part.path, None, "holds both Kafka 0.7 .kafka segments and "
                                     "0.8+ files; kafkalog does not guess which is current"))
        return plan
    segs = part.segments
    if not segs:
        return plan
    keep = len(segs)
    checked = segs if full else segs[-1:]
    for seg in checked:
        i = segs.index(seg)
        valid, damage = _first_damage(seg)
        if damage is None:
            continue
        later = segs[i + 1:]
        nmsg, unsearched = scan_after(seg.path, FRAMING, valid)
        nlater = 0
        for s in later:
            n, gave_up = scan_after(s.path, FRAMING, -1)
            nlater += n
            unsearched = unsearched or gave_up
        follows = (f"{nmsg} entries after it in this segment, {nlater} in {len(later)} "
                   "later segments" if nmsg or nlater else None)
        if not force and cut_refused(plan.problems, seg.path, valid, damage.reason,
                                     unsearched, follows, "0.7"):
            return plan
        for s in reversed(later):
            plan.actions.append(Action("remove", s.path, "segment after the truncation point "
                                       "(0.7 cannot read past the cut)"))
        if valid < seg.size:
            plan.actions.append(Action(
                "truncate", seg.path, f"{damage.reason} (0.7 truncates at the first invalid "
                "entry)", start=valid, end=seg.size, offsets=(seg.start + valid, seg.end),
                records=nmsg))
        keep = i + 1
        plan.log_end_offset = seg.start + valid
        break
    else:
        plan.log_end_offset = segs[-1].end
    for prev, seg in pairwise(segs[:keep]):
        if prev.end != seg.start:
            plan.problems.append(Problem(
                seg.path, None, f"segment name does not follow on from {prev.path.name} "
                f"(expected start {prev.end}, found {seg.start}); 0.7 refuses to load the "
                "partition. recover cannot know which bytes are missing: rename or remove "
                "segments by hand"))
    return plan


def apply_plan(plan: Plan07, quarantine: Quarantine, *, fsync: bool = True) -> None:
    root = plan.part.path.parent
    for a in plan.actions:
        if a.kind == "remove" and a.path.exists():
            quarantine.remove(a.path, a.reason)
    for a in plan.actions:
        if a.kind != "truncate":
            continue
        assert a.start is not None and a.end is not None
        ensure_mutable(a.path, root)  # before its bytes are saved
        quarantine.save_range(a.path, a.start, a.end, a.reason,
                              offsets=list(a.offsets) if a.offsets else None, format="0.7")
        crash_point("recover.v07.truncate.before")
        with open_file(a.path, root, "existing") as f:
            f.truncate(a.start)
            if fsync:
                os.fsync(f.fileno())
        crash_point("recover.v07.truncate.after")
    if fsync and plan.actions:
        fsync_dir(plan.part.path)


def _owner(file: Path, report: list[Row], log_dirs: list[Row]) -> Row:
    """The report entry a finding about `file` belongs to: its partition's, else its log
    dir's (one is added for a log dir no target named)."""
    for r in report:
        if file == Path(r["path"]) or Path(r["path"]) in file.parents:
            return r
    for d in log_dirs:
        if file == Path(d["logDir"]) or Path(d["logDir"]) in file.parents:
            return d
    log_dirs.append({"logDir": str(file.parent), "actions": [], "left": []})
    return log_dirs[-1]


def recover(ts: list[Target07], o: RecoverOptions, stack: ExitStack,
            progress: Progress) -> Outcome:
    """0.7's recovery for every partition the targets name, under recover's lock and
    quarantine, then verify over what is left (as for current log dirs)."""
    done = Outcome()
    parts = lock_dirs([p for t in ts for p in t.partitions] +
                      [Partition07(link) for t in ts for link in t.linked],
                      stack, dry_run=o.dry_run, interrupted_ok=True, warn=o.warn)
    qs = quarantines(parts, o.quarantine_dir, enabled=not o.no_quarantine)
    bar = stack.enter_context(progress(sum(s.size for x in parts for s in x.segments)))
    for t in ts:
        for path, msg in target_problems(t):
            if path not in {p.path for p in parts}:  # mixed log dir: the 0.8+ dirs
                done.problems += 1
                pn = naming.parse_partition_dir(path.name)
                done.partitions.append({
                    "topic": pn and pn.topic, "partition": pn and pn.partition,
                    "path": str(path), "format": "0.7", "logEndOffset": None, "actions": [],
                    "problems": [{"file": str(path), "position": None, "message": msg}]})
    for part in parts:
        plan = plan_partition(part, full=o.full, force=o.force)
        if not o.dry_run and not plan.empty:
            apply_plan(plan, qs[part.path.parent.resolve()])
        rows = [a.as_dict() for a in plan.actions]
        probs = [p.as_dict() for p in plan.problems]
        done.changed += bool(rows)
        done.problems += len(probs)
        done.partitions.append({"topic": part.topic, "partition": part.partition,
                                "path": str(part.path), "format": "0.7",
                                "logEndOffset": plan.log_end_offset, "actions": rows,
                                "problems": probs})
        bar(sum(s.size for s in part.segments))
    # what verify would still report as errors, under its partition or its log dir (a dry
    # run that would change something cannot tell)
    done.log_dirs = [{"logDir": str(t.path), "actions": [], "left": []}
                     for t in ts if t.kind == "logdir"]
    for r in done.partitions:
        r["left"] = []
    if not (o.dry_run and done.changed):
        f = Findings()
        for t in ts:
            check_target(find_target(t.path) or t, f, CheckOptions(), Stats())
        for x in (x.as_dict() for x in f.items if x.severity == ERROR):
            _owner(Path(x["file"]), done.partitions, done.log_dirs)["left"].append(x)
            done.left += 1
    return done
