"""Spark jobs behind the CLI: `export` (the data source, written out) and `verify --engine
spark` (storage.check per partition dir, one task per group of partitions).

verify on Spark gives the same findings, in the same order, as the local engine:
  1. the driver scans the targets (file names only) and groups partition dirs by size
  2. each task runs storage.check.check_partition on its partition dirs (mapInArrow, so it
     works over Spark Connect too) and returns findings, stats and the log end offset
  3. the driver puts the results back in target order and runs the log-dir checks
     (check_log_dir_files), which need every partition's log end offset
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

import orjson

from kafkalog_cli.storage.check import CheckOptions, Stats, check_log_dir_files, check_partition
from kafkalog_cli.storage.findings import Finding, Findings
from kafkalog_cli.storage.logdir import PartitionDir, Target, scan_partition

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
    df = load(spark, paths, options)
    if fmt == "parquet":  # plain INT64 microseconds, not the deprecated INT96 Spark defaults to
        spark.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
    if fmt in ("json", "csv"):
        df = encode_payloads(df, payload)
    if fmt == "csv" and "headers" in df.columns:
        from pyspark.sql import functions as F

        df = df.withColumn("headers", F.to_json("headers"))
    w = df.write.mode("overwrite" if overwrite else "errorifexists")
    if partition_by:
        w = w.partitionBy(*partition_by)
    if fmt == "csv":
        w = w.option("header", "true")
    w.format(fmt).save(out)


# -- verify ---------------------------------------------------------------------------------

_RESULT_SCHEMA = "idx long, result binary"


def _check_task(shallow: bool, max_decompressed: int) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The mapInArrow function: rows (idx, path) in, rows (idx, result JSON) out."""

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        opts = CheckOptions(shallow=shallow, max_decompressed=max_decompressed)
        for rb in batches:
            for idx, path in zip(rb.column(0).to_pylist(), rb.column(1).to_pylist(),
                                 strict=True):
                f, stats = Findings(), Stats()
                leo = check_partition(scan_partition(Path(path)), f, opts, stats)
                doc = {"findings": [x.as_dict() for x in f.items], "stats": asdict(stats),
                       "leo": leo}
                yield pa.RecordBatch.from_pydict(
                    {"idx": [idx], "result": [orjson.dumps(doc)]},
                    schema=pa.schema([("idx", pa.int64()), ("result", pa.binary())]))

    return run


def _target_partitions(t: Target) -> list[PartitionDir]:
    if t.kind == "partition":
        assert t.partition is not None
        return [t.partition]
    return [p for ld in t.log_dirs for p in ld.partitions]


def _balanced(items: list[tuple[int, str, int]], groups: int) -> list[list[tuple[int, str]]]:
    """Longest-processing-time first: biggest partitions spread over the groups."""
    heap = [(0, g) for g in range(groups)]
    out: list[list[tuple[int, str]]] = [[] for _ in range(groups)]
    for idx, path, size in sorted(items, key=lambda x: -x[2]):
        load_, g = heapq.heappop(heap)
        out[g].append((idx, path))
        heapq.heappush(heap, (load_ + size + 1, g))
    return [g for g in out if g]


def _parallelism(spark: Any) -> int:
    try:
        return int(spark.sparkContext.defaultParallelism)
    except Exception:  # Spark Connect has no SparkContext
        return int(spark.conf.get("spark.default.parallelism", "8"))


def run_checks(spark: Any, parts: list[PartitionDir], opts: CheckOptions,
               absolute: bool) -> list[dict[str, Any]]:
    """check_partition for each partition dir on the cluster; results in input order."""
    if not parts:
        return []
    items = [(i, str(p.path.resolve() if absolute else p.path), sum(s.size for s in p.segments))
             for i, p in enumerate(parts)]
    groups = _balanced(items, min(len(items), max(1, _parallelism(spark) * 2)))
    rows = [(idx, path) for g in groups for idx, path in g]
    df = spark.createDataFrame(rows, "idx long, path string").repartition(len(groups))
    got = df.mapInArrow(_check_task(opts.shallow, opts.max_decompressed), _RESULT_SCHEMA)
    table = got.toArrow()
    results: list[dict[str, Any]] = [{}] * len(parts)
    for idx, blob in zip(table.column("idx").to_pylist(), table.column("result").to_pylist(),
                         strict=True):
        results[idx] = orjson.loads(blob)
    return results


def _merge(f: Findings, stats: Stats, res: dict[str, Any]) -> int | None:
    f.items.extend(Finding(**d) for d in res["findings"])
    for fld in fields(Stats):
        setattr(stats, fld.name, getattr(stats, fld.name) + res["stats"][fld.name])
    leo: int | None = res["leo"]
    return leo


def verify(spark: Any, targets: list[Target], f: Findings, opts: CheckOptions, stats: Stats,
           verify_file: Callable[[Target, Findings, CheckOptions, Stats], None],
           absolute: bool = False) -> None:
    """What commands/verify.verify_target does for each target, with partitions on Spark."""
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
    from kafkalog_cli.spark.session import Session, is_spark_error, translate

    session = Session(master, app_name="kafkalog verify")
    try:
        with session as spark:
            verify(spark, targets, f, opts, stats, verify_file,
                   absolute=not session.master.startswith("local"))
    except Exception as e:
        if is_spark_error(e):
            raise translate(e, session.log) from None
        raise
