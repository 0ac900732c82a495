"""Before a command changes partitions: the log dirs' `.lock`, a fresh scan under it, the
refusals (symlinks, interrupted replacements) and one quarantine per log dir. Partitions of
every format (each rescans itself)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from kafkalog_cli.errors import KafkalogError
from kafkalog_cli.storage.disk.lock import LogDirLock
from kafkalog_cli.storage.disk.logdir import PartitionDir
from kafkalog_cli.storage.disk.naming import LOCK
from kafkalog_cli.storage.disk.safety import refuse_links
from kafkalog_cli.storage.maintenance.quarantine import Quarantine


def lock_dirs(parts: list[Any], stack: ExitStack, *, dry_run: bool = False,
              interrupted_ok: bool = False, writes: tuple[str, ...] = (),
              warn: Callable[[str], None] = lambda _msg: None) -> list[Any]:
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
        return _refusals(parts, interrupted_ok)
    for root in roots:
        stack.enter_context(LogDirLock(root))
    _refuse_links(parts, roots, writes)
    return _refusals([p.rescan() for p in parts],
                               interrupted_ok)


def _refuse_links(parts: list[Any], roots: dict[Path, None],
                  writes: tuple[str, ...]) -> None:
    for root in roots:
        refuse_links(root, (LOCK, *writes, *(name + ".tmp" for name in writes)))
    for part in parts:
        refuse_links(part.path)


def quarantines(parts: list[Any], where: Path | None, *, enabled: bool = True,
                log_dirs: Iterable[Path] = ()) -> dict[Path, Quarantine]:
    """One quarantine per log dir of `parts` and per (resolved) path in `log_dirs` (a command
    that also changes a log dir's own files), made (and its place checked) before any change."""
    qs = {root: Quarantine(root, where, enabled=enabled)
          for root in dict.fromkeys([*(p.path.parent.resolve() for p in parts), *log_dirs])}
    for q in qs.values():
        q.reserve()  # one run folder, whichever worker process (-j) quarantines first
    return qs


def _refusals(parts: list[Any], ok: bool) -> list[Any]:
    """Two dirs of one topic-partition, an interrupted replacement (unless `ok`), a
    segment's file that is not a file: each refused before anything changes."""
    seen: dict[tuple[Path, Any], Path] = {}
    for part in parts:
        if isinstance(part, PartitionDir) and part.name is not None and not part.state:
            other = seen.setdefault((part.path.parent.resolve(), part.key), part.path)
            if other != part.path:  # s-0 and s-00: whose checkpoint entries would these be?
                raise KafkalogError(f"{part.path}: the same topic-partition as {other} (a "
                                    "broker refuses to start on both); move one out of the "
                                    "log dir and run again")
    for part in parts:
        if not ok:
            part.refuse_if_interrupted()
        if isinstance(part, PartitionDir):  # 0.7's partitions have no such names
            part.refuse_if_not_files()
    return parts
