"""Control records: transaction markers and KRaft control types (ControlRecordType).

Key   : version int16 | type int16                       (4 bytes)
Value : COMMIT/ABORT -> version int16 | coordinatorEpoch int32 (6 bytes)
        KRaft types  -> a flexible generated message starting with its own version
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from kafkalog_cli.errors import CorruptBatch

_KEY = struct.Struct(">hh")
_END_TXN = struct.Struct(">hi")
_I16 = struct.Struct(">h")
_I64 = struct.Struct(">q")

(ABORT, COMMIT, LEADER_CHANGE, SNAPSHOT_HEADER, SNAPSHOT_FOOTER, KRAFT_VERSION,
 KRAFT_VOTERS) = range(7)
TYPE_NAMES = {ABORT: "ABORT", COMMIT: "COMMIT", LEADER_CHANGE: "LEADER_CHANGE",
              SNAPSHOT_HEADER: "SNAPSHOT_HEADER", SNAPSHOT_FOOTER: "SNAPSHOT_FOOTER",
              KRAFT_VERSION: "KRAFT_VERSION", KRAFT_VOTERS: "KRAFT_VOTERS"}


@dataclass(frozen=True, slots=True)
class ControlInfo:
    type: int
    name: str
    version: int
    coordinator_epoch: int | None = None  # COMMIT/ABORT only
    details: dict[str, Any] | None = None  # what we could read of a KRaft control value

    def as_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"type": self.name, "typeId": self.type}
        if self.coordinator_epoch is not None:
            d["coordinatorEpoch"] = self.coordinator_epoch
        if self.details:
            d.update(self.details)
        return d


def parse_control(key: bytes | None, value: bytes | None) -> ControlInfo:
    if key is None or len(key) < _KEY.size:
        raise CorruptBatch("control record key is shorter than 4 bytes")
    version, ctype = _KEY.unpack_from(key, 0)
    if version < 0:
        raise CorruptBatch(f"control record key has negative version {version}")
    name = TYPE_NAMES.get(ctype, "UNKNOWN")
    if ctype in (ABORT, COMMIT):
        if value is None or len(value) < _END_TXN.size:
            raise CorruptBatch("end-transaction marker value is shorter than 6 bytes")
        mversion, epoch = _END_TXN.unpack_from(value, 0)
        if mversion < 0:
            raise CorruptBatch(f"end-transaction marker has negative version {mversion}")
        return ControlInfo(ctype, name, version, coordinator_epoch=epoch)
    details: dict[str, Any] = {}
    if value is not None and len(value) >= 2:
        details["version"] = _I16.unpack_from(value, 0)[0]
        if ctype == SNAPSHOT_HEADER and len(value) >= 10:
            details["lastContainedLogTimestamp"] = _I64.unpack_from(value, 2)[0]
        elif ctype == KRAFT_VERSION and len(value) >= 4:
            # Kafka's JSON name (lowerCaseFirst of KRaftVersion), as the decoded `data` has it
            details["kRaftVersion"] = _I16.unpack_from(value, 2)[0]
    return ControlInfo(ctype, name, version, details=details or None)


def encode_end_txn(commit: bool, coordinator_epoch: int) -> tuple[bytes, bytes]:
    """Key and value of a COMMIT or ABORT marker record."""
    return _KEY.pack(0, COMMIT if commit else ABORT), _END_TXN.pack(0, coordinator_epoch)
