"""`__consumer_offsets` records (group coordinator; kafka-dump-log `--offsets-decoder`).

Key   : version int16 | key message at that version (non-flexible)
Value : version int16 | value message at that version; a null value is a tombstone

| key version | key message                               | value message               |
|-------------|-------------------------------------------|-----------------------------|
| 0, 1        | OffsetCommitKey: group, topic, partition  | OffsetCommitValue v0-v4     |
| 2           | GroupMetadataKey: group                   | GroupMetadataValue v0-v4    |
| 3-8         | ConsumerGroup*Key (KIP-848): GroupId [, MemberId] | ConsumerGroup*Value v0 |
| 9-15        | ShareGroup*Key (KIP-932)                  | not decoded (raw)           |

OffsetCommitValue and GroupMetadataValue are flexible from v4 (KIP-915); the KIP-848 values
are flexible from v0. Members of a `consumer` protocol group carry ConsumerProtocol
subscription/assignment bytes (version int16 + message, non-flexible, v0-v3); they are
expanded when they decode and kept as bytes otherwise, as DumpLogSegments does.
Output shapes follow kafka-dump-log: key `{"type": "<key version>", "data": {...}}`,
value `{"version": "<value version>", "data": {...}}` or None for a tombstone.
"""

from __future__ import annotations

from typing import Any

from kafkalog_cli.codec.internal.schema import (
    NO_VERSIONS,
    Struct,
    UnknownRecordType,
    field,
    jsonable,
    message,
    read_struct,
    read_version,
    versions,
)
from kafkalog_cli.errors import CorruptDataError

OFFSET_COMMIT_KEY = message(
    "OffsetCommitKey",
    field("group", "string"), field("topic", "string"), field("partition", "int32"))
GROUP_METADATA_KEY = message("GroupMetadataKey", field("group", "string"))

OFFSET_COMMIT_VALUE = message(
    "OffsetCommitValue",
    field("offset", "int64"),
    field("leaderEpoch", "int32", "3+"),
    field("metadata", "string"),
    field("commitTimestamp", "int64"),
    field("expireTimestamp", "int64", "1"))

_MEMBER = Struct("MemberMetadata", (
    field("memberId", "string"),
    field("groupInstanceId", "string", "3+", null="3+"),
    field("clientId", "string"),
    field("clientHost", "string"),
    field("rebalanceTimeout", "int32", "1+"),
    field("sessionTimeout", "int32"),
    field("subscription", "bytes"),
    field("assignment", "bytes")))
GROUP_METADATA_VALUE = message(
    "GroupMetadataValue",
    field("protocolType", "string"),
    field("generation", "int32"),
    field("protocol", "string", null="0+"),
    field("leader", "string", null="0+"),
    field("currentStateTimestamp", "int64", "2+"),
    field("members", _MEMBER))

# ConsumerProtocol (clients/.../ConsumerProtocolSubscription.json, ...Assignment.json)
_TOPIC_PARTITION = Struct("TopicPartition", (field("Topic", "string"),
                                             field("Partitions", "[]int32")))
SUBSCRIPTION = message(
    "ConsumerProtocolSubscription",
    field("Topics", "[]string"),
    field("UserData", "bytes", null="0+", default=None),
    field("OwnedPartitions", _TOPIC_PARTITION, "1+"),
    field("GenerationId", "int32", "2+"),
    field("RackId", "string", "3+", null="3+", default=None))
ASSIGNMENT = message(
    "ConsumerProtocolAssignment",
    field("AssignedPartitions", _TOPIC_PARTITION),
    field("UserData", "bytes", null="0+", default=None))
CONSUMER_PROTOCOL_VERSIONS = versions("0-3")

# KIP-848 consumer-group records (group-coordinator/.../ConsumerGroup*.json)
_TOPIC_PARTITIONS = Struct("TopicPartitions", (field("TopicId", "uuid"),
                                               field("Partitions", "[]int32")))
CONSUMER_GROUP_VALUES: dict[int, Struct] = {
    3: message("ConsumerGroupMetadataValue", field("Epoch", "int32")),
    4: message("ConsumerGroupPartitionMetadataValue", field("Topics", Struct("TopicMetadata", (
        field("TopicId", "uuid"), field("TopicName", "string"), field("NumPartitions", "int32"),
        field("PartitionMetadata", Struct("PartitionMetadata", (
            field("Partition", "int32"), field("Racks", "[]string")))))))),
    5: message("ConsumerGroupMemberMetadataValue",
               field("InstanceId", "string", null="0+"),
               field("RackId", "string", null="0+"),
               field("ClientId", "string"),
               field("ClientHost", "string"),
               field("SubscribedTopicNames", "[]string"),
               field("SubscribedTopicRegex", "string", null="0+"),
               field("RebalanceTimeoutMs", "int32"),
               field("ServerAssignor", "string", null="0+")),
    6: message("ConsumerGroupTargetAssignmentMetadataValue", field("AssignmentEpoch", "int32")),
    7: message("ConsumerGroupTargetAssignmentMemberValue",
               field("TopicPartitions", _TOPIC_PARTITIONS)),
    8: message("ConsumerGroupCurrentMemberAssignmentValue",
               field("MemberEpoch", "int32"), field("PreviousMemberEpoch", "int32"),
               field("State", "int8"), field("AssignedPartitions", _TOPIC_PARTITIONS),
               field("PartitionsPendingRevocation", _TOPIC_PARTITIONS)),
}
_GROUP_ID = field("GroupId", "string")
_MEMBER_ID = field("MemberId", "string")
# key version -> (record name, key message); 3+ are the new-protocol records
KEYS: dict[int, Struct] = {
    0: OFFSET_COMMIT_KEY, 1: OFFSET_COMMIT_KEY, 2: GROUP_METADATA_KEY,
    3: message("ConsumerGroupMetadataKey", _GROUP_ID),
    4: message("ConsumerGroupPartitionMetadataKey", _GROUP_ID),
    5: message("ConsumerGroupMemberMetadataKey", _GROUP_ID, _MEMBER_ID),
    6: message("ConsumerGroupTargetAssignmentMetadataKey", _GROUP_ID),
    7: message("ConsumerGroupTargetAssignmentMemberKey", _GROUP_ID, _MEMBER_ID),
    8: message("ConsumerGroupCurrentMemberAssignmentKey", _GROUP_ID, _MEMBER_ID),
    9: message("ShareGroupPartitionMetadataKey", _GROUP_ID),
    10: message("ShareGroupMemberMetadataKey", _GROUP_ID, _MEMBER_ID),
    11: message("ShareGroupMetadataKey", _GROUP_ID),
    12: message("ShareGroupTargetAssignmentMetadataKey", _GROUP_ID),
    13: message("ShareGroupTargetAssignmentMemberKey", _GROUP_ID, _MEMBER_ID),
    14: message("ShareGroupCurrentMemberAssignmentKey", _GROUP_ID, _MEMBER_ID),
    15: message("ShareGroupStatePartitionMetadataKey", _GROUP_ID),
}
# key version -> (value message, valid value versions, flexible value versions)
VALUES: dict[int, tuple[Struct, tuple[int, int], tuple[int, int]]] = {
    0: (OFFSET_COMMIT_VALUE, versions("0-4"), versions("4+")),
    1: (OFFSET_COMMIT_VALUE, versions("0-4"), versions("4+")),
    2: (GROUP_METADATA_VALUE, versions("0-4"), versions("4+")),
    **{k: (v, versions("0"), versions("0+")) for k, v in CONSUMER_GROUP_VALUES.items()},
}
CONSUMER_PROTOCOL_TYPE = "consumer"


def decode_key(key: bytes | None) -> tuple[int, dict[str, Any]]:
    """(key version, kafka-dump-log's key JSON)."""
    if key is None:
        raise CorruptDataError("__consumer_offsets record has no key")
    version = read_version(key, "__consumer_offsets key")
    schema = KEYS.get(version)
    if schema is None:
        raise UnknownRecordType(f"Unknown record type {version}", pos=0)
    data, _ = read_struct(key, schema, version, NO_VERSIONS, pos=2)
    return version, {"type": str(version), "data": data}


def decode_value(key_version: int, value: bytes | None) -> dict[str, Any] | None:
    """kafka-dump-log's value JSON, or None for a tombstone."""
    if value is None:
        return None
    version = read_version(value, "__consumer_offsets value")
    spec = VALUES.get(key_version)
    if spec is None:  # share-group records: known key, value not decoded here
        return {"version": str(version), "data": None, "raw": jsonable(bytes(value))}
    schema, valid, flexible = spec
    if not valid[0] <= version <= valid[1]:
        raise CorruptDataError(f"{schema.name}: unknown version {version}", pos=0)
    data, _ = read_struct(value, schema, version, flexible, pos=2)
    if schema is GROUP_METADATA_VALUE and data.get("protocolType") == CONSUMER_PROTOCOL_TYPE:
        for member in data.get("members") or []:
            member["subscription"] = _expand(member["subscription"], SUBSCRIPTION)
            member["assignment"] = _expand(member["assignment"], ASSIGNMENT)
    return {"version": str(version), "data": jsonable(data)}


def _expand(raw: Any, schema: Struct) -> Any:
    """A ConsumerProtocol blob as its fields; the bytes themselves if it does not decode."""
    if not isinstance(raw, bytes):
        return raw
    try:
        version = read_version(raw, schema.name)
        if not CONSUMER_PROTOCOL_VERSIONS[0] <= version <= CONSUMER_PROTOCOL_VERSIONS[1]:
            return raw
        data, _ = read_struct(raw, schema, version, NO_VERSIONS, pos=2)
    except CorruptDataError:
        return raw
    return data


def decode(key: bytes | None, value: bytes | None) -> dict[str, Any]:
    """`{"key": ..., "value": ...}` for one `__consumer_offsets` record."""
    version, k = decode_key(key)
    return {"key": k, "value": decode_value(version, value)}
