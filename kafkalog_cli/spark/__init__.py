"""kafkalog on Spark: the `kafkalog` data source, and the jobs behind `export` and
`verify --engine spark`. PySpark is optional (`pip install 'kafkalog[spark]'`); nothing here
imports it until a function needs it, so the CLI works without it.

    from kafkalog_cli.spark import register
    register(spark)
    df = spark.read.format("kafkalog").option("includeHeaders", "true").load("/data/kafka-*")

Where kafkalog is installed in the driver's (or Spark Connect server's) Python, Spark 4.x
finds the source by itself through the top-level module pyspark_kafkalog, and register() is
only needed for options (filter_pushdown, ship) or editable installs.
"""

from __future__ import annotations

from typing import Any

from kafkalog_cli.errors import KafkalogError

INSTALL_HINT = "pip install 'kafkalog[spark]'"


class SparkUnavailable(KafkalogError):
    """PySpark (or a piece it needs) is not installed; exit code 8 (operational)."""


def require_pyspark(what: str = "this command") -> None:
    try:
        import pyarrow  # noqa: F401
        import pyspark  # noqa: F401
    except ImportError as e:
        raise SparkUnavailable(f"{what} needs PySpark and pyarrow ({e.name or e} is missing): "
                               f"{INSTALL_HINT}") from None


def register(spark: Any, filter_pushdown: bool = False, ship: bool = False) -> None:
    """Register the `kafkalog` data source with a SparkSession (classic or Spark Connect).

    ship=True zips kafkalog_cli's Python sources and sends them to the executors (for
    clusters where kafkalog is not installed). filter_pushdown=True also sets
    spark.sql.python.filterPushdown.enabled and lets topic, partition, offset and timestamp
    filters skip segments; see datasource.py for the Spark 4.3.0 caveat (use a fresh
    DataFrame per filtered query).
    """
    require_pyspark("the kafkalog data source")
    if ship:
        from kafkalog_cli.spark.session import ship_package

        ship_package(spark)
    from kafkalog_cli.spark.datasource import KafkalogDataSource, KafkalogPushdownDataSource

    if filter_pushdown:
        spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
        spark.dataSource.register(KafkalogPushdownDataSource)
    else:
        spark.dataSource.register(KafkalogDataSource)
