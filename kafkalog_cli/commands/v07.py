"""Kafka 0.7 targets for the commands operators already use (dump, verify, recover, info,
find-by-time, generate): each command calls in here near its top when a PATH holds
`.kafka` segments, and goes on as before when none does.

In 0.7, `offset` is the byte offset of a message's entry in the partition's stream.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any, TypeVar

import click

from kafkalog_cli.codec import compression
from kafkalog_cli.codec.message_v07 import Message07, codec_name, inner_messages
from kafkalog_cli.codec.model import Damage
from kafkalog_cli.errors import (
    EXIT_FIXED,
    EXIT_UNFIXED,
    CorruptDataError,
    UsageError,
)
from kafkalog_cli.output.console import note, settings, warn
from kafkalog_cli.output.render import exploding, make_renderer, write_document, write_report
from kafkalog_cli.storage.checks.check import CheckOptions, Stats
from kafkalog_cli.storage.checks.findings import ERROR, Findings
from kafkalog_cli.storage.disk import naming
from kafkalog_cli.storage.disk.lock import LogDirLock
from kafkalog_cli.storage.disk.logdir import require_exists
from kafkalog_cli.storage.disk.naming import LOCK
from kafkalog_cli.storage.disk.safety import refuse_link, refuse_links
from kafkalog_cli.storage.formats.kafka07.check import check_target, target_problems
from kafkalog_cli.storage.formats.kafka07.layout import (
    CLEAN_SHUTDOWN,
    Partition07,
    Segment07,
    Target07,
    find_target,
)
from kafkalog_cli.storage.formats.kafka07.recovery import apply_plan, plan_partition
from kafkalog_cli.storage.formats.kafka07.scan import iter_entries
from kafkalog_cli.storage.maintenance.quarantine import Quarantine
from kafkalog_cli.storage.queries.timelookup import Found

F = TypeVar("F", bound=Callable[..., Any])
Row = dict[str, Any]
FORMAT = "0.7"


def targets(paths: tuple[str, ...]) -> list[Target07] | None:
    """The 0.7 targets PATHS name; None when none holds 0.7 data; refuses a mix of both."""
    found = [(p, find_target(p)) for p in paths]
    v07 = [t for _, t in found if t is not None]
    if not v07:
        return None
    for p, t in found:
        if t is None:
            require_exists(p)
    if len(v07) < len(found):
        other = ", ".join(p for p, t in found if t is None)
        raise UsageError(f"{other}: not Kafka 0.7 data, while {v07[0].path} is; run the "
                         "command on each kind of path separately")
    return v07


def _problems_to_stderr(t: Target07) -> int:
    n = 0
    for path, msg in target_problems(t):
        warn(f"{path}: {msg}")
        n += 1
    return n


# -- verify -----------------------------------------------------------------------------

def verify_path(path: str, f: Findings, opts: CheckOptions, stats: Stats) -> bool:
    """Check PATH if it holds 0.7 data (True), else leave it to the current checks (False)."""
    t = find_target(path)
    if t is None:
        return False
    check_target(t, f, opts, stats)
    return True


# -- dump -------------------------------------------------------------------------------

KIND_COLUMNS: dict[str, tuple[str, ...]] = {  # dump's rows of 0.7 data (see dump.KIND_COLUMNS)
    "entry": ("kind", "file", "topic", "partition", "position", "offset", "nextOffset", "size",
              "magic", "attributes", "compression", "crc", "isValid", "payloadSize"),
    "message": ("kind", "topic", "partition", "offset", "nextOffset", "innerIndex", "magic",
                "attributes", "compression", "crc", "isValid", "payloadSize", "payload"),
}


def dump_target(path: str, t: Target07, d: Any, print_data: bool) -> None:
    """Dump the 0.7 data PATH names with dump's Dumper `d`."""
    flt = d.f
    if any(v is not None for v in (flt.from_time, flt.to_time, flt.key, flt.producer_id)):
        raise UsageError(f"{path}: Kafka 0.7 messages have no timestamps, keys or producer ids "
                         "to filter on; use --from-offset/--to-offset (byte offsets)")
    if flt.only == "control":
        return
    d.problems += _problems_to_stderr(t)
    for part in t.partitions:
        if part.mixed and t.kind != "file":
            continue
        for seg in part.segments:
            if flt.to_offset is not None and seg.start > flt.to_offset:
                break
            if flt.from_offset is not None and seg.end <= flt.from_offset:
                continue
            _dump_segment(d, part, seg, print_data)


def _damage_reporter(d: Any, seg: Segment07) -> Callable[[Damage], None]:
    def report(dmg: Damage) -> None:
        d.problems += 1
        warn(f"{seg.path}:{dmg.position}: {dmg.reason} (offset {seg.start + dmg.position}) "
             f"[{dmg.code}]")
        if dmg.position + dmg.size >= seg.size:
            d.out.text(f"Found {dmg.size} invalid bytes at the end of {seg.path.name}")
    return report


def _dump_segment(d: Any, part: Partition07, seg: Segment07, print_data: bool) -> None:
    out, flt, enc = d.out, d.f, d.enc
    out.text(f"Dumping {seg.path}")
    out.text(f"Starting offset: {seg.start}")
    base = {"topic": part.topic, "partition": part.partition}
    for pos, msg in iter_entries(seg.path, on_damage=_damage_reporter(d, seg), resync=True):
        offset = seg.start + pos
        nxt = offset + msg.entry_size
        if flt.from_offset is not None and nxt <= flt.from_offset:
            continue
        if flt.to_offset is not None and offset > flt.to_offset:
            break
        if d.batches:
            row = {"kind": "entry", "file": str(seg.path), **base, "position": pos,
                   "offset": offset, "nextOffset": nxt, "size": msg.size,
                   **_fields(msg)}
            out.row(row)
            out.text(_entry_text(row))
        if not d.records:
            continue
        try:
            inner = inner_messages(msg, d.max_decompressed)
        except CorruptDataError as e:
            d.problems += 1
            warn(f"{seg.path}:{pos}: compressed message does not decode: {e.reason}")
            continue
        wrapped = msg.codec != compression.NONE
        for i, m in enumerate(inner):
            row = {"kind": "message", **base, "offset": offset, "nextOffset": nxt,
                   "innerIndex": i if wrapped else None, **_fields(m),
                   "payload": enc(bytes(m.payload))}
            out.row(row)
            out.text(_message_text(row, print_data))


def _fields(m: Message07) -> Row:
    return {"magic": m.magic, "attributes": m.attributes, "compression": codec_name(m.codec),
            "crc": m.crc, "isValid": m.is_valid(), "payloadSize": len(m.payload)}


def _bool(v: bool) -> str:
    return "true" if v else "false"


def _entry_text(r: Row) -> str:
    # 0.7's DumpLogSegments printed "offset: … isvalid: … payloadsize: … magic: …
    # compresscodec: …"; position and nextOffset added
    return (f"offset: {r['offset']} position: {r['position']} nextOffset: {r['nextOffset']} "
            f"isvalid: {_bool(r['isValid'])} payloadsize: {r['payloadSize']} magic: "
            f"{r['magic']} compresscodec: {r['compression']} crc: {r['crc']}")


def _message_text(r: Row, print_data: bool) -> str:
    inner = "" if r["innerIndex"] is None else f" innerIndex: {r['innerIndex']}"
    line = (f"| offset: {r['offset']} nextOffset: {r['nextOffset']}{inner} payloadsize: "
            f"{r['payloadSize']} magic: {r['magic']} compresscodec: {r['compression']} "
            f"crc: {r['crc']} isvalid: {_bool(r['isValid'])}")
    return line + (f" payload: {r['payload']}" if print_data else "")


# -- recover ----------------------------------------------------------------------------

def _recover_text(rows: list[Row], probs: list[Row], dry: bool) -> str:
    lines = []
    for r in rows:
        extra = ""
        if "positions" in r:
            extra += f" bytes {r['positions'][0]}..{r['positions'][1]}"
        if r.get("offsets"):
            extra += f" offsets {r['offsets'][0]}..{r['offsets'][1]}"
        if r.get("records"):
            extra += f" ({r['records']} valid entries dropped)"
        lines.append(f"{'would ' if dry else ''}{r['action']:<13} {r['file']}{extra}: "
                     f"{r['reason']}")
    for p in probs:
        at = f":{p['position']}" if p["position"] is not None else ""
        lines.append(f"problem       {p['file']}{at}: {p['message']}")
    return "\n".join(lines)


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


def recover(ts: list[Target07], *, full: bool, force: bool, dry_run: bool,
            quarantine_dir: Path | None, no_quarantine: bool, fmt: str) -> int:
    """0.7's recovery (see storage/v07_recovery.py), with recover's options and exit codes."""
    for t in ts:
        if t.kind == "file":
            raise UsageError(f"{t.path}: name the partition dir or log dir, not a segment "
                             "(0.7 recovers the newest segment of a partition)")
    out = sys.stdout
    report: list[Row] = []
    changed = problems = 0
    with ExitStack() as stack:
        parts = [p for t in ts for p in t.partitions]
        roots = dict.fromkeys(p.path.parent.resolve() for p in parts)
        for linked in (p for t in ts for p in t.linked):
            refuse_link(linked)  # before any change, as for current log dirs
        for root in roots:
            refuse_link(root / LOCK)
        for part in parts:
            refuse_links(part.path)
        qs = {root: Quarantine(root, quarantine_dir, enabled=not no_quarantine)
              for root in roots}
        if not dry_run:
            for root in roots:
                stack.enter_context(LogDirLock(root))
        for t in ts:
            for path, msg in target_problems(t):
                if path not in {p.path for p in parts}:  # mixed log dir: the 0.8+ dirs
                    problems += 1
                    pn = naming.parse_partition_dir(path.name)
                    report.append({"topic": pn and pn.topic, "partition": pn and pn.partition,
                                   "path": str(path), "format": FORMAT,
                                   "logEndOffset": None, "actions": [],
                                   "problems": [{"file": str(path), "position": None,
                                                 "message": msg}]})
        for part in parts:
            plan = plan_partition(part, full=full, force=force)
            if not dry_run and not plan.empty:
                apply_plan(plan, qs[part.path.parent.resolve()])
            rows = [a.as_dict() for a in plan.actions]
            probs = [p.as_dict() for p in plan.problems]
            changed += bool(rows)
            problems += len(probs)
            report.append({"topic": part.topic, "partition": part.partition,
                           "path": str(part.path), "format": FORMAT,
                           "logEndOffset": plan.log_end_offset, "actions": rows,
                           "problems": probs})
    # what verify would still report as errors: recover never claims a clean dir over them
    # (a dry run that would change something cannot tell). Each is listed under its
    # partition, or under its log dir (as for current data) when outside every partition.
    left: list[Row] = []
    log_dirs: list[Row] = [{"logDir": str(t.path), "actions": [], "left": []}
                           for t in ts if t.kind == "logdir"]
    for r in report:
        r["left"] = []
    if not (dry_run and changed):
        f = Findings()
        for t in ts:
            check_target(find_target(t.path) or t, f, CheckOptions(), Stats())
        left = [x.as_dict() for x in f.items if x.severity == ERROR]
        for x in left:
            _owner(Path(x["file"]), report, log_dirs)["left"].append(x)
    if fmt != "text":
        write_report(fmt, {"dryRun": dry_run}, report,
                     {"actions": "action", "problems": "problem", "left": "left"},
                     log_dirs=log_dirs)
    else:
        for r in report:
            if r["actions"] or r["problems"]:
                out.write(_recover_text(r["actions"], r["problems"], dry_run) + "\n")
        for x in left:
            at = f":{x['position']}" if x["position"] is not None else ""
            fix = f"fix: {x['fix']}" if x["fix"] else "no kafkalog command fixes this"
            out.write(f"left          {x['file']}{at}: {x['code']}: {x['message']}; {fix}\n")
        if not changed and not problems and not left and not settings.quiet:
            out.write("nothing to do\n")
    if problems or left or (dry_run and changed):
        return EXIT_UNFIXED
    return EXIT_FIXED if changed else 0


# -- info and find-by-time --------------------------------------------------------------

def _partition_info(part: Partition07) -> Row:
    info: Row = {"topic": part.topic, "partition": part.partition, "path": str(part.path),
                 "format": FORMAT, "segments": len(part.segments),
                 "bytes": sum(s.size for s in part.segments),
                 "logStartOffset": part.segments[0].start if part.segments else None,
                 "logEndOffset": None, "entries": 0, "codecs": set(), "magics": set(),
                 "damaged": False, "mixed": part.mixed}
    for seg in part.segments:
        def hit(_d: Damage) -> None:
            info["damaged"] = True
        end = seg.start
        for pos, msg in iter_entries(seg.path, on_damage=hit):
            info["entries"] += 1
            info["codecs"].add(codec_name(msg.codec))
            info["magics"].add(msg.magic)
            end = seg.start + pos + msg.entry_size
        info["logEndOffset"] = end
    info["codecs"], info["magics"] = sorted(info["codecs"]), sorted(info["magics"])
    return info


_ENTRY_KINDS = {"logdir": "logDir", "partition": "partitionDir", "file": "segmentFile"}


def _info_text(entry: Row) -> str:
    from tabulate import tabulate

    head = f"{entry['path']}  format: Kafka 0.7 (offsets are byte offsets)"
    if "cleanShutdown" in entry:
        head += f"  clean shutdown: {'yes' if entry['cleanShutdown'] else 'no'}"
    rows = [[f"{x['topic']}-{x['partition']}", x["format"], x["segments"],
             "-" if x["logStartOffset"] is None else x["logStartOffset"],
             "-" if x["logEndOffset"] is None else x["logEndOffset"], x["bytes"], x["entries"],
             ",".join(x["codecs"]) or "-",
             ",".join(s for s, on in (("damaged", x["damaged"]), ("mixed", x["mixed"]))
                      if on) or "-"]
            for x in entry["partitions"]]
    lines = [head, tabulate(rows, headers=["partition", "format", "segs", "start", "end",
                                           "bytes", "entries", "codecs", "state"],
                            tablefmt="plain")]
    if entry.get("mixedDirs"):
        lines.append("0.8+ partition dirs here too (mixed): " + ", ".join(entry["mixedDirs"]))
    return "\n".join(lines) + "\n"


def info(ts: list[Target07], fmt: str) -> int:
    report: list[Row] = []
    for t in ts:
        entry: Row = {"kind": _ENTRY_KINDS[t.kind], "path": str(t.path), "format": FORMAT}
        if t.kind == "logdir":
            entry["cleanShutdown"] = CLEAN_SHUTDOWN in t.root_files
            entry["mixedDirs"] = [str(d) for d in t.modern_dirs]
        entry["partitions"] = [_partition_info(p) for p in t.partitions]
        report.append(entry)
    if fmt == "json":
        write_document(report)
        return 0
    out = make_renderer(fmt, _info_text, flatten=exploding({"partitions": "partition"}, ()))
    for entry in report:
        out.row(entry)
    out.close()
    return 0


def find_by_time(ts: list[Target07], when: int | str, fmt: str,
                 result_row: Callable[..., Row], text: Callable[[Row], str]) -> int:
    """earliest and latest only; `result_row` and `text` are find-by-time's own."""
    if when not in ("earliest", "latest"):
        raise UsageError(f"{ts[0].path}: Kafka 0.7 messages carry no timestamp, so there is "
                         "nothing to search by time (0.7 brokers answered time queries from "
                         "segment file modification times only); use --timestamp earliest or "
                         "latest, or `kafkalog migrate` the partition first")
    out = make_renderer(fmt, text)
    for t in ts:
        for part in t.partitions:
            offset = None
            if part.segments:
                offset = part.segments[0].start if when == "earliest" else \
                    _partition_info(part)["logEndOffset"]
            out.row(result_row(part.topic, part.partition, when, None, Found(offset, None)))
    out.close()
    return 0


# -- generate ---------------------------------------------------------------------------

def damage_kinds(current: tuple[str, ...]) -> list[str]:
    """generate's --damage choices: the current format's kinds, then 0.7's own."""
    from kafkalog_cli.storage.drills.generate07 import DAMAGES

    return [*current, *(k for k in DAMAGES if k not in current)]


def generate_options(f: F) -> F:
    return click.option("--format", "layout", type=click.Choice(["current", FORMAT]),
                        default="current", show_default=True,
                        help="0.7 writes Kafka 0.7 partitions (.kafka segments, byte offsets; "
                             "--damage then takes " + ", ".join(_damages07()) + ").")(f)


def _damages07() -> tuple[str, ...]:
    from kafkalog_cli.storage.drills.generate07 import DAMAGES

    return DAMAGES


def generate(out: Path, *, layout: str, damage: tuple[str, ...], preset: str | None,
             topics: tuple[str, ...], partitions: int, records: int, batch_records: int,
             value_bytes: int, codecs: tuple[str, ...], magic: int, segment_bytes: int,
             seed: int) -> int:
    from kafkalog_cli.storage.drills.generate07 import Gen07Spec
    from kafkalog_cli.storage.drills.generate07 import generate as gen07

    if layout != FORMAT:
        raise UsageError(f"--damage {', '.join(damage)}: some of these exist only for Kafka "
                         "0.7 partitions; add --format 0.7")
    if preset:
        raise UsageError("--preset writes current log dirs; leave it out with --format 0.7")
    spec = Gen07Spec(topics=list(topics), partitions=partitions, records=records,
                     batch_records=batch_records, value_bytes=value_bytes, codecs=list(codecs),
                     magic=1 if magic == 2 else magic, segment_bytes=segment_bytes, seed=seed,
                     damage=list(damage))
    _leos, done = gen07(out, spec)
    for dmg in done:
        at = f":{dmg.position}" if dmg.position is not None else ""
        note(f"damage {dmg.kind} at {dmg.path}{at}")
    note(f"wrote {out} (Kafka 0.7 format)")
    return 0
