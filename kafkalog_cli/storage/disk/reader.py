"""Read a partition's batches in offset order, seeking through the offset index."""

from __future__ import annotations

from collections.abc import Iterator

from kafkalog_cli.codec.entry import decode_entry
from kafkalog_cli.codec.layout import LOG_OVERHEAD, LOG_OVERHEAD_SIZE
from kafkalog_cli.errors import CorruptDataError
from kafkalog_cli.storage.disk.logdir import PartitionDir
from kafkalog_cli.storage.disk.segment import Segment, open_readable


def seek_position(seg: Segment, offset: int) -> int:
    """Byte position to start scanning for `offset` (OffsetIndex.lookup), 0 if the index
    is missing or does not point at a batch whose last offset is the indexed one."""
    if offset <= seg.base_offset or not seg.has_index:
        return 0
    try:
        idx = seg.offset_index()
    except OSError:
        return 0
    if idx is None:
        return 0
    entry_offset, pos = idx.lookup(offset)
    if pos == 0:
        return 0
    try:
        with open_readable(seg.log_path) as f:
            f.seek(pos)
            head = f.read(LOG_OVERHEAD_SIZE)
            if len(head) < LOG_OVERHEAD_SIZE:
                return 0
            _, size = LOG_OVERHEAD.unpack(head)
            if size < 14 or size > 1 << 30:
                return 0
            body = f.read(size)
            if len(body) < size:  # the entry runs past the end of the file
                return 0
            batch = decode_entry(head + body)
    except (OSError, CorruptDataError):
        return 0
    # a broker's multi-batch append indexes the append's last offset at its first batch
    return pos if batch.last_offset <= entry_offset else 0


def segments_in_range(part: PartitionDir, from_offset: int | None = None,
                      to_offset: int | None = None) -> Iterator[tuple[Segment, int]]:
    """(segment, start position) for the segments that may hold offsets in the range."""
    segs = part.segments
    for i, seg in enumerate(segs):
        nxt = segs[i + 1].base_offset if i + 1 < len(segs) else None
        if from_offset is not None and nxt is not None and nxt <= from_offset:
            continue
        if to_offset is not None and seg.base_offset > to_offset:
            return
        yield seg, seek_position(seg, from_offset) if from_offset is not None else 0

