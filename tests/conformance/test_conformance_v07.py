"""kafkalog migrate (Kafka 0.7 -> current), judged by kafka-dump-log and by a real broker.

A generated 0.7 partition (plain, gzip and snappy message sets, several segments) is
migrated; kafka-dump-log's index checks pass on the result; swapped into a stopped broker's
partition dir, the broker loads it without recovering anything, and a consumer reads back
every 0.7 message, in order, at the offsets the printed mapping promises.
"""
from __future__ import annotations

import csv
import io
import json
import re
import shutil

import kafka_ref
import pytest
from broker_corpus import consume_all
from kafkalog_run import run_kafkalog

pytestmark = pytest.mark.conformance
TOPIC = "v07-migrated"
N = 700
SEGMENT_FILES = (".log", ".index", ".timeindex", ".txnindex", ".snapshot")
RECOVERY_LINE = re.compile(r"Recovering unflushed segment|recovering segment and rebuilding|"
                           r"Found invalid|Corruption found|Truncat|CorruptRecord", re.I)


@pytest.fixture(scope="module")
def migrated(kafka_reference, tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("v07")
    old = root / "old"
    gen = run_kafkalog("generate", old, "--format", "0.7", "--topic", TOPIC, "--records", N,
                       "--batch-records", "9", "--value-bytes", "150", "--codec", "none",
                       "--codec", "gzip", "--codec", "snappy", "--segment-bytes", "9000")
    assert gen.returncode == 0, gen.describe()
    src = old / f"{TOPIC}-0"
    assert len(list(src.glob("*.kafka"))) > 3
    dump = run_kafkalog("dump", src, "--records", "--format", "jsonl", "--payload", "base64")
    assert dump.returncode == 0, dump.describe()
    messages = [json.loads(x) for x in dump.stdout.splitlines() if '"message"' in x]
    assert len(messages) == N
    mig = run_kafkalog("migrate", src, root / "new", "--segment-bytes", "16384")
    assert mig.returncode == 0, mig.describe()
    rows = list(csv.DictReader(io.StringIO(mig.stdout)))
    return {"dir": root / "new" / f"{TOPIC}-0", "messages": messages, "mapping": rows}


def test_migrated_partition_passes_kafka_dump_log(migrated):
    d = migrated["dir"]
    logs = sorted(str(p) for p in d.glob("*.log"))
    assert len(logs) > 1, "expected several segments"
    idx = sorted(str(p) for p in d.iterdir() if p.suffix in (".index", ".timeindex"))
    rc, _out, err = kafka_ref.dump_log(idx, "--verify-index-only")
    assert rc == 0 and err.strip() == "", err
    view = kafka_ref.DumpLogView(logs)
    assert view.returncode == 0, view.stderr
    batches = [e for e in view.entries if e["kind"] == "batch"]
    assert batches and all(b["isvalid"] and b["magic"] == 2 for b in batches)
    assert {b["compresscodec"] for b in batches} == {"none", "gzip", "snappy"}
    recs = [r for b in batches for r in b["records"]]
    assert [r["offset"] for r in recs] == list(range(N))


@pytest.fixture(scope="module")
def stopped_broker(kafka_reference, tmp_path_factory):
    b = kafka_ref.KafkaBroker(work_dir=tmp_path_factory.mktemp("v07-broker"))
    try:
        b.start()
        b.create_topic(TOPIC, partitions=1)
        b.stop()
        yield b
    finally:
        b.close()


def test_migrated_partition_reads_back_from_a_broker(migrated, stopped_broker):
    b = stopped_broker
    target = b.log_dir / f"{TOPIC}-0"
    assert (target / "partition.metadata").exists()
    for p in target.iterdir():
        if p.suffix in SEGMENT_FILES:
            p.unlink()
    for p in migrated["dir"].iterdir():
        if p.suffix in SEGMENT_FILES:
            shutil.copy2(p, target / p.name)
    b.start()
    try:
        text = b.log_text()
        bad = [ln for ln in text.splitlines() if TOPIC in ln and RECOVERY_LINE.search(ln)]
        assert not bad, "the broker recovered migrated segments:\n" + "\n".join(bad[:20])
        m = re.search(rf"Completed load of Log\(dir=[^,]*/{re.escape(TOPIC)}-0,.*?"
                      rf"logEndOffset=(\d+)\)", text)
        assert m and int(m.group(1)) == N, m and m.group(0)
        got = consume_all(b.bootstrap, [TOPIC])
    finally:
        b.stop()
    assert b.clean_stop
    want = migrated["messages"]
    assert [r["offset"] for r in got] == list(range(N))
    assert [r["value"] for r in got] == [m["payload"] for m in want]
    assert all(r["key"] is None and r["headers"] == [] and r["timestamp"] == -1 for r in got)
    # the mapping: each 0.7 entry start -> the offset of its first message; end -> LEO
    rows = migrated["mapping"]
    firsts = {m["offset"]: m for m in want if m["innerIndex"] in (None, 0)}
    assert [int(r["byteOffset"]) for r in rows[:-1]] == sorted(firsts)
    for r in rows[:-1]:
        assert got[int(r["newOffset"])]["value"] == firsts[int(r["byteOffset"])]["payload"]
    assert int(rows[-1]["newOffset"]) == N
    assert int(rows[-1]["byteOffset"]) == want[-1]["nextOffset"]
