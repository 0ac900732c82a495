"""The `kafkalog` PySpark data source (pyspark.sql.datasource, Spark >= 4.0).

  spark.read.format("kafkalog").option("subscribe", "orders").load("/archive/*/kafka-logs")

Schema: Spark's Kafka source schema (key, value, topic, partition, offset, timestamp,
timestampType, and headers when includeHeaders=true), then leaderEpoch, producerId,
producerEpoch, sequence, isTransactional, batchBaseOffset, segment (the `.log` path) and
position (the batch's byte position). mode=batches gives batch headers instead, and
mode=check one verification report per partition dir (checks.py).
One input partition per segment, or per piece of one (minPartitions); see plan.py.

Planning runs in a Python worker on the driver: reader() parses the options, partitions()
scans the log dirs. Spark pickles the reader for read() *before* calling partitions(), so
everything a task needs travels in its InputPartition (a plan.Split).

Filter pushdown (Spark >= 4.1, `spark.sql.python.filterPushdown.enabled`) is opt-in:
`register(spark, filter_pushdown=True)`. Pushed topic, partition, offset and lower
timestamp bounds skip segments and batches; every filter is still handed back for Spark to
evaluate. In Spark 4.3.0 a DataFrame that ran a filtered query plans its later queries
with that query's pruned reader and partitions (too few rows; see the strict xfail in
tests/spark), which is why it is off by default and option-based bounds come first.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from kafkalog_cli.spark import options as opt
from kafkalog_cli.spark.plan import Pruning, plan, plan_checks

NAME = "kafkalog"

HEADERS = ArrayType(StructType([StructField("key", StringType()),
                                StructField("value", BinaryType())]))


def records_schema(include_headers: bool) -> StructType:
    """Spark's Kafka source schema, then what only the files know."""
    fields = [StructField("key", BinaryType()), StructField("value", BinaryType()),
              StructField("topic", StringType()), StructField("partition", IntegerType()),
              StructField("offset", LongType()), StructField("timestamp", TimestampType()),
              StructField("timestampType", IntegerType())]
    if include_headers:
        fields.append(StructField("headers", HEADERS))
    fields += [StructField("leaderEpoch", IntegerType()), StructField("producerId", LongType()),
               StructField("producerEpoch", IntegerType()),
               StructField("sequence", IntegerType()),
               StructField("isTransactional", BooleanType()),
               StructField("batchBaseOffset", LongType()),
               StructField("segment", StringType()), StructField("position", LongType())]
    return StructType(fields)


_BATCH_TYPES = {"topic": StringType(), "partition": IntegerType(), "segment": StringType(),
                "position": LongType(), "size": IntegerType(), "magic": IntegerType(),
                "baseOffset": LongType(), "lastOffset": LongType(), "count": IntegerType(),
                "compression": StringType(), "timestampType": IntegerType(),
                "maxTimestamp": LongType(), "producerId": LongType(),
                "producerEpoch": IntegerType(), "baseSequence": IntegerType(),
                "lastSequence": IntegerType(), "partitionLeaderEpoch": IntegerType(),
                "isTransactional": BooleanType(), "isControl": BooleanType(),
                "crc": LongType(), "crcValid": BooleanType(), "damage": StringType()}


def batches_schema() -> StructType:
    from kafkalog_cli.spark.rows import BATCH_FIELDS

    return StructType([StructField(n, _BATCH_TYPES[n]) for n in BATCH_FIELDS])


def check_schema() -> StructType:
    from kafkalog_cli.spark.checks import FINDING_FIELDS, STAT_FIELDS

    finding = StructType([StructField(n, LongType() if n == "position" else StringType())
                          for n in FINDING_FIELDS])
    return StructType([StructField("partitionDir", StringType()),
                       StructField("topic", StringType()),
                       StructField("partition", IntegerType()),
                       StructField("logEndOffset", LongType()),
                       *(StructField(n, LongType()) for n in STAT_FIELDS),
                       StructField("findings", ArrayType(finding))])


def schema_for(o: opt.ReadOptions) -> StructType:
    if o.mode == "batches":
        return batches_schema()
    if o.mode == "check":
        return check_schema()
    return records_schema(o.include_headers)


class KafkalogDataSource(DataSource):
    """Reads Kafka log dirs, partition dirs or segment files; the path may be a glob."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> StructType:
        return schema_for(opt.parse(self.options))

    def reader(self, schema: StructType) -> DataSourceReader:
        return KafkalogReader(self._parsed(schema), schema)

    def _parsed(self, schema: StructType) -> opt.ReadOptions:
        o = opt.parse(self.options)
        if schema != schema_for(o):
            raise opt.OptionError("the kafkalog source has a fixed schema; do not pass "
                                  ".schema(...) (use includeHeaders or mode to change it)")
        return o


class KafkalogReader(DataSourceReader):
    def __init__(self, o: opt.ReadOptions, schema: StructType) -> None:
        from pyspark.sql.pandas.types import to_arrow_schema

        self.opts = o
        self.arrow_schema = to_arrow_schema(schema, timezone="UTC")
        self.pruning = Pruning()

    def partitions(self) -> list[InputPartition]:
        if self.opts.mode == "check":
            return [InputPartition(g) for g in plan_checks(self.opts)]
        return [InputPartition(s) for s in plan(self.opts, self.pruning).splits]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        from kafkalog_cli.spark import rows

        split = partition.value
        if split is None:  # Spark's stand-in when there is nothing to read
            return iter(())
        o = self.opts
        if o.mode == "check":
            from kafkalog_cli.spark.checks import read_checks

            return read_checks(split, self.arrow_schema, shallow=o.shallow,
                               max_decompressed=o.max_decompressed)
        if o.mode == "batches":
            return rows.read_batches(split, self.arrow_schema, verify_crc=o.verify_crc)
        return rows.read_records(split, self.arrow_schema, verify_crc=o.verify_crc,
                                 fail=o.fail_on_data_loss, include_control=o.include_control)


# -- filter pushdown (opt-in) ---------------------------------------------------------------

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _ms(v: Any) -> int | None:
    """A timestamp literal as epoch milliseconds, rounded down (a lower bound stays safe)."""
    if isinstance(v, datetime):
        if v.tzinfo is None:
            v = v.replace(tzinfo=UTC)
        ms: int = (v - _EPOCH) // timedelta(milliseconds=1)
        return ms
    return None


_PRUNING_FILTERS = frozenset({"EqualTo", "In", "GreaterThan", "GreaterThanOrEqual", "LessThan",
                              "LessThanOrEqual"})


def absorb(p: Pruning, f: Any) -> None:
    """Narrow `p` by one pushed filter; unknown shapes change nothing (always safe).

    Filters are matched by class name: pyspark.sql.datasource has them only from 4.1 on.
    """
    kind = type(f).__name__
    col = getattr(f, "attribute", None)
    if kind not in _PRUNING_FILTERS or not col or len(col) != 1:
        return
    if isinstance(getattr(f, "value", None), (list, dict)):
        return
    name: str = col[0]
    value: Any = getattr(f, "value", None)
    if name in ("topic", "partition"):
        want = str if name == "topic" else int
        vals = {value} if kind == "EqualTo" else set(value) if kind == "In" else None
        if vals is None or not all(isinstance(v, want) for v in vals):
            return
        if name == "topic":
            p.topics = vals if p.topics is None else p.topics & vals
        else:
            p.partitions = vals if p.partitions is None else p.partitions & vals
    elif name == "offset":
        vals = set(value) if kind == "In" else {value}
        if not vals or not all(isinstance(v, int) and not isinstance(v, bool) for v in vals):
            return
        lo = {"EqualTo": min(vals), "In": min(vals), "GreaterThan": min(vals) + 1,
              "GreaterThanOrEqual": min(vals)}.get(kind)
        hi = {"EqualTo": max(vals), "In": max(vals), "LessThan": max(vals) - 1,
              "LessThanOrEqual": max(vals)}.get(kind)
        if lo is not None:
            p.min_offset = lo if p.min_offset is None else max(p.min_offset, lo)
        if hi is not None:
            p.max_offset = hi if p.max_offset is None else min(p.max_offset, hi)
    elif name == "timestamp" and kind in ("EqualTo", "GreaterThan", "GreaterThanOrEqual"):
        ms = _ms(value)
        if ms is not None:
            p.min_timestamp_ms = ms if p.min_timestamp_ms is None else max(p.min_timestamp_ms, ms)


class KafkalogPushdownReader(KafkalogReader):
    def pushFilters(self, filters: list[Any]) -> Iterable[Any]:
        for f in filters:
            absorb(self.pruning, f)
            yield f  # pruning is whole batches only: Spark still checks every row


class KafkalogPushdownDataSource(KafkalogDataSource):
    def reader(self, schema: StructType) -> DataSourceReader:
        return KafkalogPushdownReader(self._parsed(schema), schema)
