"""Damaged copies are found at the right byte position, with the right code."""

import json
import os
import struct
import subprocess
import sys

import pytest

from tests.faults.surgery import append_bytes, batch_positions, flip_byte, segments, shrink


def verify(path) -> tuple[int, list[dict]]:
    res = subprocess.run([sys.executable, "-m", "kafkalog_cli", "verify", str(path),
                          "--format", "json"], capture_output=True)
    assert b"Traceback" not in res.stderr
    return res.returncode, json.loads(res.stdout)["findings"]


def errors(findings, code):
    return [f for f in findings if f["severity"] == "error" and f["code"] == code]


def test_clean_sample_has_no_findings(sample):
    code, findings = verify(sample)
    assert code == 0
    assert [f for f in findings if f["severity"] != "info"] == []


# in the CRC-covered header, first record, last byte
@pytest.mark.parametrize("where", [30, 61, -3])
def test_bit_flip_inside_a_batch_is_reported_at_the_batch_start(sample, where):
    log = segments(sample / "demo-0")[0].log_path
    pos, size = batch_positions(log)[3]
    flip_byte(log, pos + (where if where >= 0 else size + where))
    code, findings = verify(sample / "demo-0")
    assert code == 4
    hits = errors(findings, "LOG_CRC_MISMATCH")
    assert [(h["file"], h["position"]) for h in hits] == [(str(log), pos)]
    assert hits[0]["fix"].startswith("kafkalog recover")


def test_torn_tail_is_reported_at_the_last_batch_start(sample):
    log = segments(sample / "demo-1")[-1].log_path
    last_pos, last_size = batch_positions(log)[-1]
    shrink(log, 7)
    code, findings = verify(sample / "demo-1")
    assert code == 4
    [hit] = errors(findings, "LOG_TORN_TAIL")
    assert hit["position"] == last_pos
    assert f"{last_size - 7} remain" in hit["message"]


def test_zero_filled_tail(sample):
    log = segments(sample / "demo-0")[-1].log_path
    end = log.stat().st_size
    append_bytes(log, bytes(4096))
    _, findings = verify(sample / "demo-0")
    [hit] = errors(findings, "LOG_ZERO_TAIL")
    assert hit["position"] == end and "4096 zero bytes" in hit["message"]


def test_garbage_tail(sample):
    log = segments(sample / "demo-0")[-1].log_path
    end = log.stat().st_size
    append_bytes(log, b"\xff" * 40)  # a negative size field: cannot be a torn batch
    _, findings = verify(sample / "demo-0")
    [hit] = errors(findings, "LOG_GARBAGE_TAIL")
    assert hit["position"] == end


def test_short_tail_below_a_header(sample):
    log = segments(sample / "legacy-v1-0")[0].log_path
    end = log.stat().st_size
    append_bytes(log, b"\x00\x01\x02")
    _, findings = verify(sample / "legacy-v1-0")
    assert [h["position"] for h in findings if h["code"].endswith("_TAIL")] == [end]


def test_wrong_index_entry_position(sample):
    seg = next(s for s in segments(sample / "demo-0") if s.has_index)
    idx = seg.path(".index")
    data = bytearray(idx.read_bytes())
    assert len(data) >= 8, "the sample's first segment has index entries"
    rel, pos = struct.unpack_from(">ii", data, 0)
    struct.pack_into(">ii", data, 0, rel, pos + 1)
    idx.write_bytes(bytes(data))
    _, findings = verify(sample / "demo-0")
    [hit] = errors(findings, "INDEX_NOT_BATCH_START")
    assert hit["file"] == str(idx) and hit["position"] == 0
    assert "index-rebuild" in hit["fix"]


def test_wrong_index_entry_offset(sample):
    seg = next(s for s in segments(sample / "demo-0") if s.has_index)
    idx = seg.path(".index")
    data = bytearray(idx.read_bytes())
    rel, pos = struct.unpack_from(">ii", data, 8)
    struct.pack_into(">ii", data, 8, rel - 30, pos)  # names an offset in an earlier batch
    idx.write_bytes(bytes(data))
    _, findings = verify(sample / "demo-0")
    assert [h["position"] for h in errors(findings, "INDEX_OFFSET_MISMATCH")] == [8]


def test_untrimmed_index_is_a_warning_not_corruption(sample):
    seg = segments(sample / "demo-0")[0]  # a rolled segment: Kafka trims its index on roll
    with open(seg.path(".index"), "ab") as f:
        f.write(bytes(8 * 100))
    code, findings = verify(sample / "demo-0")
    assert code == 0
    assert [f["code"] for f in findings if f["severity"] == "warning"] == ["INDEX_UNTRIMMED"]


def test_the_active_segments_preallocated_index_is_only_info(sample):
    """A running or killed broker leaves the active segment's index preallocated."""
    seg = segments(sample / "demo-0")[-1]
    with open(seg.path(".index"), "ab") as f:
        f.write(bytes(8 * 100))
    code, findings = verify(sample / "demo-0")
    assert code == 0
    assert [f["severity"] for f in findings if f["code"] == "INDEX_UNTRIMMED"] == ["info"]
    assert not [f for f in findings if f["severity"] != "info"]


def test_missing_index_and_leftovers_are_warnings(sample):
    segs = segments(sample / "demo-0")
    os.remove(segs[0].path(".index"))
    (sample / "demo-0" / "00000000000000099999.log.swap").write_bytes(b"")
    code, findings = verify(sample)
    assert code == 0
    codes = {f["code"] for f in findings if f["severity"] == "warning"}
    assert codes == {"INDEX_MISSING", "LEFTOVER_SWAP"}


def test_corrupt_snapshot_and_checkpoint(sample):
    snap = next((sample / "demo-0").glob("*.snapshot"))
    flip_byte(snap, 12)
    (sample / "log-start-offset-checkpoint").write_text("0\n1\ndemo 0 999999\n")
    code, findings = verify(sample)
    assert code == 4
    assert errors(findings, "SNAPSHOT_CORRUPT")[0]["file"] == str(snap)
    assert "deletes every segment" in errors(findings, "LOG_START_PAST_END")[0]["message"]


def test_every_finding_is_collected_not_just_the_first(sample):
    for pdir in ("demo-0", "demo-1"):
        log = segments(sample / pdir)[0].log_path
        pos, _ = batch_positions(log)[1]
        flip_byte(log, pos + 40)
    _, findings = verify(sample)
    assert len(errors(findings, "LOG_CRC_MISMATCH")) == 2


def test_mid_file_corruption_is_told_apart_and_later_batches_still_checked(sample):
    log = segments(sample / "demo-0")[0].log_path
    batches = batch_positions(log)
    pos, _ = batches[2]
    data = bytearray(log.read_bytes())
    data[pos + 8:pos + 12] = b"\x00\x00\x00\x03"  # size field below 14: framing breaks
    later, _ = batches[5]
    data[later + 40] ^= 0xFF  # and a CRC failure further on
    log.write_bytes(bytes(data))
    _, findings = verify(sample / "demo-0")
    [mid] = errors(findings, "LOG_CORRUPT_MID_FILE")
    assert mid["position"] == pos
    assert f"next valid batch at byte {batches[3][0]}" in mid["message"]
    assert [h["position"] for h in errors(findings, "LOG_CRC_MISMATCH")] == [later]
