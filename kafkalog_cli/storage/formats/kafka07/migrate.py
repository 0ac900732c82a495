"""Turning a Kafka 0.7 partition into a current one (v2 batches, indexes, dense offsets).

Offsets: 0.7 addresses a message by the byte offset of its entry; a current log numbers
messages 0, 1, 2, ... (or from a chosen start). Each 0.7 entry start maps to the new offset
of its first message; the 0.7 log end maps to the new log end offset. A 0.7 consumer's
saved offset is always one of these (an entry start, or the log end): its fetch position.
The inner messages of a compressed wrapper get consecutive offsets; a consumer saved in
0.7 could only stand before the whole wrapper (ByteBufferMessageSet.deepIterator).

Steps, per partition:
  1. refuse a mixed dir or segment names that do not follow on (0.7 would not load it)
  2. stream every entry in order; any damage stops the migration (recover first)
  3. plain entries are grouped into batches of up to `batch_records`; a compressed wrapper
     becomes one batch with its codec (unless a codec is forced)
  4. records: key null, value = the payload, no headers; timestamp -1 (0.7 had none: a
     broker then falls back to file times for retention, as 0.7 did), or a given one
  5. PartitionWriter writes segments, indexes, snapshots as a broker would
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

from kafkalog_cli.codec import compression
from kafkalog_cli.codec.batch_v2 import encode_batch
from kafkalog_cli.codec.layout import INT64_MAX
from kafkalog_cli.codec.message_v07 import inner_messages
from kafkalog_cli.codec.model import Damage
from kafkalog_cli.errors import CorruptBatch, CorruptDataError, UsageError
from kafkalog_cli.storage.disk import naming, safety
from kafkalog_cli.storage.formats import MigrateOptions
from kafkalog_cli.storage.formats.kafka07.layout import Partition07
from kafkalog_cli.storage.formats.kafka07.scan import iter_entries
from kafkalog_cli.storage.maintenance.writer import PartitionWriter

Mapping = Callable[[int, int], None]  # (0.7 byte offset, new offset)
_Rec = tuple[int, int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]

@dataclass
class Migrated:
    topic: str
    partition: int
    entries: int = 0
    messages: int = 0
    source_end: int = 0  # 0.7 log end (byte offset)
    log_start_offset: int = 0
    log_end_offset: int = 0


def check_migratable(part: Partition07) -> None:
    """Raise CorruptDataError for what 0.7 itself would not load (before writing anything)."""
    if part.name is None:
        raise CorruptBatch("partition dir name is not <topic>-<partition>; rename it first",
                           str(part.path))
    if part.mixed:
        raise CorruptBatch("holds both Kafka 0.7 .kafka segments and 0.8+ files; kafkalog "
                           "does not guess which is current", str(part.path))
    for prev, seg in pairwise(part.segments):
        if prev.end != seg.start:
            raise CorruptBatch(f"segment name does not follow on from {prev.path.name} "
                               f"(expected start {prev.end}); 0.7 would not load this "
                               "partition", str(seg.path))


class _Batcher:
    def __init__(self, w: PartitionWriter, opts: MigrateOptions) -> None:
        self.w = w
        self.opts = opts
        self.pending: list[_Rec] = []
        self.pending_codec = compression.NONE
        self.pending_bytes = 0
        self.next_offset = w.next_offset

    def add(self, value: bytes, ts: int, codec: int) -> None:
        if self.pending and (codec != self.pending_codec
                             or len(self.pending) >= self.opts.batch_records
                             or self.pending_bytes + len(value) > self.opts.batch_bytes):
            self.flush()
        self.pending_codec = codec
        self.pending.append((self.next_offset, ts, None, value, []))
        self.pending_bytes += len(value)
        self.next_offset += 1

    def flush(self) -> None:
        if not self.pending:
            return
        self.w.append(encode_batch(self.pending, codec=self.pending_codec,
                                   partition_leader_epoch=self.opts.leader_epoch))
        self.pending, self.pending_bytes = [], 0


def migrate_partition(part: Partition07, dest: Path, opts: MigrateOptions,
                      mapping: Mapping, topic: str | None = None) -> Migrated:
    """Write `part` as a current partition dir at `dest` (which must not hold segments),
    as topic `topic` (default: its 0.7 name)."""
    check_migratable(part)
    res = Migrated(part.topic, part.partition, log_start_offset=opts.start_offset)
    dest.mkdir(parents=True, exist_ok=True)
    if opts.start_offset:
        # an empty first segment at the chosen start: the writer continues from its base
        safety.open_file(dest / naming.segment_file_name(opts.start_offset, naming.LOG),
                         dest.parent, "replace").close()
    w = PartitionWriter(dest, topic or part.topic, part.partition, opts.config,
                        topic_id=opts.topic_id).open()
    try:
        batcher = _Batcher(w, opts)
        for seg in part.segments:
            ts = opts.timestamp
            if opts.timestamp_from_mtime:
                ts = int(os.stat(seg.path).st_mtime * 1000)

            def stop(d: Damage, seg_path: str = str(seg.path), start: int = seg.start) -> None:
                raise CorruptBatch(f"{d.reason} (offset {start + d.position}); repair it first "
                                   "with kafkalog recover", seg_path, d.position)

            for pos, msg in iter_entries(seg.path, on_damage=stop):
                mapping(seg.start + pos, batcher.next_offset)
                res.entries += 1
                try:
                    inner = inner_messages(msg, opts.max_decompressed)
                except CorruptDataError as e:
                    raise e.located(str(seg.path), pos) from None
                codec = msg.codec if opts.codec is None else opts.codec
                if opts.codec is None and msg.codec != compression.NONE:
                    batcher.flush()  # a wrapper stays one batch of its own
                for m in inner:
                    if opts.start_offset + res.messages >= INT64_MAX:  # the log end is a long too
                        raise UsageError(
                            f"--start-offset: {opts.start_offset} leaves no room for message "
                            f"{res.messages + 1} of {part.topic}-{part.partition} (offsets end "
                            f"at {INT64_MAX}); choose a smaller one")
                    batcher.add(bytes(m.payload), ts, codec)
                    res.messages += 1
                if opts.codec is None and msg.codec != compression.NONE:
                    batcher.flush()
            res.source_end = seg.end
        batcher.flush()
        if not part.segments:
            res.source_end = 0
        res.log_end_offset = w.next_offset
        mapping(res.source_end, res.log_end_offset)
    finally:
        w.close()
    return res
