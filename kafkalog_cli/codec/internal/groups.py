"""`__consumer_offsets` records (group coordinator; kafka-dump-log `--offsets-decoder`).

Record layout: coordinator.py. Record types (group-coordinator's `*Key.json`/`*Value.json`):

| type    | records                                           | value versions       |
|---------|---------------------------------------------------|----------------------|
| 0       | LegacyOffsetCommit (Kafka 0.8.2)                  | 0                    |
| 1       | OffsetCommit: group, topic, partition             | 0-4, flexible 4+     |
| 2       | GroupMetadata (classic groups)                    | 0-4, flexible 4+     |
| 3-8, 16 | ConsumerGroup* (KIP-848)                          | 0, flexible          |
| 10-15   | ShareGroup* (KIP-932)                             | 0, flexible          |
| 17, 19-23 | StreamsGroup* (KIP-1071)                        | 0, flexible          |

Types 9 and 18 belonged to early share/streams groups and are unknown to Kafka 4.3.
Members of a `consumer` protocol classic group carry ConsumerProtocol subscription and
assignment bytes (version int16 + message, non-flexible, v0-v3); they are expanded when they
decode and kept as bytes otherwise, as DumpLogSegments does.
"""

from __future__ import annotations

from typing import Any

from kafkalog_cli.codec.internal.coordinator import Coordinator
from kafkalog_cli.codec.internal.schema import (
    Field,
    Message,
    Struct,
    field,
    message,
    read_message,
    read_version,
)
from kafkalog_cli.errors import CorruptDataError

_GROUP_ID = field("GroupId", "string", "0")
_MEMBER_ID = field("MemberId", "string", "0")


def _key(name: str, api_key: int, *fields: Field) -> Message:
    return message(name, *fields, api_key=api_key)


def _value(name: str, api_key: int, *fields: Field) -> Message:
    return message(name, *fields, api_key=api_key, flexible="0+")


def _struct(name: str, *fields: Field) -> Struct:
    return Struct(name, fields)


# --- classic groups and their offset commits ----------------------------------------------
_OFFSET_KEY = (field("group", "string", "0"), field("topic", "string", "0"),
               field("partition", "int32", "0"))
_MEMBER = _struct(
    "MemberMetadata",
    field("memberId", "string"),
    field("groupInstanceId", "string", "3+", null="3+", default=None),
    field("clientId", "string"),
    field("clientHost", "string"),
    field("rebalanceTimeout", "int32", "1+", default=-1),
    field("sessionTimeout", "int32"),
    field("subscription", "bytes"),
    field("assignment", "bytes"))
GROUP_METADATA_VALUE = message(
    "GroupMetadataValue",
    field("protocolType", "string"),
    field("generation", "int32"),
    field("protocol", "string", null="0+"),
    field("leader", "string", null="0+"),
    field("currentStateTimestamp", "int64", "2+", default=-1),
    field("members", _MEMBER),
    api_key=2, valid="0-4", flexible="4+")
CLASSIC = (
    (_key("LegacyOffsetCommitKey", 0, *_OFFSET_KEY),
     message("LegacyOffsetCommitValue", field("offset", "int64", "0"),
             field("metadata", "string", "0"), field("commitTimestamp", "int64", "0"),
             api_key=0)),
    (_key("OffsetCommitKey", 1, *_OFFSET_KEY),
     message("OffsetCommitValue",
             field("offset", "int64"),
             field("leaderEpoch", "int32", "3+", default=-1),
             field("metadata", "string"),
             field("commitTimestamp", "int64"),
             field("expireTimestamp", "int64", "1", default=-1),
             field("topicId", "uuid", tag=0, tagged="4+"),
             api_key=1, valid="0-4", flexible="4+")),
    (_key("GroupMetadataKey", 2, field("group", "string", "0")), GROUP_METADATA_VALUE),
)

# ConsumerProtocol (clients' ConsumerProtocolSubscription.json, ...Assignment.json)
SUBSCRIPTION = message(
    "ConsumerProtocolSubscription",
    field("Topics", "[]string"),
    field("UserData", "bytes", null="0+", default=None),
    field("OwnedPartitions", _struct("TopicPartition", field("Topic", "string", "1+"),
                                     field("Partitions", "[]int32", "1+")), "1+"),
    field("GenerationId", "int32", "2+", default=-1),
    field("RackId", "string", "3+", null="3+", default=None),
    valid="0-3")
ASSIGNMENT = message(
    "ConsumerProtocolAssignment",
    field("AssignedPartitions", _struct("TopicPartition", field("Topic", "string"),
                                        field("Partitions", "[]int32"))),
    field("UserData", "bytes", null="0+", default=None),
    valid="0-3")

# --- consumer groups (KIP-848) --------------------------------------------------------------
_TOPIC_PARTITION = _struct("TopicPartition", field("TopicId", "uuid"),
                           field("Partitions", "[]int32"))
# its spec's `"default": null` is no default: an absent tag reads as [], a null is shown
_EPOCHS = field("AssignmentEpochs", "[]int32", null="0+", tag=0, tagged="0+")
_ASSIGNED = _struct("TopicPartitions", field("TopicId", "uuid"), field("Partitions", "[]int32"),
                    _EPOCHS)
_ASSIGNMENT_TIMESTAMP = field("AssignmentTimestamp", "int64", tag=0, tagged="0+")
CONSUMER = (
    (_key("ConsumerGroupMetadataKey", 3, _GROUP_ID),
     _value("ConsumerGroupMetadataValue", 3, field("Epoch", "int32"),
            field("MetadataHash", "int64", tag=0, tagged="0+"))),
    (_key("ConsumerGroupPartitionMetadataKey", 4, _GROUP_ID),
     _value("ConsumerGroupPartitionMetadataValue", 4, field("Topics", _struct(
         "TopicMetadata", field("TopicId", "uuid"), field("TopicName", "string"),
         field("NumPartitions", "int32"), field("PartitionMetadata", _struct(
             "PartitionMetadata", field("Partition", "int32"), field("Racks", "[]string"))))))),
    (_key("ConsumerGroupMemberMetadataKey", 5, _GROUP_ID, _MEMBER_ID),
     _value("ConsumerGroupMemberMetadataValue", 5,
            field("InstanceId", "string", null="0+"),
            field("RackId", "string", null="0+"),
            field("ClientId", "string"),
            field("ClientHost", "string"),
            field("SubscribedTopicNames", "[]string"),
            field("SubscribedTopicRegex", "string", null="0+"),
            field("RebalanceTimeoutMs", "int32", default=-1),
            field("ServerAssignor", "string", null="0+"),
            field("ClassicMemberMetadata", _struct(
                "ClassicMemberMetadata", field("SessionTimeoutMs", "int32"),
                field("SupportedProtocols", _struct("ClassicProtocol", field("Name", "string"),
                                                    field("Metadata", "bytes")))),
                array=False, null="0+", tag=0, tagged="0+"))),
    (_key("ConsumerGroupTargetAssignmentMetadataKey", 6, _GROUP_ID),
     _value("ConsumerGroupTargetAssignmentMetadataValue", 6, field("AssignmentEpoch", "int32"),
            _ASSIGNMENT_TIMESTAMP)),
    (_key("ConsumerGroupTargetAssignmentMemberKey", 7, _GROUP_ID, _MEMBER_ID),
     _value("ConsumerGroupTargetAssignmentMemberValue", 7,
            field("TopicPartitions", _TOPIC_PARTITION))),
    (_key("ConsumerGroupCurrentMemberAssignmentKey", 8, _GROUP_ID, _MEMBER_ID),
     _value("ConsumerGroupCurrentMemberAssignmentValue", 8,
            field("MemberEpoch", "int32"), field("PreviousMemberEpoch", "int32"),
            field("State", "int8"), field("AssignedPartitions", _ASSIGNED),
            field("PartitionsPendingRevocation", _ASSIGNED))),
    (_key("ConsumerGroupRegularExpressionKey", 16, _GROUP_ID,
          field("RegularExpression", "string", "0")),
     _value("ConsumerGroupRegularExpressionValue", 16, field("Topics", "[]string"),
            field("Version", "int64"), field("Timestamp", "int64"))),
)

# --- share groups (KIP-932) -----------------------------------------------------------------
_SHARE_TOPIC = _struct("TopicPartitionsInfo", field("TopicId", "uuid"),
                       field("TopicName", "string"), field("Partitions", "[]int32"))
SHARE = (
    (_key("ShareGroupMemberMetadataKey", 10, _GROUP_ID, _MEMBER_ID),
     _value("ShareGroupMemberMetadataValue", 10, field("RackId", "string", null="0+"),
            field("ClientId", "string"), field("ClientHost", "string"),
            field("SubscribedTopicNames", "[]string"))),
    (_key("ShareGroupMetadataKey", 11, _GROUP_ID),
     _value("ShareGroupMetadataValue", 11, field("Epoch", "int32"),
            field("MetadataHash", "int64"))),
    (_key("ShareGroupTargetAssignmentMetadataKey", 12, _GROUP_ID),
     _value("ShareGroupTargetAssignmentMetadataValue", 12, field("AssignmentEpoch", "int32"),
            _ASSIGNMENT_TIMESTAMP)),
    (_key("ShareGroupTargetAssignmentMemberKey", 13, _GROUP_ID, _MEMBER_ID),
     _value("ShareGroupTargetAssignmentMemberValue", 13,
            field("TopicPartitions", _TOPIC_PARTITION))),
    (_key("ShareGroupCurrentMemberAssignmentKey", 14, _GROUP_ID, _MEMBER_ID),
     _value("ShareGroupCurrentMemberAssignmentValue", 14,
            field("MemberEpoch", "int32"), field("PreviousMemberEpoch", "int32"),
            field("State", "int8"), field("AssignedPartitions", _struct(
                "TopicPartitions", field("TopicId", "uuid"), field("Partitions", "[]int32"))))),
    (_key("ShareGroupStatePartitionMetadataKey", 15, _GROUP_ID),
     _value("ShareGroupStatePartitionMetadataValue", 15,
            field("InitializingTopics", _SHARE_TOPIC), field("InitializedTopics", _SHARE_TOPIC),
            field("DeletingTopics", _struct("TopicInfo", field("TopicId", "uuid"),
                                            field("TopicName", "string"))))),
)

# --- streams groups (KIP-1071) --------------------------------------------------------------
_TASKS = _struct("TaskIds", field("SubtopologyId", "string"), field("Partitions", "[]int32"))
_TASKS_EPOCHS = _struct("TaskIds", field("SubtopologyId", "string"),
                        field("Partitions", "[]int32"), _EPOCHS)
_KEY_VALUE = (field("Key", "string"), field("Value", "string"))
_TOPIC_INFO = _struct("TopicInfo", field("Name", "string"), field("Partitions", "int32"),
                      field("ReplicationFactor", "int16"), field("TopicConfigs", _struct(
                          "TopicConfig", field("key", "string"), field("value", "string"))))
_TASK_KINDS = ("ActiveTasks", "StandbyTasks", "WarmupTasks")
STREAMS = (
    (_key("StreamsGroupMetadataKey", 17, _GROUP_ID),
     _value("StreamsGroupMetadataValue", 17, field("Epoch", "int32"),
            field("MetadataHash", "int64"),
            field("ValidatedTopologyEpoch", "int32", tag=0, tagged="0+", default=-1),
            field("LastAssignmentConfigs", _struct("LastAssignmentConfig", *_KEY_VALUE),
                  null="0+", tag=1, tagged="0+"))),
    (_key("StreamsGroupMemberMetadataKey", 19, _GROUP_ID, _MEMBER_ID),
     _value("StreamsGroupMemberMetadataValue", 19,
            field("InstanceId", "string", null="0+"),
            field("RackId", "string", null="0+"),
            field("ClientId", "string"),
            field("ClientHost", "string"),
            field("RebalanceTimeoutMs", "int32", default=-1),
            field("TopologyEpoch", "int32"),
            field("ProcessId", "string"),
            field("UserEndpoint", _struct("Endpoint", field("Host", "string"),
                                          field("Port", "uint16")),
                  array=False, null="0+", default=None),
            field("ClientTags", _struct("KeyValue", *_KEY_VALUE)))),
    (_key("StreamsGroupTargetAssignmentMetadataKey", 20, _GROUP_ID),
     _value("StreamsGroupTargetAssignmentMetadataValue", 20, field("AssignmentEpoch", "int32"),
            _ASSIGNMENT_TIMESTAMP)),
    (_key("StreamsGroupTargetAssignmentMemberKey", 21, _GROUP_ID, _MEMBER_ID),
     _value("StreamsGroupTargetAssignmentMemberValue", 21,
            *(field(k, _TASKS) for k in _TASK_KINDS))),
    (_key("StreamsGroupCurrentMemberAssignmentKey", 22, _GROUP_ID, _MEMBER_ID),
     _value("StreamsGroupCurrentMemberAssignmentValue", 22,
            field("MemberEpoch", "int32"), field("PreviousMemberEpoch", "int32"),
            field("State", "int8"),
            *(field(k, _TASKS_EPOCHS) for k in _TASK_KINDS),
            *(field(f"{k}PendingRevocation", _TASKS_EPOCHS) for k in _TASK_KINDS))),
    (_key("StreamsGroupTopologyKey", 23, _GROUP_ID),
     _value("StreamsGroupTopologyValue", 23, field("Epoch", "int32"), field(
         "Subtopologies", _struct(
             "Subtopology",
             field("SubtopologyId", "string"),
             field("SourceTopics", "[]string"),
             field("SourceTopicRegex", "[]string"),
             field("StateChangelogTopics", _TOPIC_INFO),
             field("RepartitionSinkTopics", "[]string"),
             field("RepartitionSourceTopics", _TOPIC_INFO),
             field("CopartitionGroups", _struct(
                 "CopartitionGroup", field("SourceTopics", "[]int16"),
                 field("SourceTopicRegex", "[]int16"),
                 field("RepartitionSourceTopics", "[]int16"))))))),
)

CONSUMER_PROTOCOL_TYPE = "consumer"


def _expand(raw: Any, schema: Message) -> Any:
    """A ConsumerProtocol blob as its fields; the bytes themselves if it does not decode."""
    if not isinstance(raw, bytes):
        return raw
    try:
        data, _ = read_message(raw, schema, read_version(raw, schema.name), pos=2)
    except CorruptDataError:
        return raw
    return data


def _refine(record_type: int, data: dict[str, Any]) -> dict[str, Any]:
    """Classic `consumer` groups: members' subscription and assignment as their fields."""
    if record_type == GROUP_METADATA_VALUE.api_key and \
            data.get("protocolType") == CONSUMER_PROTOCOL_TYPE:
        for member in data.get("members") or []:
            member["subscription"] = _expand(member["subscription"], SUBSCRIPTION)
            member["assignment"] = _expand(member["assignment"], ASSIGNMENT)
    return data


COORDINATOR = Coordinator("__consumer_offsets", *CLASSIC, *CONSUMER, *SHARE, *STREAMS,
                          refine=_refine)
MESSAGES: tuple[Message, ...] = (*COORDINATOR.messages, SUBSCRIPTION, ASSIGNMENT)
decode = COORDINATOR.decode
