"""(4) `kafkalog recover` after a hard kill (kill -9) of the broker mid-produce, judged by
the broker's own start-up recovery.

Two producers write continuously (kafka-python: acks=1 lz4, and acks=all idempotent, no
compression) while the broker is SIGKILLed. The log dir is copied twice; the active
segment of each crash-* partition is damaged identically in both copies (one damage kind
per partition, below). Then a broker starts on copy A and recovers (LogLoader); `kafkalog
recover` runs on copy B. Both must keep the same records: same log end offset per
partition, and after the broker's clean stop, byte-identical `.log` files everywhere.

Damage per partition (applied to the last segment, which is above the recovery point):
  as-killed        nothing: whatever kill -9 left
  torn-7           the last 7 bytes cut (a torn last batch)
  torn-header      cut 30 bytes into the last batch (not even a whole batch header)
  zero-fill        4 KiB of zeros appended (a preallocated / torn write)
  crc-tail         one byte flipped in the last batch (CRC mismatch, nothing valid after)
  crc-middle       one byte flipped in a middle batch (valid batches follow): the broker
                   truncates there; kafkalog refuses (exit 4) unless --force, then does the same

Both copies of crash-a-0 also get producer snapshots its load deletes (PLANTED): stray ones
below and above its last segment's base offset, and one past its log end, the largest
stray, so the one above the last base goes too (removeStraySnapshots, then
truncateAndReload).
"""
from __future__ import annotations

import contextlib
import json
import random
import re
import shutil
import signal
import struct
import threading
import time
import zlib
from pathlib import Path

import kafka_ref
import pytest
from kafkalog_run import run_kafkalog
from xdist_once import once

pytestmark = pytest.mark.conformance

CRASH_PROPS = {
    "log.segment.bytes": 131072,
    "log.index.interval.bytes": 4096,
    "log.flush.offset.checkpoint.interval.ms": 500,  # recovery points do get checkpointed
    "log.flush.start.offset.checkpoint.interval.ms": 500,
    "log.initial.task.delay.ms": 0,
}
# topic -> producer settings
PRODUCERS = {
    "crash-a": dict(acks=1, compression_type="lz4", enable_idempotence=False,
                    max_in_flight_requests_per_connection=5),
    "crash-b": dict(acks="all", compression_type=None, enable_idempotence=True,
                    max_in_flight_requests_per_connection=5),
}
DAMAGE = {"crash-a-0": "as-killed", "crash-a-1": "torn-7", "crash-a-2": "torn-header",
          "crash-b-0": "zero-fill", "crash-b-1": "crc-tail", "crash-b-2": "crc-middle"}
MIN_BATCHES = 4  # in every active segment when the broker is killed
COMPLETED = re.compile(r"Completed load of Log\(dir=(\S+?), topicId=.*?logEndOffset=(\d+)\)")
SEGMENT_FILES = (".log", ".index", ".timeindex", ".txnindex")


def walk_batches(data: bytes) -> list[dict]:
    """Complete batches (magic 2) from the start of a .log: position, size, base, last."""
    out, pos = [], 0
    while pos + 17 <= len(data):
        base, length = struct.unpack_from(">qi", data, pos)
        if length < 14 or pos + 12 + length > len(data):
            break
        last = base + struct.unpack_from(">i", data, pos + 23)[0] if data[pos + 16] >= 2 \
            else base
        out.append({"pos": pos, "size": 12 + length, "base": base, "last": last})
        pos += 12 + length
    return out


def last_segment(pdir: Path) -> Path:
    return sorted(pdir.glob("*.log"))[-1]


def damage(pdir: Path, kind: str) -> int:
    """Damage the last segment; returns the log end offset a broker's recovery must reach."""
    seg = last_segment(pdir)
    data = seg.read_bytes()
    bs = walk_batches(data)
    assert len(bs) >= 3, f"{seg}: only {len(bs)} batches"
    b = bs[-1]
    if kind == "as-killed":
        return bs[-1]["last"] + 1
    if kind == "torn-7":
        with open(seg, "r+b") as f:
            f.truncate(b["pos"] + b["size"] - 7)
        return b["base"]
    if kind == "torn-header":
        with open(seg, "r+b") as f:
            f.truncate(b["pos"] + 30)
        return b["base"]
    if kind == "zero-fill":
        end = bs[-1]["pos"] + bs[-1]["size"]
        with open(seg, "r+b") as f:
            f.truncate(end)  # drop a torn tail kill -9 may have left, then the zeros
            f.seek(end)
            f.write(b"\0" * 4096)
        return bs[-1]["last"] + 1
    if kind in ("crc-tail", "crc-middle"):
        if kind == "crc-middle":
            b = bs[len(bs) // 2]
            assert b is not bs[-1]
        at = b["pos"] + b["size"] - 3  # inside the records: only the CRC notices
        with open(seg, "r+b") as f:
            f.seek(at)
            byte = f.read(1)
            f.seek(at)
            f.write(bytes([byte[0] ^ 0x5A]))
        return b["base"]
    raise ValueError(kind)


def _produce_until_killed(broker, stop: threading.Event, acked: dict, errors: list,
                          topic: str, settings: dict):
    from kafka import KafkaProducer
    rnd = random.Random(zlib.crc32(topic.encode()))  # the same bytes in every run
    try:
        p = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=2,
                          retries=5 if settings.get("enable_idempotence") else 0,
                          request_timeout_ms=5000, max_block_ms=5000,
                          client_id=f"crash-{topic}", **settings)
    except Exception as e:  # noqa: BLE001 - pragma: no cover; any client failure is recorded
        errors.append(repr(e))
        return

    def ok(md):
        tp = f"{md.topic}-{md.partition}"
        acked[tp] = max(acked.get(tp, -1), md.offset)

    i = 0
    try:
        while not stop.is_set():
            value = b"%s-%08d " % (topic.encode(), i) + rnd.randbytes(rnd.randrange(40)) \
                + b"payload " * rnd.randrange(1, 60)
            try:
                p.send(topic, key=b"k%05d" % (i % 5000), value=value,
                       partition=i % 3).add_callback(ok)
            except Exception:  # noqa: BLE001 - a producer racing the broker kill may raise anything
                if stop.is_set():
                    break
                time.sleep(0.01)
            i += 1
            if i % 50 == 0:
                time.sleep(0.002)
    finally:
        with contextlib.suppress(Exception):
            p.close(timeout=1)


def _active_batches(log_dir: Path) -> dict[str, int]:
    """Complete batches in each crash partition's active segment; 0 when no segment was
    rolled yet."""
    out = {}
    for tp in DAMAGE:
        segs = sorted((log_dir / tp).glob("*.log"))
        if len(segs) < 2:
            out[tp] = 0
            continue
        out[tp] = len(walk_batches(segs[-1].read_bytes()))
    return out


@pytest.fixture(scope="module")
def crashed(broker_version, tmp_path_factory) -> dict:
    """Produce, kill -9 mid-produce, copy twice, damage both copies identically."""
    return once(tmp_path_factory, f"crashed-{broker_version}",
                lambda root: _crash(root, broker_version))


def _crash(root: Path, version: str) -> dict:
    b = kafka_ref.KafkaBroker(work_dir=root / "work", props=CRASH_PROPS, name="crash",
                              version=version)
    stop = threading.Event()
    acked: dict = {}
    errors: list = []
    threads = []
    try:
        b.start()
        for t in PRODUCERS:
            b.create_topic(t, partitions=3)
        for t, settings in PRODUCERS.items():
            th = threading.Thread(target=_produce_until_killed, daemon=True,
                                  args=(b, stop, acked, errors, t, settings))
            th.start()
            threads.append(th)
        t0 = time.monotonic()
        while True:
            time.sleep(0.05)
            elapsed = time.monotonic() - t0
            if elapsed <= 3:
                continue
            # the broker is stopped while its files are judged, so no roll or append can come
            # between the check and the kill: what was checked is what is killed
            assert b.running
            kafka_ref.kill_group(b.proc, signal.SIGSTOP)
            counts = _active_batches(b.log_dir)
            if min(counts.values()) >= MIN_BATCHES:
                break
            kafka_ref.kill_group(b.proc, signal.SIGCONT)
            assert elapsed < 60, f"producers too slow: {counts} errors={errors}"
        killed_pid = b.proc.pid
        b.kill()  # SIGKILL (of the stopped broker) while both producers are sending
    finally:
        stop.set()
        for th in threads:
            th.join(10)
        b.close()
    assert not (b.log_dir / ".kafka_cleanshutdown").exists()
    copies = {}
    for name in ("broker", "kafkalog"):
        copies[name] = root / f"copy-{name}" / "logs"
        shutil.copytree(b.log_dir, copies[name], symlinks=True)
    expected = {}
    for tp, kind in DAMAGE.items():
        expected[tp] = damage(copies["broker"] / tp, kind)
        assert damage(copies["kafkalog"] / tp, kind) == expected[tp]
    planted = plant_snapshots(copies, expected)
    damaged = {}
    for tp in DAMAGE:  # identical damage
        damaged[tp] = last_segment(copies["kafkalog"] / tp).read_bytes()
        assert last_segment(copies["broker"] / tp).read_bytes() == damaged[tp]
    return {"root": root, "copies": copies, "expected": expected, "acked": dict(acked),
            "killed_pid": killed_pid, "work": b.work_dir, "damaged": damaged,
            "version": version, "planted": planted}


PLANTED = "crash-a-0"  # as-killed: the broker and kafkalog keep its whole log


def plant_snapshots(copies: dict, expected: dict) -> list[str]:
    """Empty producer snapshots the broker's load deletes, the same in both copies: one
    inside the first segment and one above the last segment's base offset (strays: no
    segment starts there), and one past the log end, which is the largest stray, so the one
    above the last base is not kept either. Neither the broker's recovery nor its clean stop
    writes one at these offsets (they write at segment ends and the log end)."""
    from kafkalog_cli.codec.snapshot import encode_snapshot

    bases = sorted(int(p.stem) for p in (copies["broker"] / PLANTED).glob("*.log"))
    offsets = (bases[0] + 1, bases[-1] + 1, expected[PLANTED] + 1000)
    assert bases[0] + 1 < bases[1] and bases[-1] + 1 < expected[PLANTED], (bases, expected)
    names = [f"{PLANTED}/{off:020d}.snapshot" for off in offsets]
    for copy in copies.values():
        for name in names:
            (copy / name).write_bytes(encode_snapshot([]))
    return names


@pytest.fixture(scope="module")
def broker_recovered(crashed, tmp_path_factory) -> dict:
    """A broker starts on copy A (recovers), then stops cleanly."""
    return once(tmp_path_factory, f"broker_recovered-{crashed['version']}",
                lambda _: _broker_recover(crashed))


def _broker_recover(crashed) -> dict:
    a = kafka_ref.KafkaBroker(log_dir=crashed["copies"]["broker"],
                              work_dir=crashed["root"] / "work-broker-copy", props=CRASH_PROPS,
                              name="recover", version=crashed["version"])
    try:
        a.start()
        text = a.log_text()
        a.stop()
    finally:
        a.close()
    leo = {Path(d).name: int(n) for d, n in COMPLETED.findall(text)}
    return {"leo": leo, "log": text}


@pytest.fixture(scope="module")
def kafkalog_recovered(crashed, tmp_path_factory) -> dict:
    """kafkalog recover on copy B: plain, then --force, then once more (idempotent)."""
    return once(tmp_path_factory, f"kafkalog_recovered-{crashed['version']}",
                lambda _: _kafkalog_recover(crashed))


def _kafkalog_recover(crashed) -> dict:
    d = crashed["copies"]["kafkalog"]
    runs = []
    refused_after_plain = None
    for extra in ((), ("--force",), ("--force",)):
        res = run_kafkalog("recover", d, "--no-quarantine", "--format", "json", *extra)
        try:
            doc = json.loads(res.stdout)
        except json.JSONDecodeError:
            doc = None
        runs.append((res, doc))
        if refused_after_plain is None:
            refused_after_plain = last_segment(d / "crash-b-2").read_bytes()
    return {"runs": runs, "refused_after_plain": refused_after_plain}


def _doc(run):
    res, doc = run
    assert doc is not None, f"recover --format json printed no JSON\n{res.describe()}"
    return {Path(p["path"]).name: p for p in doc["partitions"]}


def test_broker_recovered_the_damage(crashed, broker_recovered):
    """The judge: the broker recovered every crash partition to the expected log end."""
    text = broker_recovered["log"]
    assert "Recovering unflushed segment" in text
    for tp, kind in DAMAGE.items():
        assert tp in broker_recovered["leo"], f"no 'Completed load' line for {tp}"
        assert broker_recovered["leo"][tp] == crashed["expected"][tp], (tp, kind)
        if kind != "as-killed":
            assert re.search(rf"(Found invalid messages|CorruptRecordException|"
                             rf"truncat)[^\n]*{re.escape(tp)}|{re.escape(tp)}[^\n]*"
                             rf"(Found invalid messages|Corrupt|truncat)", text, re.I), (tp, kind)
    acked = crashed["acked"]
    assert acked, "no record was acknowledged before the kill"
    # nothing acknowledged is lost where nothing was damaged (kill -9 keeps the page cache)
    assert broker_recovered["leo"]["crash-a-0"] > acked.get("crash-a-0", -1)
    print(f"\nkill -9 after acks {acked}; expected log ends {crashed['expected']}")


def test_recover_refuses_mid_file_corruption_without_force(crashed, kafkalog_recovered):
    res, _ = kafkalog_recovered["runs"][0]
    parts = _doc(kafkalog_recovered["runs"][0])
    # OR-ed: 4 for the refused partition, with 1 when others were repaired in the same run
    doc = kafkalog_recovered["runs"][0][1]
    changed = any(r["actions"] for r in doc["partitions"] + doc.get("logDirs", []))
    assert res.returncode == 4 | (1 if changed else 0), res.describe()
    with_problems = sorted(tp for tp, p in parts.items() if p["problems"])
    assert with_problems == ["crash-b-2"], json.dumps(
        {tp: parts[tp]["problems"] for tp in with_problems}, indent=1)[:3000]
    # the refused partition's damaged segment is left as it was
    assert kafkalog_recovered["refused_after_plain"] == crashed["damaged"]["crash-b-2"]


def test_recover_keeps_the_same_records_as_the_broker(crashed, broker_recovered,
                                                      kafkalog_recovered):
    """Same log end offset for every partition the broker loaded, then byte-identical
    .log files in every partition dir (user topics and internal ones)."""
    runs = kafkalog_recovered["runs"]
    for res, _ in runs[1:]:
        assert res.returncode in (0, 1), res.describe()
    forced = _doc(runs[1])
    diffs = []
    for tp, leo in sorted(broker_recovered["leo"].items()):
        ours = forced.get(tp, {}).get("logEndOffset")
        if ours != leo:
            diffs.append(f"{tp}: broker recovered to log end {leo}, kafkalog {ours}")
    assert not diffs, "\n".join(diffs)
    a, b = crashed["copies"]["broker"], crashed["copies"]["kafkalog"]
    for pdir in sorted(p for p in a.iterdir() if p.is_dir() and p.name != "__cluster_metadata-0"):
        la = {p.name: p for p in pdir.glob("*.log")}
        lb = {p.name: p for p in (b / pdir.name).glob("*.log")}
        if sorted(la) != sorted(lb):
            diffs.append(f"{pdir.name}: segments broker {sorted(la)} kafkalog {sorted(lb)}")
            continue
        for name in la:
            if la[name].read_bytes() != lb[name].read_bytes():
                diffs.append(f"{pdir.name}/{name}: broker {la[name].stat().st_size} bytes, "
                             f"kafkalog {lb[name].stat().st_size} bytes (contents differ)")
    assert not diffs, "\n".join(diffs[:25])


def test_recover_rebuilds_the_indexes_the_broker_rebuilds(crashed, broker_recovered,
                                                          kafkalog_recovered):
    """The crash partitions' .index/.timeindex after recovery: kafkalog's equal the broker's
    (after its clean stop), byte for byte."""
    a, b = crashed["copies"]["broker"], crashed["copies"]["kafkalog"]
    diffs = []
    for tp in DAMAGE:
        for p in sorted((a / tp).iterdir()):
            if p.suffix not in (".index", ".timeindex"):
                continue
            q = b / tp / p.name
            if not q.exists():
                diffs.append(f"{tp}/{p.name}: missing in kafkalog's copy")
            elif q.read_bytes() != p.read_bytes():
                diffs.append(f"{tp}/{p.name}: broker {p.stat().st_size} bytes, kafkalog "
                             f"{q.stat().st_size} bytes (contents differ)")
    assert not diffs, "\n".join(diffs[:25])


def test_recover_removes_the_snapshots_the_brokers_load_deletes(crashed, broker_recovered,
                                                                kafkalog_recovered):
    """The judge: the broker's load (and clean stop) left none of the planted snapshots;
    kafkalog recover removed the same ones."""
    for name in ("broker", "kafkalog"):
        left = [n for n in crashed["planted"] if (crashed["copies"][name] / n).exists()]
        assert not left, f"{name}: {left} left"
    plain = _doc(kafkalog_recovered["runs"][0])[PLANTED]
    removed = {Path(a["file"]).name for a in plain["actions"] if a["action"] == "remove"}
    assert {Path(n).name for n in crashed["planted"]} <= removed, plain["actions"]


def test_recover_second_run_changes_nothing(kafkalog_recovered):
    res, _ = kafkalog_recovered["runs"][2]
    assert res.returncode == 0, res.describe()


def test_verify_finds_no_error_after_recover(crashed, kafkalog_recovered):
    res = run_kafkalog("verify", crashed["copies"]["kafkalog"], "--format", "json")
    doc = json.loads(res.stdout)
    errors = [f for f in doc.get("findings", []) if f.get("severity") == "error"]
    assert not errors and res.returncode == 0, "\n".join(json.dumps(e) for e in errors[:20]) \
        or res.describe()
