"""The broker-written corpus: counts from its README (decoded there by kafka-python), the
0.9 consumer's hashes, and a clean verify of every log dir."""

import hashlib
import json
import re
import struct
import subprocess
import sys

import pytest

from kafkalog_cli.storage.disk.logdir import open_target
from tests.conftest import CORPUS


def readme_rows() -> list[dict[str, str]]:
    text = (CORPUS / "README.md").read_text()
    section = text.split("## Decoded contents", 1)[1].split("## Observations", 1)[0]
    lines = [ln for ln in section.splitlines() if ln.startswith("| ")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    rows = []
    for ln in lines[1:]:
        cells = [c.strip() for c in ln.strip("|").split("|")]
        rows.append(dict(zip(header, cells, strict=False)))
    return rows


ROWS = [r for r in readme_rows() if not r["topic-partition"][0].isdigit()]


def partition_counts(log_dir: str, tp: str) -> dict[str, object]:
    target = open_target(CORPUS / log_dir / tp)
    part = target.partition
    batches = records = control = 0
    first = last = None
    for seg in part.segments:
        for _pos, b in seg.batches():
            batches += 1
            recs = list(b.records())
            records += len(recs)
            control += b.is_control
            if recs:
                first = recs[0].offset if first is None else first
                last = recs[-1].offset
    return {"segments": str(len(part.segments)), "batches": str(batches),
            "records": str(records), "first offset": "-" if first is None else str(first),
            "last offset": "-" if last is None else str(last), "control": control}


@pytest.mark.parametrize("row", ROWS,
                         ids=[f"{r['corpus dir']}/{r['topic-partition']}" for r in ROWS])
def test_counts_match_the_corpus_readme(row):
    got = partition_counts(row["corpus dir"], row["topic-partition"])
    for col in ("segments", "batches", "records", "first offset", "last offset"):
        assert got[col] == row[col], col
    assert got["control"] == int(re.match(r"\d+", row["control batches"]).group())


def test_readme_rows_were_found():
    assert len(ROWS) > 60


def _hash(records) -> str:
    h = hashlib.sha256()
    for r in records:
        h.update(struct.pack(">q", r.offset))
        for field in (r.key, r.value):
            if field is None:
                h.update(struct.pack(">i", -1))
            else:
                h.update(struct.pack(">i", len(field)) + field)
    return h.hexdigest()


LEGACY = json.loads((CORPUS / "kafka-0.9-legacy.consumer.json").read_text())["partitions"]


@pytest.mark.parametrize("tp", sorted(LEGACY))
def test_legacy_partitions_hash_to_what_the_0_9_consumer_fetched(tp):
    part = open_target(CORPUS / "kafka-0.9-legacy" / tp).partition
    recs = [r for seg in part.segments for _p, b in seg.batches() for r in b.records()]
    want = LEGACY[tp]
    assert len(recs) == want["count"]
    assert recs[0].offset == want["first_offset"] and recs[-1].offset == want["last_offset"]
    assert sum(r.key is None for r in recs) == want["null_keys"]
    assert sum(r.value is None for r in recs) == want["null_values"]
    assert _hash(recs) == want["sha256"]


LOG_DIRS = sorted(p.name for p in CORPUS.iterdir() if p.is_dir())


@pytest.mark.parametrize("name", LOG_DIRS)
def test_every_corpus_log_dir_verifies_without_error(name):
    res = subprocess.run([sys.executable, "-m", "kafkalog_cli", "verify", str(CORPUS / name),
                          "--format", "json"], capture_output=True)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr
    report = json.loads(res.stdout)
    assert report["summary"]["errors"] == 0
    # missing or untrimmed indexes may be warnings, nothing worse
    assert {f["code"] for f in report["findings"] if f["severity"] == "warning"} <= {
        "INDEX_MISSING", "TIMEINDEX_MISSING", "INDEX_UNTRIMMED"}
    assert report["summary"]["batches"] > 0


def test_dump_jsonl_record_count_matches_readme_for_a_whole_log_dir():
    res = subprocess.run([sys.executable, "-m", "kafkalog_cli", "dump",
                          str(CORPUS / "volodymyrzee-zk"), "--records", "--no-batches",
                          "--format", "jsonl"], capture_output=True, check=True)
    rows = [json.loads(x) for x in res.stdout.splitlines()]
    want = sum(int(r["records"]) for r in ROWS if r["corpus dir"] == "volodymyrzee-zk")
    assert len(rows) == want
    assert {r["kind"] for r in rows} == {"record"}
    assert {(r["topic"], r["partition"]) for r in rows} >= {("first_topic", 0), ("new_topic", 0)}


def test_info_first_offset_is_the_0_9_consumers_first():
    """info's firstOffset of magic 0 partitions, compressed ones too (a wrapper carries only
    its last inner offset), equals the first offset the 0.9 consumer fetched."""
    from kafkalog_cli.storage.queries.overview import partition_info

    for tp, want in LEGACY.items():
        info = partition_info(open_target(CORPUS / "kafka-0.9-legacy" / tp).partition)
        assert info.first_offset == want["first_offset"], tp
