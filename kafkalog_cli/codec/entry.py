"""One log entry at a time: the framing every format shares, and dispatch on the magic byte.

Framing (FileLogInputStream.nextBatch): fewer than 17 bytes left -> end of data; a size
field below 14 -> corrupt; an entry that runs past the end -> truncated tail. The magic
at entry byte 16 picks the format; Kafka parses magic > 2 as v2, we call it corrupt.
"""

from __future__ import annotations

from kafkalog_cli.codec.batch_v2 import RecordBatch
from kafkalog_cli.codec.layout import LOG_OVERHEAD, LOG_OVERHEAD_SIZE, MAGIC_POS, V2_HEADER_SIZE
from kafkalog_cli.codec.message_v01 import LegacyBatch
from kafkalog_cli.errors import CorruptBatch

Batch = RecordBatch | LegacyBatch


def decode_entry(data: bytes | memoryview) -> Batch:
    """Parse the header of the whole entry in `data` (size already checked by the framer)."""
    magic = data[MAGIC_POS]
    if magic == 2:
        if len(data) < V2_HEADER_SIZE:
            raise CorruptBatch(f"v2 batch of {len(data)} bytes is shorter than its 61-byte header")
        return RecordBatch(data)
    if magic in (0, 1):
        return LegacyBatch(data)
    raise CorruptBatch(f"unknown magic byte {magic if magic < 128 else magic - 256}")


def split_entries(data: bytes | memoryview) -> list[Batch]:
    """Decode a whole in-memory message set (tests, fixtures, small buffers)."""
    mv = memoryview(data)
    out: list[Batch] = []
    pos = 0
    while len(mv) - pos > MAGIC_POS:
        _off, size = LOG_OVERHEAD.unpack_from(mv, pos)
        end = pos + LOG_OVERHEAD_SIZE + size
        if size < 14 or end > len(mv):
            break
        out.append(decode_entry(mv[pos:end]))
        pos = end
    return out
