"""One local SparkSession for the whole run (JVM start-up costs ~10 s; keep it to one), and
the Spark Connect tests' server right after it on the same worker.

Under `pytest -n 2` (xdist's default `load` scheduling) consecutive tests are handed out in
chunks. The hook below moves the Spark modules (test_spark.py, test_connect.py, then
test_standalone.py) to the front of the collection, and tests/spark/scheduling.py gives them
all to the first worker as its first chunk, so only that worker starts a JVM, a Connect server
and a standalone cluster; the order of every
other test is kept. (With `--dist loadfile` each module stays on one worker anyway.)
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.spark.scheduling import SPARK_MODULES

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config,
                                  items: list[pytest.Item]) -> None:
    def rank(i: pytest.Item) -> int:
        p = Path(str(i.fspath))
        if p.parent == HERE and p.name in SPARK_MODULES:
            return SPARK_MODULES.index(p.name)
        return len(SPARK_MODULES)

    first = sorted((i for i in items if rank(i) < len(SPARK_MODULES)), key=rank)  # stable
    if first:
        ids = {id(i) for i in first}
        items[:] = first + [i for i in items if id(i) not in ids]


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory, s3: Any) -> Iterator[Any]:
    # s3 first: the JVM and the Python workers it starts inherit the store's AWS_* variables
    # (test_s3_spark.py), as they would from an operator's shell
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
