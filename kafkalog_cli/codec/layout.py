"""Binary layouts shared by readers and writers (all big-endian, as Java's ByteBuffer).

Every log entry, whatever its magic, starts with the same 12-byte log overhead
(offset int64, size int32) and has its magic byte at entry byte 16; that is how a
reader picks the format of each entry (Kafka's FileLogInputStream does the same).

v2 batch header (DefaultRecordBatch), 61 bytes:
    baseOffset int64 | batchLength int32 | partitionLeaderEpoch int32 | magic int8 |
    crc uint32 | attributes int16 | lastOffsetDelta int32 | baseTimestamp int64 |
    maxTimestamp int64 | producerId int64 | producerEpoch int16 | baseSequence int32 |
    recordsCount int32
The CRC-32C covers attributes .. end of batch (leader epoch excluded: the broker rewrites it).

Legacy message (magic 0/1), after the log overhead:
    crc uint32 | magic int8 | attributes int8 | [timestamp int64, magic 1 only] |
    keyLength int32 | key | valueLength int32 | value
The CRC-32 (IEEE) covers magic .. end of value.
"""

from __future__ import annotations

import struct

LOG_OVERHEAD = struct.Struct(">qi")  # offset, size of what follows
LOG_OVERHEAD_SIZE = LOG_OVERHEAD.size  # 12
MAGIC_POS = 16
# FileLogInputStream stops when fewer than this many bytes remain (offset+size+epoch/crc+magic).
HEADER_SIZE_UP_TO_MAGIC = MAGIC_POS + 1  # 17
MIN_ENTRY_SIZE = 14  # LegacyRecord.RECORD_OVERHEAD_V0: smallest legal size field

V2_HEADER = struct.Struct(">qiibIhiqqqhii")
V2_HEADER_SIZE = V2_HEADER.size  # 61
V2_CRC_POS = 17
V2_ATTRIBUTES_POS = 21  # CRC coverage starts here
V2_CRC = struct.Struct(">I")
V2_EMPTY_BATCH_LENGTH = V2_HEADER_SIZE - LOG_OVERHEAD_SIZE  # 49

# v2 attribute bits (low byte of the int16)
ATTR_CODEC_MASK = 0x07
ATTR_TIMESTAMP_TYPE = 0x08
ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20
ATTR_DELETE_HORIZON = 0x40

# legacy message layout
LEGACY_CRC = struct.Struct(">I")
LEGACY_V0_HEAD = struct.Struct(">qiIbb")  # offset, size, crc, magic, attributes
LEGACY_V1_TS = struct.Struct(">q")
LEGACY_LEN = struct.Struct(">i")
LEGACY_V0_HEAD_SIZE = LEGACY_V0_HEAD.size  # 18
LEGACY_RECORD_OVERHEAD = {0: 14, 1: 22}  # crc..valueLength without key/value bytes
LEGACY_ATTR_CODEC_MASK = 0x07
LEGACY_ATTR_TIMESTAMP_TYPE = 0x08

NO_TIMESTAMP = -1
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1

# the wire widths of Kafka's protocol fields (Type.INT8/INT16/INT32/INT64): {bits: (min, max)}
INT_RANGES = {bits: (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) for bits in (8, 16, 32, 64)}
INT32_MIN, INT32_MAX = INT_RANGES[32]
INT64_MIN, INT64_MAX = INT_RANGES[64]

TIMESTAMP_TYPES = {-1: "NoTimestampType", 0: "CreateTime", 1: "LogAppendTime"}
