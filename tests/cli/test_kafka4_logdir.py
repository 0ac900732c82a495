"""Log-dir states a Kafka 4 broker leaves, none of them damage: an empty partition with the
preallocated indexes of a killed broker, tiered storage's remote-log-index-cache/, a log
start offset off the first local segment (delete-records, tiered storage), a -stray dir,
and the bootstrap KRaft snapshot 00000000000000000000-0000000000.checkpoint (KIP-853/1170).
verify reports no error or warning for them, info lists them, dump reads them."""

import json
import shutil
import struct

import pytest

from kafkalog_cli.codec.batch_v2 import encode_batch
from tests.cli.run import run

INDEX_BYTES = 10 * 1024 * 1024  # segment.index.bytes; the time index rounds down to 12s
SEGMENT_ID = "9TE-u4XqQSmXSxMv2vFj3w"  # a remote segment's Uuid, as Kafka prints it
STRAY = "demo-0.0123456789abcdef0123456789abcdef-stray"


def findings(path, *extra):
    r = run("verify", path, "--format", "json", *extra)
    assert "Traceback" not in r.err
    return r.code, json.loads(r.out)["findings"]


def not_info(found):
    return [f for f in found if f["severity"] != "info"]


def info_json(path):
    r = run("info", path, "--format", "json")
    assert r.code == 0, r.err
    return json.loads(r.out)


def partitions(path):
    return {p["path"].rsplit("/", 1)[1]: p for p in info_json(path)[0]["partitions"]}


# --- 7: a killed broker's empty partition ------------------------------------------------

def killed_empty_partition(sample):
    """What a broker killed right after creating a partition leaves: an empty .log, the
    active segment's indexes preallocated (all zeros), no .kafka_cleanshutdown."""
    part = sample / "fresh-0"
    part.mkdir()
    (part / "00000000000000000000.log").write_bytes(b"")
    with open(part / "00000000000000000000.index", "wb") as f:
        f.truncate(INDEX_BYTES)
    with open(part / "00000000000000000000.timeindex", "wb") as f:
        f.truncate(INDEX_BYTES // 12 * 12)
    (part / "leader-epoch-checkpoint").write_text("0\n1\n0 0\n")
    (part / "partition.metadata").write_text("version: 0\ntopic_id: 9TE-u4XqQSmXSxMv2vFj3w\n")
    (sample / ".kafka_cleanshutdown").unlink()
    return part


@pytest.mark.parametrize("mode", [(), ("--shallow",)], ids=["deep", "shallow"])
def test_an_empty_partitions_preallocated_indexes_are_not_damage(sample, mode):
    part = killed_empty_partition(sample)
    code, found = findings(sample, *mode)
    assert code == 0 and not_info(found) == [], not_info(found)
    untrimmed = {f["file"]: f for f in found if f["code"] == "INDEX_UNTRIMMED"}
    assert set(untrimmed) == {str(part / "00000000000000000000.index"),
                              str(part / "00000000000000000000.timeindex")}
    assert untrimmed[str(part / "00000000000000000000.index")]["message"].startswith(
        f"{INDEX_BYTES // 8} zero-filled preallocated slots after 0 entries")
    p = partitions(sample)["fresh-0"]
    assert (p["segments"], p["logStartOffset"], p["logEndOffset"]) == (1, 0, 0)


def test_an_empty_segments_index_entry_at_a_later_offset_is_still_past_the_end(sample):
    """Only the zero first slot is preallocation: an entry naming a later offset is not."""
    part = killed_empty_partition(sample)
    with open(part / "00000000000000000000.index", "r+b") as f:
        f.write(struct.pack(">ii", 5, 0))
    code, found = findings(sample)
    assert code == 4
    assert [f["code"] for f in found if f["severity"] == "error"] == ["INDEX_PAST_LOG_END"]


# --- 8: tiered storage --------------------------------------------------------------------

def remote_index_cache(root):
    """remote-log-index-cache/ with one remote segment's indexes (start offset 1000) and a
    segment's on their way out (.deleted), as RemoteIndexCache keeps them."""
    cache = root / "remote-log-index-cache"
    cache.mkdir()
    for prefix, suffix in ((f"1000_{SEGMENT_ID}", ""), (f"0_{SEGMENT_ID[::-1]}", ".deleted")):
        (cache / f"{prefix}.index{suffix}").write_bytes(struct.pack(">ii", 5, 4096))
        (cache / f"{prefix}.timeindex{suffix}").write_bytes(struct.pack(">qi", 1700000000000, 5))
        (cache / f"{prefix}.txnindex{suffix}").write_bytes(b"")
    return cache


def test_remote_log_index_cache_is_known_checked_listed_and_dumped(sample):
    cache = remote_index_cache(sample)
    code, found = findings(sample)
    assert code == 0 and not_info(found) == [], not_info(found)
    [note] = [f for f in found if f["code"] == "REMOTE_INDEX_CACHE"]
    assert note["file"] == str(cache) and note["message"].startswith(
        "tiered storage: 3 cached index files of remote segments, 3 on their way out")
    entry = info_json(sample)[0]
    assert entry["unknownFiles"] == []
    assert entry["remoteIndexCache"] == {"files": 6, "bytes": 2 * (8 + 12)}
    assert "remote-log-index-cache/: 6 cached index files" in run("info", sample).text
    r = run("dump", cache / f"1000_{SEGMENT_ID}.index")
    assert r.code == 0 and r.text.splitlines()[-1] == "offset: 1005 position: 4096"
    r = run("dump", cache / f"1000_{SEGMENT_ID}.timeindex")
    assert r.text.splitlines()[-1] == "timestamp: 1700000000000 offset: 1005"


def test_a_remote_index_the_broker_would_refuse_is_reported(sample):
    cache = remote_index_cache(sample)
    (cache / f"1000_{SEGMENT_ID}.index").write_bytes(b"\x00" * 7)
    (cache / "notes.txt").write_text("x")
    code, found = findings(sample)
    assert code == 4
    assert {(f["severity"], f["code"], f["file"].rsplit("/", 1)[1]) for f in not_info(found)} \
        == {("error", "REMOTE_INDEX_CORRUPT", f"1000_{SEGMENT_ID}.index"),
            ("warning", "UNKNOWN_FILE", "notes.txt")}


def test_log_start_offset_off_the_first_local_segment_is_not_damage(sample):
    """delete-records moves the log start offset into (or past) the first segment before
    retention deletes it; tiered storage keeps it below the first local segment."""
    tiered = sample / "tiered-0"
    shutil.copytree(sample / "demo-1", tiered)
    for f in tiered.glob("00000000000000000000.*"):
        f.unlink()  # uploaded and deleted locally: the first local segment is 263
    (sample / "log-start-offset-checkpoint").write_text("0\n2\ndemo 0 300\ntiered 0 100\n")
    code, found = findings(sample)
    assert code == 0 and not_info(found) == [], not_info(found)
    parts = partitions(sample)
    assert (parts["demo-0"]["logStartOffset"], parts["demo-0"]["firstOffset"]) == (300, 0)
    # without tiered storage the broker loads max(checkpoint, first segment)
    assert parts["tiered-0"]["logStartOffset"] == 263
    remote_index_cache(sample)  # tiered storage on: the checkpoint entry as is
    assert partitions(sample)["tiered-0"]["logStartOffset"] == 100
    code, found = findings(sample)
    assert code == 0 and not_info(found) == [], not_info(found)


def test_a_tiered_partition_named_alone_has_the_log_start_of_its_log_dir(sample):
    """A partition dir named alone comes with its parent log dir unlisted: info still sees
    the remote-log-index-cache/ there and takes the checkpoint entry as is, as it does for
    the whole log dir (LogLoader.load: no max with the first local segment when tiered)."""
    tiered = sample / "tiered-0"
    shutil.copytree(sample / "demo-1", tiered)
    for f in tiered.glob("00000000000000000000.*"):
        f.unlink()  # the first local segment is 263
    (sample / "log-start-offset-checkpoint").write_text("0\n1\ntiered 0 100\n")
    remote_index_cache(sample)
    [alone] = info_json(tiered)[0]["partitions"]
    assert alone["logStartOffset"] == partitions(sample)["tiered-0"]["logStartOffset"] == 100


def test_a_tiered_partition_without_an_entry_shows_where_its_local_log_starts(sample):
    """The broker checkpoints every remote-enabled log, so no entry means the start is not
    known here (the broker's load would take 0 for a remote-enabled topic, the first
    segment's base for another): info shows the first local segment's base offset."""
    tiered = sample / "tiered-0"
    shutil.copytree(sample / "demo-1", tiered)
    for f in tiered.glob("00000000000000000000.*"):
        f.unlink()
    remote_index_cache(sample)
    assert partitions(sample)["tiered-0"]["logStartOffset"] == 263
    [alone] = info_json(tiered)[0]["partitions"]
    assert alone["logStartOffset"] == 263


# --- 8: -stray dirs -----------------------------------------------------------------------

def test_a_stray_dir_is_known_and_not_taken_for_the_live_partition(sample):
    stray = sample / STRAY
    stray.mkdir()
    for f in (sample / "demo-0").glob("00000000000000000000.*"):
        shutil.copy(f, stray)  # an older copy: its log ends at 243, the live one's at 608
    code, found = findings(sample)
    # its log end offset is not the live demo-0's: no "recovery point past the end" for 608
    assert code == 0 and not_info(found) == [], not_info(found)
    assert [(f["code"], f["file"]) for f in found if f["code"].startswith("PARTITION_")] == \
        [("PARTITION_STRAY", str(stray))]
    parts = partitions(sample)
    assert (parts[STRAY]["state"], parts[STRAY]["logEndOffset"]) == ("stray", 243)
    assert parts["demo-0"]["state"] == ""
    names = [ln.split()[0] for ln in run("info", sample).text.splitlines()[2:] if ln.strip()]
    assert STRAY in names and names.count("demo-0") == 1
    r = run("dump", stray, "--format", "jsonl")
    assert r.code == 0 and {json.loads(x)["file"] for x in r.text.splitlines()} == {
        str(stray / "00000000000000000000.log")}


# --- 8: the bootstrap snapshot --------------------------------------------------------------

def _uvarint(n):
    out = b""
    while n >= 0x80:
        out += bytes([n & 0x7F | 0x80])
        n >>= 7
    return out + bytes([n])


def _compact_string(s):
    return _uvarint(len(s) + 1) + s.encode()


def bootstrap_snapshot(sample):
    """__cluster_metadata-0 holding only what `kafka-storage format --standalone` writes
    there: SnapshotHeader, KRaftVersion, KRaftVoters, then a SnapshotFooter batch."""
    part = sample / "__cluster_metadata-0"
    part.mkdir()
    key = lambda t: struct.pack(">hh", 0, t)  # noqa: E731
    voters = (struct.pack(">h", 0) + _uvarint(2) + struct.pack(">i", 1) + bytes(range(16))
              + _uvarint(2) + _compact_string("CONTROLLER") + _compact_string("localhost")
              + struct.pack(">H", 9093) + b"\x00" + struct.pack(">hh", 0, 1) + b"\x00"
              + b"\x00" + b"\x00")
    ts = 1700000000000
    data = encode_batch([(0, ts, key(3), struct.pack(">hq", 0, ts) + b"\x00", []),
                         (1, ts, key(5), struct.pack(">hh", 0, 1) + b"\x00", []),
                         (2, ts, key(6), voters, [])], control=True, partition_leader_epoch=0)
    data += encode_batch([(3, ts, key(4), struct.pack(">h", 0) + b"\x00", [])], control=True,
                         partition_leader_epoch=0)
    snap = part / "00000000000000000000-0000000000.checkpoint"
    snap.write_bytes(data)
    return part, snap


def test_the_bootstrap_snapshot_is_verified_listed_and_dumped(sample):
    part, snap = bootstrap_snapshot(sample)
    code, found = findings(sample)
    assert code == 0 and not_info(found) == [], not_info(found)
    p = partitions(sample)["__cluster_metadata-0"]
    assert (p["segments"], p["kraftSnapshots"], p["lastKraftSnapshot"]) == (0, 1, snap.name)
    assert (f"__cluster_metadata-0: 1 KRaft snapshot, the last {snap.name} (the bootstrap "
            "snapshot)") in run("info", sample).text
    r = run("dump", part, "--records")  # the partition dir: its bootstrap snapshot
    assert r.code == 0, r.err
    lines = r.text.splitlines()
    assert lines[:2] == [f"Dumping {snap}", "Snapshot end offset: 0, epoch: 0"]
    assert lines[4].endswith(' KRaftVersion {"version":0,"kRaftVersion":1}')
    assert lines[5].endswith(' KRaftVoters {"version":0,"voters":[{"voterId":1,'
                             '"voterDirectoryId":"AAECAwQFBgcICQoLDA0ODw","endpoints":[{"name":'
                             '"CONTROLLER","host":"localhost","port":9093}],'
                             '"kRaftVersionFeature":{"minSupportedVersion":0,'
                             '"maxSupportedVersion":1}}]}')
    assert lines[-1].endswith(' SnapshotFooter {"version":0}')


def test_earliest_of_a_tiered_partition_is_its_log_start_in_remote_storage(sample):
    """ListOffsets EARLIEST answers the log start offset, which with tiered storage lies in
    remote storage, below the first local segment (LogLoader.load takes the checkpoint
    entry as is there); without tiered storage the entry is raised to that segment."""
    tiered = sample / "tiered-0"
    shutil.copytree(sample / "demo-1", tiered)
    for f in tiered.glob("00000000000000000000.*"):
        f.unlink()  # the first local segment is 263
    (sample / "log-start-offset-checkpoint").write_text("0\n1\ntiered 0 100\n")

    def earliest():
        r = run("find-by-time", tiered, "-t", "earliest", "--format", "json")
        assert r.code == 0, r.err
        return json.loads(r.out)[0]["offset"]

    assert earliest() == 263  # no remote-log-index-cache/: max(entry, first local base)
    remote_index_cache(sample)
    assert earliest() == 100 == partitions(sample)["tiered-0"]["logStartOffset"]
