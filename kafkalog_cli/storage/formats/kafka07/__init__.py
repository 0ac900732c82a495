"""Kafka 0.7 as a format: `.kafka` segments named, and messages addressed, by byte offset.

layout.py names and finds partitions, scan.py frames entries, check.py holds verify's
findings, recovery.py 0.7's own recovery rule, migrate.py the conversion to the current
format. This module is the format's face for the commands (see formats/__init__.py).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from kafkalog_cli.codec import compression
from kafkalog_cli.codec.message_v07 import Message07, codec_name, inner_messages
from kafkalog_cli.codec.model import Damage
from kafkalog_cli.errors import CorruptDataError, UsageError
from kafkalog_cli.storage.checks.check import CheckOptions, Stats
from kafkalog_cli.storage.checks.findings import Findings
from kafkalog_cli.storage.formats.kafka07.check import check_target, target_problems
from kafkalog_cli.storage.formats.kafka07.layout import (
    CLEAN_SHUTDOWN,
    Partition07,
    Segment07,
    Target07,
    find_target,
)
from kafkalog_cli.storage.formats.kafka07.scan import iter_entries
from kafkalog_cli.storage.queries.timelookup import Found

if TYPE_CHECKING:  # recover and migrate import their modules when they run (start-up)
    from kafkalog_cli.storage.maintenance.recover_run import Outcome, Progress, RecoverOptions

Row = dict[str, Any]
_ENTRY_KINDS: Final = {"logdir": "logDir", "partition": "partitionDir", "file": "segmentFile"}


def _fields(m: Message07) -> Row:
    return {"magic": m.magic, "attributes": m.attributes, "compression": codec_name(m.codec),
            "crc": m.crc, "isValid": m.is_valid(), "payloadSize": len(m.payload)}


def partition_info(part: Partition07) -> Row:
    info: Row = {"topic": part.topic, "partition": part.partition, "path": str(part.path),
                 "format": FORMAT.name, "segments": len(part.segments),
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


class Kafka07Format:
    name: Final = "0.7"
    has_keys: Final = False

    find = staticmethod(find_target)

    def partitions(self, target: Target07, linked: bool = False) -> list[Partition07]:
        return target.partitions

    @property
    def damage_kinds(self) -> tuple[str, ...]:
        from kafkalog_cli.storage.drills.generate07 import DAMAGES  # it imports layout.py

        return DAMAGES

    def generate(self, out: Path, *, preset: str | None, damages: tuple[str, ...],
                 topics: tuple[str, ...], partitions: int, records: int, batch_records: int,
                 value_bytes: int, codecs: tuple[str, ...], magic: int, segment_bytes: int,
                 seed: int, **_current_only: Any) -> list[str]:
        from kafkalog_cli.storage.drills.generate07 import Gen07Spec
        from kafkalog_cli.storage.drills.generate07 import generate as generate07

        if preset:
            raise UsageError("--preset writes current log dirs; leave it out with --format 0.7")
        spec = Gen07Spec(topics=list(topics), partitions=partitions, records=records,
                         batch_records=batch_records, value_bytes=value_bytes,
                         codecs=list(codecs), magic=1 if magic == 2 else magic,
                         segment_bytes=segment_bytes, seed=seed, damage=list(damages))
        _leos, done = generate07(out, spec)
        notes = []
        for dmg in done:
            at = f":{dmg.position}" if dmg.position is not None else ""
            notes.append(f"damage {dmg.kind} at {dmg.path}{at}")
        return [*notes, f"wrote {out} (Kafka 0.7 format)"]

    def recover(self, targets: list[Target07], o: RecoverOptions, stack: ExitStack,
                progress: Progress) -> Outcome:
        for t in targets:
            if t.kind == "file":
                raise UsageError(f"{t.path}: name the partition dir or log dir, not a segment "
                                 "(0.7 recovers the newest segment of a partition)")
        from kafkalog_cli.storage.formats.kafka07 import recovery
        return recovery.recover(targets, o, stack, progress)

    def migration_source(self, t: Target07) -> list[Partition07]:
        """The partitions `migrate` converts, each checked first; refuses what it cannot."""
        if t.kind == "file":
            raise UsageError(f"{t.path}: name the partition dir or log dir, not a segment")
        problems = target_problems(t)
        if problems:
            path, msg = problems[0]
            raise CorruptDataError(msg, str(path))
        from kafkalog_cli.storage.formats.kafka07 import migrate
        for part in t.partitions:
            migrate.check_migratable(part)
        return t.partitions

    def check(self, target: Target07, f: Findings, opts: CheckOptions, stats: Stats,
              advance: Callable[[int], None] | None = None, ordered: Any = None) -> None:
        check_target(target, f, opts, stats)

    def info(self, t: Target07, ordered: Any = None) -> list[Row]:
        entry: Row = {"kind": _ENTRY_KINDS[t.kind], "path": str(t.path), "format": self.name}
        if t.kind == "logdir":
            entry["cleanShutdown"] = CLEAN_SHUTDOWN in t.root_files
            entry["mixedDirs"] = [str(d) for d in t.modern_dirs]
        entry["partitions"] = [partition_info(p) for p in t.partitions]
        return [entry]

    def list_offsets(self, part: Partition07, when: int | str) -> Found:
        if when not in ("earliest", "latest"):
            raise UsageError(f"{part.path}: Kafka 0.7 messages carry no timestamp, so there "
                             "is nothing to search by time (0.7 brokers answered time queries "
                             "from segment file modification times only); use --timestamp "
                             "earliest or latest, or `kafkalog migrate` the partition first")
        if not part.segments:
            return Found(None, None)
        if when == "earliest":
            return Found(part.segments[0].start, None)
        return Found(partition_info(part)["logEndOffset"], None)

    def row_kinds(self, target: Target07, records: bool, batches: bool) -> list[str]:
        return ["entry"] * batches + ["message"] * records

    def dump(self, t: Target07, sink: Any) -> None:
        flt = sink.f
        if flt.only == "control":  # 0.7 has no control batches
            return
        for path, msg in target_problems(t):
            sink.problem(f"{path}: {msg}")
        for part in t.partitions:
            if part.mixed and t.kind != "file":
                continue
            for seg in part.segments:
                if flt.to_offset is not None and seg.start > flt.to_offset:
                    break
                if flt.from_offset is not None and seg.end <= flt.from_offset:
                    continue
                _dump_segment(sink, part, seg)


def _damage_reporter(sink: Any, seg: Segment07) -> Callable[[Damage], None]:
    def report(dmg: Damage) -> None:
        sink.problem(f"{seg.path}:{dmg.position}: {dmg.reason} (offset "
                     f"{seg.start + dmg.position}) [{dmg.code}]")
        if dmg.position + dmg.size >= seg.size:
            sink.out.text(f"Found {dmg.size} invalid bytes at the end of {seg.path.name}")
    return report


def _dump_segment(sink: Any, part: Partition07, seg: Segment07) -> None:
    out, flt = sink.out, sink.f
    out.text(f"Dumping {seg.path}")
    out.text(f"Starting offset: {seg.start}")
    base = {"topic": part.topic, "partition": part.partition}
    for pos, msg in iter_entries(seg.path, on_damage=_damage_reporter(sink, seg), resync=True):
        offset = seg.start + pos
        nxt = offset + msg.entry_size
        if flt.from_offset is not None and nxt <= flt.from_offset:
            continue
        if flt.to_offset is not None and offset > flt.to_offset:
            break
        if sink.batches:
            out.row({"kind": "entry", "file": str(seg.path), **base, "position": pos,
                     "offset": offset, "nextOffset": nxt, "size": msg.size, **_fields(msg)})
        if not sink.records:
            continue
        try:
            inner = inner_messages(msg, sink.max_decompressed)
        except CorruptDataError as e:
            sink.problem(f"{seg.path}:{pos}: compressed message does not decode: {e.reason}")
            continue
        wrapped = msg.codec != compression.NONE
        for i, m in enumerate(inner):
            out.row({"kind": "message", **base, "offset": offset, "nextOffset": nxt,
                     "innerIndex": i if wrapped else None, **_fields(m),
                     "payload": sink.enc(bytes(m.payload))})


FORMAT: Final = Kafka07Format()
