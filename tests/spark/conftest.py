"""One local SparkSession for the whole run (JVM start-up costs ~10 s; keep it to one).

Under `pytest -n 2` (xdist's default `load` scheduling) consecutive tests are handed out in
chunks, starting with a chunk of about an eighth of the suite for each worker. The hook
below moves the Spark tests to the front of the collection, so they all land in the first
worker's first chunk and only that worker starts a JVM; the order of every other test is
kept. (With `--dist loadfile` they stay together anyway: they live in one module.)
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
SESSION_MODULE = "test_spark.py"


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config,
                                  items: list[pytest.Item]) -> None:
    first = [i for i in items if Path(str(i.fspath)).name == SESSION_MODULE
             and Path(str(i.fspath)).parent == HERE]
    if first and len(first) < len(items):
        ids = {id(i) for i in first}
        items[:] = first + [i for i in items if id(i) not in ids]


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    pytest.importorskip("pyspark")
    pytest.importorskip("pyarrow")
    from kafkalog_cli.spark.session import Session

    os.environ.setdefault("KAFKALOG_SPARK_LOG",
                          str(tmp_path_factory.mktemp("spark") / "spark.log"))
    # short jobs: C1 only (the C2 compiler would burn a core for little gain), serial GC
    session = Session("local[2]", app_name="kafkalog-tests",
                      conf={"spark.sql.shuffle.partitions": "2"},
                      java_options="-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
    s = session.__enter__()
    yield s
    session.__exit__(None, None, None)
