"""Spark jobs behind the CLI: `export` (the data source, written out) and `verify --engine
spark` (the data source's mode=check: storage.check per partition dir, in Spark tasks).

verify on Spark gives the same findings, in the same order, as the local engine:
  1. the driver scans the targets (file names only) and hands their partition dirs to
     mode=check, which groups them by size into tasks (plan.plan_checks)
  2. each task runs storage.check.check_partition and returns one row per partition dir:
     findings, counters and the log end offset (a data source needs only pyarrow on the
     executors, no pandas, and works over Spark Connect too)
  3. the driver puts the rows back in target order and runs the log-dir checks
     (check_log_dir_files), which need every partition's log end offset
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields
from typing import Any

from kafkalog_cli.storage.checks.check import CheckOptions, Stats, check_log_dir_files
from kafkalog_cli.storage.checks.findings import Finding, Findings
from kafkalog_cli.storage.disk import fs
from kafkalog_cli.storage.disk.logdir import PartitionDir, Target

EXPORT_FORMATS = ("parquet", "json", "csv")
PAYLOADS = ("base64", "hex", "utf8")


# -- export ---------------------------------------------------------------------------------

def load(spark: Any, paths: Sequence[str], options: Mapping[str, str]) -> Any:
    reader = spark.read.format("kafkalog")
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load(paths[0] if len(paths) == 1 else list(paths))


def encode_payloads(df: Any, payload: str) -> Any:
    """Binary columns as text (CSV has no binary type; JSON readers prefer text too)."""
    from pyspark.sql import functions as F

    def enc(c: Any) -> Any:
        if payload == "hex":
            return F.lower(F.hex(c))
        if payload == "utf8":
            return c.cast("string")
        return F.base64(c)

    for name in ("key", "value"):
        if name in df.columns:
            df = df.withColumn(name, enc(F.col(name)))
    if "headers" in df.columns:
        df = df.withColumn("headers", F.transform(
            "headers", lambda h: F.struct(h["key"].alias("key"), enc(h["value"]).alias("value"))))
    return df


def export(spark: Any, paths: Sequence[str], fmt: str, out: str, options: Mapping[str, str],
           *, payload: str = "base64", overwrite: bool = False,
           partition_by: Sequence[str] = ()) -> None:
    # absolute here: the data source plans on the cluster's driver (a Connect server's cwd)
    df = load(spark, [fs.absolute(p) for p in paths], options)
    if fmt == "parquet":  # plain INT64 microseconds, not the deprecated INT96 Spark defaults to
        spark.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
    if fmt in ("json", "csv"):
        # Spark's base64() breaks its output into 76-character lines unless told not to
        spark.conf.set("spark.sql.chunkBase64String.enabled", "false")
        df = encode_payloads(df, payload)
    if fmt == "csv" and "headers" in df.columns:
        from pyspark.sql import functions as F

        df = df.withColumn("headers", F.to_json("headers"))
    w = df.write.mode("overwrite" if overwrite else "error")  # Connect knows no "errorifexists"
    if partition_by:
        w = w.partitionBy(*partition_by)
    if fmt == "csv":
        w = w.option("header", "true")
    w.format(fmt).save(out)


# -- verify ---------------------------------------------------------------------------------

def _target_partitions(t: Target) -> list[PartitionDir]:
    if t.kind == "partition":
        assert t.partition is not None
        return [t.partition]
    return [p for ld in t.log_dirs for p in ld.partitions]


def _parallelism(spark: Any) -> int:
    from kafkalog_cli.spark.session import is_connect

    if is_connect(spark):  # no SparkContext to ask
        return int(spark.conf.get("spark.default.parallelism", "8"))
    return int(spark.sparkContext.defaultParallelism)


def run_checks(spark: Any, parts: list[PartitionDir], opts: CheckOptions,
               absolute: bool) -> list[dict[str, Any]]:
    """mode=check over these partition dirs; one result per partition, in input order.

    absolute=True (executors elsewhere, e.g. a Spark Connect server with another working
    directory): the tasks get absolute paths, and their findings are given back the paths
    as the user wrote them, as the local engine reports them.
    """
    if not parts:
        return []
    given = [fs.location(p.path) for p in parts]
    paths = [fs.absolute(g) for g in given] if absolute else given
    groups = min(len(paths), _parallelism(spark) * 2)
    t = load(spark, paths, {"mode": "check", "shallow": str(opts.shallow).lower(),
                            "maxDecompressedBytes": str(opts.max_decompressed),
                            "minPartitions": str(groups)}).toArrow()
    by_dir = {r["partitionDir"]: r for r in t.to_pylist()}
    results = [by_dir[p] for p in paths]
    for path, orig, res in zip(paths, given, results, strict=True):
        if path != orig:
            res["findings"] = [{k: v.replace(path, orig) if isinstance(v, str) else v
                                for k, v in d.items()} for d in res["findings"]]
    return results


def _merge(f: Findings, stats: Stats, res: dict[str, Any]) -> int | None:
    f.items.extend(Finding(**d) for d in res["findings"])
    for fld in fields(Stats):
        setattr(stats, fld.name, getattr(stats, fld.name) + res[fld.name])
    leo: int | None = res["logEndOffset"]
    return leo


def verify(spark: Any, targets: list[Target], f: Findings, opts: CheckOptions, stats: Stats,
           verify_file: Callable[[Target, Findings, CheckOptions, Stats], None],
           absolute: bool = False) -> None:
    """What the current format's check (storage/formats/current.py) does for each target,
    with partitions on Spark."""
    parts = [p for t in targets if t.kind != "file" for p in _target_partitions(t)]
    results = iter(run_checks(spark, parts, opts, absolute))
    for t in targets:
        if t.kind == "file":
            verify_file(t, f, opts, stats)
        elif t.kind == "partition":
            _merge(f, stats, next(results))
        else:
            for ld in t.log_dirs:
                leos: dict[tuple[str, int], int | None] = {}
                firsts: dict[tuple[str, int], int] = {}
                for part in ld.partitions:
                    leos[part.key] = _merge(f, stats, next(results))
                    if part.segments:
                        firsts[part.key] = part.segments[0].base_offset
                check_log_dir_files(ld, f, leos, firsts)


def verify_on_spark(targets: list[Target], f: Findings, opts: CheckOptions, stats: Stats,
                    verify_file: Callable[[Target, Findings, CheckOptions, Stats], None],
                    master: str | None = None) -> None:
    """`verify --engine spark`: start (or join) a session, run verify(), map Spark errors."""
    from kafkalog_cli.spark.session import Session, in_process, is_spark_error, translate

    if all(t.kind == "file" for t in targets):  # single files: nothing worth a cluster
        for t in targets:
            verify_file(t, f, opts, stats)
        return
    session = Session(master, app_name="kafkalog verify")
    try:
        with session as spark:
            verify(spark, targets, f, opts, stats, verify_file,
                   absolute=not in_process(session.master))
    except Exception as e:
        if is_spark_error(e):
            raise translate(e, session.error_log) from None
        raise
