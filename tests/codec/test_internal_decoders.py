"""Internal-topic decoders (`kafkalog_cli.codec.internal`): the schema reader's rules, the real
corpus (known content of kafka-0.9-legacy, every internal record of every dir), and
kafka-python's protocol types as an independent encoder/decoder of the same messages."""

import base64
import io
import json
import struct
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.protocol.consumer.metadata import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
)
from kafka.protocol.old.types import UUID as KpUUID
from kafka.protocol.old.types import (
    Array,
    Boolean,
    Bytes,
    CompactArray,
    CompactBytes,
    CompactString,
    Int8,
    Int16,
    Int32,
    Int64,
    Schema,
    String,
    TaggedFields,
    UnsignedVarInt32,
)

from kafkalog_cli.codec.control import parse_control
from kafkalog_cli.codec.internal import KIND_NAMES, TOPICS, groups, metadata, share, txnlog
from kafkalog_cli.codec.internal.decoders import KINDS
from kafkalog_cli.codec.internal.schema import (
    Struct,
    UnknownRecordType,
    field,
    message,
    read_struct,
    uuid_text,
    versions,
)
from kafkalog_cli.errors import CorruptDataError
from kafkalog_cli.storage.disk.segment import iter_batches
from tests.conftest import CORPUS

LEGACY = CORPUS / "kafka-0.9-legacy"


def records_of(path: Path):
    for log in sorted(path.glob("*.log")) if path.is_dir() else [path]:
        for _pos, b in iter_batches(log):
            for r in b.records():
                yield b, r


# --- the schema reader -------------------------------------------------------------------

def test_non_flexible_types_nulls_and_version_gates():
    s = message("M", field("A", "int8"), field("B", "string", null="1+"),
                field("C", "int64", "1+"), field("D", "[]int32"), field("E", "bytes"),
                field("F", "bool", "0"))
    v0 = Int8.encode(-3) + String().encode("hi") + Array(Int32).encode([7, -1]) + \
        Bytes.encode(b"x") + Boolean.encode(True)
    assert read_struct(v0, s, 0, versions("none")) == (
        {"a": -3, "b": "hi", "d": [7, -1], "e": b"x", "f": True}, len(v0))
    head = Int8.encode(1) + String().encode(None) + Int64.encode(5)
    with pytest.raises(CorruptDataError, match="non-nullable field D"):
        read_struct(head + Array(Int32).encode(None) + Bytes.encode(b""), s, 1, versions("none"))
    with pytest.raises(CorruptDataError, match="non-nullable field B"):
        read_struct(v0[:1] + String().encode(None), s, 0, versions("none"))
    out, _ = read_struct(head + Array(Int32).encode([]) + Bytes.encode(b""), s, 1,
                         versions("none"))
    assert out == {"a": 1, "b": None, "c": 5, "d": [], "e": b""}


def test_flexible_compact_lengths_and_tagged_fields():
    s = message("M", field("Name", "string"), field("Ids", "[]int32", null="0+", default=None),
                field("Leader", "int32", tag=1, tagged="0+", default=-2),
                field("Isr", "[]int32", tag=0, tagged="0+", null="0+", default=None))
    body = CompactString().encode("ab") + UnsignedVarInt32.encode(0)  # Ids null
    tags = {0: CompactArray(Int32).encode([1, 2]), 1: Int32.encode(-2), 9: b"zzz"}
    data = body + TaggedFields.encode(tags)
    out, end = read_struct(data, s, 0, versions("0+"))
    # the default-valued tag is omitted (JsonConverter), the unknown tag 9 is skipped
    assert out == {"name": "ab", "ids": None, "isr": [1, 2]} and end == len(data)
    assert list(out) == ["name", "ids", "isr"]
    tags[1] = Int32.encode(4)
    out, _ = read_struct(body + TaggedFields.encode(tags), s, 0, versions("0+"))
    assert list(out) == ["name", "ids", "leader", "isr"] and out["leader"] == 4


@pytest.mark.parametrize("cut", [1, 3, 6])
def test_short_data_raises_with_a_position(cut):
    s = message("M", field("A", "int16"), field("B", "string"))
    data = Int16.encode(1) + String().encode("hello")
    with pytest.raises(CorruptDataError) as e:
        read_struct(data[:-cut], s, 0, versions("none"))
    assert e.value.pos is not None and "M v0" in e.value.reason


def test_garbage_after_a_metadata_record_is_an_error():
    value = bytes([1, 2, 0]) + CompactString().encode("t") + bytes(16) + b"\x00"
    assert metadata.decode(None, value)["value"]["data"] == {"name": "t",
                                                              "topicId": "AAAAAAAAAAAAAAAAAAAAAA"}
    with pytest.raises(CorruptDataError, match="garbage"):
        metadata.decode(None, value + b"\x00")


def test_huge_array_count_is_rejected_before_allocating():
    s = message("M", field("A", "[]int64"))
    with pytest.raises(CorruptDataError, match="array of 100000000"):
        read_struct(Int32.encode(100_000_000) + bytes(8), s, 0, versions("none"))


def test_uuid_text_is_kafkas_url_safe_base64():
    assert uuid_text(bytes.fromhex("fb4d9b6f9fb64a4e9bfae3f4a26dcb1b")) == "-02bb5-2Sk6b-uP0om3LGw"


def test_metadata_frame_unknown_type_and_version_keep_the_raw_bytes():
    unknown = metadata.decode(None, bytes([1, 99, 0, 0]))["value"]
    assert unknown == {"type": 99, "version": 0, "data": None, "raw": "AWMAAA==",
                       "frameVersion": 1}
    newer = metadata.decode(None, bytes([1, 2, 7, 0]))["value"]
    assert newer["type"] == "TOPIC_RECORD" and newer["data"] is None and newer["version"] == 7
    with pytest.raises(CorruptDataError, match="frame version 0"):
        metadata.decode(None, bytes([0, 2, 0, 0]))


def test_metadata_type_constants_follow_kafkas_snake_case():
    assert {metadata.type_constant(s.name) for s in metadata.RECORDS.values()} >= {
        "REGISTER_BROKER_RECORD", "NO_OP_RECORD", "ZK_MIGRATION_STATE_RECORD",
        "BROKER_REGISTRATION_CHANGE_RECORD", "PRODUCER_IDS_RECORD", "TOPIC_RECORD"}
    assert metadata.NAMES[5] == "PartitionChangeRecord"


def test_offsets_unknown_key_type_and_missing_key():
    with pytest.raises(UnknownRecordType, match="Unknown record type 99"):
        groups.decode(Int16.encode(99) + b"xx", None)
    with pytest.raises(CorruptDataError, match="no key"):
        groups.decode(None, b"\x00\x01")
    key = Int16.encode(1) + String().encode("g") + String().encode("t") + Int32.encode(0)
    with pytest.raises(CorruptDataError, match="unknown version 9"):
        groups.decode(key, Int16.encode(9) + bytes(40))


def test_subscription_that_does_not_decode_stays_bytes():
    members = [("m", "c", "h", 10, b"\x00\x09junk", b"\x00")]  # v9: unknown; 1 byte: short
    value = Int16.encode(0) + Schema(
        ("pt", String()), ("gen", Int32), ("p", String()), ("l", String()),
        ("m", Array(("id", String()), ("c", String()), ("h", String()), ("st", Int32),
                    ("s", Bytes), ("a", Bytes)))).encode(("consumer", 1, "range", "m", members))
    key = Int16.encode(2) + String().encode("g")
    m = groups.decode(key, value)["value"]["data"]["members"][0]
    assert m["subscription"] == "AAlqdW5r" and m["assignment"] == "AA=="


# --- kafka-python's types as the independent encoder ------------------------------------

def kp_offset_value(version: int) -> Schema:
    if version == 4:
        return Schema(("offset", Int64), ("leaderEpoch", Int32), ("metadata", CompactString()),
                      ("commitTimestamp", Int64), ("tags", TaggedFields))
    fields = [("offset", Int64)]
    if version >= 3:
        fields.append(("leaderEpoch", Int32))
    fields += [("metadata", String()), ("commitTimestamp", Int64)]
    if version == 1:
        fields.append(("expireTimestamp", Int64))
    return Schema(*fields)


def kp_group_value(version: int) -> Schema:
    flex = version >= 4
    s, b = (CompactString(), CompactBytes) if flex else (String(), Bytes)
    arr = CompactArray if flex else Array
    member = [("memberId", s)]
    if version >= 3:
        member.append(("groupInstanceId", s))
    member += [("clientId", s), ("clientHost", s)]
    if version >= 1:
        member.append(("rebalanceTimeout", Int32))
    member += [("sessionTimeout", Int32), ("subscription", b), ("assignment", b)]
    if flex:
        member.append(("tags", TaggedFields))
    fields = [("protocolType", s), ("generation", Int32), ("protocol", s), ("leader", s)]
    if version >= 2:
        fields.append(("currentStateTimestamp", Int64))
    fields.append(("members", arr(*member)))
    if flex:
        fields.append(("tags", TaggedFields))
    return Schema(*fields)


def kp_decode(schema: Schema, data: bytes) -> dict:
    buf = io.BytesIO(data)
    vals = schema.decode(buf)
    assert buf.read() == b""
    return dict(zip(schema.names, vals, strict=False))


texts = st.text(max_size=12)
ints32 = st.integers(-(2**31), 2**31 - 1)
ints64 = st.integers(-(2**63), 2**63 - 1)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(version=st.integers(0, 4), off=ints64, epoch=ints32, meta=texts, ts=ints64, exp=ints64)
def test_offset_commit_value_encoded_by_kafka_python(version, off, epoch, meta, ts, exp):
    item = [off] + ([epoch] if version >= 3 else []) + [meta, ts] + ([exp] if version == 1 else [])
    data = Int16.encode(version) + kp_offset_value(version).encode(item)
    key = Int16.encode(1) + String().encode("g") + String().encode("t") + Int32.encode(3)
    got = groups.decode(key, data)
    assert got["key"] == {"type": "1", "data": {"group": "g", "topic": "t", "partition": 3}}
    want = {"offset": off, **({"leaderEpoch": epoch} if version >= 3 else {}), "metadata": meta,
            "commitTimestamp": ts, **({"expireTimestamp": exp} if version == 1 else {})}
    assert got["value"] == {"version": str(version), "data": want}


member_st = st.tuples(texts, st.one_of(st.none(), texts), texts, texts, ints32, ints32,
                      st.binary(max_size=20), st.binary(max_size=20))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(version=st.integers(0, 4), gen=ints32, proto=st.one_of(st.none(), texts),
       leader=st.one_of(st.none(), texts), ts=ints64, members=st.lists(member_st, max_size=3))
def test_group_metadata_value_encoded_by_kafka_python(version, gen, proto, leader, ts, members):
    rows = []
    for mid, inst, cid, host, rt, st_, sub, asg in members:
        row = [mid] + ([inst] if version >= 3 else []) + [cid, host] + \
            ([rt] if version >= 1 else []) + [st_, sub, asg]
        rows.append(row)
    item = ["other", gen, proto, leader] + ([ts] if version >= 2 else []) + [rows]
    data = Int16.encode(version) + kp_group_value(version).encode(item)
    got = groups.decode(Int16.encode(2) + String().encode("grp"), data)["value"]
    assert got["version"] == str(version)
    d = got["data"]
    assert (d["protocolType"], d["generation"], d["protocol"], d["leader"]) == (
        "other", gen, proto, leader)
    assert ("currentStateTimestamp" in d) == (version >= 2)
    assert len(d["members"]) == len(members)
    for m, (mid, inst, cid, host, rt, st_, sub, asg) in zip(d["members"], members, strict=True):
        assert (m["memberId"], m["clientId"], m["clientHost"], m["sessionTimeout"]) == (
            mid, cid, host, st_)
        assert m.get("groupInstanceId", "absent") == (inst if version >= 3 else "absent")
        assert m.get("rebalanceTimeout") == (rt if version >= 1 else None)
        # protocolType "other": the bytes stay bytes (base64)
        assert base64.b64decode(m["subscription"]) == sub
        assert base64.b64decode(m["assignment"]) == asg


def test_transaction_log_value_v1_tagged_fields_encoded_by_kafka_python():
    body = Schema(("pid", Int64), ("epoch", Int16), ("timeout", Int32), ("status", Int8),
                  ("parts", CompactArray(("topic", CompactString()),
                                         ("ids", CompactArray(Int32)), ("tags", TaggedFields))),
                  ("last", Int64), ("start", Int64), ("tags", TaggedFields))
    value = Int16.encode(1) + body.encode(
        (42, 3, 60000, 1, [("orders", [0, 2], {})], 111, 100,
         {0: Int64.encode(41), 1: Int64.encode(-1), 2: Int16.encode(2)}))
    key = Int16.encode(0) + String().encode("tx-1")
    got = txnlog.decode(key, value)
    assert got["key"] == {"type": "0", "data": {"transactionalId": "tx-1"}}
    assert got["value"] == {"version": "1", "data": {
        "producerId": 42, "previousProducerId": 41, "producerEpoch": 3,
        "transactionTimeoutMs": 60000, "transactionStatus": 1, "transactionState": "Ongoing",
        "transactionPartitions": [{"topic": "orders", "partitionIds": [0, 2]}],
        "transactionLastUpdateTimestampMs": 111, "transactionStartTimestampMs": 100,
        "clientTransactionVersion": 2}}
    assert txnlog.decode(key, None)["value"] is None


def test_partition_change_record_tagged_fields():
    body = Int32.encode(4) + bytes(range(16)) + TaggedFields.encode(
        {0: CompactArray(Int32).encode([1, 3]), 1: Int32.encode(3), 5: Int8.encode(1)})
    got = metadata.decode(None, bytes([1, 5, 0]) + body)["value"]
    assert got["type"] == "PARTITION_CHANGE_RECORD" and got["name"] == "PartitionChangeRecord"
    assert got["data"] == {"partitionId": 4, "topicId": uuid_text(bytes(range(16))),
                           "isr": [1, 3], "leader": 3, "leaderRecoveryState": 1}


def test_register_broker_record_v0_without_later_fields():
    ep = CompactArray(("n", CompactString()), ("h", CompactString()), ("p", Int16),
                      ("sp", Int16), ("t", TaggedFields))
    feat = CompactArray(("n", CompactString()), ("min", Int16), ("max", Int16),
                        ("t", TaggedFields))
    body = Int32.encode(7) + bytes(16) + Int64.encode(9) + ep.encode(
        [("PLAINTEXT", "h1", 9092, 0, {})]) + feat.encode([("metadata.version", 1, 20, {})]) + \
        CompactString().encode(None) + Boolean.encode(True) + TaggedFields.encode({})
    got = metadata.decode(None, bytes([1, 0, 0]) + body)["value"]["data"]
    assert got == {"brokerId": 7, "incarnationId": "AAAAAAAAAAAAAAAAAAAAAA", "brokerEpoch": 9,
                   "endPoints": [{"name": "PLAINTEXT", "host": "h1", "port": 9092,
                                  "securityProtocol": 0}],
                   "features": [{"name": "metadata.version", "minSupportedVersion": 1,
                                 "maxSupportedVersion": 20}],
                   "rack": None, "fenced": True}


# --- Kafka 4 records (KIP-848 consumer groups, KIP-932 share groups, KIP-1071 streams) ------

TID = bytes(range(16))
TID_TEXT = uuid_text(TID)


def coordinator_key(record_type: int, *strings: str) -> bytes:
    return Int16.encode(record_type) + b"".join(String().encode(x) for x in strings)


def test_nullable_single_struct_has_a_marker_byte():
    inner = Struct("E", (field("Host", "string"), field("Port", "uint16")))
    s = message("M", field("A", inner, array=False, null="0+"), field("B", "int8"))
    present = b"\x01" + CompactString().encode("h") + Int16.encode(-1) + b"\x00"
    out, _ = read_struct(present + Int8.encode(5) + b"\x00", s, 0, versions("0+"))
    assert out == {"a": {"host": "h", "port": 65535}, "b": 5}
    out, _ = read_struct(b"\xff" + Int8.encode(5) + b"\x00", s, 0, versions("0+"))
    assert out == {"a": None, "b": 5}
    # not nullable: no marker
    s = message("M", field("A", inner, array=False), field("B", "int8"))
    out, _ = read_struct(present[1:] + Int8.encode(5) + b"\x00", s, 0, versions("0+"))
    assert out == {"a": {"host": "h", "port": 65535}, "b": 5}


def test_a_tagged_struct_at_its_empty_default_is_left_out():
    """ClassicMemberMetadata's spec default is JSON null, i.e. none: `new X()`, which the
    JsonConverter leaves out like any default; any other value, null included, is shown."""
    key = coordinator_key(5, "g", "m")
    head = Int16.encode(0) + CompactString().encode(None) + CompactString().encode(None) + \
        CompactString().encode("c") + CompactString().encode("h") + \
        CompactArray(CompactString()).encode(["t"]) + CompactString().encode(None) + \
        Int32.encode(-1) + CompactString().encode(None)
    empty = b"\x01" + Int32.encode(0) + CompactArray(Int8).encode([]) + b"\x00"
    got = groups.decode(key, head + TaggedFields.encode({0: empty}))["value"]["data"]
    assert "classicMemberMetadata" not in got and got["subscribedTopicNames"] == ["t"]
    proto = CompactString().encode("range") + CompactBytes.encode(b"\x00\x01") + b"\x00"
    meta = b"\x01" + Int32.encode(45000) + UnsignedVarInt32.encode(2) + proto + b"\x00"
    got = groups.decode(key, head + TaggedFields.encode({0: meta}))["value"]["data"]
    assert got["classicMemberMetadata"] == {
        "sessionTimeoutMs": 45000, "supportedProtocols": [{"name": "range", "metadata": "AAE="}]}


def test_consumer_group_tagged_fields_and_current_assignment_epochs():
    got = groups.decode(coordinator_key(3, "g"), Int16.encode(0) + Int32.encode(4) +
                        TaggedFields.encode({0: Int64.encode(99)}))
    assert got == {"key": {"type": "3", "data": {"groupId": "g"}},
                   "value": {"version": "0", "data": {"epoch": 4, "metadataHash": 99}}}
    got = groups.decode(coordinator_key(6, "g"), Int16.encode(0) + Int32.encode(4) +
                        TaggedFields.encode({0: Int64.encode(1700)}))["value"]["data"]
    assert got == {"assignmentEpoch": 4, "assignmentTimestamp": 1700}
    parts = CompactArray(Int32)
    tp = TID + parts.encode([0, 1])
    value = Int16.encode(0) + Int32.encode(5) + Int32.encode(4) + Int8.encode(0) + \
        UnsignedVarInt32.encode(2) + tp + TaggedFields.encode({0: parts.encode([5, 5])}) + \
        UnsignedVarInt32.encode(2) + tp + TaggedFields.encode({0: parts.encode(None)}) + b"\x00"
    got = groups.decode(coordinator_key(8, "g", "m"), value)["value"]["data"]
    assert got["assignedPartitions"] == [{"topicId": TID_TEXT, "partitions": [0, 1],
                                          "assignmentEpochs": [5, 5]}]
    # absent reads as [] (its default); a written null is shown
    assert got["partitionsPendingRevocation"] == [{"topicId": TID_TEXT, "partitions": [0, 1],
                                                   "assignmentEpochs": None}]


def test_offset_commit_v4_topic_id():
    key = coordinator_key(1, "g", "t") + Int32.encode(0)
    value = Int16.encode(4) + Int64.encode(10) + Int32.encode(3) + CompactString().encode("m") + \
        Int64.encode(1000)
    got = groups.decode(key, value + TaggedFields.encode({0: TID}))["value"]["data"]
    assert got == {"offset": 10, "leaderEpoch": 3, "metadata": "m", "commitTimestamp": 1000,
                   "topicId": TID_TEXT}
    assert "topicId" not in groups.decode(key, value + b"\x00")["value"]["data"]


def test_share_group_records_in_consumer_offsets_and_retired_types():
    got = groups.decode(coordinator_key(11, "sg"), Int16.encode(0) + Int32.encode(5) +
                        Int64.encode(77) + b"\x00")
    assert got["value"] == {"version": "0", "data": {"epoch": 5, "metadataHash": 77}}
    value = Int16.encode(0) + UnsignedVarInt32.encode(2) + TID + CompactString().encode("t") + \
        CompactArray(Int32).encode([0]) + b"\x00" + b"\x01" + b"\x01" + b"\x00"
    got = groups.decode(coordinator_key(15, "sg"), value)["value"]["data"]
    assert got == {"initializingTopics": [{"topicId": TID_TEXT, "topicName": "t",
                                           "partitions": [0]}],
                   "initializedTopics": [], "deletingTopics": []}
    for retired in (9, 18):  # early share/streams records, unknown to Kafka 4.3
        with pytest.raises(UnknownRecordType, match=f"Unknown record type {retired}"):
            groups.decode(coordinator_key(retired, "g"), None)


def test_streams_group_member_with_and_without_user_endpoint():
    head = Int16.encode(0) + CompactString().encode(None) + CompactString().encode("r") + \
        CompactString().encode("c") + CompactString().encode("h") + Int32.encode(-1) + \
        Int32.encode(2) + CompactString().encode("p")
    tags = UnsignedVarInt32.encode(2) + CompactString().encode("k") + \
        CompactString().encode("v") + b"\x00" + b"\x00"
    endpoint = b"\x01" + CompactString().encode("app") + Int16.encode(8080) + b"\x00"
    key = coordinator_key(19, "app", "m1")
    got = groups.decode(key, head + endpoint + tags)
    assert got["key"] == {"type": "19", "data": {"groupId": "app", "memberId": "m1"}}
    d = got["value"]["data"]
    assert d["userEndpoint"] == {"host": "app", "port": 8080}
    assert d["clientTags"] == [{"key": "k", "value": "v"}] and d["processId"] == "p"
    assert groups.decode(key, head + b"\xff" + tags)["value"]["data"]["userEndpoint"] is None


def share_value(snapshot: bool, complete: int | None) -> bytes:
    batch = Int64.encode(100) + Int64.encode(110) + Int8.encode(2) + Int16.encode(1) + b"\x00"
    body = Int32.encode(1) + (Int32.encode(2) if snapshot else b"") + Int32.encode(3) + \
        Int64.encode(100) + (Int64.encode(5) + Int64.encode(6) if snapshot else b"") + \
        UnsignedVarInt32.encode(2) + batch
    tags = {} if complete is None else {0: Int32.encode(complete)}
    return Int16.encode(0) + body + TaggedFields.encode(tags)


def test_share_group_state_snapshot_update_and_tombstone():
    key = Int16.encode(0) + String().encode("sg") + TID + Int32.encode(3)
    want_key = {"type": "0", "data": {"groupId": "sg", "topicId": TID_TEXT, "partition": 3}}
    batch = {"firstOffset": 100, "lastOffset": 110, "deliveryState": 2, "deliveryCount": 1}
    got = share.decode(key, share_value(True, 9))
    assert got == {"key": want_key, "value": {"version": "0", "data": {
        "snapshotEpoch": 1, "stateEpoch": 2, "leaderEpoch": 3, "startOffset": 100,
        "deliveryCompleteCount": 9, "createTimestamp": 5, "writeTimestamp": 6,
        "stateBatches": [batch]}}}
    assert "deliveryCompleteCount" not in share.decode(key, share_value(True, -1))["value"]["data"]
    update_key = Int16.encode(1) + key[2:]
    got = share.decode(update_key, share_value(False, None))
    assert got["key"]["type"] == "1" and got["value"]["data"] == {
        "snapshotEpoch": 1, "leaderEpoch": 3, "startOffset": 100, "stateBatches": [batch]}
    assert share.decode(update_key, None)["value"] is None
    with pytest.raises(UnknownRecordType, match="Unknown record type 2"):
        share.decode(Int16.encode(2) + key[2:], None)
    assert TOPICS["__share_group_state"] == "share" and KINDS["share"] is share.decode


def test_the_packages_names_are_the_decoders():
    """`dump`'s --decode choices come from the package's names, without loading a decoder:
    each name has its decoder, each decoder its name, each topic's kind is one of them."""
    assert tuple(KINDS) == KIND_NAMES
    assert set(TOPICS.values()) == set(KIND_NAMES)


def test_transaction_log_value_next_producer_epoch():
    body = Int64.encode(42) + Int16.encode(3) + Int32.encode(60000) + Int8.encode(2) + \
        UnsignedVarInt32.encode(1) + Int64.encode(111) + Int64.encode(100)
    key = Int16.encode(0) + String().encode("tx")
    got = txnlog.decode(key, Int16.encode(1) + body + TaggedFields.encode(
        {1: Int64.encode(43), 3: Int16.encode(0)}))["value"]["data"]
    assert list(got)[:5] == ["producerId", "nextProducerId", "producerEpoch",
                             "nextProducerEpoch", "transactionTimeoutMs"]
    assert (got["nextProducerId"], got["nextProducerEpoch"], got["transactionState"]) == (
        43, 0, "PrepareCommit")


def test_register_broker_v4_clear_elr_and_unregister_controller():
    ep = CompactArray(("n", CompactString()), ("h", CompactString()), ("p", Int16),
                      ("sp", Int16), ("t", TaggedFields))
    body = Int32.encode(1) + Boolean.encode(False) + TID + Int64.encode(9) + \
        ep.encode([("PLAINTEXT", "h1", 9092, 0, {})]) + UnsignedVarInt32.encode(1) + \
        CompactString().encode("r1") + Boolean.encode(False) + Boolean.encode(False) + \
        TaggedFields.encode({0: CompactArray(KpUUID).encode([uuid.UUID(bytes=TID)]),
                             1: CompactArray(KpUUID).encode([uuid.UUID(bytes=TID)])})
    got = metadata.decode(None, bytes([1, 0, 4]) + body)["value"]
    assert got["version"] == 4 and got["data"]["logDirs"] == [TID_TEXT]
    assert got["data"]["cordonedLogDirs"] == [TID_TEXT]
    got = metadata.decode(None, bytes([1, 28, 0]) + CompactString().encode("t1") + b"\x00")
    assert got["value"]["type"] == "CLEAR_ELR_RECORD" and got["value"]["data"] == {
        "topicName": "t1"}
    got = metadata.decode(None, bytes([1, 29, 0]) + Int32.encode(3000) + b"\x00")
    assert got["value"]["type"] == "UNREGISTER_CONTROLLER_RECORD"
    assert got["value"]["data"] == {"controllerId": 3000}
    change = Int32.encode(1) + Int64.encode(5) + TaggedFields.encode(
        {3: CompactArray(KpUUID).encode([])})
    got = metadata.decode(None, bytes([1, 17, 3]) + change)["value"]["data"]
    # its default is null: an empty list is news (a cordon lifted)
    assert got == {"brokerId": 1, "brokerEpoch": 5, "cordonedLogDirs": []}


# --- the real corpus -------------------------------------------------------------------

def test_legacy_verify_group_known_content():
    """kafka-0.9-legacy/__consumer_offsets-41 (corpus README): group `legacy-verify`,
    2 group-metadata messages (the second a tombstone) and 12 offset commits (key/value v1)."""
    got = [groups.decode(r.key, r.value) for _b, r in records_of(LEGACY / "__consumer_offsets-41")]
    assert len(got) == 14
    meta = [g for g in got if g["key"]["type"] == "2"]
    commits = [g for g in got if g["key"]["type"] == "1"]
    assert len(meta) == 2 and len(commits) == 12
    assert {g["key"]["data"]["group"] for g in got} == {"legacy-verify"}
    assert meta[-1]["value"] is None  # the member left: tombstone
    first = meta[0]["value"]
    assert first["version"] == "0" and first["data"]["protocolType"] == "consumer"
    [member] = first["data"]["members"]
    assert set(member["subscription"]["topics"]) == {
        "legacy-none", "legacy-gzip", "legacy-snappy", "legacy-lz4", "legacy-compacted"}
    assigned = {(a["topic"], p) for a in member["assignment"]["assignedPartitions"]
                for p in a["partitions"]}
    assert ("legacy-none", 1) in assigned and len(assigned) == 6
    assert {c["value"]["version"] for c in commits} == {"1"}
    final = {(c["key"]["data"]["topic"], c["key"]["data"]["partition"]):
             c["value"]["data"]["offset"] for c in commits}
    assert final[("legacy-none", 0)] == 316 and final[("legacy-none", 1)] == 384
    assert final[("legacy-gzip", 0)] == 700 and final[("legacy-compacted", 0)] == 1503


def test_legacy_partial_group_metadata_strings():
    got = [groups.decode(r.key, r.value) for _b, r in records_of(LEGACY / "__consumer_offsets-7")]
    assert len(got) == 11
    assert {g["key"]["data"]["group"] for g in got} == {"legacy-partial"}
    assert {g["value"]["data"]["metadata"] for g in got} == {"half-way", "one-before-end"}


def all_internal(pattern: str):
    for log in sorted(CORPUS.glob(pattern)):
        if log.stat().st_size:
            yield from ((log, b, r) for b, r in records_of(log))


def test_every_consumer_offsets_record_of_the_corpus_decodes():
    n = 0
    seen = set()
    for _log, b, r in all_internal("*/__consumer_offsets-*/*.log"):
        if b.is_control:
            continue
        got = KINDS["offsets"](r.key, r.value)
        seen.add((got["key"]["type"], None if got["value"] is None else got["value"]["version"]))
        n += 1
    assert n > 14000
    # offset commits v1-v4 (v4 flexible), group metadata v0/v2/v3, and tombstones
    assert {("1", "1"), ("1", "2"), ("1", "3"), ("1", "4"), ("2", "0"), ("2", "3"),
            ("1", None), ("2", None)} <= seen


def test_every_cluster_metadata_record_of_the_corpus_decodes():
    types: dict[str, int] = {}
    labels = set()
    paths = [*CORPUS.glob("*/__cluster_metadata-0/*.log"),
             *sorted(CORPUS.glob("rupia-kraft/__cluster_metadata-0/*.checkpoint"))[:10],
             *CORPUS.glob("*/bootstrap.checkpoint")]
    for log in paths:
        for b, r in records_of(log):
            if b.is_control:
                found = metadata.decode_control(parse_control(r.key, r.value).type, r.value)
                if found:
                    labels.add(found[0])
                continue
            v = metadata.decode(r.key, r.value)["value"]
            assert v["data"] is not None, v
            types[v["name"]] = types.get(v["name"], 0) + 1
    assert {"TopicRecord", "PartitionRecord", "RegisterBrokerRecord", "FeatureLevelRecord",
            "ProducerIdsRecord", "BrokerRegistrationChangeRecord", "PartitionChangeRecord",
            "ConfigRecord", "NoOpRecord"} <= set(types)
    assert {"SnapshotHeader", "SnapshotFooter", "KRaftVersion", "KRaftVoters",
            "LeaderChange"} <= labels


def test_corpus_offsets_records_equal_kafka_python_decoding():
    """The same bytes through kafka-python's types (offset commits v1-v3, group metadata
    v0-v3 with ConsumerProtocol via kafka-python's own ConsumerProtocol classes)."""
    checked = 0
    for _log, b, r in all_internal("*/__consumer_offsets-*/*.log"):
        if b.is_control or r.value is None:
            continue
        kv = struct.unpack(">h", r.key[:2])[0]
        vv = struct.unpack(">h", r.value[:2])[0]
        ours = groups.decode(r.key, r.value)["value"]["data"]
        if kv in (0, 1):
            theirs = kp_decode(kp_offset_value(vv), r.value[2:])
            theirs.pop("tags", None)
            assert ours == theirs
        elif kv == 2 and vv < 4:
            theirs = kp_decode(kp_group_value(vv), r.value[2:])
            ours_members = ours.pop("members")
            theirs_members = theirs.pop("members")
            assert ours == theirs
            for om, tm in zip(ours_members, theirs_members, strict=True):
                names = kp_group_value(vv).fields[-1].array_of.names
                tm = dict(zip(names, tm, strict=True))
                sub = ConsumerProtocolSubscription.decode(tm.pop("subscription"))
                asg = ConsumerProtocolAssignment.decode(tm.pop("assignment"))
                assert om.pop("subscription")["topics"] == list(sub.topics)
                assert {(a["topic"], tuple(a["partitions"]))
                        for a in om.pop("assignment")["assignedPartitions"]} == {
                            (t.topic, tuple(t.partitions)) for t in asg.assigned_partitions}
                assert om == tm
        checked += 1
    assert checked > 14000


def test_decoded_output_is_json_serialisable():
    for _log, _b, r in all_internal("kafka-0.9-legacy/__consumer_offsets-41/*.log"):
        json.dumps(groups.decode(r.key, r.value))
