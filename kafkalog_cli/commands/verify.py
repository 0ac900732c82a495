"""`kafkalog verify`: collect every finding in log dirs, partitions or files."""

from __future__ import annotations

import sys
from typing import Any

import click

from kafkalog_cli.commands import chunked, options
from kafkalog_cli.commands.common import partition_bytes, runs
from kafkalog_cli.errors import EXIT_UNFIXED, one_line
from kafkalog_cli.output.console import ESCAPE, paint, progress, settings
from kafkalog_cli.output.render import make_renderer, write_document
from kafkalog_cli.storage.checks.check import CheckOptions, Stats
from kafkalog_cli.storage.checks.findings import ERROR, INFO, WARNING, Finding, Findings
from kafkalog_cli.storage.disk.logdir import Target
from kafkalog_cli.storage.formats import open_target
from kafkalog_cli.storage.formats.current import FORMAT as CURRENT

_SEVERITY_RANK = {ERROR: 0, WARNING: 1, INFO: 2}


def _text(fd: Finding) -> str:
    where = fd.file if fd.position is None else f"{fd.file}:{fd.position}"
    text = f"{where}: {fd.message}"
    if fd.expected is not None or fd.found is not None:
        text += f" (expected {fd.expected}, found {fd.found})"
    line = f"{paint(f'{fd.severity:<7}', fd.severity)} {fd.code:<26} {one_line(text)}"
    if fd.fix:
        line += f"\n        fix: {one_line(fd.fix)}"
    return line


def _one_partition(t: Target) -> bool:
    return t.format is CURRENT and t.kind == "partition"


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
    mapper = chunked.mapper(jobs, small=True)
    for run in runs([open_target(p) for p in paths], _one_partition):
        target = run[0]
        if engine == "spark" and target.format is CURRENT:  # Spark reads the current format
            spark_targets.extend(run)
            continue
        if len(run) > 1:  # partition dirs named one by one: one set of -j items
            parts = [t.partition for t in run if t.partition is not None]
            with progress(partition_bytes(parts), "verify") as advance:
                for _ in CURRENT.check_partitions(parts, f, opts, stats, advance, mapper):
                    pass
            continue
        with progress(partition_bytes(target.format.partitions(target)), "verify") as advance:
            target.format.check(target, f, opts, stats, advance, mapper)
    if spark_targets:
        from kafkalog_cli.spark.jobs import verify_on_spark

        verify_on_spark(spark_targets, f, opts, stats, CURRENT.check, master)
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
