"""KRaft `__cluster_metadata` records and KRaft control records (`--cluster-metadata-decoder`).

Metadata record value (MetadataRecordSerde / AbstractApiMessageSerde); the key is null:

    frame version uvarint (1; 0 was the 2.8 preview, rejected) | apiKey uvarint
    | version uvarint | the record message at that version (every version flexible)
    -- trailing bytes are an error ("garbage after <apiKey>")

The apiKey names the record type (metadata/src/main/resources/common/metadata/*.json);
kafka-dump-log prints the MetadataRecordType constant (TopicRecord -> TOPIC_RECORD).
Record types without a schema here come out as `data: None` plus the value in base64.

KRaft control records (control batches, also in `.checkpoint` snapshots) are flexible
messages read at version 0 whose first field is their own `Version` (ControlRecordUtils):
LEADER_CHANGE(2) LeaderChangeMessage, SNAPSHOT_HEADER(3), SNAPSHOT_FOOTER(4),
KRAFT_VERSION(5) KRaftVersionRecord, KRAFT_VOTERS(6) VotersRecord.
"""

from __future__ import annotations

import base64
import re
from typing import Any

from kafkalog_cli.codec.internal.schema import (
    Reader,
    Struct,
    field,
    jsonable,
    message,
    read_struct,
    versions,
)
from kafkalog_cli.errors import CorruptDataError

FRAME_VERSION = 1
ALL = versions("0+")

_ENDPOINT = Struct("Endpoint", (field("Name", "string"), field("Host", "string"),
                                field("Port", "uint16"), field("SecurityProtocol", "int16")))
_FEATURE = Struct("Feature", (field("Name", "string"), field("MinSupportedVersion", "int16"),
                              field("MaxSupportedVersion", "int16")))

# apiKey -> (message, valid versions)
RECORDS: dict[int, tuple[Struct, tuple[int, int]]] = {
    0: (message("RegisterBrokerRecord",
                field("BrokerId", "int32"),
                field("IsMigratingZkBroker", "bool", "2+"),
                field("IncarnationId", "uuid"),
                field("BrokerEpoch", "int64"),
                field("EndPoints", _ENDPOINT),
                field("Features", _FEATURE),
                field("Rack", "string", null="0+"),
                field("Fenced", "bool"),
                field("InControlledShutdown", "bool", "1+"),
                field("LogDirs", "[]uuid", "3+", tag=0, tagged="3+")), versions("0-3")),
    1: (message("UnregisterBrokerRecord", field("BrokerId", "int32"),
                field("BrokerEpoch", "int64")), versions("0")),
    2: (message("TopicRecord", field("Name", "string"), field("TopicId", "uuid")),
        versions("0")),
    3: (message("PartitionRecord",
                field("PartitionId", "int32"),
                field("TopicId", "uuid"),
                field("Replicas", "[]int32"),
                field("Isr", "[]int32"),
                field("RemovingReplicas", "[]int32"),
                field("AddingReplicas", "[]int32"),
                field("Leader", "int32"),
                field("LeaderRecoveryState", "int8", tag=0, tagged="0+", default=0),
                field("LeaderEpoch", "int32"),
                field("PartitionEpoch", "int32"),
                field("Directories", "[]uuid", "1+"),
                field("EligibleLeaderReplicas", "[]int32", "2+", null="2+", tag=1,
                      tagged="2+", default=None),
                field("LastKnownElr", "[]int32", "2+", null="2+", tag=2, tagged="2+",
                      default=None)), versions("0-2")),
    4: (message("ConfigRecord", field("ResourceType", "int8"), field("ResourceName", "string"),
                field("Name", "string"), field("Value", "string", null="0+")), versions("0")),
    5: (message("PartitionChangeRecord",
                field("PartitionId", "int32"),
                field("TopicId", "uuid"),
                field("Isr", "[]int32", tag=0, tagged="0+", null="0+", default=None),
                field("Leader", "int32", tag=1, tagged="0+", default=-2),
                field("Replicas", "[]int32", tag=2, tagged="0+", null="0+", default=None),
                field("RemovingReplicas", "[]int32", tag=3, tagged="0+", null="0+", default=None),
                field("AddingReplicas", "[]int32", tag=4, tagged="0+", null="0+", default=None),
                field("LeaderRecoveryState", "int8", tag=5, tagged="0+", default=-1),
                field("Directories", "[]uuid", "1+", null="1+", tag=8, tagged="1+",
                      default=None),
                field("EligibleLeaderReplicas", "[]int32", "2+", null="2+", tag=6,
                      tagged="2+", default=None),
                field("LastKnownElr", "[]int32", "2+", null="2+", tag=7, tagged="2+",
                      default=None)), versions("0-2")),
    7: (message("FenceBrokerRecord", field("Id", "int32"), field("Epoch", "int64")),
        versions("0")),
    8: (message("UnfenceBrokerRecord", field("Id", "int32"), field("Epoch", "int64")),
        versions("0")),
    9: (message("RemoveTopicRecord", field("TopicId", "uuid")), versions("0")),
    10: (message("DelegationTokenRecord", field("Owner", "string"),
                 field("Requester", "string"), field("Renewers", "[]string"),
                 field("IssueTimestamp", "int64"), field("MaxTimestamp", "int64"),
                 field("ExpirationTimestamp", "int64"), field("TokenId", "string")),
         versions("0")),
    11: (message("UserScramCredentialRecord", field("Name", "string"),
                 field("Mechanism", "int8"), field("Salt", "bytes"),
                 field("StoredKey", "bytes"), field("ServerKey", "bytes"),
                 field("Iterations", "int32")), versions("0")),
    12: (message("FeatureLevelRecord", field("Name", "string"),
                 field("FeatureLevel", "int16")), versions("0")),
    14: (message("ClientQuotaRecord",
                 field("Entity", Struct("EntityData", (
                     field("EntityType", "string"),
                     field("EntityName", "string", null="0+")))),
                 field("Key", "string"), field("Value", "float64"), field("Remove", "bool")),
         versions("0")),
    15: (message("ProducerIdsRecord", field("BrokerId", "int32"), field("BrokerEpoch", "int64"),
                 field("NextProducerId", "int64")), versions("0")),
    17: (message("BrokerRegistrationChangeRecord",
                 field("BrokerId", "int32"),
                 field("BrokerEpoch", "int64"),
                 field("Fenced", "int8", tag=0, tagged="0+"),
                 field("InControlledShutdown", "int8", "1+", tag=1, tagged="1+"),
                 field("LogDirs", "[]uuid", "2+", tag=2, tagged="2+")), versions("0-2")),
    18: (message("AccessControlEntryRecord", field("Id", "uuid"), field("ResourceType", "int8"),
                 field("ResourceName", "string"), field("PatternType", "int8"),
                 field("Principal", "string"), field("Host", "string"),
                 field("Operation", "int8"), field("PermissionType", "int8")), versions("0")),
    19: (message("RemoveAccessControlEntryRecord", field("Id", "uuid")), versions("0")),
    20: (message("NoOpRecord"), versions("0")),
    21: (message("ZkMigrationStateRecord", field("ZkMigrationState", "int8")), versions("0")),
    22: (message("RemoveUserScramCredentialRecord", field("Name", "string"),
                 field("Mechanism", "int8")), versions("0")),
    23: (message("BeginTransactionRecord", field("Name", "string", null="0+", tag=0,
                                                 tagged="0+", default=None)), versions("0")),
    24: (message("EndTransactionRecord"), versions("0")),
    25: (message("AbortTransactionRecord", field("Reason", "string", null="0+", tag=0,
                                                 tagged="0+", default=None)), versions("0")),
    26: (message("RemoveDelegationTokenRecord", field("TokenId", "string")), versions("0")),
    27: (message("RegisterControllerRecord", field("ControllerId", "int32"),
                 field("IncarnationId", "uuid"), field("ZkMigrationReady", "bool"),
                 field("EndPoints", _ENDPOINT), field("Features", _FEATURE)), versions("0")),
}
NAMES: dict[int, str] = {k: s.name for k, (s, _) in RECORDS.items()}


def type_constant(name: str) -> str:
    """MetadataRecordType's enum constant: TopicRecord -> TOPIC_RECORD (toSnakeCase)."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).upper()


def _uvarint16(r: Reader, what: str) -> int:
    v = r.uvarint(what)
    if v > 0x7FFF:
        raise r.fail(f"{what} {v} does not fit in a short")
    return v


def decode(key: bytes | None, value: bytes | None) -> dict[str, Any]:
    """`{"key": None, "value": {"type", "version", "data", "name", "apiKey", "frameVersion"}}`."""
    if value is None:
        raise CorruptDataError("metadata record has a null value")
    r = Reader(value, 0, len(value), True, "metadata record")
    frame = _uvarint16(r, "frame version")
    if frame != FRAME_VERSION:
        raise r.fail(f"unknown frame version {frame} (only {FRAME_VERSION} is supported)", 0)
    api_key = _uvarint16(r, "type")
    version = _uvarint16(r, "version")
    spec = RECORDS.get(api_key)
    if spec is None or not spec[1][0] <= version <= spec[1][1]:
        out: dict[str, Any] = {"type": api_key, "version": version, "data": None,
                               "raw": base64.b64encode(bytes(value)).decode("ascii")}
        if spec is not None:
            out.update(type=type_constant(spec[0].name), name=spec[0].name, apiKey=api_key)
        out["frameVersion"] = frame
        return {"key": None, "value": out}
    schema = spec[0]
    data, _ = read_struct(value, schema, version, ALL, pos=r.pos, exact=True)
    return {"key": None, "value": {"type": type_constant(schema.name), "version": version,
                                   "data": jsonable(data), "name": schema.name,
                                   "apiKey": api_key, "frameVersion": frame}}


# --- KRaft control records ------------------------------------------------------------
_VOTER_V0 = Struct("Voter", (field("VoterId", "int32"), field("VoterDirectoryId", "uuid", "1+")))
CONTROL: dict[int, tuple[str, Struct]] = {
    2: ("LeaderChange", message("LeaderChangeMessage", field("Version", "int16"),
                                field("LeaderId", "int32"), field("Voters", _VOTER_V0),
                                field("GrantingVoters", _VOTER_V0))),
    3: ("SnapshotHeader", message("SnapshotHeaderRecord", field("Version", "int16"),
                                  field("LastContainedLogTimestamp", "int64"))),
    4: ("SnapshotFooter", message("SnapshotFooterRecord", field("Version", "int16"))),
    5: ("KRaftVersion", message("KRaftVersionRecord", field("Version", "int16"),
                                field("KRaftVersion", "int16"))),
    6: ("KRaftVoters", message("VotersRecord", field("Version", "int16"), field(
        "Voters", Struct("Voter", (
            field("VoterId", "int32"),
            field("VoterDirectoryId", "uuid"),
            field("Endpoints", Struct("Endpoint", (field("Name", "string"),
                                                   field("Host", "string"),
                                                   field("Port", "uint16")))),
            field("KRaftVersionFeature", Struct("KRaftVersionFeature", (
                field("MinSupportedVersion", "int16"),
                field("MaxSupportedVersion", "int16"))), array=False)))))),
}
CONTROL_READ_VERSION = 0  # ControlRecordUtils.*_CURRENT_VERSION


def decode_control(control_type: int, value: bytes | None) -> tuple[str, dict[str, Any]] | None:
    """(label, JSON) of a KRaft control record value; None for other control types."""
    spec = CONTROL.get(control_type)
    if spec is None:
        return None
    if value is None:
        raise CorruptDataError(f"{spec[1].name} control record has a null value")
    data, _ = read_struct(value, spec[1], CONTROL_READ_VERSION, ALL)
    return spec[0], jsonable(data)
