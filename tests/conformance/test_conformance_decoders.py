"""`kafkalog dump --decode` judged by kafka-dump-log's own decoders (`--offsets-decoder`,
`--transaction-log-decoder`, `--cluster-metadata-decoder`) on the broker-written corpus and on
real-world KRaft snapshots; `kafkalog txn` judged by the broker's `.txnindex` files."""
from __future__ import annotations

import json
import re
from pathlib import Path

import kafka_ref
import pytest
from kafka_ref import REPO_ROOT
from kafkalog_run import parse_jsonl, run_kafkalog

pytestmark = pytest.mark.conformance

SHARED_CORPUS = REPO_ROOT.parent / "shared" / "corpus"


def _files(root: Path, pattern: str) -> list[str]:
    return sorted(str(p.resolve()) for p in root.glob(pattern) if p.stat().st_size)


def _reference(files: list[str], option: str, version: str | None = None
               ) -> dict[tuple[str, int], dict]:
    """kafka-dump-log of `version` (default: the 3.9.x) with a decoder option."""
    rc, out, err = kafka_ref.dump_log(files, option,
                                      kafka4=bool(version and kafka_ref.is_kafka4(version)))
    assert rc == 0, err[-3000:]
    recs = {(e["file"], e["offset"]): e for e in kafka_ref.parse_dump_log(out)
            if e["kind"] == "record"}
    assert recs, f"kafka-dump-log {option} printed no records"
    return recs


def _ours(files: list[str]) -> dict[tuple[str, int], dict]:
    out: dict[tuple[str, int], dict] = {}
    for f in files:  # one file per run: record rows carry no file name
        res = run_kafkalog("dump", f, "--records", "--no-batches", "--format", "jsonl")
        assert res.returncode == 0, res.describe()
        for row in parse_jsonl(res.stdout):
            out[(f, row["offset"])] = row
    return out


def _compare(ref: dict, ours: dict, check) -> list[str]:
    diffs = []
    assert set(ref) == set(ours), sorted(set(ref) ^ set(ours))[:10]
    for k, e in ref.items():
        problem = check(e, ours[k])
        if problem:
            diffs.append(f"{Path(k[0]).parent.name}/{Path(k[0]).name} offset {k[1]}: {problem}")
    return diffs


def _offsets_check(e: dict, row: dict) -> str | None:
    if "endTxnMarker" in e:
        return None if "decoded" not in row else "a marker was decoded"
    dec = row.get("decoded") or {}
    want_key = json.loads(e["key"])
    want_value = None if e.get("payload") == "<DELETE>" else json.loads(e["payload"])
    if dec.get("key") != want_key:
        return f"key {dec.get('key')} != {want_key}"
    if dec.get("value") != want_value:
        return f"value {dec.get('value')} != {want_value}"
    return None


def test_offsets_decoder(kafka_corpus):
    files = _files(kafka_corpus.log_dir, "__consumer_offsets-*/*.log")
    ref = _reference(files, "--offsets-decoder", kafka_corpus.version)
    diffs = _compare(ref, _ours(files), _offsets_check)
    assert not diffs, "\n".join(diffs[:20])
    # the corpus has group metadata with expanded consumer protocol data and commits
    kinds = {json.loads(e["key"])["type"] for e in ref.values() if "key" in e}
    assert kinds == {"1", "2"}


_TXN_KEY = re.compile(r"transaction_metadata::transactionalId=(.*)\Z")
_TXN_VALUE = re.compile(r"producerId:(-?\d+),producerEpoch:(-?\d+),state=(\w+),"
                        r"partitions=\[(.*)\],txnLastUpdateTimestamp=(-?\d+),"
                        r"txnTimeoutMs=(-?\d+)\Z")


def _txn_check(e: dict, row: dict) -> str | None:
    if "endTxnMarker" in e:
        return None
    dec = row.get("decoded") or {}
    m = _TXN_KEY.match(e["key"])
    assert m, e["key"]
    if dec.get("key", {}).get("data") != {"transactionalId": m.group(1)}:
        return f"key {dec.get('key')} != {m.group(1)}"
    if e["payload"] == "<DELETE>":
        return None if dec.get("value") is None else "expected a tombstone"
    v = _TXN_VALUE.match(e["payload"])
    assert v, e["payload"]
    d = (dec.get("value") or {}).get("data") or {}
    parts = {f"{p['topic']}-{i}" for p in d.get("transactionPartitions") or []
             for i in p["partitionIds"]}
    want_parts = set(v.group(4).split(",")) if v.group(4) else set()
    if d.get("transactionState") == "Empty":  # the coordinator ignores them when Empty
        parts = want_parts
    got = (d.get("producerId"), d.get("producerEpoch"), d.get("transactionState"), parts,
           d.get("transactionLastUpdateTimestampMs"), d.get("transactionTimeoutMs"))
    want = (int(v.group(1)), int(v.group(2)), v.group(3), want_parts, int(v.group(5)),
            int(v.group(6)))
    return None if got == want else f"{got} != {want}"


# TransactionState ids (TransactionLogValue.TransactionStatus)
_TXN_STATES = ["Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit",
               "CompleteAbort", "Dead", "PrepareEpochFence"]


def _txn_check_json(e: dict, row: dict) -> str | None:
    """Kafka 4.x prints key and value as JsonConverter JSON: they must equal ours, but for
    the state name we add to transactionStatus."""
    if "endTxnMarker" in e:
        return None
    dec = row.get("decoded") or {}
    if dec.get("key") != json.loads(e["key"]):
        return f"key {dec.get('key')} != {e['key']}"
    if e["payload"] == "<DELETE>":
        return None if dec.get("value") is None else "expected a tombstone"
    value = json.loads(json.dumps(dec.get("value")))
    data = (value or {}).get("data") or {}
    if data.pop("transactionState", None) != _TXN_STATES[data.get("transactionStatus", 0)]:
        return f"transactionState does not name transactionStatus in {dec.get('value')}"
    return None if value == json.loads(e["payload"]) else f"value {value} != {e['payload']}"


def test_transaction_log_decoder(kafka_corpus):
    files = _files(kafka_corpus.log_dir, "__transaction_state-*/*.log")
    ref = _reference(files, "--transaction-log-decoder", kafka_corpus.version)
    kafka4 = kafka_ref.is_kafka4(kafka_corpus.version)
    diffs = _compare(ref, _ours(files), _txn_check_json if kafka4 else _txn_check)
    assert not diffs, "\n".join(diffs[:20])
    values = [e["payload"] for e in ref.values() if e.get("payload", "<DELETE>") != "<DELETE>"]
    states = ({_TXN_STATES[json.loads(v)["data"]["transactionStatus"]] for v in values}
              if kafka4 else {_TXN_VALUE.match(v).group(3) for v in values})
    assert {"Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit",
            "CompleteAbort"} <= states


_CONTROL_LABEL = {"SnapshotHeader": "SNAPSHOT_HEADER", "SnapshotFooter": "SNAPSHOT_FOOTER",
                  "KRaftVersion": "KRAFT_VERSION", "KRaftVoters": "KRAFT_VOTERS",
                  "LeaderChange": "LEADER_CHANGE",
                  "LEADER_CHANGE": "LEADER_CHANGE"}  # its data: Kafka 4.x only


def _metadata_check(e: dict, row: dict) -> str | None:
    if "controlJson" in e:
        ctl = row.get("control") or {}
        if ctl.get("type") != _CONTROL_LABEL[e["controlType"]]:
            return f"control {ctl.get('type')} != {e['controlType']}"
        want = json.loads(e["controlJson"])
        return None if ctl.get("data") == want else f"control {ctl.get('data')} != {want}"
    if "controlType" in e:  # LEADER_CHANGE: kafka-dump-log 3.9 prints no JSON
        return None if (row.get("control") or {}).get("type") == e["controlType"] else \
            "control type differs"
    want = json.loads(e["payload"])
    got = (row.get("decoded") or {}).get("value") or {}
    got = {k: got.get(k) for k in ("type", "version", "data")}
    return None if got == want else f"{got} != {want}"


def test_cluster_metadata_decoder(kafka_corpus):
    files = _files(kafka_corpus.log_dir, "__cluster_metadata-0/*.log") + \
        _files(kafka_corpus.log_dir, "bootstrap.checkpoint")
    ref = _reference(files, "--cluster-metadata-decoder", kafka_corpus.version)
    diffs = _compare(ref, _ours(files), _metadata_check)
    assert not diffs, "\n".join(diffs[:20])
    types = {json.loads(e["payload"])["type"] for e in ref.values() if "payload" in e}
    assert {"TOPIC_RECORD", "PARTITION_RECORD", "REGISTER_BROKER_RECORD",
            "FEATURE_LEVEL_RECORD", "PRODUCER_IDS_RECORD", "CONFIG_RECORD",
            "PARTITION_CHANGE_RECORD", "BROKER_REGISTRATION_CHANGE_RECORD"} <= types


def test_cluster_metadata_decoder_on_real_snapshots_and_logs():
    """Real-world KRaft dirs (shared corpus): snapshots with KRaftVoters, long logs."""
    files = _files(SHARED_CORPUS, "rupia-kraft/__cluster_metadata-0/*.checkpoint")[-3:] + \
        _files(SHARED_CORPUS, "nomanazeem-kraft/__cluster_metadata-0/*.log") + \
        _files(SHARED_CORPUS, "ldi-poc-kraft/bootstrap.checkpoint")
    ref = _reference(files, "--cluster-metadata-decoder")
    diffs = _compare(ref, _ours(files), _metadata_check)
    assert not diffs, "\n".join(diffs[:20])
    assert any(e.get("controlType") == "KRaftVoters" for e in ref.values())


def test_txn_report_matches_the_brokers_txnindex(kafka_corpus):
    """Every transaction of the corpus completed: no open one, the LSO is the log end, and
    the aborted transactions equal the broker's .txnindex entries (kafka-dump-log), also on
    compacted-txn, where the cleaner removed aborted data: ABORT markers whose entry a later
    round dropped are not reported, entries kept with the original offsets are."""
    parts = [p for p in kafka_corpus.partition_dirs()
             if p.name.startswith(("txn-", "__consumer_offsets-", "compacted-txn-"))]
    res = run_kafkalog("txn", *parts, "--format", "json", "--all")
    assert res.returncode == 0, res.describe()
    rows = {f"{r['topic']}-{r['partition']}": r for r in json.loads(res.stdout)}
    idx_files = [str(f.resolve()) for p in parts for f in sorted(p.glob("*.txnindex"))
                 if f.stat().st_size]
    assert idx_files, "the corpus has aborted transactions"
    rc, out, err = kafka_ref.dump_log(idx_files,
                                      kafka4=kafka_ref.is_kafka4(kafka_corpus.version))
    assert rc == 0, err[-2000:]
    want: dict[str, set] = {}
    for e in kafka_ref.parse_dump_log(out):
        if e["kind"] == "txnindex_entry":
            want.setdefault(Path(e["file"]).parent.name, set()).add(
                (e["producerId"], e["firstOffset"], e["lastOffset"], e["lastStableOffset"]))
    aborted_total = 0
    for name, row in rows.items():
        assert row["open"] == [] and row["notes"] == [], (name, row)
        assert row["lastStableOffset"] == row["logEndOffset"]
        got = {(a["producerId"], a["firstOffset"], a["lastOffset"], a["lastStableOffset"])
               for a in row["aborted"]}
        assert got == want.get(name, set()), name
        assert all(a["sources"] == ["marker", "txnindex"] for a in row["aborted"]), name
        aborted_total += len(got)
    assert aborted_total >= 4
    assert "compacted-txn-0" in want  # the phase-2 entries the cleaner kept
