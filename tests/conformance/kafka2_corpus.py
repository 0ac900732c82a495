"""A log dir written by Apache Kafka 2.8.x (ZooKeeper mode): magic 1 message sets.

``ensure_kafka2_corpus()`` returns a :class:`broker_corpus.Corpus` cached under
``.kafka-ref/kafka2-corpus-<version>-<recipe hash>/`` (``logs/``, ``consumed.json``,
``manifest.json``, ``broker.log``), regenerated only when the version or this recipe changes.

Topics ``m1-*`` are created with ``message.format.version=0.10.2``, so the broker converts
what kafka-python sends (v2 batches) and stores magic 1 on disk: every codec magic 1 has
(none, gzip, snappy, lz4), CreateTime with explicit out-of-order timestamps, LogAppendTime,
null/empty/binary keys, null values, several segments per partition, and a compacted topic
cleaned by the 2.8 log cleaner (which rewrites compressed magic 1 wrapper messages).
``v2-zstd`` is what 2.8 writes by default (magic 2, headers). ``m1-zstd`` shows that magic
1 cannot take zstd: the broker refuses it (recorded in the manifest).

Run directly (``python tests/conformance/kafka2_corpus.py [--force]``) to (re)generate.
"""
from __future__ import annotations

import hashlib
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import kafka_ref  # noqa: E402
from broker_corpus import (  # noqa: E402
    Corpus,
    _Data,
    _ensure,
    _wait_for_cleaner,
    close_broker,
    consume_settled,
    write_manifest,
)

RECIPE_VERSION = 1
MAGIC1 = {"message.format.version": "0.10.2", "segment.bytes": 16384}
M1_CODECS = ["none", "gzip", "snappy", "lz4"]
COMPACTED = "m1-compacted"
# topic -> (partitions, topic config, codec, records)
TOPICS: dict[str, tuple[int, dict, str, int]] = {
    **{f"m1-{c}": (2, MAGIC1, c, 500) for c in M1_CODECS},
    "m1-logappendtime": (2, {**MAGIC1, "message.timestamp.type": "LogAppendTime"}, "gzip",
                         200),
    COMPACTED: (1, {**MAGIC1, "cleanup.policy": "compact", "segment.bytes": 4096,
                    "segment.ms": 100, "min.cleanable.dirty.ratio": 0.01,
                    "delete.retention.ms": 1000, "min.compaction.lag.ms": 0,
                    "file.delete.delay.ms": 200}, "gzip", 0),
    "v2-zstd": (1, {"segment.bytes": 16384}, "zstd", 300),
}
REFUSED = {"m1-zstd": (1, MAGIC1, "zstd")}  # magic 1 has no zstd: the broker must refuse
BROKER_PROPS = {"log.segment.bytes": 65536, "log.index.interval.bytes": 4096,
                "log.cleaner.backoff.ms": 250, "log.cleaner.min.cleanable.ratio": 0.01}


def recipe_hash() -> str:
    h = hashlib.sha256()
    h.update(f"recipe {RECIPE_VERSION} kafka {kafka_ref.kafka2_version()}\n".encode())
    h.update((HERE / "kafka2_corpus.py").read_bytes())
    h.update(json.dumps(kafka_ref.Kafka2Broker.DEFAULT_PROPS, sort_keys=True).encode())
    return h.hexdigest()[:12]


def _producer(bootstrap: str, codec: str):
    from kafka import KafkaProducer
    # no idempotence (it needs magic 2), acks=1, one request in flight: broker order = send order
    return KafkaProducer(bootstrap_servers=bootstrap, client_id="kafkalog-kafka2",
                         compression_type=None if codec == "none" else codec,
                         enable_idempotence=False, acks=1, linger_ms=5, retries=5,
                         max_in_flight_requests_per_connection=1, request_timeout_ms=30000)


def _produce(bootstrap: str, topic: str, partitions: int, codec: str, n: int, seed: int,
             headers: bool) -> int:
    d = _Data(seed)
    p = _producer(bootstrap, codec)
    try:
        futures = []
        for i in range(n):
            key = d.key()
            value = d.value(500)
            if key is not None and d.r.random() < 0.04:
                value = None
            futures.append(p.send(topic, key=key, value=value, partition=i % partitions,
                                  timestamp_ms=d.timestamp(),
                                  headers=d.headers() if headers else None))
            if d.r.random() < 0.05:
                p.flush()
        p.flush()
        for f in futures:
            f.get(timeout=30)
        return len(futures)
    finally:
        p.close(timeout=10)


def _produce_compacted(bootstrap: str, seed: int) -> int:
    d = _Data(seed)
    p = _producer(bootstrap, "gzip")
    n = 0
    try:
        for rnd in range(5):
            for i in range(100):
                k = b"user-%03d" % d.r.randrange(30)
                v = None if d.r.random() < 0.08 else b"r%d-i%d-" % (rnd, i) + d.value(200)
                p.send(COMPACTED, key=k, value=v)
                n += 1
                if i % 20 == 19:
                    p.flush()
                    time.sleep(0.12)  # > segment.ms: the next append rolls a segment
            p.flush()
    finally:
        p.close(timeout=10)
    return n


def _refused(bootstrap: str, topic: str, codec: str) -> str:
    p = _producer(bootstrap, codec)
    try:
        # compressible, so that kafka-python really sends zstd (it sends a batch
        # uncompressed when compression does not make it smaller)
        fs = [p.send(topic, key=b"k%d" % i, value=b"zstd " * 200) for i in range(10)]
        p.flush()
        for f in fs:
            f.get(timeout=30)
        return "accepted"
    except Exception as e:  # noqa: BLE001 - expected: UNSUPPORTED_COMPRESSION_TYPE, recorded
        return f"refused: {e!r}"
    finally:
        p.close(timeout=10)


def generate(dest: Path, log=print) -> None:
    t_all = time.monotonic()
    dest.mkdir(parents=True)
    info = kafka_ref.ref_info()
    manifest: dict = {"kafka_version": info["kafka2_version"],
                      "kafka_coordinates": info["kafka2_coordinates"],
                      "zookeeper_version": info["kafka2_zookeeper_version"],
                      "recipe_hash": recipe_hash(), "broker_props": BROKER_PROPS,
                      "topics": {t: {"partitions": n, "config": cfg, "codec": c}
                                 for t, (n, cfg, c, _) in TOPICS.items()},
                      "written": {}, "refused": {}, "timings": {}}
    broker = kafka_ref.Kafka2Broker(log_dir=dest / "logs", work_dir=dest / "work",
                                    props=BROKER_PROPS)
    try:
        manifest["timings"]["broker_start"] = round(broker.start(), 2)
        for t, (n, cfg, _c, _) in TOPICS.items():
            broker.create_topic(t, partitions=n, config=cfg)
        for t, (n, cfg, _c) in REFUSED.items():
            broker.create_topic(t, partitions=n, config=cfg)
        bs = broker.bootstrap
        t0 = time.monotonic()
        for i, (t, (n, _cfg, codec, count)) in enumerate(TOPICS.items()):
            if t == COMPACTED:
                manifest["written"][t] = _produce_compacted(bs, 6100)
            else:
                manifest["written"][t] = _produce(bs, t, n, codec, count, 6000 + i,
                                                  headers=(t == "v2-zstd"))
        for t, (_n, _cfg, codec) in REFUSED.items():
            manifest["refused"][t] = _refused(bs, t, codec)
        manifest["timings"]["produce"] = round(time.monotonic() - t0, 2)
        manifest["written"]["cleaner"] = _wait_for_cleaner(broker.log_dir, [COMPACTED], 60, log)
        consumed = consume_settled(broker, list(TOPICS), ("read_uncommitted",), [COMPACTED],
                                   log)
        (dest / "consumed.json").write_text(json.dumps(consumed))
        manifest["timings"]["broker_stop"] = round(broker.stop(), 2)
    finally:
        close_broker(broker, dest)
    write_manifest(dest, manifest, consumed["read_uncommitted"], t_all)


def ensure_kafka2_corpus(force: bool = False, log=print) -> Corpus:
    kafka_ref.ref_info()
    return _ensure(f"kafka2-corpus-{kafka_ref.kafka2_version()}-{recipe_hash()}",
                   "kafka2-corpus-", generate, force, log)


if __name__ == "__main__":
    c = ensure_kafka2_corpus(force="--force" in sys.argv)
    print(c.root, json.dumps(c.manifest, indent=1))
