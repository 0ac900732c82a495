"""The `kafkalog` Spark data source and Spark jobs, judged by `kafkalog dump`, `find-by-time`,
`verify` (local engine) and the storage layer, never by Spark output itself.

Every test shares one local[2] session (conftest.py), so the module stays together.
"""

from __future__ import annotations

import base64
import os
import shutil
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.cli.run import run
from tests.conftest import CORPUS, FIXTURE

pa = pytest.importorskip("pyarrow")
pytest.importorskip("pyspark")

TSTYPE = {"NoTimestampType": -1, "CreateTime": 0, "LogAppendTime": 1}
DEMO0 = FIXTURE / "demo-0"

Row = tuple[Any, ...]


def _b64(v: str | None) -> bytes | None:
    import base64

    return None if v is None else base64.b64decode(v)


def dump_jsonl(*args: object, damaged: bool = False) -> list[dict[str, Any]]:
    r = run("dump", *args, "--format", "jsonl", "--payload", "base64")
    assert r.code == (4 if damaged else 0), r.err
    return [orjson.loads(line) for line in r.out.splitlines() if line]


def dump_records(*paths: object, control: bool = False, extra: Iterable[str] = (),
                 damaged: bool = False) -> list[Row]:
    """Records as `kafkalog dump --records` prints them, each with its batch's fields."""
    out: list[Row] = []
    batch: dict[str, Any] = {}
    for d in dump_jsonl(*paths, "--records", *extra, damaged=damaged):
        if d["kind"] == "batch":
            batch = d
        elif d["kind"] == "record" and (control or "control" not in d):
            epoch = batch["partitionLeaderEpoch"]
            out.append((
                _b64(d["key"]), _b64(d["value"]), d["topic"], d["partition"], d["offset"],
                d["timestamp"] * 1000, TSTYPE[d["timestampType"]],
                [(h["key"], _b64(h["value"])) for h in d["headers"]],
                epoch if epoch >= 0 else None, batch["producerId"], batch["producerEpoch"],
                d.get("sequence", -1), batch["isTransactional"], batch["baseOffset"],
                os.path.abspath(batch["file"]), batch["position"]))
    return sorted(out, key=_order)


def _order(r: Row) -> tuple[str, int, int]:
    return r[14], r[15], r[4]


RECORD_COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp", "timestampType",
                  "headers", "leaderEpoch", "producerId", "producerEpoch", "sequence",
                  "isTransactional", "batchBaseOffset", "segment", "position")


def spark_records(df: Any) -> list[Row]:
    return arrow_records(df.toArrow())


def arrow_records(t: Any) -> list[Row]:
    """Rows of the records schema (from Spark or an exported Parquet file), as dump_records
    gives them."""
    t = t.set_column(t.schema.get_field_index("timestamp"), "timestamp",
                     t.column("timestamp").cast(pa.int64()))
    cols = [t.column(c).to_pylist() for c in RECORD_COLUMNS]
    rows = [(*r[:7], [(h["key"], h["value"]) for h in r[7]], *r[8:])
            for r in zip(*cols, strict=True)]
    return sorted(rows, key=_order)


def read(spark: Any, path: object, **options: object) -> Any:
    r = spark.read.format("kafkalog").option("includeHeaders", "true")
    for k, v in options.items():
        r = r.option(k.replace("_", "."), str(v).lower() if isinstance(v, bool) else str(v))
    return r.load(str(path))


# -- rows equal kafkalog dump -----------------------------------------------------------------

def test_schema_is_spark_kafka_source_schema_plus_extras(spark: Any) -> None:
    df = spark.read.format("kafkalog").load(str(FIXTURE))
    assert [f"{f.name}:{f.dataType.simpleString()}" for f in df.schema.fields] == [
        "key:binary", "value:binary", "topic:string", "partition:int", "offset:bigint",
        "timestamp:timestamp", "timestampType:int", "leaderEpoch:int", "producerId:bigint",
        "producerEpoch:int", "sequence:int", "isTransactional:boolean",
        "batchBaseOffset:bigint", "segment:string", "position:bigint"]
    with_headers = read(spark, FIXTURE).schema["headers"].dataType.simpleString()
    assert with_headers == "array<struct<key:string,value:binary>>"


def test_fixture_rows_equal_dump_including_control_records(spark: Any) -> None:
    got = spark_records(read(spark, FIXTURE, includeControl=True))
    want = dump_records(FIXTURE, control=True)
    assert len(want) == 1716
    assert got == want


def test_fixture_rows_are_what_a_consumer_sees(spark: Any) -> None:
    got = spark_records(read(spark, FIXTURE))
    assert got == dump_records(FIXTURE)


def test_corpus_rows_equal_dump(spark: Any) -> None:
    got = spark_records(read(spark, CORPUS))
    want = dump_records(CORPUS)
    assert len(want) > 60_000
    assert got == want


def test_globs_and_path_lists_read_each_partition_once(spark: Any) -> None:
    pattern = str(CORPUS / "*-kraft")
    want = [r for r in dump_records(CORPUS) if Path(r[14]).parent.parent.name.endswith("-kraft")]
    assert spark_records(read(spark, pattern)) == want
    both = spark.read.format("kafkalog").option("includeHeaders", "true") \
        .load([str(DEMO0), str(FIXTURE / "demo-*")])
    assert spark_records(both) == dump_records(FIXTURE / "demo-0", FIXTURE / "demo-1")


def test_batches_mode_equals_dump_batches(spark: Any) -> None:
    for path in (FIXTURE, CORPUS):
        want = sorted(
            (os.path.abspath(d["file"]), d["position"], d["size"], d["magic"], d["baseOffset"],
             d["lastOffset"], d["count"], d["compression"], TSTYPE[d["timestampType"]],
             d["maxTimestamp"], d["producerId"], d["producerEpoch"], d["baseSequence"],
             d["lastSequence"], d["partitionLeaderEpoch"], d["isTransactional"],
             d["isControl"], d["crc"], d["isValid"], None)
            for d in dump_jsonl(path) if d["kind"] == "batch")
        t = spark.read.format("kafkalog").option("mode", "batches").load(str(path)).toArrow()
        cols = ["segment", "position", "size", "magic", "baseOffset", "lastOffset", "count",
                "compression", "timestampType", "maxTimestamp", "producerId", "producerEpoch",
                "baseSequence", "lastSequence", "partitionLeaderEpoch", "isTransactional",
                "isControl", "crc", "crcValid", "damage"]
        got = sorted(zip(*(t.column(c).to_pylist() for c in cols), strict=True))
        assert got == want


# -- filters --------------------------------------------------------------------------------

def test_subscribe_pattern_and_assign_select_partitions(spark: Any) -> None:
    all_rows = dump_records(FIXTURE)

    def keys(rows: list[Row]) -> set[tuple[str, int]]:
        return {(r[2], r[3]) for r in rows}

    assert keys(spark_records(read(spark, FIXTURE, subscribe="demo,appendtime"))) == \
        {("demo", 0), ("demo", 1), ("appendtime", 0)}
    got = spark_records(read(spark, FIXTURE, subscribePattern="legacy-v[01]"))
    assert got == [r for r in all_rows if r[2].startswith("legacy")]
    got = spark_records(read(spark, FIXTURE, assign='{"demo": [1]}'))
    assert got == [r for r in all_rows if (r[2], r[3]) == ("demo", 1)]


def test_offset_options_equal_dump_range_and_skip_segments(spark: Any) -> None:
    from kafkalog_cli.spark import options, plan

    df = read(spark, FIXTURE, subscribe="demo", startingOffsets='{"demo": {"0": 350}}',
              endingOffsets='{"demo": {"0": 520, "1": 100}}')
    want = dump_records(DEMO0, extra=["--from-offset", "350", "--to-offset", "519"]) + \
        dump_records(FIXTURE / "demo-1", extra=["--to-offset", "99"])
    assert spark_records(df) == sorted(want, key=_order)
    # demo-0 has segments 0, 243, 506: the range [350, 520) needs only the last two, and
    # the first of those is entered at the offset index's position for 350
    p = plan.plan(options.parse({"path": str(DEMO0), "startingOffsets": '{"demo":{"0":350}}',
                                 "endingOffsets": '{"demo":{"0":520}}'}))
    assert [(s.base_offset, s.start > 0) for s in p.splits] == [(243, True), (506, False)]


def test_timestamp_options_match_find_by_time(spark: Any) -> None:
    start, end = 1_700_000_003_000, 1_700_000_005_000

    def offset_at(ts: int) -> int:
        r = run("find-by-time", DEMO0, "-t", ts, "--format", "json")
        return int(orjson.loads(r.out)[0]["offset"])

    lo, hi = offset_at(start), offset_at(end)
    df = read(spark, DEMO0, startingTimestamp=start, endingTimestamp=end)
    want = [r for r in dump_records(DEMO0) if lo <= r[4] < hi]
    assert want and spark_records(df) == want
    late = read(spark, DEMO0, startingTimestamp=9_999_999_999_999)
    assert late.count() == 0


def _aborted_ranges(path: Path) -> list[tuple[int, int, int]]:
    """(producer id, first, last offset) from the partition's .txnindex files (the broker's
    own answer for a read_committed fetch)."""
    files = sorted(str(p) for p in path.glob("*.txnindex"))
    return [(d["producerId"], d["firstOffset"], d["lastOffset"])
            for d in dump_jsonl(*files) if d["kind"] == "aborted-txn"]


def test_read_committed_drops_aborted_transactions(spark: Any) -> None:
    want: list[Row] = []
    for part in sorted(FIXTURE.glob("demo-*")):
        aborted = _aborted_ranges(part)
        assert aborted
        want += [r for r in dump_records(part) if not (r[12] and any(
            pid == r[9] and first <= r[4] <= last for pid, first, last in aborted))]
    df = read(spark, FIXTURE, subscribe="demo", isolation_level="read_committed")
    got = spark_records(df)
    assert got == sorted(want, key=_order)
    assert len(got) < len(dump_records(FIXTURE / "demo-0", FIXTURE / "demo-1"))


def test_read_committed_stops_at_an_open_transaction(spark: Any, tmp_path: Path) -> None:
    from kafkalog_cli.codec.batch_v2 import encode_batch
    from kafkalog_cli.codec.control import encode_end_txn
    from kafkalog_cli.storage.maintenance.writer import LogConfig, PartitionWriter

    d = tmp_path / "t-0"

    def recs(first: int, n: int) -> list[tuple[int, int, bytes, bytes, list[Any]]]:
        return [(first + i, 1_700_000_000_000 + first + i, b"k", b"v%d" % (first + i), [])
                for i in range(n)]

    with PartitionWriter(d, "t", 0, LogConfig(), now_ms=0) as w:
        w.append(encode_batch(recs(0, 5)))
        w.append(encode_batch(recs(5, 5), producer_id=7, producer_epoch=0, base_sequence=0,
                              transactional=True))
        k, v = encode_end_txn(True, 0)
        w.append(encode_batch([(10, 1_700_000_000_010, k, v, [])], producer_id=7,
                              producer_epoch=0, transactional=True, control=True))
        w.append(encode_batch(recs(11, 4)))
        w.append(encode_batch(recs(15, 3), producer_id=8, producer_epoch=0, base_sequence=0,
                              transactional=True))  # never committed: the LSO is 15
        w.append(encode_batch(recs(18, 4)))
    committed = spark_records(read(spark, d, isolation_level="read_committed"))
    everything = dump_records(d)
    assert [r[4] for r in committed] == [r[4] for r in everything if r[4] < 15]
    assert len(spark_records(read(spark, d))) == len(everything) == 21


# -- splits ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def big_segment(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from kafkalog_cli.storage.drills.generate import GenSpec, generate

    out = tmp_path_factory.mktemp("big")
    generate(out, GenSpec(records=12_000, batch_records=40, value_bytes=120,
                          segment_bytes=1 << 30, codecs=["none", "lz4"]))
    return out / "demo-0"


def test_min_partitions_splits_at_index_entries(spark: Any, big_segment: Path) -> None:
    from kafkalog_cli.spark import options, plan
    from kafkalog_cli.storage.disk.index import OffsetIndex

    log = big_segment / "00000000000000000000.log"
    index = OffsetIndex.read(big_segment / "00000000000000000000.index", 0)
    p = plan.plan(options.parse({"path": str(big_segment), "minPartitions": "6"}))
    assert len(p.splits) == 6
    starts = [s.start for s in p.splits]
    assert starts[0] == 0 and set(starts[1:]) <= {pos for _, pos in index.entries}
    assert [s.end for s in p.splits] == [*starts[1:], None]  # contiguous, to the file end
    sizes = [b - a for a, b in zip(starts, [*starts[1:], log.stat().st_size], strict=True)]
    assert max(sizes) < 2 * min(sizes)

    df = read(spark, big_segment, minPartitions=6)
    assert df.rdd.getNumPartitions() == 6
    assert spark_records(df) == dump_records(big_segment)
    from pyspark.sql import functions as F

    ranges = sorted(df.groupBy(F.spark_partition_id().alias("p"))
                    .agg(F.min("offset").alias("lo"), F.max("offset").alias("hi"),
                         F.count("*").alias("n")).select("lo", "hi", "n").collect())
    assert len(ranges) == 6
    for (lo, hi, n), (nxt, _, _) in zip(ranges, [*ranges[1:], (12_000, 0, 0)], strict=True):
        assert n == hi - lo + 1 and hi + 1 == nxt  # each split a contiguous run of offsets


def test_one_split_per_segment_by_default(spark: Any) -> None:
    from kafkalog_cli.spark import options, plan

    p = plan.plan(options.parse({"path": str(FIXTURE)}))
    segments = [s for d in sorted(FIXTURE.iterdir()) if d.is_dir()
                for s in sorted(d.glob("*.log")) if s.stat().st_size]
    assert sorted(s.log_path for s in p.splits) == sorted(str(s.resolve()) for s in segments)
    assert read(spark, FIXTURE).rdd.getNumPartitions() == len(segments)


# -- pushdown -------------------------------------------------------------------------------

def test_pushdown_is_off_by_default_so_a_reused_dataframe_keeps_every_row(spark: Any) -> None:
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    try:
        df = read(spark, FIXTURE, subscribe="demo")
        total = df.count()
        assert df.where("offset >= 500 and partition = 0").count() == \
            len([r for r in dump_records(DEMO0) if r[4] >= 500])
        assert df.count() == total == len(dump_records(DEMO0, FIXTURE / "demo-1"))
    finally:
        spark.conf.set("spark.sql.python.filterPushdown.enabled", "false")


def test_pushed_filters_skip_segments_and_keep_results(spark: Any) -> None:
    from pyspark.sql.datasource import EqualTo, GreaterThanOrEqual, In, LessThan

    from kafkalog_cli.spark import options, plan, register
    from kafkalog_cli.spark.datasource import absorb

    pruning = plan.Pruning()
    for f in (EqualTo(("topic",), "demo"), In(("partition",), (0,)),
              GreaterThanOrEqual(("offset",), 300), LessThan(("offset",), 520)):
        absorb(pruning, f)
    p = plan.plan(options.parse({"path": str(FIXTURE)}), pruning)
    assert [(s.topic, s.partition, s.base_offset) for s in p.splits] == \
        [("demo", 0, 243), ("demo", 0, 506)]
    register(spark, filter_pushdown=True)
    try:
        df = read(spark, FIXTURE).where(
            "topic = 'demo' and partition = 0 and offset >= 300 and offset < 520 "
            "and timestamp >= timestamp'2023-11-14 22:13:24'")
        want = [r for r in dump_records(DEMO0)
                if 300 <= r[4] < 520 and r[5] >= 1_700_000_004_000_000]
        assert spark_records(df) == want
    finally:
        register(spark)
        spark.conf.set("spark.sql.python.filterPushdown.enabled", "false")


@pytest.mark.xfail(strict=True, reason="Spark 4.3.0 plans a DataFrame's later queries with the "
                   "reader a filtered query pruned: pushdown stays opt-in until this passes")
def test_opt_in_pushdown_and_a_reused_dataframe(spark: Any) -> None:
    from kafkalog_cli.spark import register

    register(spark, filter_pushdown=True)
    try:
        df = read(spark, FIXTURE, subscribe="demo")
        assert df.where("partition = 0 and offset >= 500").count() > 0
        assert df.count() == len(dump_records(DEMO0, FIXTURE / "demo-1"))
    finally:
        register(spark)
        spark.conf.set("spark.sql.python.filterPushdown.enabled", "false")


# -- damage ---------------------------------------------------------------------------------

def test_damaged_batch_fails_the_read_unless_told_to_skip(spark: Any, tmp_path: Path) -> None:
    part = tmp_path / "demo-0"
    shutil.copytree(DEMO0, part)
    batches = [d for d in dump_jsonl(part / "00000000000000000243.log") if d["kind"] == "batch"]
    victim = batches[3]
    log = part / "00000000000000000243.log"
    data = bytearray(log.read_bytes())
    data[victim["position"] + victim["size"] - 5] ^= 0xFF  # inside a value: the CRC breaks
    log.write_bytes(bytes(data))
    with pytest.raises(Exception, match="CRC mismatch"):
        read(spark, part).count()
    got = spark_records(read(spark, part, failOnDataLoss=False))
    want = [r for r in dump_records(part, damaged=True)
            if not (r[14] == str(log) and r[15] == victim["position"])]
    assert len(got) == len(dump_records(DEMO0)) - victim["count"]
    assert got == want


def test_bad_options_are_reported_by_name(spark: Any) -> None:
    with pytest.raises(Exception, match="unknown option"):
        spark.read.format("kafkalog").option("subscribee", "x").load(str(FIXTURE)).count()
    with pytest.raises(Exception, match=r"isolation\.level"):
        read(spark, FIXTURE, isolation_level="serializable").count()


# -- CLI: verify --engine spark, export -------------------------------------------------------

def cli(capsysbinary: pytest.CaptureFixture[bytes], *args: object) -> tuple[int, bytes, str]:
    """The CLI in this process, so that it joins the test session's SparkSession."""
    from kafkalog_cli.cli import main

    with pytest.raises(SystemExit) as e:
        main([str(a) for a in args])
    out, err = capsysbinary.readouterr()
    return int(e.value.code or 0), out, err.decode()


@pytest.mark.parametrize("shallow", [False, True])
def test_verify_on_spark_equals_local_verify(spark: Any, tmp_path: Path, shallow: bool,
                                             capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    damaged = tmp_path / "sample"
    shutil.copytree(FIXTURE, damaged)
    log = damaged / "demo-1" / "00000000000000000263.log"
    data = bytearray(log.read_bytes())
    data[400] ^= 0x5A
    log.write_bytes(bytes(data[:-7]))  # a flipped byte and a torn tail
    flag = ["--shallow"] if shallow else []
    for path in (FIXTURE, damaged, CORPUS):
        local = run("verify", path, "--format", "json", *flag)
        code, out, err = cli(capsysbinary, "verify", path, "--format", "json", "--engine",
                             "spark", *flag)
        assert (code, orjson.loads(out)) == (local.code, orjson.loads(local.out)), err
    assert run("verify", damaged).code == 4


def test_export_parquet_json_csv(spark: Any, tmp_path: Path,
                                 capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    import pyarrow.parquet as pq

    want = dump_records(FIXTURE)
    code, _, err = cli(capsysbinary, "export", FIXTURE, "--to", "parquet", tmp_path / "pq")
    assert code == 0, err
    t = pq.read_table(tmp_path / "pq")
    assert t.schema.field("timestamp").type == pa.timestamp("us", tz="UTC")
    assert arrow_records(t) == want

    code, _, err = cli(capsysbinary, "export", DEMO0, "--to", "json", tmp_path / "js",
                       "-o", "startingOffsets={\"demo\":{\"0\":600}}")
    assert code == 0, err
    lines = [orjson.loads(x) for f in sorted((tmp_path / "js").glob("*.json"))
             for x in f.read_bytes().splitlines()]
    assert sorted((d["offset"], d.get("value")) for d in lines) == \
        [(r[4], None if r[1] is None else base64.b64encode(r[1]).decode())
         for r in dump_records(DEMO0) if r[4] >= 600]  # one base64 string, not 76-char lines
    assert any(len(d["value"]) > 76 for d in lines)

    code, _, err = cli(capsysbinary, "export", FIXTURE, "--to", "csv", tmp_path / "csv",
                       "--batches", "--payload", "hex")
    assert code == 0, err
    import csv

    rows = [r for f in sorted((tmp_path / "csv").glob("*.csv"))
            for r in csv.DictReader(f.read_text().splitlines())]
    assert sorted((r["segment"], int(r["position"]), int(r["crc"])) for r in rows) == sorted(
        (os.path.abspath(d["file"]), d["position"], d["crc"])
        for d in dump_jsonl(FIXTURE) if d["kind"] == "batch")

    code, _, err = cli(capsysbinary, "export", FIXTURE, "--to", "parquet", tmp_path / "pq")
    assert code == 8 and "already exists" in err  # no --overwrite: Spark refuses
    code, _, err = cli(capsysbinary, "export", FIXTURE, "--to", "csv", tmp_path / "x",
                       "-o", "startingOffsets=soon")
    assert code == 16 and err.count("\n") == 1 and "startingOffsets" in err


def test_shipped_package_zip_is_importable(tmp_path: Path) -> None:
    """What --master spark://... and register(spark, ship=True) send to executors."""
    from kafkalog_cli.spark.session import package_zip

    z = package_zip(tmp_path)
    code = ("import sys; sys.path.insert(0, sys.argv[1]); "
            "import kafkalog_cli.spark.rows, kafkalog_cli.spark.checks; "
            "import kafkalog_cli.codec.batch_v2 as b; "
            "assert b.__file__.startswith(sys.argv[1]) and not b.ACCELERATED, b.__file__")
    import subprocess

    p = subprocess.run([sys.executable, "-c", code, str(z)], capture_output=True, text=True,
                       cwd=tmp_path)
    assert p.returncode == 0, p.stderr


def test_executor_python_is_this_interpreter(spark: Any) -> None:
    got = spark.sparkContext.parallelize([0], 1).map(lambda _: __import__("sys").executable)
    assert got.collect() == [sys.executable]


@pytest.mark.parametrize("where", ["same", "inside", "holds"])
def test_export_out_may_not_overlap_the_log_dir(tmp_path, where):
    """Spark's overwrite deletes OUT first: OUT equal to the log dir, inside it, or holding
    it is refused (16) before a JVM starts, and the log dir is left as it was."""
    ld = tmp_path / "ld"
    assert run("generate", ld, "--records", "30").code == 0
    before = sorted((p.relative_to(ld), p.read_bytes()) for p in ld.rglob("*") if p.is_file())
    src, out = {"same": (ld, ld), "inside": (ld, ld / "out"),
                "holds": (ld / "demo-0", ld)}[where]
    r = run("export", src, "--to", "json", out, "--overwrite", "-j", "1")
    assert r.code == 16 and "the log dir read" in r.err, r.err
    assert sorted((p.relative_to(ld), p.read_bytes()) for p in ld.rglob("*")
                  if p.is_file()) == before
