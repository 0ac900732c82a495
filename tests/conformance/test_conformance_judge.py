"""Self-checks of the judge: the reference Kafka, the generated corpora and the
kafka-dump-log parser. These run no kafkalog command (one builds its input with the codec)."""
from __future__ import annotations

import base64
import os
import socket
import time
from collections import Counter
from pathlib import Path

import kafka_ref
import pytest
from broker_corpus import CODECS, LEGACY_TOPICS
from kafka_ref import txn_entries
from kafkalog_run import consumer_view, same_text

from kafkalog_cli.codec import index_entry as ie
from kafkalog_cli.codec.batch_v2 import encode_batch

pytestmark = pytest.mark.conformance


def test_reference_kafka_is_pinned_version(kafka_reference, broker_version):
    kafka4 = kafka_ref.is_kafka4(broker_version)
    rc, out, err = kafka_ref.dump_log(["x.log"], "--version", kafka4=kafka4)
    assert rc == 0, err
    assert out.strip().splitlines()[-1] == broker_version
    key = "kafka4_version" if kafka4 else "kafka_version"
    assert kafka_reference[key] == broker_version
    assert kafka_reference[key.replace("version", "coordinates")] == (
        f"org.apache.kafka:kafka_2.13:{broker_version}")
    libs, _tool = kafka_ref.broker_dist(broker_version)
    assert (libs / f"kafka_2.13-{broker_version}.jar").is_file()


def test_broker_start_stop_kill(tmp_path, broker_version):
    """A fresh KRaft broker starts, stops cleanly (.kafka_cleanshutdown) and can be killed."""
    b = kafka_ref.KafkaBroker(work_dir=tmp_path / "b", version=broker_version)
    try:
        started = b.start()
        b.create_topic("t", partitions=2)
        stopped = b.stop()
        assert b.clean_stop
        assert (b.log_dir / ".kafka_cleanshutdown").exists()
        assert (b.log_dir / "t-0" / "partition.metadata").exists()
        print(f"\nbroker start {started:.2f}s (format {b.format_seconds:.2f}s), "
              f"clean stop {stopped:.2f}s")
        b.start()  # restart on the same log dir
        pid = b.proc.pid
        b.kill()
        time.sleep(0.2)
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
        assert not (b.log_dir / ".kafka_cleanshutdown").exists()
    finally:
        b.close()
    assert pid not in kafka_ref._LIVE


@pytest.mark.parametrize(("broker", "port"), [
    ("KafkaBroker", "port"), ("KafkaBroker", "controller_port"), ("Kafka2Broker", "port"),
    ("Kafka2Broker", "zk_port"), ("LegacyBroker", "port"), ("LegacyBroker", "zk_port")])
def test_broker_moves_to_new_ports_when_one_is_taken_before_it_binds(
        kafka_reference, tmp_path, monkeypatch, broker, port):
    """The race the harness retries: a port free when picked, taken by the time the JVM
    binds it (any connection on the machine may get it as its ephemeral port)."""
    monkeypatch.setattr(kafka_ref, "_port_free", lambda p: True)  # the check sees no taker
    b = getattr(kafka_ref, broker)(work_dir=tmp_path / "b")
    taken = getattr(b, port)
    with socket.socket() as hold:
        hold.bind(("127.0.0.1", taken))
        hold.listen()
        t0 = time.monotonic()
        with b:
            assert b.running
            assert getattr(b, port) != taken
            assert kafka_ref.port_open(b.port)
            assert time.monotonic() - t0 < 60  # a failed bind is noticed, not waited out


def test_corpus_contains_every_feature(kafka_corpus):
    m = kafka_corpus.manifest
    assert m["failed"] == {}, f"the broker could not write: {sorted(m['failed'])}"
    f = m["features"]
    print("\ncorpus features:", {k: v for k, v in f.items()
                                  if k not in ("topics", "segments_per_partition")})
    assert set(f["codecs"]) == set(CODECS)
    assert f["timestampTypes"] == ["CreateTime", "LogAppendTime"]
    assert f["magic"] == [2]
    for flag in ("transactional_batches", "commit_markers", "abort_markers",
                 "idempotent_batches", "offset_gaps", "headers", "null_keys", "null_values",
                 "delete_horizon_set", "large_batches", "leader_change_controls",
                 "nonmonotonic_timestamps"):
        assert f[flag] > 0, flag
    assert any(p.startswith("txn-") for p in f["nonempty_txnindex_files"])
    assert any(p.startswith("__consumer_offsets-") for p in f["nonempty_txnindex_files"])
    for topic in ("codec-none", "codec-gzip", "codec-snappy", "codec-lz4", "codec-zstd",
                  "compacted", "txn"):
        assert f"{topic}-0" in f["multi_segment_partitions"], topic
    assert m["clean_shutdown_marker"]
    assert m["written"]["cleaner"]["compacted"]["cleaned_to"] > 0
    assert len(kafka_corpus.closed_segments()) >= 30
    # compacted-txn: aborted data the cleaner removed, in both states it leaves
    assert m["written"]["compacted-txn"]["aborts"] >= 4
    assert f["cleaned_aborts_entry_dropped"] > 0  # marker kept, .txnindex entry gone
    # data gone, entry kept for one more round: whether the broker's cleaner stops in that
    # state depends on its timing on a loaded machine; tests/storage/test_txn_cleaned.py
    # holds it, and the txn/index-rebuild judges compare whatever state the broker left
    # (the count is in the features printed above)
    if kafka_ref.is_kafka4(kafka_corpus.version):  # KIP-1030 minimum for internal topics
        assert m["broker_props"]["transaction.state.log.segment.bytes"] < 1024 * 1024


def test_recovered_twin_rebuilt_every_index(kafka_corpus):
    """In recovered/, the broker rebuilt every index (LogSegment.recover); for every closed
    segment the result equals what the broker wrote while appending, except the .txnindex
    entries the cleaner kept for aborted transactions whose data it removed (compacted-txn):
    recovery drops those (a marker without data completes no transaction)."""
    m = kafka_corpus.manifest["recovered"]
    assert m["segments_recovered_by_broker"] >= len(list(kafka_corpus.log_dir.glob("*/*.log"))) - 1
    diffs, dropped = [], 0
    for seg in kafka_corpus.closed_segments():
        twin = kafka_corpus.recovered_dir / seg.parent.name
        for ext in (".index", ".timeindex", ".txnindex"):
            a, b = seg.with_suffix(ext), twin / (seg.stem + ext)
            da = a.read_bytes() if a.exists() else b""
            db = b.read_bytes() if b.exists() else b""
            if ext == ".txnindex" and seg.parent.name.startswith("compacted-txn-"):
                kept = set(txn_entries(da))
                assert set(txn_entries(db)) <= kept, a
                dropped += len(kept - set(txn_entries(db)))
            elif da != db:
                diffs.append(f"{a}: {len(da)} bytes written, {len(db)} rebuilt")
    assert not diffs, "\n".join(diffs)
    assert dropped == kafka_corpus.manifest["features"]["cleaned_aborts_entry_kept"]


def test_corpus_indexes_pass_kafka_checks(kafka_corpus):
    files = sorted(str(p) for pat in ("*.index", "*.timeindex")
                   for p in kafka_corpus.log_dir.glob(f"*/{pat}"))
    kafka4 = kafka_ref.is_kafka4(kafka_corpus.version)
    rc, err = kafka_ref.verify_indexes(files, kafka4=kafka4)
    assert rc == 0, err
    assert err.strip() == "", err
    rc, out, err = kafka_ref.dump_log(files, "--index-sanity-check", kafka4=kafka4)
    assert rc == 0, err
    kinds = Counter(e["kind"] for e in kafka_ref.parse_dump_log(out))
    assert kinds["sanity_ok"] + kinds["index_empty"] == len(files), kinds


def test_verify_indexes_excuses_only_the_empty_batch_finding(tmp_path, kafka_reference):
    """kafka-dump-log reports a time index entry for a batch the cleaner kept empty as a
    mismatch (log timestamp -1) although the broker indexes exactly that; verify_indexes
    excuses that finding and no other: not a wrong timestamp on a batch with records, not an
    empty batch indexed under another timestamp."""
    ts = 1_700_000_000_000
    data = encode_batch([(o, ts + o, b"k", b"v", []) for o in range(2)],
                        producer_id=5, producer_epoch=0, base_sequence=0, transactional=True)
    empty = encode_batch([], base_offset=2, last_offset_delta=1, producer_id=5,
                         producer_epoch=0, base_sequence=2, transactional=True,
                         max_timestamp=ts + 3)

    def segment(name: str, time_entries: list[tuple[int, int]]) -> Path:
        d = tmp_path / name
        d.mkdir()
        (d / "00000000000000000000.log").write_bytes(data + empty)
        (d / "00000000000000000000.index").write_bytes(b"")
        (d / "00000000000000000000.timeindex").write_bytes(ie.encode_time_entries(time_entries))
        return d / "00000000000000000000.timeindex"

    broker = segment("broker", [(ts + 1, 1), (ts + 3, 3)])  # what the broker writes
    rc, _out, raw = kafka_ref.dump_log([broker], "--verify-index-only")
    assert rc == 0 and "log timestamp: -1" in raw, raw  # the quirk is there
    assert kafka_ref.verify_indexes([broker]) == (0, "")
    wrong_data = segment("wrong-data", [(ts + 2, 1), (ts + 3, 3)])
    wrong_empty = segment("wrong-empty", [(ts + 1, 1), (ts + 4, 3)])
    for bad, found in ((wrong_data, f"Index timestamp: {ts + 2}, log timestamp: {ts + 1}"),
                       (wrong_empty, f"Index timestamp: {ts + 4}, log timestamp: -1")):
        rc, err = kafka_ref.verify_indexes([bad])
        assert rc == 0 and found in err and str(bad) in err, err


def _dump_log_view(view, topics) -> dict:
    """kafka-dump-log data records of these topics, shaped like consumer_view input."""
    out = []
    for e in view.entries:
        if e["kind"] != "batch" or e.get("isControl"):
            continue
        topic, part = Path(e["file"]).parent.name.rsplit("-", 1)
        if topic not in topics:
            continue
        for r in e["records"]:
            out.append({"topic": topic, "partition": int(part), "offset": r["offset"],
                        "timestamp": r["timestamp"], "timestampType": r["timestampType"],
                        "key": r.get("key"), "value": r.get("payload"),
                        "headers": [{"key": k, "value": None} for k in r.get("headerKeys", [])]})
    return out


def _consumer_as_text(records) -> list[dict]:
    out = []
    for r in records:
        out.append({**r, "headers": [{"key": h["key"], "value": None} for h in r["headers"]]})
    return out


def _compare_text(consumed, dumped) -> list[str]:
    want = consumer_view(_consumer_as_text(consumed))
    got = consumer_view(dumped)
    diffs = []
    for tp in sorted(set(want) | set(got)):
        w, g = want.get(tp, []), got.get(tp, [])
        if len(w) != len(g):
            diffs.append(f"{tp}: consumer {len(w)} records, kafka-dump-log {len(g)}")
            continue
        for a, b in zip(w, g, strict=False):
            ka = None if a[3] is None else base64.b64decode(a[3])
            va = None if a[4] is None else base64.b64decode(a[4])
            if (a[:3] != b[:3] or a[5] != b[5] or not same_text(b[3], ka)
                    or not same_text(b[4], va)):
                diffs.append(f"{tp} offset {a[0]}: consumer {a!r:.150} / dump-log {b!r:.150}")
                break
    return diffs


def test_dump_log_parser_agrees_with_consumer(kafka_corpus, corpus_dump_log):
    """parse_dump_log() of kafka-dump-log output = what kafka-python consumed (the judge's
    two views agree, so either can be used against kafkalog)."""
    topics = set(kafka_corpus.manifest["topics"])
    consumed = kafka_corpus.consumed["read_uncommitted"]
    diffs = _compare_text(consumed, _dump_log_view(corpus_dump_log, topics))
    assert not diffs, "\n".join(diffs[:20])
    others = [e for e in corpus_dump_log.entries if e["kind"] == "other"]
    assert not others, others[:5]
    assert not any("unparsed" in e for e in corpus_dump_log.entries if e["kind"] == "record")


def test_legacy_corpus_is_magic_0(legacy_corpus, legacy_dump_log):
    batches = [e for e in legacy_dump_log.entries if e["kind"] == "batch"]
    assert batches and {b["magic"] for b in batches} == {0}
    assert {b["compresscodec"] for b in batches} == set(CODECS) - {"zstd"}
    consumed = legacy_corpus.consumed["read_uncommitted"]
    diffs = _compare_text(consumed, _dump_log_view(legacy_dump_log, set(LEGACY_TOPICS)))
    assert not diffs, "\n".join(diffs[:20])
