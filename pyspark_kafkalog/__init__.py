"""The `kafkalog` data source, found by Spark without `register(spark)`.

Spark 4.x looks, once per driver, for importable top-level modules named `pyspark_*` that
expose a `DefaultSource` (a pyspark.sql.datasource.DataSource subclass) and registers each
under its `name()`. With kafkalog installed in the Python that the Spark driver (or the
Spark Connect server) runs, any session can therefore read

    spark.read.format("kafkalog").load("/var/lib/kafka")

This module imports PySpark; kafkalog_cli itself never imports it, so the CLI keeps
working without PySpark. An editable install (`pip install -e .`) is not listed by
`pkgutil.iter_modules()`, which Spark's lookup uses: there, call register(spark).
"""

from kafkalog_cli.spark.datasource import KafkalogDataSource as DefaultSource

__all__ = ["DefaultSource"]
