"""The formats a log dir can hold, in one model: a target's format is found from its files
and is a property of what `open_target` returns (as Kafka's LogSegment reads every magic,
and kafka-python's MemoryRecords dispatches on the magic byte).

  current  `<base offset>.log` segments of magic 0, 1 and 2 batches (one segment may mix
           magics, as after an upgrade), addressed by logical offset, with indexes,
           checkpoints, producer snapshots and timestamps (magic >= 1)
  0.7      `<byte offset>.kafka` segments of 0.7 entries, addressed by the byte offset of
           an entry in the partition's stream; no indexes, checkpoints, keys or timestamps;
           recovery reads the newest segment only (formats/kafka07/)

What differs sits behind `LogFormat`: names and what an offset means (a byte position), the
framing (each format's scanner), what recovery truncates (each format's plan), which
indexes and fields exist (`has_keys`; find-by-time's `list_offsets` refuses time queries
where there are no timestamps). The commands open targets here and call the format's
operations; none asks which format a path holds.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from kafkalog_cli.codec import compression
from kafkalog_cli.errors import UsageError
from kafkalog_cli.storage.disk import fs
from kafkalog_cli.storage.maintenance.log_config import LogConfig

Row = dict[str, Any]


NO_TIMESTAMP = -1


@dataclass
class MigrateOptions:
    """How `migrate` writes an older format's partitions as current ones."""

    start_offset: int = 0
    codec: int | None = None  # None: keep each entry's codec
    batch_records: int = 500
    batch_bytes: int = 1024 * 1024
    timestamp: int = NO_TIMESTAMP
    timestamp_from_mtime: bool = False  # each message gets its segment file's mtime
    leader_epoch: int = 0
    config: LogConfig = field(default_factory=LogConfig)
    max_decompressed: int = compression.DEFAULT_MAX_DECOMPRESSED
    topic_id: str | None = None


class LogFormat(Protocol):
    """One on-disk format: what a target of it is, and each command's work on it. Targets
    and partitions are the format's own types (disk/logdir.py, kafka07/layout.py)."""

    @property
    def name(self) -> str: ...  # machine output's `format`, generate's --format

    @property
    def has_keys(self) -> bool: ...  # keys and producer ids (dump's --key, --producer-id)

    @property
    def damage_kinds(self) -> tuple[str, ...]: ...  # generate --damage

    def find(self, path: Path) -> Any | None:
        """The target PATH names if it holds this format's data, else None."""

    def partitions(self, target: Any, linked: bool = False) -> list[Any]:
        """The target's partitions (with `linked`, the symlinks named like one too)."""

    def check(self, target: Any, f: Any, opts: Any, stats: Any,
              advance: Callable[[int], None] | None = None, ordered: Any = None) -> None:
        """verify: every finding of the target into `f` (partitions through `ordered`, the
        command's -j map, where the format can)."""

    def info(self, target: Any, ordered: Any = None) -> list[Row]:
        """info: the target's entries, each with a row per partition."""

    def list_offsets(self, part: Any, when: int | str) -> Any:
        """find-by-time: ListOffsets's answer (refused where the format has no such thing)."""

    def row_kinds(self, target: Any, records: bool, batches: bool) -> list[str]:
        """The kinds of rows dumping the target can print."""

    def dump(self, target: Any, sink: Any) -> None:
        """dump: the target's rows into the dump command's sink."""

    def recover(self, targets: list[Any], o: Any, stack: ExitStack, progress: Any) -> Any:
        """recover: planned, applied under the lock, then verified (an Outcome)."""

    def migration_source(self, t: Any) -> list[Any]:
        """migrate: the partitions to convert to the current format (each has `migrate`)."""

    def generate(self, out: Path, *, preset: str | None, damages: tuple[str, ...],
                 topics: tuple[str, ...], partitions: int, records: int, batch_records: int,
                 value_bytes: int, keys: int, tombstones: float, codecs: tuple[str, ...],
                 magic: int, transactions: bool, idempotent: bool, jitter_ms: int,
                 segment_bytes: int, seed: int) -> list[str]:
        """generate: a seeded log dir of this format; notes of what was done."""


def formats() -> tuple[LogFormat, ...]:
    """In the order a path is tried: 0.7 first (its `.kafka` names are unambiguous), then
    the current format, which claims every other path (and refuses what holds no data)."""
    from kafkalog_cli.storage.formats import current, kafka07

    return kafka07.FORMAT, current.FORMAT


def open_target(path: str | Path) -> Any:
    """What PATH names, with its `format`. A URL (storage/disk/fs.py) holds current-format
    data only: Kafka 0.7 archives are read from local disk."""
    from kafkalog_cli.storage.disk.logdir import listings_shared

    p = fs.as_path(path)
    with listings_shared():  # each format's probe lists the same dirs
        for fmt in formats():
            if fs.is_remote(p) and fmt.name != "current":
                continue
            t = fmt.find(p)
            if t is not None:
                return t
    raise AssertionError("the current format claims every path")  # pragma: no cover


def open_targets(paths: tuple[str, ...] | list[str]) -> list[Any]:
    """Every PATH resolved before the first row is printed; one format for all of them."""
    ts = [open_target(p) for p in paths]
    names = {t.format.name for t in ts}
    if len(names) > 1:
        first = ts[0].format.name
        other = ", ".join(p for p, t in zip(paths, ts, strict=True) if t.format.name != first)
        raise UsageError(f"{other}: not Kafka {first} data, while {ts[0].path} is; run the "
                         "command on each kind of path separately")
    return ts
