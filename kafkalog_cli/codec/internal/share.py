"""`__share_group_state` records (share coordinator, KIP-932; `--share-group-state-decoder`).

Record layout: coordinator.py. Record types (share-coordinator's `Share*.json`):

| type | key                  | value (v0, flexible)                                       |
|------|----------------------|------------------------------------------------------------|
| 0    | ShareSnapshotKey     | ShareSnapshotValue: epochs, start offset, timestamps and   |
|      |                      | the state batches of the share-partition                   |
| 1    | ShareUpdateKey       | ShareUpdateValue: the batches changed since the snapshot   |

Both keys are GroupId string, TopicId uuid, Partition int32.
Both values carry the tagged DeliveryCompleteCount (tag 0, default -1; Kafka 4.2).
"""

from __future__ import annotations

from kafkalog_cli.codec.internal.coordinator import Coordinator
from kafkalog_cli.codec.internal.schema import Field, Message, Struct, field, message

_KEY = (field("GroupId", "string", "0"), field("TopicId", "uuid", "0"),
        field("Partition", "int32", "0"))
_STATE_BATCH = Struct("StateBatch", (field("FirstOffset", "int64"), field("LastOffset", "int64"),
                                     field("DeliveryState", "int8"),
                                     field("DeliveryCount", "int16")))
_COMPLETE = field("DeliveryCompleteCount", "int32", tag=0, tagged="0+", default=-1)


def _value(name: str, api_key: int, *fields: Field) -> Message:
    return message(name, *fields, api_key=api_key, flexible="0+")


COORDINATOR = Coordinator(
    "__share_group_state",
    (message("ShareSnapshotKey", *_KEY, api_key=0),
     _value("ShareSnapshotValue", 0,
            field("SnapshotEpoch", "int32"), field("StateEpoch", "int32"),
            field("LeaderEpoch", "int32"), field("StartOffset", "int64"), _COMPLETE,
            field("CreateTimestamp", "int64"), field("WriteTimestamp", "int64"),
            field("StateBatches", _STATE_BATCH))),
    (message("ShareUpdateKey", *_KEY, api_key=1),
     _value("ShareUpdateValue", 1,
            field("SnapshotEpoch", "int32"), field("LeaderEpoch", "int32"),
            field("StartOffset", "int64"), _COMPLETE, field("StateBatches", _STATE_BATCH))),
)
MESSAGES: tuple[Message, ...] = COORDINATOR.messages
decode = COORDINATOR.decode
