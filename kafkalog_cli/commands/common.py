"""Helpers that several commands share: partitions of a target, the log-dir lock, and the
checks that come before a command changes anything."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack
from typing import Any, TypeVar

from kafkalog_cli.output.console import warn
from kafkalog_cli.storage.disk.logdir import PartitionDir, Target, open_target
from kafkalog_cli.storage.formats.current import segment_target

T = TypeVar("T")


def partitions_of(paths: tuple[str, ...]
                  ) -> list[tuple[Target, list[PartitionDir], set[int] | None]]:
    """Each PATH as (target, its partitions, chosen segment bases or None for all)."""
    out: list[tuple[Target, list[PartitionDir], set[int] | None]] = []
    for t in map(open_target, paths):
        if t.kind == "file":
            part, base = segment_target(t)
            out.append((t, [part], {base}))
        else:
            out.append((t, t.partitions(linked=True), None))
    return out


def runs(targets: list[T], joins: Callable[[T], bool]) -> list[list[T]]:
    """`targets` in order, consecutive ones that `joins` as one run, others alone: the
    partition dirs of a glob (`verify /var/lib/kafka/orders-*`) are then one set of items
    for -j, not one command's worth of work after another."""
    out: list[list[T]] = []
    for t in targets:
        if out and joins(t) and joins(out[-1][-1]):
            out[-1].append(t)
        else:
            out.append([t])
    return out


def lock_dirs(parts: list[PartitionDir], stack: ExitStack, **kw: Any) -> list[PartitionDir]:
    """storage's lock_dirs, a dry run's warning on stderr."""
    from kafkalog_cli.storage.maintenance import guard  # commands that change a dir only

    return guard.lock_dirs(parts, stack, warn=warn, **kw)


def partition_fields(part: PartitionDir) -> dict[str, Any]:
    """How machine output names a partition: topic, partition number, and its dir."""
    return {"topic": part.topic, "partition": part.partition, "path": str(part.path)}


def copy_skipped(part: PartitionDir, whose: str) -> str:
    """Why a mutating command leaves a -delete, -stray or -future dir alone: a broker runs
    `whose` (retention, the cleaner) on the live partition's dir only, and the checkpoints'
    entry for the topic-partition is the live one's."""
    return (f"a copy of the partition (deleted, stray or moving) whose dir name ends "
            f"-{part.state}: {whose} is the live partition's")


def partition_bytes(parts: list[PartitionDir]) -> int:
    """Total `.log` bytes: what progress bars count."""
    return sum(part.log_bytes for part in parts)


def ticked(advance: Callable[[int], None]) -> Callable[[PartitionDir], None]:
    """What advances the progress bar once a partition's work is done (parallel.ordered's
    `done`)."""
    return lambda part: advance(part.log_bytes)
