"""(1) kafkalog dump / verify on broker-written log dirs, judged by the broker's consumer
view and by Kafka's own kafka-dump-log."""
from __future__ import annotations

import json
from pathlib import Path

import kafka_ref
import pytest
from kafka_ref import REPO_ROOT
from kafkalog_run import (
    compare_with_dump_log,
    consumer_view,
    diff_views,
    kafkalog_batches_by_file,
    kafkalog_dump,
    run_kafkalog,
)

pytestmark = pytest.mark.conformance

SHARED_CORPUS = REPO_ROOT.parent / "shared" / "corpus"
SHARED_DIRS = sorted(p.name for p in SHARED_CORPUS.iterdir() if p.is_dir()) \
    if SHARED_CORPUS.is_dir() else ["(shared corpus missing)"]


def _ok(res):
    assert res.returncode == 0, res.describe()


def _verify(path: Path):
    res = run_kafkalog("verify", path, "--format", "json")
    try:
        doc = json.loads(res.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"verify --format json did not print JSON\n{res.describe()}")
    errors = [f for f in doc.get("findings", []) if f.get("severity") == "error"]
    assert not errors, "verify reported errors on a broker-written dir:\n" + "\n".join(
        json.dumps(e) for e in errors[:20])
    assert res.returncode == 0, res.describe()
    assert "summary" in doc
    return doc


def test_verify_broker_written_dir_has_no_errors(kafka_corpus):
    _verify(kafka_corpus.log_dir)


def test_verify_broker_recovered_dir_has_no_errors(kafka_corpus):
    _verify(kafka_corpus.recovered_dir)


def test_verify_kafka_0_9_dir_has_no_errors(legacy_corpus):
    _verify(legacy_corpus.log_dir)


def _data_records(entries, topics=None) -> list[dict]:
    """kafkalog's records minus control records (what a consumer returns)."""
    out, is_ctl = [], False
    for e in entries:
        if e.get("kind") == "batch":
            is_ctl = bool(e.get("isControl"))
        elif e.get("kind") == "record" and not is_ctl and "control" not in e and (
                topics is None or e.get("topic") in topics):
            out.append(e)
    return out


def test_dump_records_equal_consumer_read_uncommitted(kafka_corpus, corpus_kafkalog_dump):
    res, entries = corpus_kafkalog_dump
    _ok(res)
    topics = set(kafka_corpus.manifest["topics"])
    want = consumer_view(kafka_corpus.consumed["read_uncommitted"])
    got = consumer_view(_data_records(entries, topics))
    diffs = diff_views(want, got, "kafkalog dump")
    assert not diffs, "\n".join(diffs[:25])


def _read_committed(entries, topics) -> list[dict]:
    """Apply transaction markers to kafkalog's dump the way a read_committed consumer does:
    records of a transactional batch are held per producer until its COMMIT (returned) or
    ABORT (dropped) control record."""
    out: list[dict] = []
    pending: dict[tuple, list[dict]] = {}
    batch = None
    for e in entries:
        kind = e.get("kind")
        if kind == "batch":
            batch = e
            continue
        if kind != "record" or e.get("topic") not in topics:
            continue
        tp = (e["topic"], e["partition"])
        pid = batch.get("producerId")
        if batch.get("isControl"):
            ctl = (e.get("control") or {}).get("type")
            held = pending.pop((tp, pid), [])
            if ctl == "COMMIT":
                out.extend(held)
        elif batch.get("isTransactional"):
            pending.setdefault((tp, pid), []).append(e)
        else:
            out.append(e)
    return out


def test_dump_transaction_view_equals_consumer_read_committed(kafka_corpus,
                                                               corpus_kafkalog_dump):
    res, entries = corpus_kafkalog_dump
    _ok(res)
    topics = set(kafka_corpus.manifest["topics"])
    want = consumer_view(kafka_corpus.consumed["read_committed"])
    got = consumer_view(_read_committed(entries, topics))
    diffs = diff_views(want, got, "kafkalog dump (markers applied)")
    assert not diffs, "\n".join(diffs[:25])


def test_dump_equals_kafka_dump_log(corpus_dump_log, corpus_kafkalog_dump):
    """Every batch line and every record line, for every .log of the broker's log dir
    (user topics, __consumer_offsets, __transaction_state, __cluster_metadata)."""
    res, entries = corpus_kafkalog_dump
    _ok(res)
    diffs = compare_with_dump_log(corpus_dump_log.entries, kafkalog_batches_by_file(entries),
                                  corpus_dump_log.files)
    assert not diffs, "\n".join(diffs[:25])


def test_dump_kafka_0_9_dir_equals_kafka_dump_log_and_consumer(legacy_corpus, legacy_dump_log):
    res, entries = kafkalog_dump(legacy_corpus.log_dir)
    _ok(res)
    diffs = compare_with_dump_log(legacy_dump_log.entries, kafkalog_batches_by_file(entries),
                                  legacy_dump_log.files)
    assert not diffs, "\n".join(diffs[:25])
    want = consumer_view(legacy_corpus.consumed["read_uncommitted"])
    got = consumer_view(_data_records(entries))
    diffs = diff_views({k: v for k, v in want.items()},
                       {k: v for k, v in got.items() if not k[0].startswith("__")},
                       "kafkalog dump")
    assert not diffs, "\n".join(diffs[:25])


@pytest.fixture(scope="module")
def shared_dump_log(kafka_reference):
    """kafka-dump-log over every .log of the shared corpus, one JVM."""
    assert SHARED_CORPUS.is_dir(), f"shared corpus missing at {SHARED_CORPUS}"
    files = sorted(str(p.resolve()) for p in SHARED_CORPUS.glob("*/*/*.log"))
    view = kafka_ref.DumpLogView(files)
    assert view.returncode == 0, view.stderr[-3000:]
    return view


@pytest.mark.parametrize("name", SHARED_DIRS)
def test_dump_shared_corpus_equals_kafka_dump_log(name, shared_dump_log):
    """The real-world dirs of /work/shared/corpus (KRaft, ZooKeeper-era, 0.9)."""
    root = SHARED_CORPUS / name
    assert root.is_dir(), f"{root} missing"
    res, entries = kafkalog_dump(root)
    _ok(res)
    files = [f for f in shared_dump_log.files if Path(f).parent.parent == root.resolve()]
    assert files
    diffs = compare_with_dump_log(shared_dump_log.entries, kafkalog_batches_by_file(entries),
                                  files)
    assert not diffs, "\n".join(diffs[:25])
