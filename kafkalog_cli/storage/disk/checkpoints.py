"""Reading and atomically updating a log dir's root checkpoint files and its clean-shutdown
marker."""

from __future__ import annotations

from pathlib import Path
from typing import overload

from kafkalog_cli.codec.checkpoint import format_offsets, parse_offsets
from kafkalog_cli.errors import CorruptDataError, LogDirIOError, UsageError
from kafkalog_cli.storage.disk import naming, safety
from kafkalog_cli.storage.disk.files import atomic_write, fsync_dir, read_regular
from kafkalog_cli.storage.disk.logdir import PartitionDir


def read_offsets(path: Path) -> dict[tuple[str, int], int]:
    """Entries of an offset checkpoint; empty when absent. Raises on a malformed file."""
    try:
        data = read_regular(path)
    except FileNotFoundError:
        return {}
    try:
        return parse_offsets(data)
    except CorruptDataError as e:
        raise e.located(str(path), 0) from None


def recovery_point(part: PartitionDir) -> int:
    """The partition's entry in its log dir's recovery-point checkpoint; a missing or
    unreadable one means 0, as for Kafka (LogManager.loadLogs)."""
    if part.log_dir is None:
        return 0
    try:
        return read_offsets(part.log_dir.path / naming.RECOVERY_POINT).get(part.key, 0)
    except (CorruptDataError, LogDirIOError):
        return 0


def log_start_entry(part: PartitionDir) -> int | None:
    """The partition's entry in its log dir's log-start-offset-checkpoint (the log dir's
    cached read); None when there is none, or the file does not parse (the broker reads it
    as empty then: LogManager.loadLogs)."""
    if part.log_dir is None:
        return None
    try:
        cp = part.log_dir.checkpoint(naming.LOG_START)
    except CorruptDataError:
        return None
    return None if cp is None else cp.get(part.key)


@overload
def log_start_offset(part: PartitionDir, first_base: int, *,
                     local_if_unknown: bool = False) -> int: ...
@overload
def log_start_offset(part: PartitionDir, first_base: int | None, *,
                     local_if_unknown: bool = False) -> int | None: ...
def log_start_offset(part: PartitionDir, first_base: int | None, *,
                     local_if_unknown: bool = False) -> int | None:
    """The log start offset a broker's load takes (LogLoader.load's newLogStartOffset): the
    checkpoint entry (missing or unreadable: 0, LogManager.loadLogs) raised to `first_base`,
    the first segment's base offset; with tiered storage (LogDir.tiered) the entry as is:
    what is older is in remote storage. None: no segment and no entry.

    With tiered storage and no entry the load takes 0, yet where the log starts is not
    known here: a broker checkpoints every remote-enabled log (LogManager.
    checkpointLogStartOffsetsInDir), so the topic is likely not remote-enabled (that is a
    topic config; the cache only says the broker has tiered storage on), and then the load
    takes `first_base`. `local_if_unknown` answers `first_base` there, for people (info);
    without it 0, a remote-enabled log's value and the lower one, so that what recover
    removes below it the broker removes either way."""
    entry = log_start_entry(part)
    tiered = part.log_dir is not None and part.log_dir.tiered
    if tiered and (entry is not None or not local_if_unknown):
        return entry or 0
    if first_base is None:
        return entry
    return max(entry or 0, first_base)


def update_offsets(path: Path, updates: dict[tuple[str, int], int | None], *,
                   fsync: bool = True, replace_corrupt: bool = False) -> None:
    """Set (or, with None, drop) entries and rewrite the file atomically. With
    `replace_corrupt`, a file that does not parse is treated as empty, as the broker
    treats it (LogManager.loadLogs), and rewritten. A topic that breaks Kafka's topic-name
    rule is refused: its line would not parse back (a space or newline splits it)."""
    for (topic, _), value in updates.items():
        why = naming.topic_name_error(topic) if value is not None else None
        if why is not None:
            raise UsageError(f"{path}: not written: {why}")
    try:
        entries = read_offsets(path)
    except CorruptDataError:
        if not replace_corrupt:
            raise
        entries = {}
    for key, value in updates.items():
        if value is None:
            entries.pop(key, None)
        else:
            entries[key] = value
    atomic_write(path, format_offsets(entries).encode(), root=path.parent, fsync=fsync)


def suspend_clean_shutdown(log_dir: Path, *, fsync: bool = True) -> bytes | None:
    """Remove `.kafka_cleanshutdown` before files are changed in place; returns what it held
    (None when there was none), for restore_clean_shutdown once everything is consistent.
    While it is there a broker recovers nothing, so a crash mid-write with it in place would
    leave torn tails and stale indexes trusted (the broker itself deletes it at start-up)."""
    path = log_dir / naming.CLEAN_SHUTDOWN
    try:
        data = read_regular(path)
    except FileNotFoundError:
        return None
    safety.unlink(path, log_dir)
    if fsync:
        fsync_dir(log_dir)
    return data


def restore_clean_shutdown(log_dir: Path, data: bytes, *, fsync: bool = True) -> None:
    atomic_write(log_dir / naming.CLEAN_SHUTDOWN, data, root=log_dir, fsync=fsync)
