"""`kafkalog verify`: collect every finding in log dirs, partitions or files."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from kafkalog_cli.codec.checkpoint import parse_leader_epochs, parse_offsets
from kafkalog_cli.codec.snapshot import decode_snapshot
from kafkalog_cli.commands import options, parallel, v07
from kafkalog_cli.commands.common import partition_bytes
from kafkalog_cli.errors import EXIT_UNFIXED, CorruptDataError, UsageError
from kafkalog_cli.output.console import ESCAPE, paint, progress, settings
from kafkalog_cli.output.render import make_renderer, write_document
from kafkalog_cli.storage.disk import naming
from kafkalog_cli.storage.checks.check import (
    CheckOptions,
    Stats,
    check_log_dir_files,
    check_log_file,
    check_partition,
)
from kafkalog_cli.storage.disk.checkpoints import recovery_point
from kafkalog_cli.storage.checks.findings import ERROR, INFO, WARNING, Finding, Findings
from kafkalog_cli.storage.disk.logdir import PartitionDir, Target, open_target, scan_partition
from kafkalog_cli.storage.maintenance.recovery import validation_floor


def verify_target(target: Target, f: Findings, opts: CheckOptions, stats: Stats,
                  advance: Callable[[int], None] | None = None, jobs: int = 1) -> None:
    if target.kind == "file":
        _verify_file(target.path, f, opts, stats)
        return
    if target.kind == "partition":
        assert target.partition is not None
        check_partition(target.partition, f, opts, stats, advance)
        return
    def check(part: PartitionDir) -> tuple[int | None, Findings, Stats]:
        pf, ps = Findings(), Stats()  # a worker's: absorbed below, in order
        return check_partition(part, pf, opts, ps, advance if jobs == 1 else None), pf, ps

    done = None if advance is None or jobs == 1 else (
        lambda part: advance(partition_bytes([part])))
    for ld in target.log_dirs:
        leos: dict[tuple[str, int], int | None] = {}
        firsts: dict[tuple[str, int], int] = {}
        for part, (leo, pf, ps) in zip(ld.partitions, parallel.ordered(
                ld.partitions, check, jobs, done=done), strict=True):
            f.absorb(pf)
            for k in vars(stats):
                setattr(stats, k, getattr(stats, k) + getattr(ps, k))
            if part.state:  # a -stray, -delete or -future copy: the checkpoints are not its
                continue
            leos[part.key] = leo
            if part.segments:
                firsts[part.key] = part.segments[0].base_offset
        check_log_dir_files(ld, f, leos, firsts)


def _verify_file(path: Path, f: Findings, opts: CheckOptions, stats: Stats) -> None:
    fn = naming.parse_file_name(path.name)
    if fn.kind is naming.FileKind.SEGMENT and fn.suffix != naming.SNAPSHOT and not fn.temp:
        part = open_target(path.parent).partition or scan_partition(path.parent)
        # where plain recover starts validating, which decides the --full of a fix hint
        floor = validation_floor([s.base_offset for s in part.segments], recovery_point(part))
        part.segments = [s for s in part.segments if s.base_offset == fn.offset]
        if not part.segments:
            raise UsageError(f"{path}: index file without its .log; nothing to check it against")
        part.temp_files, part.orphan_indexes, part.unknown = [], [], []
        part.snapshots, part.kraft_snapshots, part.special = [], [], []
        check_partition(part, f, opts, stats, floor_base=floor)
        return
    try:
        if fn.kind is naming.FileKind.SEGMENT and fn.suffix == naming.SNAPSHOT:
            decode_snapshot(path.read_bytes())
        elif fn.kind is naming.FileKind.LEADER_EPOCH:
            parse_leader_epochs(path.read_bytes())
        elif fn.name in naming.ROOT_CHECKPOINTS:
            parse_offsets(path.read_bytes())
        elif fn.kind is naming.FileKind.KRAFT_SNAPSHOT or path.name.endswith(
                (".log", ".log.swap", ".log.cleaned", ".log.deleted", ".checkpoint")):
            check_log_file(path, fn.offset if fn.kind is naming.FileKind.SEGMENT and
                           fn.offset is not None else 0, f, opts, stats,
                           fix_log=f"kafkalog recover {path.parent}")
        else:
            raise UsageError(f"{path}: not a file kafkalog knows how to verify")
    except CorruptDataError as e:
        f.add(ERROR, "FILE_CORRUPT", path, e.pos, e.reason)


_SEVERITY_RANK = {ERROR: 0, WARNING: 1, INFO: 2}


def _text(fd: Finding) -> str:
    where = fd.file if fd.position is None else f"{fd.file}:{fd.position}"
    line = f"{paint(f'{fd.severity:<7}', fd.severity)} {fd.code:<26} {where}: {fd.message}"
    if fd.expected is not None or fd.found is not None:
        line += f" (expected {fd.expected}, found {fd.found})"
    if fd.fix:
        line += f"\n        fix: {fd.fix}"
    return line


@click.command("verify", epilog="Exit codes (fsck): 0 no errors (warnings allowed), 4 errors "
                                "found, 8 operational error, 16 usage error.")
@options.paths_argument
@click.option("--shallow", is_flag=True,
              help="Batch headers and CRCs only: no decompression, no record parsing (fastest).")
@options.format_option()
@click.option("--all", "show_all", is_flag=True, help="Also list info findings in text output.")
@options.max_decompressed_option
@options.jobs_option
@click.option("--engine", type=click.Choice(["local", "spark"]), default="local",
              show_default=True, help="Check partition dirs in this process, or in Spark "
                                      "tasks (pip install 'kafkalog[spark]'); same findings.")
@click.option("--master", type=options.Text(), metavar="URL",
              help="Spark master for --engine spark: local[*] (default), spark://..., yarn, "
                   "sc://host:port [env: SPARK_REMOTE].")
def command(paths: tuple[str, ...], shallow: bool, fmt: str, show_all: bool,
            max_decompressed_bytes: int, jobs: int = 1, engine: str = "local",
            master: str | None = None) -> int:
    """Check log dirs, partitions or files for damage, as a broker and kafka-dump-log would,
    and more.

    Every finding is collected (verify never stops at the first) with a severity, a stable
    code, the file and byte position, expected vs found, and the command that fixes it.

    \b
    Examples:
      kafkalog verify /var/lib/kafka
      kafkalog verify --shallow /var/lib/kafka/orders-0
      kafkalog verify orders-0/00000000000000000000.index
      kafkalog verify /var/lib/kafka --format json | jq '.findings[] | select(.severity=="error")'
    """
    opts = CheckOptions(shallow=shallow, max_decompressed=max_decompressed_bytes)
    stats = Stats()
    f = Findings()
    if engine == "spark":
        from kafkalog_cli.spark import require_pyspark

        require_pyspark("verify --engine spark")
    spark_targets: list[Target] = []
    for p in paths:
        if v07.verify_path(p, f, opts, stats):  # Kafka 0.7 .kafka segments
            continue
        if engine == "spark":
            spark_targets.append(open_target(p))
            continue
        target = open_target(p)
        with progress(partition_bytes(target.partitions()), "verify") as advance:
            verify_target(target, f, opts, stats, advance, jobs)
    if spark_targets:
        from kafkalog_cli.spark.jobs import verify_on_spark

        verify_on_spark(spark_targets, f, opts, stats, verify_target, master)
    summary: dict[str, Any] = {"partitions": stats.partitions, "segments": stats.segments,
                               "batches": stats.batches,
                               "records": None if shallow else stats.records,
                               "bytes": stats.bytes, "errors": f.count(ERROR),
                               "warnings": f.count(WARNING), "info": f.count(INFO)}
    out = sys.stdout.buffer
    if fmt == "json":
        write_document({"findings": [x.as_dict() for x in f.items], "summary": summary})
    elif fmt == "text":
        shown = [x for x in f.items if show_all or x.severity != INFO]
        shown.sort(key=lambda x: _SEVERITY_RANK[x.severity])
        for x in shown:
            out.write(_text(x).encode("utf-8", ESCAPE) + b"\n")
        recs = "" if shallow else f", {stats.records} records"
        if not settings.quiet:  # -q: the findings and the exit code say it all
            out.write((f"verified {stats.partitions} partitions, {stats.segments} segments, "
                       f"{stats.batches} batches{recs}, {stats.bytes} bytes: "
                       f"{summary['errors']} errors, {summary['warnings']} warnings, "
                       f"{summary['info']} info\n").encode())
    else:  # rows: every finding, then the summary
        r = make_renderer(fmt, lambda row: None)
        for x in f.items:
            r.row({"kind": "finding", **x.as_dict()})
        r.row({"kind": "summary", **summary})
        r.close()
    return EXIT_UNFIXED if f.count(ERROR) else 0
