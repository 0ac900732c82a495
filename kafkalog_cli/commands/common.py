"""Helpers that several commands share: partitions of a target, the log-dir lock, and the
checks that come before a command changes anything."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from kafkalog_cli.errors import UsageError
from kafkalog_cli.output.console import warn
from kafkalog_cli.storage.disk.lock import LogDirLock
from kafkalog_cli.storage.disk.logdir import PartitionDir, Target, open_target, scan_partition
from kafkalog_cli.storage.disk.naming import LOCK
from kafkalog_cli.storage.maintenance.quarantine import Quarantine
from kafkalog_cli.storage.disk.safety import refuse_links


def partitions_of(paths: tuple[str, ...]
                  ) -> list[tuple[Target, list[PartitionDir], set[int] | None]]:
    """Each PATH as (target, its partitions, chosen segment bases or None for all)."""
    out = []
    for p in paths:
        t = open_target(p)
        if t.kind == "file":
            from kafkalog_cli.storage.disk import naming
            from kafkalog_cli.storage.disk.logdir import scan_partition

            fn = naming.parse_file_name(t.path.name)
            if fn.kind is not naming.FileKind.SEGMENT or fn.offset is None or fn.temp:
                raise UsageError(f"{t.path}: name a segment file, a partition dir or a log dir")
            out.append((t, [scan_partition(t.path.parent)], {fn.offset}))
        else:
            out.append((t, t.partitions(linked=True), None))
    return out


def lock_dirs(parts: list[PartitionDir], stack: ExitStack, *, dry_run: bool = False,
              interrupted_ok: bool = False, writes: tuple[str, ...] = ()) -> list[PartitionDir]:
    """Take `.lock` in each log dir that holds one of `parts` (the dir a broker locks), then
    scan them again: what another run changed before the lock was ours is what counts.
    A dry run takes no lock (it warns when another process holds one) and keeps the scan.
    Unless `interrupted_ok` (recover, whose job they are), a partition with .cleaned/.swap
    files is refused. Before anything changes (and again under the lock), a partition dir
    that is a symlink or holds one is refused, and so are `.lock` and the root files the
    command `writes` (and their `.tmp`) when they are symlinks: a dry run says so too."""
    roots = dict.fromkeys(part.path.parent.resolve() for part in parts)
    _refuse_links(parts, roots, writes)
    if dry_run:
        for root in roots:
            if LogDirLock(root).held_elsewhere():
                warn(f"{root / LOCK}: held by another process (a running broker?): what "
                     "this dry run reports may change under it")
        return _refuse_interrupted(parts, interrupted_ok)
    for root in roots:
        stack.enter_context(LogDirLock(root))
    _refuse_links(parts, roots, writes)
    return _refuse_interrupted([scan_partition(p.path, p.log_dir) for p in parts],
                               interrupted_ok)


def _refuse_links(parts: list[PartitionDir], roots: dict[Path, None],
                  writes: tuple[str, ...]) -> None:
    for root in roots:
        refuse_links(root, (LOCK, *writes, *(name + ".tmp" for name in writes)))
    for part in parts:
        refuse_links(part.path)


def quarantines(parts: list[PartitionDir], where: Path | None, *, enabled: bool = True,
                log_dirs: Iterable[Path] = ()) -> dict[Path, Quarantine]:
    """One quarantine per log dir of `parts` and per (resolved) path in `log_dirs` (a command
    that also changes a log dir's own files), made (and its place checked) before any change."""
    qs = {root: Quarantine(root, where, enabled=enabled)
          for root in dict.fromkeys([*(p.path.parent.resolve() for p in parts), *log_dirs])}
    for q in qs.values():
        q.reserve()  # one run folder, whichever worker process (-j) quarantines first
    return qs


def _refuse_interrupted(parts: list[PartitionDir], ok: bool) -> list[PartitionDir]:
    if not ok:
        for part in parts:
            part.refuse_if_interrupted()
    return parts


def partition_fields(part: PartitionDir) -> dict[str, Any]:
    """How machine output names a partition: topic, partition number, and its dir."""
    return {"topic": part.topic, "partition": part.partition, "path": str(part.path)}


def partition_bytes(parts: list[PartitionDir]) -> int:
    """Total `.log` bytes: what progress bars count."""
    return sum(seg.size for part in parts for seg in part.segments)


def ticked(advance: Callable[[int], None]) -> Callable[[PartitionDir], None]:
    """What advances the progress bar once a partition's work is done (parallel.ordered's
    `done`)."""
    return lambda part: advance(sum(seg.size for seg in part.segments))


def ticking(parts: list[PartitionDir], advance: Callable[[int], None]) -> Iterator[PartitionDir]:
    """Yield each partition, advancing the progress bar once its work is done."""
    for part in parts:
        size = sum(seg.size for seg in part.segments)
        yield part
        advance(size)
