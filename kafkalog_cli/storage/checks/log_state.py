"""State a broker derives from the log, recomputed from the batches: producer state at an
offset (what a `.snapshot` there holds) and the leader-epoch cache.

Both read only batches that pass their CRC, and stop where the valid log ends (`end`, a
segment base offset and a byte position) when recover is about to cut it there.
"""

from __future__ import annotations

import contextlib

from kafkalog_cli.codec.snapshot import decode_snapshot
from kafkalog_cli.errors import CorruptDataError, LogDirIOError
from kafkalog_cli.storage.disk import naming
from kafkalog_cli.storage.disk.files import read_regular
from kafkalog_cli.storage.disk.logdir import PartitionDir
from kafkalog_cli.storage.disk.segment import Segment
from kafkalog_cli.storage.queries.producers import ProducerState

LogEnd = tuple[int, int]  # (segment base offset, byte position) where the valid log ends


def _ignore(_d: object) -> None:
    return None


def state_at(part: PartitionDir, segs: list[Segment], offset: int,
             end: LogEnd | None = None) -> ProducerState:
    """Producer state after every batch below `offset`: the newest readable snapshot at or
    below it, plus the batches from there on (ProducerStateManager.loadFromSnapshot, which
    skips a corrupt snapshot for the next older one, then UnifiedLog.rebuildProducerState)."""
    start = segs[0].base_offset if segs else 0
    state = ProducerState()
    for off in sorted((o for o in part.snapshots if o <= offset), reverse=True):
        try:
            state = ProducerState.from_snapshot(decode_snapshot(read_regular(
                part.path / naming.segment_file_name(off, naming.SNAPSHOT))))
            start = off
            break
        except (CorruptDataError, OSError, LogDirIOError):
            continue
    for seg in segs:
        if seg.base_offset >= offset:
            break
        stop = end[1] if end is not None and end[0] == seg.base_offset else None
        for _pos, b in seg.batches(end=stop, on_damage=_ignore):
            if b.last_offset >= offset:
                break
            if b.last_offset >= start and b.is_valid():
                with contextlib.suppress(CorruptDataError):
                    state.append(b)
        if stop is not None:
            break
    return state


def epochs_from_log(segs: list[Segment], end: LogEnd | None = None) -> list[tuple[int, int]]:
    """(epoch, start offset) as LogSegment.recover assigns them: a v2 batch whose partition
    leader epoch is above the latest one starts a new epoch at its base offset."""
    entries: list[tuple[int, int]] = []
    for seg in segs:
        stop = end[1] if end is not None and end[0] == seg.base_offset else None
        for _pos, b in seg.batches(end=stop, on_damage=_ignore):
            if b.magic == 2 and b.partition_leader_epoch >= 0 and b.is_valid() and (
                    not entries or b.partition_leader_epoch > entries[-1][0]):
                entries.append((b.partition_leader_epoch, b.base_offset))
        if stop is not None:
            break
    return entries
