"""`kafkalog export`: log dirs to Parquet, JSON or CSV through Spark (the `kafkalog` source)."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click

from kafkalog_cli.commands import options as options_module
from kafkalog_cli.commands.options import Text
from kafkalog_cli.errors import UsageError
from kafkalog_cli.output.console import count_progress, note
from kafkalog_cli.storage.disk.safety import within


@contextmanager
def _task_progress(spark: Any) -> Iterator[None]:
    """A progress bar of finished Spark tasks, on a terminal only (the status tracker is a
    driver-side API: with Spark Connect there is none, and no bar)."""
    try:
        tracker = spark.sparkContext.statusTracker()
    except Exception:  # noqa: BLE001 - Spark Connect has no SparkContext (its own error types)
        yield
        return
    stop = threading.Event()
    with count_progress("export") as update:

        def poll() -> None:
            while not stop.wait(0.3):
                done = total = 0
                for sid in tracker.getActiveStageIds():
                    info = tracker.getStageInfo(sid)
                    if info is not None:
                        done += info.numCompletedTasks
                        total += info.numTasks
                if total:
                    update(done, total)

        t = threading.Thread(target=poll, daemon=True)
        t.start()
        try:
            yield
        finally:
            stop.set()
            t.join(timeout=2)


def _parse_options(pairs: tuple[str, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for p in pairs:
        k, sep, v = p.partition("=")
        if not sep or not k.strip():
            raise UsageError(f"--option {p!r}: expected KEY=VALUE")
        out[k.strip()] = v
    return out


@click.command("export", epilog="Exit codes: 0 written, 4 damaged data met (failOnDataLoss), "
                                "8 operational error (also: PySpark missing, Spark Connect "
                                "server not answering), 16 usage error.")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=str))
@click.argument("out", type=click.Path(path_type=str))
@click.option("--to", "fmt", type=click.Choice(["parquet", "json", "csv"]), required=True,
              help="Output format (a Spark output directory).")
@click.option("--master", type=Text(), metavar="URL",
              help="Spark master: local[*] (default), local[N], spark://..., yarn, k8s://..., "
                   "or sc://host:port for Spark Connect [env: SPARK_REMOTE].")
@click.option("-o", "--option", "opts", multiple=True, type=Text(), metavar="KEY=VALUE",
              help="A kafkalog source option, e.g. subscribe=orders, startingOffsets=..., "
                   "isolation.level=read_committed, minPartitions=64 (repeatable).")
@click.option("--batches", is_flag=True, help="Batch headers instead of records (mode=batches).")
@click.option("--payload", type=click.Choice(["base64", "hex", "utf8"]), default="base64",
              show_default=True, help="How json/csv write keys, values and header values.")
@click.option("--partition-by", type=Text(), metavar="COLS",
              help="Comma-separated columns to partition the output by (e.g. topic,partition).")
@click.option("--overwrite", is_flag=True, help="Replace OUT if it exists.")
@options_module.spark_jobs_option
def command(paths: tuple[str, ...], out: str, fmt: str, master: str | None,
            opts: tuple[str, ...], batches: bool, payload: str, partition_by: str | None,
            overwrite: bool, jobs: int | None = None) -> int:
    """Read log dirs (or globs of them) with Spark and write them out as Parquet, JSON or CSV.

    Rows are what a Kafka consumer sees (Spark's Kafka source schema, headers included,
    plus producer fields, segment and position); --batches writes batch headers instead.
    Runs on local[*] unless --master or SPARK_REMOTE names a cluster; -j N means
    local[N] (export runs only through Spark). Needs PySpark: pip install 'kafkalog[spark]'.

    \b
    Examples:
      kafkalog export /var/lib/kafka --to parquet /tmp/kafka.parquet
      kafkalog export '/archive/broker-*/kafka-logs' --to json out/ -o subscribe=orders
      kafkalog export /var/lib/kafka --to csv out/ --batches --master spark://head:7077
    """
    if click.get_current_context().get_parameter_source("jobs") is \
            click.core.ParameterSource.DEFAULT:
        jobs = None  # local[*], or the cluster --master or SPARK_REMOTE names
    elif master or os.environ.get("SPARK_REMOTE"):
        raise UsageError("-j/--jobs: sets the local master's cores (local[N]); with --master "
                         "or SPARK_REMOTE give the cluster's own settings instead")
    else:
        master = f"local[{jobs}]"
    from kafkalog_cli.spark import require_pyspark

    require_pyspark("kafkalog export")
    from kafkalog_cli.spark import options as source_options
    from kafkalog_cli.spark.jobs import export
    from kafkalog_cli.spark.plan import expand_paths
    from kafkalog_cli.spark.session import Session, is_spark_error, translate

    options = _parse_options(opts)
    lowered = {k.lower() for k in options}
    if batches:
        options["mode"] = "batches"
    elif "includeheaders" not in lowered:
        options["includeHeaders"] = "true"
    try:  # fail on bad options and missing paths before a JVM starts
        source_options.parse({**options, "path": paths[0]})
    except source_options.OptionError as e:
        raise UsageError(str(e)) from None
    _refuse_overlap(out, expand_paths(paths))
    cols = tuple(c.strip() for c in partition_by.split(",") if c.strip()) if partition_by else ()
    session = Session(master, app_name="kafkalog export")
    try:
        with session as spark, _task_progress(spark):
            export(spark, list(paths), fmt, out, options, payload=payload,
                   overwrite=overwrite, partition_by=cols)
    except Exception as e:
        if is_spark_error(e):
            raise translate(e, session.error_log) from None
        raise
    note(f"exported {', '.join(paths)} to {out} ({fmt}{', batches' if batches else ''})")
    return 0


def _refuse_overlap(out: str, sources: list[str]) -> None:
    """OUT may not be a log dir read, lie inside one, or hold one: Spark's overwrite deletes
    OUT first (the log dir with it), and a dir written inside a log dir stops a broker."""
    if "://" in out:
        return
    for src in sources:
        if "://" not in src and (within(out, src) or within(src, out)):
            same = os.path.realpath(out) == os.path.realpath(src)
            raise UsageError(f"OUT {out}: {'is' if same else 'overlaps'} the log dir read "
                             f"({src}); write it elsewhere")
