"""Running the kafkalog CLI under test and putting its output side by side with Kafka's.

The CLI is always run as ``[sys.executable, "-m", "kafkalog_cli", ...]`` from the repo root.
Contract used here (kafkalog dump --records --format jsonl --payload base64):

* batch lines: ``{"kind": "batch", "file", "baseOffset", "lastOffset", "count", "magic",
  "compression", "timestampType", "maxTimestamp", "producerId", "producerEpoch",
  "baseSequence", "isTransactional", "isControl", "partitionLeaderEpoch", "crc",
  "position", "size"}``
* record lines: ``{"kind": "record", "topic", "partition", "offset", "timestamp",
  "timestampType", "key", "value", "headers": [{"key", "value"}], ["control": {"type",
  "coordinatorEpoch"}]}`` - bytes base64, null for null; a record belongs to the batch
  line before it.
"""
from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from kafka_ref import REPO_ROOT

MAX_DIFFS = 25


@dataclass
class CliResult:
    args: list[str]
    returncode: int
    stdout: str
    stderr: str

    def describe(self) -> str:
        err = self.stderr.strip()
        if len(err) > 3000:
            err = "...\n" + err[-3000:]
        return (f"`kafkalog {' '.join(self.args)}` exited {self.returncode}\n"
                f"stderr:\n{err}\nstdout (start):\n{self.stdout[:1500]}")


def run_kafkalog(*args: str | os.PathLike, timeout: float = 600.0, cwd: Path = REPO_ROOT,
                 stdout_path: Path | None = None) -> CliResult:
    """Run ``python -m kafkalog_cli ARGS`` (no shell), capture output."""
    argv = [str(a) for a in args]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), env.get("PYTHONPATH", "")]).rstrip(
        os.pathsep)
    env.setdefault("LC_ALL", "C.UTF-8")
    if stdout_path is not None:
        with open(stdout_path, "wb") as out:
            res = subprocess.run([sys.executable, "-m", "kafkalog_cli", *argv], cwd=cwd,
                                 env=env, stdout=out, stderr=subprocess.PIPE, timeout=timeout)
        return CliResult(argv, res.returncode, "", res.stderr.decode("utf-8", "replace"))
    res = subprocess.run([sys.executable, "-m", "kafkalog_cli", *argv], cwd=cwd, env=env,
                         capture_output=True, timeout=timeout)
    return CliResult(argv, res.returncode, res.stdout.decode("utf-8", "replace"),
                     res.stderr.decode("utf-8", "replace"))


def parse_jsonl(text: str) -> list[dict]:
    # JSON Lines are split on "\n" only: str.splitlines() also splits on U+0085, U+2028 and
    # friends, which a JSON string may hold raw (random topic ids in KRaft records do).
    out = []
    for i, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError as e:
            raise AssertionError(
                f"kafkalog dump: line {i} is not JSON ({e}): {line[:300]!r}") from e
    return out


def kafkalog_dump(*paths: str | os.PathLike, extra: tuple[str, ...] = ()) -> tuple[
        CliResult, list[dict]]:
    res = run_kafkalog("dump", *paths, "--records", "--format", "jsonl", "--payload",
                       "base64", *extra)
    entries = parse_jsonl(res.stdout) if res.returncode == 0 else []
    return res, entries


def norm_file(f: str) -> str:
    p = Path(f)
    if not p.is_absolute():
        p = REPO_ROOT / p
    return str(p.resolve())


@dataclass
class KBatch:
    data: dict
    records: list[dict] = field(default_factory=list)


def kafkalog_batches_by_file(entries: list[dict]) -> dict[str, list[KBatch]]:
    """Group kafkalog dump output by (resolved) segment file; records under their batch."""
    res: dict[str, list[KBatch]] = {}
    cur: KBatch | None = None
    for e in entries:
        kind = e.get("kind")
        if kind == "batch":
            cur = KBatch(e)
            res.setdefault(norm_file(e["file"]), []).append(cur)
        elif kind == "record":
            if cur is None:
                raise AssertionError(f"kafkalog dump: record before any batch: {e}")
            cur.records.append(e)
    return res


def b64d(s: str | None) -> bytes | None:
    return None if s is None else base64.b64decode(s)


_REPL_RUN = re.compile("\ufffd+")


def same_text(java_text: str | None, raw: bytes | None) -> bool:
    """Does kafka-dump-log's StringDecoder text equal these bytes?  Java's and Python's UTF-8
    decoders emit a different number of U+FFFD for some malformed sequences (e.g. encoded
    surrogates), never different valid characters, so runs of U+FFFD are compared as one."""
    if java_text is None or raw is None:
        return java_text is None and raw is None
    return (_REPL_RUN.sub("\ufffd", java_text)
            == _REPL_RUN.sub("\ufffd", raw.decode("utf-8", "replace")))


# fields of a kafka-dump-log v2 batch line -> kafkalog batch field
V2_BATCH_FIELDS = {
    "baseOffset": "baseOffset", "lastOffset": "lastOffset", "count": "count",
    "magic": "magic", "compresscodec": "compression", "timestampType": "timestampType",
    "maxTimestamp": "maxTimestamp", "producerId": "producerId",
    "producerEpoch": "producerEpoch", "baseSequence": "baseSequence",
    "isTransactional": "isTransactional", "isControl": "isControl",
    "partitionLeaderEpoch": "partitionLeaderEpoch", "crc": "crc", "position": "position",
    "size": "size",
}
LEGACY_BATCH_FIELDS = {
    "lastOffset": "lastOffset", "magic": "magic", "compresscodec": "compression",
    "timestampType": "timestampType", "maxTimestamp": "maxTimestamp", "crc": "crc",
    "position": "position", "size": "size",
}


# beyond the contract: compared only when kafkalog prints them
V2_OPTIONAL_FIELDS = {"lastSequence": "lastSequence", "deleteHorizonMs": "deleteHorizonMs",
                      "isvalid": "isValid"}
LEGACY_OPTIONAL_FIELDS = {"isvalid": "isValid"}


def batch_diffs(ref: dict, ours: dict) -> list[str]:
    legacy = ref.get("legacy")
    fields = LEGACY_BATCH_FIELDS if legacy else V2_BATCH_FIELDS
    out = []
    for rk, ok in fields.items():
        if ok not in ours:
            out.append(f"{ok} missing (kafka-dump-log {rk}={ref[rk]!r})")
        elif ours[ok] != ref[rk]:
            out.append(f"{ok}={ours[ok]!r} but kafka-dump-log {rk}={ref[rk]!r}")
    for rk, ok in (LEGACY_OPTIONAL_FIELDS if legacy else V2_OPTIONAL_FIELDS).items():
        if ok in ours and rk in ref and ours[ok] != ref[rk]:
            out.append(f"{ok}={ours[ok]!r} but kafka-dump-log {rk}={ref[rk]!r}")
    return out


def record_diffs(ref: dict, ours: dict, batch_is_control: bool) -> list[str]:
    """ref = parse_dump_log record (from --deep-iteration --print-data-log)."""
    out = []
    key, value = b64d(ours.get("key")), b64d(ours.get("value"))
    checks = [
        ("offset", ours.get("offset"), ref["offset"]),
        ("timestamp", ours.get("timestamp"), ref["timestamp"]),
        ("timestampType", ours.get("timestampType"), ref["timestampType"]),
        ("keySize", -1 if key is None else len(key), ref["keySize"]),
        ("valueSize", -1 if value is None else len(value), ref["valueSize"]),
    ]
    if "sequence" in ref and "sequence" in ours:
        checks.append(("sequence", ours["sequence"], ref["sequence"]))
    if "headerKeys" in ref:
        checks.append(("headerKeys", [h.get("key") for h in ours.get("headers") or []],
                       ref["headerKeys"]))
    for name, got, want in checks:
        if got != want:
            out.append(f"{name}={got!r} but kafka-dump-log says {want!r}")
    if batch_is_control:
        ctl = ours.get("control") or {}
        if "endTxnMarker" in ref:
            if ctl.get("type") != ref["endTxnMarker"]:
                out.append(f"control.type={ctl.get('type')!r} but endTxnMarker "
                           f"{ref['endTxnMarker']}")
            if ctl.get("coordinatorEpoch") != ref["coordinatorEpoch"]:
                out.append(f"control.coordinatorEpoch={ctl.get('coordinatorEpoch')!r} but "
                           f"{ref['coordinatorEpoch']}")
        elif "controlType" in ref:
            want = {"SnapshotHeader": "SNAPSHOT_HEADER", "SnapshotFooter": "SNAPSHOT_FOOTER",
                    "KRaftVersion": "KRAFT_VERSION", "KRaftVoters": "KRAFT_VOTERS",
                    "LeaderChange": "LEADER_CHANGE"}.get(
                        ref["controlType"], ref["controlType"])
            if ctl.get("type") != want:
                out.append(f"control.type={ctl.get('type')!r} but kafka-dump-log "
                           f"controlType {want}")
    else:
        if not same_text(ref.get("key"), key):
            out.append(f"key {key!r:.80} but kafka-dump-log key: {ref.get('key')!r:.80}")
        if not same_text(ref.get("payload"), value):
            out.append(f"value {value!r:.80} but kafka-dump-log payload: "
                       f"{ref.get('payload')!r:.80}")
    return out


def compare_with_dump_log(ref_entries: list[dict], ours: dict[str, list[KBatch]],
                          files: list[str]) -> list[str]:
    """Every batch line and record line of kafka-dump-log for these files vs kafkalog's."""
    by_file: dict[str, list[dict]] = {}
    for e in ref_entries:
        if e["kind"] == "batch":
            by_file.setdefault(norm_file(e["file"]), []).append(e)
    diffs: list[str] = []
    for f in files:
        f = norm_file(f)
        ref_b = by_file.get(f, [])
        our_b = ours.get(f, [])
        if len(ref_b) != len(our_b):
            diffs.append(f"{f}: kafkalog has {len(our_b)} batches, kafka-dump-log "
                         f"{len(ref_b)}")
        for i, (rb, ob) in enumerate(zip(ref_b, our_b, strict=False)):
            where = f"{f} batch #{i} (position {rb['position']})"
            for d in batch_diffs(rb, ob.data):
                diffs.append(f"{where}: {d}")
            if len(rb["records"]) != len(ob.records):
                diffs.append(f"{where}: kafkalog has {len(ob.records)} records, "
                             f"kafka-dump-log {len(rb['records'])}")
            is_ctl = bool(rb.get("isControl"))
            for rr, orr in zip(rb["records"], ob.records, strict=False):
                for d in record_diffs(rr, orr, is_ctl):
                    diffs.append(f"{where} offset {rr['offset']}: {d}")
            if len(diffs) > MAX_DIFFS:
                return diffs
    return diffs


def consumer_view(records: list[dict]) -> dict[tuple[str, int], list[tuple]]:
    """Records as the consumer sees them, keyed by (topic, partition)."""
    out: dict[tuple[str, int], list[tuple]] = {}
    for r in records:
        hs = tuple((h["key"], h["value"]) for h in r.get("headers") or [])
        out.setdefault((r["topic"], int(r["partition"])), []).append(
            (r["offset"], r["timestamp"], r["timestampType"], r["key"], r["value"], hs))
    for v in out.values():
        v.sort()
    return out


def diff_views(want: dict, got: dict, what: str) -> list[str]:
    diffs = []
    for tp in sorted(set(want) | set(got)):
        w, g = want.get(tp, []), got.get(tp, [])
        if w == g:
            continue
        if len(w) != len(g):
            diffs.append(f"{tp}: {what} has {len(g)} records, the consumer fetched {len(w)}")
        for a, b in zip(w, g, strict=False):
            if a != b:
                diffs.append(f"{tp} offset {a[0]}: consumer {a!r:.200} vs {what} {b!r:.200}")
                break
    return diffs
