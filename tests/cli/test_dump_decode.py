"""`dump --decode`: internal-topic records as JSON in text and json rows, on the real corpus;
a record that does not decode shows an error and the dump goes on."""

import base64
import json
import shutil
import struct

from tests.cli.run import run
from tests.conftest import CORPUS

LEGACY = CORPUS / "kafka-0.9-legacy"
RUPIA = CORPUS / "rupia-kraft" / "__cluster_metadata-0"


def jsonl(*args):
    r = run("dump", *args, "--format", "jsonl")
    assert r.code == 0, r.err
    return [json.loads(ln) for ln in r.text.splitlines()]


def test_offsets_text_like_kafka_dump_log():
    r = run("dump", LEGACY / "__consumer_offsets-7", "--print-data", "--no-batches")
    assert r.code == 0, r.err
    recs = [ln for ln in r.text.splitlines() if ln.startswith("| offset:")]
    assert len(recs) == 11
    assert recs[0].endswith(
        ' key: {"type":"1","data":{"group":"legacy-partial","topic":"legacy-compacted",'
        '"partition":0}} payload: {"version":"1","data":{"offset":751,"metadata":"half-way",'
        '"commitTimestamp":1795350450590,"expireTimestamp":1795436850590}}')
    assert sum('"metadata":"one-before-end"' in ln for ln in recs) > 0


def test_group_tombstone_is_delete_and_null():
    r = run("dump", LEGACY / "__consumer_offsets-41", "--print-data", "--no-batches")
    last = next(ln for ln in r.text.splitlines() if ln.startswith("| offset: 13 "))
    assert last.endswith(' key: {"type":"2","data":{"group":"legacy-verify"}} payload: <DELETE>')
    rows = jsonl(LEGACY / "__consumer_offsets-41", "--records", "--no-batches")
    assert rows[-1]["decoded"] == {"key": {"type": "2", "data": {"group": "legacy-verify"}},
                                   "value": None}
    member = rows[0]["decoded"]["value"]["data"]["members"][0]
    assert "legacy-lz4" in member["subscription"]["topics"]


def test_none_keeps_raw_and_auto_leaves_other_topics_alone(sample):
    rows = jsonl(LEGACY / "__consumer_offsets-7", "--records", "--decode", "none")
    assert all("decoded" not in r for r in rows)
    r = run("dump", LEGACY / "__consumer_offsets-7", "--print-data", "--decode", "none")
    assert '"type":"1"' not in r.text and "legacy-partial" in r.text
    rows = jsonl(sample, "--records")
    assert rows and all("decoded" not in r for r in rows)


def test_forcing_a_decoder_on_other_data_shows_errors_and_goes_on(sample):
    r = run("dump", sample, "--decode", "offsets")  # implies --print-data
    assert r.code == 0, r.err
    recs = [ln for ln in r.text.splitlines()
            if ln.startswith("| offset:") and "endTxnMarker" not in ln]  # markers stay as is
    assert len(recs) > 10
    assert all(" key: Error at offset " in ln or " key: {" in ln for ln in recs)
    assert any(", skipping. " in ln for ln in recs)
    rows = [r for r in jsonl(sample, "--decode", "metadata", "--no-batches")
            if "control" not in r]
    assert rows and all(r["decoded"]["kind"] == "metadata" and "error" in r["decoded"]
                        for r in rows)


def test_a_corrupt_record_in_consumer_offsets_does_not_stop_the_dump(tmp_path):
    part = tmp_path / "ld" / "__consumer_offsets-7"
    shutil.copytree(LEGACY / "__consumer_offsets-7", part)
    log = part / "00000000000000000000.log"
    data = bytearray(log.read_bytes())
    # the first message's key (legacy v0 message: offset 8, size 4, crc 4, magic 1, attr 1,
    # key length 4, key): make its string length run past the key
    key_at = 8 + 4 + 4 + 1 + 1 + 4
    data[key_at + 2:key_at + 4] = b"\x7f\x00"
    log.write_bytes(bytes(data))
    rows = jsonl(part, "--records", "--no-batches")
    assert len(rows) == 11
    assert "error" in rows[0]["decoded"] and "group" in rows[0]["decoded"]["error"]
    assert all(r["decoded"]["value"]["data"]["metadata"] for r in rows[1:])
    r = run("dump", part, "--print-data")
    assert "| offset: 0 " in r.text and " key: Error at offset 0, skipping. " in r.text


def test_cluster_metadata_records_and_snapshot_control_records():
    rows = jsonl(RUPIA, "--records", "--no-batches", "--to-offset", "1725500")
    names = {r["decoded"]["value"]["name"] for r in rows if "decoded" in r}
    assert "NoOpRecord" in names
    cp = sorted(RUPIA.glob("*.checkpoint"))[-1]
    r = run("dump", cp, "--print-data")
    assert r.code == 0, r.err
    text = r.text
    assert ' SnapshotHeader {"version":0,"lastContainedLogTimestamp":' in text
    assert ' KRaftVersion {"version":0,"kRaftVersion":1}' in text
    controls = [r["control"] for r in jsonl(cp, "--records", "--no-batches") if "control" in r]
    kraft = next(c for c in controls if c["type"] == "KRAFT_VERSION")
    # one name for the field, Kafka's, in the control object and in its decoded data
    assert kraft["kRaftVersion"] == kraft["data"]["kRaftVersion"] == 1
    assert "kraftVersion" not in kraft
    assert ' KRaftVoters {"version":0,"voters":[{"voterId":1,' in text
    assert ' SnapshotFooter {"version":0}' in text
    payloads = [ln.split(" payload: ", 1)[1] for ln in text.splitlines() if " payload: " in ln]
    types = {json.loads(p)["type"] for p in payloads}
    assert {"TOPIC_RECORD", "PARTITION_RECORD", "FEATURE_LEVEL_RECORD",
            "REGISTER_BROKER_RECORD"} <= types
    # text prints what Kafka 4's kafka-dump-log prints; JSON adds the record's name and more
    topic = next(json.loads(p) for p in payloads if json.loads(p)["type"] == "TOPIC_RECORD")
    assert set(topic) == {"type", "version", "data"} and set(topic["data"]) == {"name",
                                                                                 "topicId"}
    row = next(r for r in jsonl(cp, "--records", "--no-batches")
               if r.get("decoded", {}).get("value", {}).get("type") == "TOPIC_RECORD")
    assert (row["decoded"]["value"]["name"], row["decoded"]["value"]["apiKey"],
            row["decoded"]["value"]["frameVersion"]) == ("TopicRecord", 2, 1)


def test_leader_change_prints_its_payload_as_kafka_4_does():
    r = run("dump", CORPUS / "ldi-poc-kraft" / "__cluster_metadata-0", "--records",
            "--to-offset", "0")
    line = next(ln for ln in r.text.splitlines() if ln.startswith("| offset: 0 "))
    assert line.endswith(' headerKeys: [] LeaderChange: {"version":0,"leaderId":1,"voters":'
                         '[{"voterId":1}],"grantingVoters":[{"voterId":1}]}')
    # kafka-dump-log decodes control records with or without a decoder; so does kafkalog
    r = run("dump", CORPUS / "ldi-poc-kraft" / "__cluster_metadata-0", "--records",
            "--to-offset", "0", "--decode", "none")
    assert r.text.splitlines()[-1] == line


def share_state_dir(tmp_path):
    """A `__share_group_state-0` partition: a snapshot, an update and a tombstone."""
    tid = bytes(range(16))
    key = struct.pack(">h", 0) + struct.pack(">h", 2) + b"sg" + tid + struct.pack(">i", 3)
    batch = struct.pack(">qqbh", 100, 110, 2, 1) + b"\x00"
    snapshot = struct.pack(">hiiiqqq", 0, 1, 2, 3, 100, 5, 6) + b"\x02" + batch + \
        b"\x01\x00\x04" + struct.pack(">i", 9)  # tag 0 DeliveryCompleteCount = 9
    update_key = struct.pack(">h", 1) + key[2:]
    update = struct.pack(">hiiq", 0, 1, 3, 120) + b"\x01" + b"\x00"
    rows = [(key, snapshot), (update_key, update), (update_key, None)]
    lines = "".join(json.dumps({"key": base64.b64encode(k).decode(),
                                "value": v and base64.b64encode(v).decode()}) + "\n"
                    for k, v in rows)
    r = run("append", tmp_path / "ld", "--create", "--topic", "__share_group_state", "--partition",
            "0",
            "--payload", "base64", stdin=lines.encode())
    assert r.code == 0, r.err
    return tmp_path / "ld" / "__share_group_state-0"


def test_share_group_state_is_decoded_by_topic_and_keys_never_print_raw(tmp_path):
    part = share_state_dir(tmp_path)
    rows = jsonl(part, "--records", "--no-batches")
    assert [r["decoded"]["key"]["type"] for r in rows] == ["0", "1", "1"]
    assert rows[0]["decoded"]["key"]["data"] == {"groupId": "sg",
                                                 "topicId": "AAECAwQFBgcICQoLDA0ODw",
                                                 "partition": 3}
    assert rows[0]["decoded"]["value"]["data"]["deliveryCompleteCount"] == 9
    assert rows[1]["decoded"]["value"]["data"]["stateBatches"] == []
    assert rows[2]["decoded"]["value"] is None
    r = run("dump", part, "--print-data", "--no-batches")
    assert r.code == 0, r.err
    recs = [ln for ln in r.text.splitlines() if ln.startswith("| offset:")]
    assert len(recs) == 3 and "\x00" not in r.text
    assert recs[0].endswith(
        ' key: {"type":"0","data":{"groupId":"sg","topicId":"AAECAwQFBgcICQoLDA0ODw",'
        '"partition":3}} payload: {"version":"0","data":{"snapshotEpoch":1,"stateEpoch":2,'
        '"leaderEpoch":3,"startOffset":100,"deliveryCompleteCount":9,"createTimestamp":5,'
        '"writeTimestamp":6,"stateBatches":[{"firstOffset":100,"lastOffset":110,'
        '"deliveryState":2,"deliveryCount":1}]}}')
    assert recs[2].endswith(' payload: <DELETE>')
    # forced on another topic's data it reports errors and goes on
    r = run("dump", LEGACY / "__consumer_offsets-7", "--decode", "share", "--no-batches")
    assert r.code == 0 and r.text.count(", skipping. ") == 11
