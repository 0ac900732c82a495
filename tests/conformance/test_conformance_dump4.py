"""`kafkalog dump`'s text output judged line for line by Kafka 4.3's kafka-dump-log
(org.apache.kafka.tools.DumpLogSegments), on every kind of file it reads: data logs
(batches; --deep-iteration; --print-data-log), control batches with transaction markers and
every KRaft control record, the cluster-metadata, transaction-log and offsets decoders,
.index (an empty one too), .timeindex, .txnindex, producer .snapshot and KRaft .checkpoint
files (a controller's snapshots and the bootstrap ones Kafka 4.3's format writes).

The option pairs: (none) = (none); --deep-iteration = --records; --print-data-log =
--print-data --decode none; --offsets-decoder / --transaction-log-decoder /
--cluster-metadata-decoder = --decode offsets / transactions / metadata. Normalised (see
README): invalid UTF-8 in keys and payloads (Java prints U+FFFD, kafkalog `\\xNN`) and the
reason after a decoder's `Error at <offset>, skipping.`.
"""
from __future__ import annotations

import re
import struct
import subprocess
from pathlib import Path

import kafka_ref
import pytest
from kafka_ref import REPO_ROOT
from kafkalog_run import run_kafkalog

from kafkalog_cli.codec.batch_v2 import encode_batch
from kafkalog_cli.codec.snapshot import ProducerEntry, encode_snapshot

pytestmark = [pytest.mark.conformance, pytest.mark.kafka4]

SHARED_CORPUS = REPO_ROOT.parent / "shared" / "corpus"
DECODERS = {"--offsets-decoder": "offsets", "--transaction-log-decoder": "transactions",
            "--cluster-metadata-decoder": "metadata"}

# a run of invalid UTF-8: U+FFFD in Java's text (one per maximal invalid subpart), \xNN a
# byte in kafkalog's; one token on both sides (a literal "\xNN" in a run is taken into it)
_INVALID_RUN = re.compile(r"(?:\ufffd|\\x[0-9a-f]{2})+")
_DECODE_ERROR = re.compile(r"(Error at (?:offset )?\d+, skipping\.) .*")


def _ours_args(judge_args: tuple[str, ...]) -> list[str]:
    out: list[str] = []
    for a in judge_args:
        if a == "--deep-iteration":
            out.append("--records")
        elif a == "--print-data-log":
            out += ["--print-data", "--decode", "none"]
        else:
            out += ["--decode", DECODERS[a]]
    return out


def _norm(line: str) -> str:
    return _DECODE_ERROR.sub(r"\1 <reason>", _INVALID_RUN.sub("\ufffd", line))


def text_diffs(files: list[Path | str], *judge_args: str) -> tuple[list[str], int]:
    """Run both over the files; ([differing lines], lines compared)."""
    names = [str(f) for f in files]
    rc, judge, err = kafka_ref.dump_log(names, *judge_args, kafka4=True)
    assert rc == 0, err[-3000:]
    res = run_kafkalog("dump", *names, *_ours_args(judge_args))
    assert res.returncode == 0, res.describe()
    want, got = judge.split("\n"), res.stdout.split("\n")
    diffs = [f"line {i + 1}:\n  kafka-dump-log {w[:400]!r}\n  kafkalog       {g[:400]!r}"
             for i, (w, g) in enumerate(zip(want, got, strict=False))
             if _norm(w) != _norm(g)]
    if len(want) != len(got):
        diffs.append(f"kafka-dump-log printed {len(want)} lines, kafkalog {len(got)}")
    return diffs, len(want)


def assert_same_text(files: list[Path | str], *judge_args: str) -> int:
    assert files
    diffs, n = text_diffs(files, *judge_args)
    assert not diffs, "\n".join(diffs[:15])
    return n


def _files(root: Path, *patterns: str) -> list[Path]:
    return sorted(p.resolve() for pat in patterns for p in root.glob(pat))


# --- broker-written files ---------------------------------------------------------------------

@pytest.mark.parametrize("judge_args", [(), ("--deep-iteration",), ("--print-data-log",)],
                         ids=["batches", "deep-iteration", "print-data-log"])
def test_every_log_of_the_broker_corpus(kafka_corpus, judge_args):
    """User topics (every codec, idempotent, transactional with markers, LogAppendTime,
    compacted) and the internal topics, raw."""
    assert_same_text(_files(kafka_corpus.log_dir, "*/*.log"), *judge_args)


@pytest.mark.parametrize("option", list(DECODERS))
def test_the_decoders_on_the_broker_corpus(kafka_corpus, option):
    """kafkalog adds fields to its JSON (a metadata record's name, apiKey and frameVersion;
    the transaction state's name): the text shows only what kafka-dump-log prints."""
    topic = {"--offsets-decoder": "__consumer_offsets-*/*.log",
             "--transaction-log-decoder": "__transaction_state-*/*.log",
             "--cluster-metadata-decoder": "__cluster_metadata-0/*.log"}[option]
    extra = ["bootstrap.checkpoint"] if option == "--cluster-metadata-decoder" else []
    n = assert_same_text(_files(kafka_corpus.log_dir, topic, *extra), option)
    assert n > 50


def test_indexes_and_producer_snapshots_of_the_broker_corpus(kafka_corpus):
    """.index (the empty partition's is `<file> is empty.`), .timeindex, .txnindex and
    producer .snapshot files."""
    files = _files(kafka_corpus.log_dir, "*/*.index", "*/*.timeindex", "*/*.txnindex",
                   "*/*.snapshot")
    assert any(f.stat().st_size == 0 for f in files if f.suffix == ".index")
    assert_same_text(files)


# --- real-world files (/work/shared/corpus) -----------------------------------------------------

def test_real_world_logs_kraft_snapshots_and_producer_snapshots():
    """Magic 0 (Kafka 0.9, compressed wrappers), magic 1 and 2 logs from ZooKeeper-era and
    KRaft brokers; a controller's snapshots (KRaftVoters) and metadata log; a producer
    snapshot with entries."""
    assert SHARED_CORPUS.is_dir(), f"shared corpus missing at {SHARED_CORPUS}"
    logs = _files(SHARED_CORPUS, "kafka-0.9-legacy/*/*.log", "seanorth-zk-snappy/*/*.log",
                  "donaldy-zk-2.7/*/*.log", "ldi-poc-kraft/*/*.log")
    assert_same_text(logs, "--print-data-log")
    kraft = _files(SHARED_CORPUS, "rupia-kraft/__cluster_metadata-0/*.checkpoint")[-2:] + \
        _files(SHARED_CORPUS, "nomanazeem-kraft/__cluster_metadata-0/*.log",
               "ldi-poc-kraft/bootstrap.checkpoint")
    assert_same_text(kraft, "--cluster-metadata-decoder")
    assert_same_text(_files(SHARED_CORPUS, "kafka-0.9-legacy/__consumer_offsets-*/*.log"),
                     "--offsets-decoder")
    snaps = _files(SHARED_CORPUS, "*/*/*.snapshot")
    assert any(f.stat().st_size > 10 for f in snaps)
    assert_same_text(snaps)


# --- files made here ----------------------------------------------------------------------------

def _uvarint(n: int) -> bytes:
    out = b""
    while n >= 0x80:
        out += bytes([n & 0x7F | 0x80])
        n >>= 7
    return out + bytes([n])


def _control_records() -> list[tuple[bytes, bytes]]:
    """(key, value) of every control record type: LeaderChange at its Version 0 and 1 and at
    Versions the spec does not have (kafka-dump-log writes the JSON at the Version field),
    KRaftVersion, KRaftVoters, SnapshotHeader/Footer, a type Kafka does not know, markers."""
    def key(t: int) -> bytes:
        return struct.pack(">hh", 0, t)

    def leader_change(version: int) -> bytes:
        voter = struct.pack(">i", 1) + b"\x00"
        return struct.pack(">hi", version, 1) + _uvarint(2) + voter + _uvarint(2) + voter + \
            b"\x00"

    def compact(s: str) -> bytes:
        return _uvarint(len(s) + 1) + s.encode()

    voters = (struct.pack(">h", 0) + _uvarint(2) + struct.pack(">i", 1) + bytes(range(16))
              + _uvarint(2) + compact("CONTROLLER") + compact("localhost")
              + struct.pack(">H", 9093) + b"\x00" + struct.pack(">hh", 0, 1) + b"\x00"
              + b"\x00" + b"\x00")
    return [(key(2), leader_change(0)), (key(2), leader_change(1)),
            (key(2), leader_change(5)), (key(2), leader_change(-1)),
            (key(5), struct.pack(">hh", 0, 1) + b"\x00"),
            (key(5), struct.pack(">hh", 1, 1) + b"\x00"), (key(6), voters),
            (key(3), struct.pack(">hq", 0, 1234) + b"\x00"),
            (key(4), struct.pack(">h", 0) + b"\x00"), (key(9), b"\x00\x00"),
            (key(1), struct.pack(">hi", 0, 7)), (key(0), struct.pack(">hi", 0, 8))]


def test_control_records_of_every_type(tmp_path):
    part = tmp_path / "ctl-0"
    part.mkdir()
    data = b""
    for i, (k, v) in enumerate(_control_records()):
        marker = struct.unpack(">h", k[2:])[0] in (0, 1)
        data += encode_batch([(i, 1700000000000, k, v, [])], control=True,
                             producer_id=5 if marker else -1, producer_epoch=0 if marker else -1,
                             transactional=marker)
    log = part / "00000000000000000000.log"
    log.write_bytes(data)
    assert_same_text([log], "--deep-iteration")
    assert_same_text([log])


def test_metadata_records_that_do_not_decode(tmp_path):
    """An unknown type, an unknown version, frame version 0, a short and a long value:
    `Error at <offset>, skipping. <reason>` (the reasons are kafkalog's own)."""
    values = [bytes([1, 99, 0]), bytes([1, 2, 9, 0]), bytes([0, 2, 0]), bytes([1, 2, 0, 1]),
              bytes([1, 12, 0, 5]) + b"abcd" + bytes([0, 1, 0]) + b"xx"]
    part = tmp_path / "__cluster_metadata-0"
    part.mkdir()
    log = part / "00000000000000000000.log"
    log.write_bytes(encode_batch([(i, 1700000000000, None, v, [])
                                  for i, v in enumerate(values)]))
    n = assert_same_text([log], "--cluster-metadata-decoder")
    assert n == 1 + 1 + 1 + len(values) + 1


def test_producer_snapshot_entries_of_every_shape(tmp_path):
    """An open transaction (currentTxnFirstOffset OptionalLong[...]), a sequence that wraps
    (firstSequence from lastSequence - offsetDelta), an entry without a batch (lastOffset
    -1: nothing after lastTimestamp)."""
    snap = tmp_path / "t-0" / "00000000000000000100.snapshot"
    snap.parent.mkdir()
    snap.write_bytes(encode_snapshot([
        ProducerEntry(7, 1, 41, 99, 4, 1700000000000, 3, 95),
        ProducerEntry(8, 0, 2, 60, 5, 1700000000001, -1, -1),
        ProducerEntry(9, 2, -1, -1, 0, 1700000000002, 4, -1)]))
    assert_same_text([snap])


def test_index_files_of_every_shape(kafka_corpus, tmp_path):
    """A trimmed index, one with the preallocated zero tail a running broker leaves (its
    entries end at the first zero slot), an empty one."""
    src = kafka_corpus.log_dir / "codec-none-0"
    part = tmp_path / "codec-none-0"
    part.mkdir()
    base = sorted(src.glob("*.log"))[0].stem
    for ext in (".log", ".index", ".timeindex"):
        (part / (base + ext)).write_bytes((src / (base + ext)).read_bytes())
    with open(part / (base + ".index"), "ab") as f:
        f.write(bytes(8 * 1000))
    empty = tmp_path / "e-0"
    empty.mkdir()
    for ext in (".log", ".index", ".timeindex"):
        (empty / ("0" * 20 + ext)).write_bytes(b"")
    assert_same_text([part / (base + ".index"), part / (base + ".timeindex"),
                      empty / ("0" * 20 + ".index"), empty / ("0" * 20 + ".timeindex")])


def _format_kafka4(work: Path) -> Path:
    """`kafka-storage format --standalone` of Kafka 4.3: bootstrap.checkpoint in the log dir
    and the bootstrap snapshot __cluster_metadata-0/00000000000000000000-0000000000.checkpoint."""
    info = kafka_ref.kafka4_info()
    logs = work / "logs"
    props = work / "server.properties"
    props.write_text("process.roles=broker,controller\nnode.id=1\n"
                     "controller.quorum.bootstrap.servers=127.0.0.1:9093\n"
                     "listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093\n"
                     "controller.listener.names=CONTROLLER\n"
                     f"log.dirs={logs}\n")
    cmd = kafka_ref._java_cmd(str(kafka_ref.kafka4_libs() / "*"),
                              info["kafka4_storage_tool_class"],
                              ["format", "-t", kafka_ref.random_cluster_id(), "-c", str(props),
                               "--standalone"],
                              [*kafka_ref.TOOL_JVM_OPTS,
                               f"-Dlog4j2.configurationFile={kafka_ref.TOOLS_LOG4J2}"])
    res = subprocess.run(cmd, capture_output=True, timeout=300, start_new_session=True)
    assert res.returncode == 0, res.stderr.decode(errors="replace")[-3000:]
    return logs


def test_the_bootstrap_snapshots_kafka_4_format_writes(tmp_path):
    logs = _format_kafka4(tmp_path)
    snap = logs / "__cluster_metadata-0" / "00000000000000000000-0000000000.checkpoint"
    assert snap.is_file()
    n = assert_same_text([logs / "bootstrap.checkpoint", snap], "--cluster-metadata-decoder")
    assert n > 10
    # dumping the partition dir reads its bootstrap snapshot, as naming the file does
    res = run_kafkalog("dump", snap.parent, "--decode", "metadata")
    whole = run_kafkalog("dump", snap, "--decode", "metadata")
    assert res.returncode == 0 and res.stdout == whole.stdout and "KRaftVoters {" in res.stdout
