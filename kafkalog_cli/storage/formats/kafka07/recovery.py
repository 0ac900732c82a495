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
from dataclasses import dataclass, field
from itertools import pairwise

from kafkalog_cli.codec.message_v07 import inner_messages
from kafkalog_cli.codec.model import Damage
from kafkalog_cli.errors import CorruptDataError
from kafkalog_cli.storage.disk.files import fsync_dir
from kafkalog_cli.storage.disk.safety import ensure_mutable, open_file
from kafkalog_cli.storage.drills.faults import crash_point
from kafkalog_cli.storage.formats.kafka07.layout import Partition07, Segment07
from kafkalog_cli.storage.formats.kafka07.scan import iter_entries
from kafkalog_cli.storage.maintenance.quarantine import Quarantine
from kafkalog_cli.storage.maintenance.recovery import Action, Problem


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


def _valid_after(seg: Segment07, start: int) -> tuple[int, bool]:
    """Whole entries after byte `start`, skipping damage: what a cut there drops besides
    the bad entry at `start` (-1: all of them); and whether the search for them gave up
    somewhere (its work cap spent: more may follow)."""
    n = 0
    unsearched = False

    def on_damage(d: Damage) -> None:
        nonlocal unsearched
        unsearched = unsearched or d.code == "unsearched"
    for pos, _msg in iter_entries(seg.path, on_damage=on_damage, start=max(start, 0),
                                  resync=True):
        n += pos > start
    return n, unsearched


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
        nmsg, unsearched = _valid_after(seg, valid)
        nlater = 0
        for s in later:
            n, gave_up = _valid_after(s, -1)
            nlater += n
            unsearched = unsearched or gave_up
        if unsearched and not force:
            plan.problems.append(Problem(
                seg.path, valid,
                f"{damage.reason}; whether valid data follows is unknown: the search for "
                "entries after the damage gave up (too many look-alike headers to check). "
                "Salvage what follows first (kafkalog dump), or rerun with --force to truncate"))
            return plan
        if (nmsg or nlater) and not force:
            plan.problems.append(Problem(
                seg.path, valid,
                f"{damage.reason}; valid data follows ({nmsg} entries after it in this "
                f"segment, {nlater} in {len(later)} later segments): cutting here, as 0.7 "
                "would, drops them. Salvage them first (kafkalog dump), or rerun with --force "
                "to truncate"))
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
