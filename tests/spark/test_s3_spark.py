"""The Spark data source reading s3:// URLs (S3Proxy, tests/s3/server.py) in local mode: the
same rows, plans and checks as for the same data on local disk. The data read is a copy that
exists only on S3 (its local dir is removed after the upload), so no task can read it from
disk. (The standalone cluster's test is in test_standalone.py.)"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURE
from tests.s3.server import S3Server
from tests.spark.test_spark import _order, dump_records, read, spark_records

pytest.importorskip("pyspark")


@pytest.fixture(scope="module")
def only_on_s3(s3: S3Server, tmp_path_factory: pytest.TempPathFactory) -> str:
    d = tmp_path_factory.mktemp("upload") / "sample"
    shutil.copytree(FIXTURE, d)
    url = s3.upload(d, "spark-only/sample")
    shutil.rmtree(d)
    return url


def as_local(rows: list[Any], url: str) -> list[Any]:
    """Rows read from `url`, their segment column naming the fixture instead."""
    out = [(*r[:14], r[14].replace(url, str(FIXTURE)), *r[15:]) for r in rows]
    return sorted(out, key=_order)


def test_rows_from_s3_equal_dump_of_the_local_copy(spark: Any, only_on_s3: str) -> None:
    df = read(spark, only_on_s3, minPartitions=7)
    rows = spark_records(df)
    assert all(r[14].startswith(only_on_s3 + "/") for r in rows)
    assert as_local(rows, only_on_s3) == dump_records(FIXTURE)


def test_options_prune_alike_on_s3(spark: Any, only_on_s3: str) -> None:
    from kafkalog_cli.spark import options, plan

    opts = {"subscribe": "demo", "startingOffsets": '{"demo": {"0": 350}}',
            "endingOffsets": '{"demo": {"0": 520, "1": 100}}'}
    remote = spark_records(read(spark, only_on_s3, **opts))
    assert as_local(remote, only_on_s3) == spark_records(read(spark, FIXTURE, **opts))
    # the same splits: segments skipped by name, the first entered at the index's position
    for extra in ({}, {"startingTimestamp": "1700000000500"}):
        o = {**opts, **extra}
        p_remote = plan.plan(options.parse({"path": only_on_s3, **o}))
        p_local = plan.plan(options.parse({"path": str(FIXTURE), **o}))
        assert [(s.topic, s.partition, s.base_offset, s.start, s.end) for s in p_remote.splits] \
            == [(s.topic, s.partition, s.base_offset, s.start, s.end) for s in p_local.splits]
        assert all(s.log_path.startswith("s3://") for s in p_remote.splits)


def test_check_mode_on_s3_equals_local(spark: Any, s3: S3Server, tmp_path: Path) -> None:
    from tests.spark.jvms import damaged_copy

    d = damaged_copy(FIXTURE, tmp_path)
    url = s3.upload(d, "spark-damaged/sample")

    def checks(path: str) -> list[Any]:
        t = spark.read.format("kafkalog").option("mode", "check").load(path).toArrow()
        return sorted(str(r).replace(path, "<root>") for r in t.to_pylist())

    local = checks(str(d))
    assert checks(url) == local
    assert any("LOG_CRC_MISMATCH" in r for r in local)
