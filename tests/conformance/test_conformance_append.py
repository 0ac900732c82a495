"""(3) kafkalog append round trip, judged by kafka-dump-log and by a real broker.

For every codec, ``kafkalog append`` writes a partition from a JSONL file (the record schema
of ``kafkalog dump --records --format jsonl --payload base64``). Then:
* kafka-dump-log ``--verify-index-only`` and ``--index-sanity-check`` report nothing, and
  its ``--deep-iteration --print-data-log`` shows exactly the input records;
* the written files replace the (empty) partition of a topic created on a stopped broker;
  the broker restarts without recovering anything and a consumer reads back every record.
"""
from __future__ import annotations

import base64
import json
import re
import shutil
import time
from pathlib import Path

import kafka_ref
import pytest
from broker_corpus import CODECS, _Data, consume_all
from kafkalog_run import run_kafkalog, same_text

pytestmark = pytest.mark.conformance
N_RECORDS = 400
SEGMENT_BYTES = 16384  # several segments per partition, so rolls and closed indexes count
APPEND_OPTS = ("--input-format", "jsonl", "--payload", "base64",
               "--segment-bytes", str(SEGMENT_BYTES))
TXN_TOPIC = "rt-txn"
TXN_PID = 7
SEGMENT_FILES = (".log", ".index", ".timeindex", ".txnindex", ".snapshot")
RECOVERY_LINE = re.compile(
    r"Recovering unflushed segment|recovering segment and rebuilding|Found invalid|"
    r"Corruption found|Could not find offset index|Truncat|CorruptRecord|"
    r"Found a corrupted index", re.I)


def _b64(b):
    return None if b is None else base64.b64encode(b).decode()


def make_records(seed: int) -> list[dict]:
    d = _Data(seed)
    now = int(time.time() * 1000) - 3_600_000
    out = []
    for i in range(N_RECORDS):
        key = d.key(nkeys=80)
        value = None if (key is not None and d.r.random() < 0.05) else d.value(700)
        headers = [{"key": k, "value": _b64(v)} for k, v in d.headers()]
        if i % 37 == 5:
            headers.append({"key": "null-value", "value": None})
        ts = now + i * 7 - (d.r.randrange(5000) if d.r.random() < 0.1 else 0)
        out.append({"key": _b64(key), "value": _b64(value), "headers": headers,
                    "timestamp": ts})
    return out


@pytest.fixture(scope="module")
def appended(kafka_reference, tmp_path_factory) -> dict:
    """codec -> {"result", "dir" (partition dir), "records"}; never raises."""
    out = {}
    for i, codec in enumerate(CODECS):
        root = tmp_path_factory.mktemp(f"append-{codec}")
        records = make_records(9100 + i)
        inp = root / "input.jsonl"
        inp.write_text("".join(json.dumps(r) + "\n" for r in records))
        logdir = root / "logs"
        logdir.mkdir()
        topic = f"rt-{codec}"
        res = run_kafkalog("append", logdir, "--topic", topic, "--partition", "0",
                           "--input", inp, *APPEND_OPTS, "--codec", codec)
        out[codec] = {"result": res, "dir": logdir / f"{topic}-0", "records": records,
                      "topic": topic}
    return out


@pytest.fixture(scope="module")
def appended_txn(kafka_reference, tmp_path_factory) -> dict:
    """rt-txn-0: a committed transaction, an aborted one (same producer), then plain
    records; returns {"results", "dir", "committed", "aborted", "plain"}."""
    root = tmp_path_factory.mktemp("append-txn")
    logdir = root / "logs"
    logdir.mkdir()
    parts = {"committed": make_records(9201)[:60], "aborted": make_records(9202)[:45],
             "plain": make_records(9203)[:15]}
    runs = [("committed", ["--producer-id", str(TXN_PID), "--transactional",
                           "--end-txn", "commit", "--base-sequence", "0"]),
            ("aborted", ["--producer-id", str(TXN_PID), "--transactional",
                         "--end-txn", "abort", "--base-sequence", "60"]),
            ("plain", [])]
    results = []
    for name, extra in runs:
        inp = root / f"{name}.jsonl"
        inp.write_text("".join(json.dumps(r) + "\n" for r in parts[name]))
        results.append(run_kafkalog("append", logdir, "--topic", TXN_TOPIC, "--partition",
                                    "0", "--input", inp, *APPEND_OPTS, "--codec", "gzip",
                                    *extra))
    return {"results": results, "dir": logdir / f"{TXN_TOPIC}-0", **parts}


def _check_append(a):
    assert a["result"].returncode == 0, a["result"].describe()
    assert a["dir"].is_dir(), f"no partition dir {a['dir']}"
    assert sorted(a["dir"].glob("*.log")), f"no .log in {a['dir']}"


def _non_consecutive(stderr: str) -> list[str]:
    """kafka-dump-log's "Non-consecutive offsets" pairs, but for "-1 is followed by <the
    segment's base offset>", which 4.x's tool reports for every segment not starting at 0
    (broker-written ones too: it starts each file's count at -1)."""
    pairs, file = [], ""
    for line in stderr.splitlines():
        if line.startswith("Non-consecutive offsets in "):
            file = line[len("Non-consecutive offsets in "):]
        elif m := re.fullmatch(r"\s+(-?\d+) is followed by (-?\d+)", line):
            if not (m.group(1) == "-1" and int(m.group(2)) == int(Path(file).stem)):
                pairs.append(f"{file}: {line.strip()}")
        elif "Non-consecutive" in line:
            pairs.append(line)
    return pairs


@pytest.mark.parametrize("codec", CODECS)
def test_append_passes_kafka_dump_log_checks(appended, codec, broker_version):
    """kafka-dump-log of each broker version checks the indexes and reads every record."""
    kafka4 = kafka_ref.is_kafka4(broker_version)
    a = appended[codec]
    _check_append(a)
    idx = sorted(str(p) for p in a["dir"].iterdir() if p.suffix in (".index", ".timeindex"))
    assert idx, "append wrote no index files"
    if codec in ("none", "gzip"):  # enough bytes to roll at --segment-bytes and index
        assert len(list(a["dir"].glob("*.log"))) > 1, "expected several segments"
        assert any(Path(p).stat().st_size for p in idx), "expected index entries"
    rc, out, err = kafka_ref.dump_log(idx, "--verify-index-only", kafka4=kafka4)
    assert rc == 0 and err.strip() == "", f"kafka-dump-log --verify-index-only:\n{err}"
    assert out.count("Dumping ") == len(idx)
    rc, out, err = kafka_ref.dump_log(idx, "--index-sanity-check", kafka4=kafka4)
    assert rc == 0, err
    kinds = [e["kind"] for e in kafka_ref.parse_dump_log(out) if e["kind"] != "file"]
    assert kinds.count("sanity_ok") + kinds.count("index_empty") == len(idx), out

    logs = sorted(str(p) for p in a["dir"].glob("*.log"))
    view = kafka_ref.DumpLogView(logs, kafka4=kafka4)
    assert view.returncode == 0, view.stderr
    assert not _non_consecutive(view.stderr) and "invalid bytes" not in view.stdout
    batches = [e for e in view.entries if e["kind"] == "batch"]
    assert all(b["isvalid"] for b in batches)
    assert {b["compresscodec"] for b in batches if not b.get("isControl")} == {codec}
    recs = [r for b in batches for r in b["records"]]
    assert len(recs) == len(a["records"])
    diffs = []
    for off, (want, got) in enumerate(zip(a["records"], recs, strict=False)):
        k = None if want["key"] is None else base64.b64decode(want["key"])
        v = None if want["value"] is None else base64.b64decode(want["value"])
        if (got["offset"] != off or got["timestamp"] != want["timestamp"]
                or got["timestampType"] != "CreateTime"
                or got.get("headerKeys") != [h["key"] for h in want["headers"]]
                or not same_text(got.get("key"), k) or not same_text(got.get("payload"), v)):
            diffs.append(f"offset {off}: input {want!r:.160} / kafka-dump-log {got!r:.160}")
    assert not diffs, "\n".join(diffs[:20])


@pytest.fixture(scope="module")
def stopped_broker(broker_version, tmp_path_factory):
    """A broker with topics rt-<codec> and rt-txn (1 partition each), cleanly stopped."""
    b = kafka_ref.KafkaBroker(work_dir=tmp_path_factory.mktemp("append-broker"),
                              version=broker_version)
    try:
        b.start()
        for topic in [f"rt-{c}" for c in CODECS] + [TXN_TOPIC]:
            b.create_topic(topic, partitions=1)
        b.stop()
        yield b
    finally:
        b.close()


def _swap_in(src: Path, target: Path) -> None:
    """Replace the segment files of the broker's partition dir with kafkalog's (the broker's
    partition.metadata and leader-epoch-checkpoint stay)."""
    assert (target / "partition.metadata").exists()
    for p in target.iterdir():
        if p.suffix in SEGMENT_FILES:
            p.unlink()
    for p in src.iterdir():
        if p.suffix in SEGMENT_FILES:
            shutil.copy2(p, target / p.name)


def test_append_swapped_into_broker_reads_back(appended, appended_txn, stopped_broker):
    b = stopped_broker
    for codec in CODECS:
        _check_append(appended[codec])
    for res in appended_txn["results"]:
        assert res.returncode == 0, res.describe()
    for codec in CODECS:
        _swap_in(appended[codec]["dir"], b.log_dir / f"{appended[codec]['topic']}-0")
    _swap_in(appended_txn["dir"], b.log_dir / f"{TXN_TOPIC}-0")
    assert (b.log_dir / ".kafka_cleanshutdown").exists()
    b.start()
    try:
        text = b.log_text()
        bad = [ln for ln in text.splitlines() if "rt-" in ln and RECOVERY_LINE.search(ln)]
        assert not bad, "the broker recovered appended segments:\n" + "\n".join(bad[:20])
        n_txn = sum(len(appended_txn[k]) for k in ("committed", "aborted", "plain")) + 2
        for t, n in [(appended[c]["topic"], len(appended[c]["records"])) for c in CODECS] + [
                (TXN_TOPIC, n_txn)]:
            m = re.search(rf"Completed load of Log\(dir=[^,]*/{re.escape(t)}-0,.*?"
                          rf"logEndOffset=(\d+)\)", text)
            assert m, f"no 'Completed load' line for {t}"
            assert int(m.group(1)) == n, m.group(0)
        got = consume_all(b.bootstrap, [appended[c]["topic"] for c in CODECS])
        txn_all = consume_all(b.bootstrap, [TXN_TOPIC], "read_uncommitted")
        txn_committed = consume_all(b.bootstrap, [TXN_TOPIC], "read_committed")
    finally:
        b.stop()
    assert b.clean_stop

    def payload(recs):
        return [(r["timestamp"], r["timestampType"], r["key"], r["value"],
                 [(h["key"], h["value"]) for h in r["headers"]]) for r in recs]

    def expected(recs):
        return [(r["timestamp"], "CreateTime", r["key"], r["value"],
                 [(h["key"], h["value"]) for h in r["headers"]]) for r in recs]

    assert payload(txn_all) == expected(appended_txn["committed"] + appended_txn["aborted"]
                                        + appended_txn["plain"])
    assert payload(txn_committed) == expected(appended_txn["committed"]
                                              + appended_txn["plain"])
    offs = [r["offset"] for r in txn_all]
    ncom, nab = len(appended_txn["committed"]), len(appended_txn["aborted"])
    assert offs == (list(range(ncom)) + list(range(ncom + 1, ncom + 1 + nab))
                    + list(range(ncom + nab + 2, n_txn))), "control markers must take offsets"
    diffs = []
    for codec in CODECS:
        a = appended[codec]
        mine = [r for r in got if r["topic"] == a["topic"]]
        if len(mine) != len(a["records"]):
            diffs.append(f"{a['topic']}: consumer read {len(mine)} of {len(a['records'])}")
            continue
        for off, (want, r) in enumerate(zip(a["records"], mine, strict=False)):
            exp = (off, want["timestamp"], "CreateTime", want["key"], want["value"],
                   [(h["key"], h["value"]) for h in want["headers"]])
            act = (r["offset"], r["timestamp"], r["timestampType"], r["key"], r["value"],
                   [(h["key"], h["value"]) for h in r["headers"]])
            if exp != act:
                diffs.append(f"{a['topic']} offset {off}: input {exp!r:.160} / "
                             f"consumer {act!r:.160}")
                break
    assert not diffs, "\n".join(diffs)
