"""The current format: `.log` segments of magic 0, 1 and 2 batches (storage/disk, checks,
queries and maintenance implement it; this module is its face for the commands)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from kafkalog_cli.codec.checkpoint import parse_leader_epochs, parse_offsets
from kafkalog_cli.codec.snapshot import decode_snapshot
from kafkalog_cli.errors import CorruptDataError, UsageError
from kafkalog_cli.storage.checks.check import (
    CheckOptions,
    Stats,
    check_log_dir_files,
    check_log_file,
    check_partition,
)
from kafkalog_cli.storage.checks.findings import ERROR, Findings
from kafkalog_cli.storage.disk import logdir, naming
from kafkalog_cli.storage.disk.checkpoints import (
    log_start_entry,
    log_start_offset,
    recovery_point,
)
from kafkalog_cli.storage.disk.files import read_small
from kafkalog_cli.storage.disk.logdir import PartitionDir, Target, scan_partition
from kafkalog_cli.storage.maintenance.floor import validation_floor
from kafkalog_cli.storage.queries import timelookup

if TYPE_CHECKING:  # what only generate, recover and migrate use is imported when they run:
    # a read-only command starts faster without it (so is info's overview, below)
    from kafkalog_cli.storage.maintenance.recover_run import (
        Ordered,
        Outcome,
        Progress,
        RecoverOptions,
    )

Row = dict[str, Any]
ENTRY_KINDS: Final = {"logdir": "logDir", "archive": "logDir", "partition": "partitionDir",
                      "file": "segmentFile"}
_SUFFIX_KINDS: Final = {naming.INDEX: "index-entry", naming.TIMEINDEX: "timeindex-entry",
                        naming.TXNINDEX: "aborted-txn", naming.SNAPSHOT: "producer"}


def is_log(path: Path, fn: naming.FileName) -> bool:
    return (fn.kind is naming.FileKind.SEGMENT and fn.suffix == naming.LOG) or \
        fn.kind is naming.FileKind.KRAFT_SNAPSHOT or \
        (path.name.endswith((".log", ".checkpoint")) and fn.kind is not naming.FileKind.ROOT)


def file_kind(path: Path, fn: naming.FileName) -> str:
    """The kind of rows a file that is not a log prints; refuses a file dump cannot read."""
    if fn.suffix in _SUFFIX_KINDS:
        return _SUFFIX_KINDS[fn.suffix]
    if fn.kind is naming.FileKind.LEADER_EPOCH:
        return "leader-epoch"
    if fn.name in naming.ROOT_CHECKPOINTS:
        return "checkpoint-entry"
    if fn.kind in (naming.FileKind.PARTITION_METADATA, naming.FileKind.ROOT,
                   naming.FileKind.QUORUM_STATE):
        return "file"
    raise UsageError(f"{path}: not a file kafkalog knows how to dump")


def segment_target(t: Target) -> tuple[PartitionDir, int]:
    """A segment file's partition, and the segment's base offset (info, txn)."""
    fn = naming.parse_file_name(t.path.name)
    if fn.kind is not naming.FileKind.SEGMENT or fn.offset is None or fn.temp:
        raise UsageError(f"{t.path}: name a segment file, a partition dir or a log dir")
    return scan_partition(t.path.parent), fn.offset


def _info(part: PartitionDir, bases: set[int] | None = None) -> Row:
    from kafkalog_cli.storage.queries.overview import partition_info

    return partition_info(part, bases).as_dict()


class CurrentFormat:
    name: Final = "current"
    has_keys: Final = True

    def find(self, path: Path) -> Target:
        return logdir.open_target(path)

    def partitions(self, target: Target, linked: bool = False) -> list[PartitionDir]:
        return target.partitions(linked=linked)

    # -- generate -----------------------------------------------------------------------

    @property
    def damage_kinds(self) -> tuple[str, ...]:
        from kafkalog_cli.storage.drills.damage import KINDS
        return KINDS

    def generate(self, out: Path, *, preset: str | None, damages: tuple[str, ...],
                 topics: tuple[str, ...], partitions: int, records: int, batch_records: int,
                 value_bytes: int, keys: int, tombstones: float, codecs: tuple[str, ...],
                 magic: int, transactions: bool, idempotent: bool, jitter_ms: int,
                 segment_bytes: int, seed: int) -> list[str]:
        """Write a seeded log dir, damaged as asked; the notes say what was done."""
        from kafkalog_cli.storage.drills.damage import KINDS, apply_damage
        from kafkalog_cli.storage.drills.generate import PRESETS, GenSpec, generate
        if not set(damages) <= set(KINDS):
            raise UsageError(f"--damage {', '.join(damages)}: some of these exist only for "
                             "Kafka 0.7 partitions; add --format 0.7")
        if preset:
            for _name, spec in PRESETS[preset]:
                generate(out, spec)
        else:
            generate(out, GenSpec(
                topics=list(topics), partitions=partitions, records=records,
                batch_records=batch_records, value_bytes=value_bytes, keys=keys,
                tombstone_ratio=tombstones, codecs=list(codecs), magic=magic,
                transactions=transactions, idempotent=idempotent, jitter_ms=jitter_ms,
                segment_bytes=segment_bytes, seed=seed))
        notes = []
        if damages:
            parts = logdir.open_target(out).partitions()
            for i, kind in enumerate(damages):
                notes.append(f"damage {kind}: " + apply_damage(parts[i % len(parts)], kind,
                                                                seed + i))
        return [*notes, f"wrote {out}"]

    # -- recover ------------------------------------------------------------------------

    def recover(self, targets: list[Target], o: RecoverOptions, stack: ExitStack,
                progress: Progress) -> Outcome:
        from kafkalog_cli.storage.maintenance import recover_run
        return recover_run.recover(targets, o, stack, progress)

    # -- migrate ------------------------------------------------------------------------

    def migration_source(self, t: Target) -> list[PartitionDir]:
        raise UsageError(f"{t.path}: holds no Kafka 0.7 .kafka segments (it is current data "
                         "already)")

    # -- verify -------------------------------------------------------------------------

    def check(self, target: Target, f: Findings, opts: CheckOptions, stats: Stats,
              advance: Callable[[int], None] | None = None,
              ordered: Ordered | None = None) -> None:
        if target.kind == "file":
            _check_file(target.path, f, opts, stats)
            return
        if target.kind == "partition":
            assert target.partition is not None
            check_partition(target.partition, f, opts, stats, advance)
            return
        for ld in target.log_dirs:
            leos: dict[tuple[str, int], int | None] = {}
            firsts: dict[tuple[str, int], int] = {}
            for part, leo in self.check_partitions(ld.partitions, f, opts, stats, advance,
                                                   ordered):
                if part.state:  # a -stray, -delete or -future copy: the checkpoints are not its
                    continue
                if part.key in leos:
                    f.add(ERROR, "PARTITION_DUPLICATE", part.path, None,
                          f"a second dir for {part.topic}-{part.partition} (its number "
                          "parses the same): a broker refuses to start (duplicate log "
                          "directories)", fix="move one of the two out of the log dir")
                leos[part.key] = leo
                if part.segments:
                    firsts[part.key] = part.segments[0].base_offset
            check_log_dir_files(ld, f, leos, firsts)

    def check_partitions(self, parts: list[PartitionDir], f: Findings, opts: CheckOptions,
                         stats: Stats, advance: Callable[[int], None] | None = None,
                         ordered: Ordered | None = None
                         ) -> Iterator[tuple[PartitionDir, int | None]]:
        """Check partition dirs (through `ordered`: over -j workers), in order: each with its
        log end offset, its findings and stats added to `f` and `stats`."""
        def check(part: PartitionDir) -> tuple[int | None, Findings, Stats]:
            if ordered is None:
                return check_partition(part, f, opts, stats, advance), f, stats
            pf, ps = Findings(), Stats()  # a worker's: absorbed below, in order
            return check_partition(part, pf, opts, ps), pf, ps

        done = None if advance is None else (
            lambda part: advance(part.log_bytes))
        results = map(check, parts) if ordered is None else ordered(parts, check, done=done)
        for part, (leo, pf, ps) in zip(parts, results, strict=True):
            if pf is not f:
                f.absorb(pf)
                stats.add(ps)
            yield part, leo

    # -- info ---------------------------------------------------------------------------

    def info(self, t: Target, ordered: Ordered | None = None) -> list[Row]:
        from kafkalog_cli.storage.queries.overview import lock_state

        def rows(parts: list[PartitionDir], bases: set[int] | None = None) -> list[Row]:
            work = functools.partial(_info, bases=bases)
            return list(map(work, parts) if ordered is None else ordered(parts, work))

        if t.kind == "file":
            part, base = segment_target(t)
            return [{"kind": "segmentFile", "path": str(t.path),
                     "partitions": rows([part], {base})}]
        if not t.log_dirs:
            return [{"kind": ENTRY_KINDS[t.kind], "path": str(t.path),
                     "partitions": rows(t.partitions(linked=True))}]
        out = []
        for ld in t.log_dirs:
            cache = ld.remote_index_cache
            out.append({"kind": "logDir", "path": str(ld.path),
                        "cleanShutdown": naming.CLEAN_SHUTDOWN in ld.root_files,
                        "lock": lock_state(ld),
                        "unknownFiles": ld.unknown + [d + "/" for d in ld.bad_dirs],
                        "remoteIndexCache": None if cache is None else {
                            "files": len(cache.files), "bytes": cache.bytes},
                        "partitions": rows(ld.partitions)})
        return out

    # -- find-by-time -------------------------------------------------------------------

    def list_offsets(self, part: PartitionDir, when: int | str) -> timelookup.Found:
        """ListOffsets for a timestamp, or earliest / latest / max-timestamp."""
        log_start = log_start_entry(part)  # unreadable: none, as Kafka reads it
        if when == "earliest":  # the log start offset, as the broker loads it
            first = part.segments[0].base_offset if part.segments else 0
            start = log_start_offset(part, first, local_if_unknown=True)
            return timelookup.Found(start, None, timelookup.epoch_for_offset(part, start))
        if when == "latest":
            return timelookup.Found(timelookup.log_end_offset(part), None,
                                    timelookup.epoch_for_offset(part, None))
        if when == "max-timestamp":
            return timelookup.max_timestamp_offset(part)
        assert isinstance(when, int)
        return timelookup.offset_for_time(part, when, log_start)

    # -- dump ---------------------------------------------------------------------------

    def row_kinds(self, target: Target, records: bool, batches: bool) -> list[str]:
        if target.kind == "file":
            fn = naming.parse_file_name(target.path.name)
            if not is_log(target.path, fn):
                return [file_kind(target.path, fn)]
        return ["batch"] * batches + ["record"] * records

    def dump(self, target: Target, sink: Any) -> None:
        """Through the dump command's batch and file readers (`sink`)."""
        if target.kind != "file":
            sink.partitions(target.partitions())
            return
        fn = naming.parse_file_name(target.path.name)
        if is_log(target.path, fn):
            sink.log_file(target.path, fn.offset)
            return
        try:
            sink.other_file(target.path, fn)
        except CorruptDataError as e:
            raise e.located(str(target.path), 0) from None


def _check_file(path: Path, f: Findings, opts: CheckOptions, stats: Stats) -> None:
    fn = naming.parse_file_name(path.name)
    if fn.kind is naming.FileKind.SEGMENT and fn.suffix != naming.SNAPSHOT and not fn.temp:
        part = logdir.open_target(path.parent).partition or scan_partition(path.parent)
        floor = validation_floor([s.base_offset for s in part.segments], recovery_point(part))
        part.segments = [s for s in part.segments if s.base_offset == fn.offset]
        if not part.segments:
            raise UsageError(f"{path}: index file without its .log; nothing to check it against")
        part.temp_files, part.orphan_indexes, part.unknown = [], [], []
        part.snapshots, part.kraft_snapshots, part.special = [], [], []
        part.not_files = [x for x in part.not_files
                          if naming.parse_file_name(x[0]).offset == fn.offset]
        check_partition(part, f, opts, stats, floor_base=floor)
        return
    try:
        if fn.kind is naming.FileKind.SEGMENT and fn.suffix == naming.SNAPSHOT:
            decode_snapshot(read_small(path))
        elif fn.kind is naming.FileKind.LEADER_EPOCH:
            parse_leader_epochs(read_small(path))
        elif fn.name in naming.ROOT_CHECKPOINTS:
            parse_offsets(read_small(path))
        elif fn.kind is naming.FileKind.KRAFT_SNAPSHOT or path.name.endswith(
                (".log", ".log.swap", ".log.cleaned", ".log.deleted", ".checkpoint")):
            check_log_file(path, fn.offset if fn.kind is naming.FileKind.SEGMENT and
                           fn.offset is not None else 0, f, opts, stats,
                           fix_log=f"kafkalog recover {path.parent}")
        else:
            raise UsageError(f"{path}: not a file kafkalog knows how to verify")
    except CorruptDataError as e:
        f.add(ERROR, "FILE_CORRUPT", path, e.pos, e.reason)


FORMAT: Final = CurrentFormat()
