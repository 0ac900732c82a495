"""(5) `kafkalog retain` and `kafkalog compact` judged by the broker's own retention and log
cleaner on the same data.

Run 1: a broker writes the topics below with retention and the cleaner held back
(``log.initial.task.delay.ms`` = 10 min, ``log.cleaner.enable=false``), then stops cleanly.
The log dir is copied twice. Run 2: the broker restarts on the original with
``log.retention.check.interval.ms=200``, no initial delay and the cleaner on, and is left
until two retention passes have completed and the cleaner has cleaned every compacted
partition up to its active segment; then it stops cleanly. On the copies, `kafkalog retain
--now <the broker's clock>` and `kafkalog compact` must end with what the broker kept.

retention (cleanup.policy=delete, segment.bytes=16384):
  ret-bytes   retention.bytes=50000, partitions of ~120 KB, ~60 KB, ~30 KB (size pass)
  ret-edge    retention.bytes = partition 0's size minus its first two segments exactly,
              set after producing (the `diff - size >= 0` boundary); partition 1 differs
  ret-all     retention.bytes=0: every segment goes and a new one is rolled at the log end
  ret-time    retention.ms=5 days; timestamps 10 days old or current (a huge margin):
              partition 0 old then new, 1 all old (roll), 2 all new
  ret-lso     DeleteRecords moved the log start offset: into a segment (p0), exactly onto
              a segment base (p1)  (log start pass)
compaction (cleanup.policy=compact, segment.bytes=8192, segment.ms=100 -> small segments,
delete.retention.ms=1 day so tombstones stay):
  cmp-none    idempotent producer, no compression
  cmp-gzip    plain producer, gzip
  cmp-txn     two transactional producers, committed and aborted transactions: the
              round removes aborted data and keeps its markers and .txnindex entries
Every case runs on each KRaft broker of the reference (3.9.x and 4.x).
"""
from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path

import kafka_ref
import pytest
from broker_corpus import _Data, _read_checkpoint
from kafkalog_run import run_kafkalog
from xdist_once import once

pytestmark = pytest.mark.conformance

DAY = 86_400_000
RET_SEGMENT = 16384
CMP_SEGMENT = 8192
RUN1_PROPS = {"log.initial.task.delay.ms": 600_000, "log.cleaner.enable": False,
              "log.retention.check.interval.ms": 300_000}
RUN2_PROPS = {"log.initial.task.delay.ms": 0, "log.cleaner.enable": True,
              "log.retention.check.interval.ms": 200, "log.cleaner.backoff.ms": 200}
BASE = {"segment.bytes": RET_SEGMENT, "retention.ms": -1, "retention.bytes": -1}
COMPACT = {"cleanup.policy": "compact", "segment.bytes": CMP_SEGMENT, "segment.ms": 100,
           "min.cleanable.dirty.ratio": 0.01, "min.compaction.lag.ms": 0,
           "delete.retention.ms": DAY}
# topic -> (partitions, topic config at creation)
TOPICS = {
    "ret-bytes": (3, {**BASE, "retention.bytes": 50_000}),
    "ret-edge": (2, BASE),
    "ret-all": (1, {**BASE, "retention.bytes": 0}),
    "ret-time": (3, {**BASE, "retention.ms": 5 * DAY}),
    "ret-lso": (2, BASE),
    "cmp-none": (1, COMPACT),
    "cmp-gzip": (1, COMPACT),
    "cmp-txn": (1, COMPACT),
}
RET_TOPICS = [t for t in TOPICS if t.startswith("ret-")]
CMP_TOPICS = [t for t in TOPICS if t.startswith("cmp-")]
CLEANUP_DONE = re.compile(r"Log cleanup completed\. (\d+) files deleted")


def _producer(bootstrap, **kw):
    from kafka import KafkaProducer
    kw.setdefault("enable_idempotence", False)
    kw.setdefault("acks", 1)
    return KafkaProducer(bootstrap_servers=bootstrap, linger_ms=2,
                         max_in_flight_requests_per_connection=1, **kw)


def _produce_bytes(bootstrap, topic, sizes_kb: list[int], seed: int, ts=None, codec=None):
    """Roughly sizes_kb[p] KB of ~400-byte records into partition p."""
    d = _Data(seed)
    p = _producer(bootstrap, compression_type=codec)
    try:
        for part, kb in enumerate(sizes_kb):
            n = kb * 1024 // 450
            for i in range(n):
                t = ts(part, i, n) if ts else None
                p.send(topic, key=d.key(), value=d.r.randbytes(200) + d.value(300),
                       partition=part, timestamp_ms=t)
                if i % 10 == 9:
                    p.flush()
            p.flush()
    finally:
        p.close(timeout=10)


def _produce_compacted(bootstrap, topic, seed, **kw) -> None:
    d = _Data(seed)
    p = _producer(bootstrap, **kw)
    try:
        for rnd in range(6):
            for i in range(100):
                k = b"key-%03d" % d.r.randrange(50)
                v = None if d.r.random() < 0.08 else b"r%d-i%d-" % (rnd, i) + d.value(200)
                p.send(topic, key=k, value=v)
                if i % 25 == 24:
                    p.flush()
                    time.sleep(0.12)  # > segment.ms: the next append rolls a segment
            p.flush()
    finally:
        p.close(timeout=10)


def _produce_transactions(bootstrap, topic, seed) -> None:
    """Rounds of a transaction per producer, every third one aborted, rolling segments."""
    from kafka import KafkaProducer
    d = _Data(seed)
    txn = [KafkaProducer(bootstrap_servers=bootstrap, linger_ms=2,
                         transactional_id=f"{topic}-{n}") for n in range(2)]
    try:
        for p in txn:
            p.init_transactions()
        for rnd in range(8):
            for i, p in enumerate(txn):
                p.begin_transaction()
                for j in range(d.r.randint(2, 12)):
                    p.send(topic, key=b"key-%02d" % d.r.randrange(30),
                           value=b"r%d-%d-%d-" % (rnd, i, j) + d.value(200))
                p.flush()
            for i, p in enumerate(txn):
                (p.abort_transaction if (rnd + i) % 3 == 1 else p.commit_transaction)()
            time.sleep(0.12)  # > segment.ms: the next append rolls a segment
    finally:
        for p in txn:
            p.close(timeout=10)


def _segments(pdir: Path) -> list[int]:
    return sorted(int(p.name.split(".")[0]) for p in pdir.glob("*.log"))


def _sizes(pdir: Path) -> list[int]:
    return [p.stat().st_size for p in sorted(pdir.glob("*.log"))]


def _cleaned(log_dir: Path) -> bool:
    ckpt = _read_checkpoint(log_dir / "cleaner-offset-checkpoint")
    for t in CMP_TOPICS:
        segs = _segments(log_dir / f"{t}-0")
        if ckpt.get(f"{t}-0", 0) < segs[-1] or segs[-1] == 0:
            return False
    return not any(log_dir.glob("*/*.cleaned")) and not any(log_dir.glob("*/*.swap"))


def _end_offsets(b) -> dict:
    """High watermarks (ListOffsets latest) of every partition of TOPICS."""
    from kafka import KafkaConsumer, TopicPartition
    c = KafkaConsumer(bootstrap_servers=b.bootstrap, group_id=None, enable_auto_commit=False)
    try:
        tps = [TopicPartition(t, p) for t, (n, _) in TOPICS.items() for p in range(n)]
        return {f"{tp.topic}-{tp.partition}": o for tp, o in c.end_offsets(tps).items()}
    finally:
        c.close()


def _wait_high_watermarks(b, want: dict, timeout: float = 60.0) -> None:
    """Until every partition is leader again with its high watermark back at the log end."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if _end_offsets(b) == want:
                return
        except Exception:  # noqa: BLE001, S110 - broker still restarting: poll until the deadline
            pass
        assert time.monotonic() < deadline, "high watermarks not restored after restart"
        time.sleep(0.1)


@pytest.fixture(scope="module")
def runs(broker_version, tmp_path_factory) -> dict:
    return once(tmp_path_factory, f"retain-runs-{broker_version}",
                lambda root: _runs(root, broker_version))


def _runs(root: Path, version: str) -> dict:
    from kafka import TopicPartition
    b = kafka_ref.KafkaBroker(work_dir=root / "work", props=RUN1_PROPS, name="retain",
                              log4j_levels={"kafka.log.LogManager": "DEBUG"}, version=version)
    info: dict = {"root": root, "version": version}
    try:
        b.start()
        for t, (n, cfg) in TOPICS.items():
            b.create_topic(t, partitions=n, config=cfg)
        bs = b.bootstrap
        now = int(time.time() * 1000)
        _produce_bytes(bs, "ret-bytes", [120, 60, 30], 1)
        _produce_bytes(bs, "ret-edge", [100, 70], 2, codec="lz4")
        _produce_bytes(bs, "ret-all", [50], 3)
        old = now - 10 * DAY

        def ts(part, i, n):
            if part == 1 or (part == 0 and i < n // 2):
                return old + i
            return now + i
        _produce_bytes(bs, "ret-time", [80, 50, 50], 4, ts=ts)
        _produce_bytes(bs, "ret-lso", [100, 100], 5)
        _produce_compacted(bs, "cmp-none", 6, enable_idempotence=True, acks="all")
        _produce_compacted(bs, "cmp-gzip", 7, compression_type="gzip")
        _produce_transactions(bs, "cmp-txn", 8)
        # ret-edge: retention.bytes such that exactly the first two segments of p0 go
        sizes = _sizes(b.log_dir / "ret-edge-0")
        assert len(sizes) >= 4, sizes
        edge = sum(sizes) - sizes[0] - sizes[1]
        b.alter_topic_config("ret-edge", {**BASE, "retention.bytes": edge})
        info["edge_retention_bytes"] = edge
        # ret-lso: log start offset into a segment (p0) and onto a segment base (p1)
        s0, s1 = _segments(b.log_dir / "ret-lso-0"), _segments(b.log_dir / "ret-lso-1")
        lso = {0: (s0[2] + s0[3]) // 2, 1: s1[3]}
        admin = b.admin()
        try:
            admin.delete_records({TopicPartition("ret-lso", p): o for p, o in lso.items()})
        finally:
            admin.close()
        info["lso"] = lso
        hws = _end_offsets(b)
        b.stop()
        run1 = b.log_text()
        assert "Deleting segment" not in run1 and "Cleaner 0: Beginning" not in run1, \
            "retention or the cleaner ran in run 1"
        info["before"] = {p.name: _segments(p) for p in b.log_dir.iterdir()
                          if p.is_dir() and p.name.startswith(("ret-", "cmp-"))}
        for name in ("kafkalog-retain", "kafkalog-compact"):
            shutil.copytree(b.log_dir, root / name / "logs", symlinks=True)
        # run 2: the broker's retention and cleaner
        b.extra_props.update(RUN2_PROPS)
        b.start()
        # A retention pass that runs before a partition is leader again sees its high
        # watermark at the log start (nothing deletable): count only the passes that begin
        # once every high watermark is back, and wait for one that deletes nothing.
        _wait_high_watermarks(b, hws)
        mark = len(b.log_text())
        deadline = time.monotonic() + 120
        while True:
            text = b.log_text()
            done = [int(n) for n in CLEANUP_DONE.findall(text[mark:])]
            if len(done) >= 3 and done[-1] == 0 and _cleaned(b.log_dir):
                break
            assert time.monotonic() < deadline, "retention/cleaner did not finish:\n" + \
                "\n".join(text.splitlines()[-30:])
            time.sleep(0.1)
        info["now"] = int(time.time() * 1000)
        b.stop()
        info["run2_log"] = b.log_text()
    finally:
        b.close()
    info["broker"] = b.log_dir
    info["kafkalog_retain"] = root / "kafkalog-retain" / "logs"
    info["kafkalog_compact"] = root / "kafkalog-compact" / "logs"
    return info


@pytest.fixture(scope="module")
def retained(runs, tmp_path_factory) -> dict:
    return once(tmp_path_factory, f"retained-{runs['version']}", lambda _: _retain(runs))


def _retain(runs) -> dict:
    cfg = {t: {"retention.ms": c.get("retention.ms", 7 * DAY),
               "retention.bytes": c.get("retention.bytes", -1)}
           for t, (_, c) in TOPICS.items() if t.startswith("ret-")}
    cfg["ret-edge"]["retention.bytes"] = runs["edge_retention_bytes"]
    for t in [*CMP_TOPICS, "__consumer_offsets"]:
        cfg[t] = {"cleanup.policy": "compact"}
    path = runs["root"] / "topic-config.json"
    path.write_text(json.dumps(cfg))
    res = run_kafkalog("retain", runs["kafkalog_retain"], "--topic-config", path,
                       "--now", str(runs["now"]), "--no-quarantine", "--format", "json")
    return {"result": res, "config": cfg}


def _compare_segments(runs, ours_root: Path, topics) -> list[str]:
    diffs = []
    for pdir in sorted(runs["broker"].iterdir()):
        if not (pdir.is_dir() and pdir.name.rsplit("-", 1)[0] in topics):
            continue
        want, got = _segments(pdir), _segments(ours_root / pdir.name)
        if want != got:
            diffs.append(f"{pdir.name}: broker kept segments {want}, kafkalog {got} "
                         f"(before: {runs['before'].get(pdir.name)})")
    return diffs


def test_broker_retention_did_what_the_recipe_expects(runs):
    """The judge itself: each case deleted what it was built for."""
    before = runs["before"]
    after = {p.name: _segments(p) for p in runs["broker"].iterdir()
             if p.is_dir() and p.name.startswith("ret-")}
    assert after["ret-edge-0"] == before["ret-edge-0"][2:]
    assert len(after["ret-all-0"]) == 1 and after["ret-all-0"][0] > before["ret-all-0"][-1]
    assert len(after["ret-time-1"]) == 1 and after["ret-time-1"][0] > before["ret-time-1"][-1]
    assert after["ret-time-2"] == before["ret-time-2"]
    assert 0 < len(after["ret-time-0"]) < len(before["ret-time-0"])
    assert after["ret-bytes-2"] == before["ret-bytes-2"]
    assert len(after["ret-bytes-0"]) < len(before["ret-bytes-0"])
    lso = runs["lso"]
    assert after["ret-lso-0"][0] <= lso[0] < after["ret-lso-0"][1]
    assert after["ret-lso-1"][0] == lso[1]
    done = [int(n) for n in CLEANUP_DONE.findall(runs["run2_log"])]
    assert sum(done) > 0
    print(f"\nbroker kept {after}\nnow={runs['now']}")


def test_retain_deletes_the_segments_the_broker_deletes(runs, retained):
    res = retained["result"]
    assert res.returncode == 0, res.describe()
    diffs = _compare_segments(runs, runs["kafkalog_retain"], RET_TOPICS)
    assert not diffs, "\n".join(diffs) + "\n" + res.stdout[:3000]


def test_retain_moves_the_log_start_offset_like_the_broker(runs, retained):
    assert retained["result"].returncode == 0, retained["result"].describe()
    want = _read_checkpoint(runs["broker"] / "log-start-offset-checkpoint")
    got = _read_checkpoint(runs["kafkalog_retain"] / "log-start-offset-checkpoint")
    diffs = []
    for t in RET_TOPICS:
        for p in range(TOPICS[t][0]):
            tp = f"{t}-{p}"
            first = _segments(runs["broker"] / tp)[0]
            w = max(want.get(tp, 0), first)
            g = max(got.get(tp, 0), _segments(runs["kafkalog_retain"] / tp)[0])
            if w != g:
                diffs.append(f"{tp}: broker log start offset {w}, kafkalog {g}")
    assert not diffs, "\n".join(diffs)


def _batch_view(entries) -> dict[str, list]:
    out: dict[str, list] = {}
    for e in entries:
        if e["kind"] != "batch":
            continue
        key = (Path(e["file"]).parent.name, Path(e["file"]).name)
        recs = [(r["offset"], r["timestamp"], r["keySize"], r["valueSize"], r.get("key"),
                 r.get("payload"), r.get("endTxnMarker")) for r in e["records"]]
        out.setdefault("/".join(key), []).append((
            e["baseOffset"], e["lastOffset"], e["count"], e["magic"], e["compresscodec"],
            e["producerId"], e["producerEpoch"], e["baseSequence"], e["isTransactional"],
            e["isControl"], e.get("deleteHorizonMs") is not None, recs))
    return out


@pytest.fixture(scope="module")
def compacted(runs, tmp_path_factory) -> dict:
    return once(tmp_path_factory, f"compacted-{runs['version']}", lambda _: _compact(runs))


def _compact(runs) -> dict:
    args = ["compact", runs["kafkalog_compact"]]
    for t in CMP_TOPICS:
        args += ["--topic", t]
    args += ["--now", str(runs["now"]), "--delete-retention-ms", str(DAY),
             "--min-compaction-lag-ms", "0", "--min-cleanable-ratio", "0.01",
             "--segment-bytes", str(CMP_SEGMENT), "--no-quarantine", "--format", "json"]
    return {"result": run_kafkalog(*args)}


def _compact_built() -> bool:
    res = run_kafkalog("compact", "--help")
    return res.returncode == 0 and "not built yet" not in res.stdout.lower()


def test_compact_keeps_what_the_broker_cleaner_keeps(runs, compacted):
    """Same segments (base offsets) and, per segment, the same batches (offsets, count,
    codec, producer fields, delete horizon set or not) and records (offset, timestamp,
    key, value), according to kafka-dump-log on both results."""
    if not _compact_built():
        pytest.xfail("waits for issue 5: compact")
    res = compacted["result"]
    assert res.returncode == 0, res.describe()
    diffs = _compare_segments(runs, runs["kafkalog_compact"], CMP_TOPICS)
    assert not diffs, "\n".join(diffs) + "\n" + res.stdout[:3000]
    files = {}
    for name in ("broker", "kafkalog_compact"):
        files[name] = sorted(str(p) for t in CMP_TOPICS
                             for p in (runs[name] / f"{t}-0").glob("*.log"))
    kafka4 = kafka_ref.is_kafka4(runs["version"])
    views = {n: _batch_view(kafka_ref.DumpLogView(f, kafka4=kafka4).entries)
             for n, f in files.items()}
    for seg in files["broker"]:  # the aborted transactions each cleaned segment keeps
        want_txn = Path(seg).with_suffix(".txnindex")
        got_txn = runs["kafkalog_compact"] / want_txn.parent.name / want_txn.name
        w = want_txn.read_bytes() if want_txn.exists() else b""
        g = got_txn.read_bytes() if got_txn.exists() else b""
        if w != g:
            diffs.append(f"{got_txn}: {kafka_ref.txn_entries(g)}, the broker's "
                         f"{kafka_ref.txn_entries(w)}")
    assert any(Path(f).with_suffix(".txnindex").exists() and
               Path(f).with_suffix(".txnindex").stat().st_size
               for f in files["broker"] if "/cmp-txn-0/" in f), "no aborted txn kept"
    want, got = views["broker"], views["kafkalog_compact"]
    for seg in sorted(set(want) | set(got)):
        w, g = want.get(seg, []), got.get(seg, [])
        if w == g:
            continue
        if len(w) != len(g):
            diffs.append(f"{seg}: broker {len(w)} batches, kafkalog {len(g)}")
        for bw, bg in zip(w, g, strict=False):
            if bw != bg:
                diffs.append(f"{seg}: first differing batch: broker {bw!r:.400}\n"
                             f"    kafkalog {bg!r:.400}")
                break
    assert not diffs, "\n".join(diffs[:20])
