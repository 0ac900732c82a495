"""Kafka's segment replacement protocol (LocalLog.replaceSegments) and its crash recovery
(LogLoader's first passes). recover, retain and compact all go through here.

Replace old segments by new ones, crash-safe at every step:
  1. the caller has written the new segments as `<base>.<suffix>.cleaned` and fsynced them
  2. rename `.cleaned` -> `.swap`, new segments in DESCENDING base order; fsync the dir
     (crash before: loader deletes the .cleaned files, the old segments stay)
  3. rename every old segment's files to `.deleted`
     (crash from here: loader finishes the swap, see below)
  4. strip `.swap`, new segments in ASCENDING base order; fsync the dir
  5. remove the `.deleted` files (into the quarantine)

Load-time passes, in LogLoader order (KAFKA-6264 explains step b):
  a. remove `*.deleted` (not `*.checkpoint.deleted`); note every `.cleaned` and `.swap`
  b. a `.swap` whose offset is >= the smallest `.cleaned` offset belongs to an unfinished
     split: remove it; then remove every `.cleaned`
  c. for the remaining `.log.swap` files: minSwap = min(base), maxSwap = max(next offset)
  d. remove every non-swap file whose offset is in [minSwap, maxSwap)
  e. strip `.swap` from every remaining swap file
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kafkalog_cli.storage.disk import naming, safety
from kafkalog_cli.storage.disk.files import fsync_dir
from kafkalog_cli.storage.disk.segment import iter_batches
from kafkalog_cli.storage.drills.faults import crash_point
from kafkalog_cli.storage.maintenance.quarantine import Quarantine

SEGMENT_FILE_KINDS = (naming.LOG, naming.INDEX, naming.TIMEINDEX, naming.TXNINDEX)


def _rename(src: Path, dst: Path, step: str) -> None:
    crash_point(step + ".before")
    safety.rename(src, dst, src.parent.parent)  # within a partition dir of the log dir
    crash_point(step + ".after")


# why a `.deleted` file a stopped run left is removed (as the broker's load removes it)
UNFINISHED_DELETION = "left by a deletion that did not finish"


def to_deleted(p: Path, quarantine: Quarantine | None, step: str) -> None:
    """Rename segment file `p` to `.deleted`. A `.deleted` file of that name already there
    (an earlier run stopped between its rename and its removal) goes to the quarantine
    first: the rename would otherwise replace it, and the original bytes it holds with it."""
    dst = p.with_name(p.name + naming.DELETED)
    if os.path.lexists(dst):
        if quarantine is not None:
            quarantine.remove(dst, UNFINISHED_DELETION)
        else:
            safety.unlink(dst, p.parent.parent)
    _rename(p, dst, step)


def replace_segments(directory: Path, new_bases: list[int], old_bases: list[int],
                     quarantine: Quarantine, *, fsync: bool = True) -> None:
    """Steps 2-5 above; new segments already exist as `.cleaned` files."""
    def files(base: int, temp: str) -> list[tuple[Path, Path]]:
        out = []
        for kind in SEGMENT_FILE_KINDS:
            p = directory / naming.segment_file_name(base, kind, temp)
            if p.exists():
                out.append((p, directory / naming.segment_file_name(base, kind)))
        return out

    for base in sorted(new_bases, reverse=True):
        for p, plain in files(base, naming.CLEANED):
            _rename(p, plain.with_name(plain.name + naming.SWAP), "replace.cleaned-to-swap")
    if fsync:
        fsync_dir(directory)
    crash_point("replace.swapped")
    for base in old_bases:
        # a replaced segment's producer snapshot goes with it, unless a new segment starts there
        kinds = SEGMENT_FILE_KINDS + ((naming.SNAPSHOT,) if base not in new_bases else ())
        for kind in kinds:
            p = directory / naming.segment_file_name(base, kind)
            if p.exists():
                to_deleted(p, quarantine, "replace.old-to-deleted")
    for base in sorted(new_bases):
        for p, plain in files(base, naming.SWAP):
            _rename(p, plain, "replace.strip-swap")
    if fsync:
        fsync_dir(directory)
    crash_point("replace.renamed")
    for base in old_bases:
        for kind in (*SEGMENT_FILE_KINDS, naming.SNAPSHOT):
            p = directory / naming.segment_file_name(base, kind, naming.DELETED)
            if p.exists():
                quarantine.remove(p, "replaced segment")


@dataclass
class LoaderAction:
    action: str  # "remove" or "rename"
    path: Path
    to: Path | None
    reason: str


def plan_temp_file_passes(directory: Path) -> list[LoaderAction]:
    """Passes a-e above as a list of actions, computed without changing anything."""
    names = sorted(p.name for p in directory.iterdir() if p.is_file())
    actions: list[LoaderAction] = []
    cleaned: list[tuple[int, str]] = []
    swaps: list[tuple[int, str]] = []
    for name in names:
        fn = naming.parse_file_name(name)
        if fn.kind is not naming.FileKind.SEGMENT or fn.offset is None:
            continue
        if fn.temp == naming.DELETED:
            actions.append(LoaderAction("remove", directory / name, None,
                                        UNFINISHED_DELETION))
        elif fn.temp == naming.CLEANED:
            cleaned.append((fn.offset, name))
        elif fn.temp == naming.SWAP:
            swaps.append((fn.offset, name))
    min_cleaned = min((o for o, _ in cleaned), default=None)
    valid_swaps = []
    for off, name in swaps:
        if min_cleaned is not None and off >= min_cleaned:
            actions.append(LoaderAction("remove", directory / name, None,
                                        "swap file of an unfinished split (KAFKA-6264)"))
        else:
            valid_swaps.append((off, name))
    for _off, name in cleaned:
        actions.append(LoaderAction("remove", directory / name, None,
                                    "cleaned file of a replacement that never reached .swap"))
    log_swaps = [(o, n) for o, n in valid_swaps if n.endswith(naming.LOG + naming.SWAP)]
    if log_swaps:
        min_swap = min(o for o, _ in log_swaps)
        max_swap = max(next_offset(directory / n, o) for o, n in log_swaps)
        swap_names = {n for _, n in valid_swaps}
        for name in names:
            fn = naming.parse_file_name(name)
            if name in swap_names or fn.offset is None or fn.temp == naming.SWAP:
                continue
            if fn.temp in (naming.DELETED, naming.CLEANED):
                continue
            if fn.kind is naming.FileKind.SEGMENT and min_swap <= fn.offset < max_swap:
                actions.append(LoaderAction("remove", directory / name, None,
                                            "replaced by a finished swap"))
    removed = {a.path.name for a in actions if a.action == "remove"}
    for _off, name in valid_swaps:
        target = name[:-len(naming.SWAP)]
        if target in names and target not in removed:
            # a swap holding no records spans [base, base): the range rule removed nothing,
            # so the file its rename would replace is removed (quarantined) first
            actions.append(LoaderAction("remove", directory / target, None,
                                        "replaced by a finished swap"))
        actions.append(LoaderAction("rename", directory / name, directory / target,
                                    "complete an interrupted replacement"))
    return actions


def next_offset(log: Path, base: int) -> int:
    last = None
    for _pos, b in iter_batches(log):
        last = b.last_offset
    return base if last is None else last + 1


def apply_loader_actions(actions: list[LoaderAction], quarantine: Quarantine,
                         *, fsync: bool = True,
                         on_action: Callable[[LoaderAction], None] | None = None) -> None:
    dirs = set()
    for a in actions:
        if on_action:
            on_action(a)
        if a.action == "remove":
            quarantine.remove(a.path, a.reason)
        else:
            assert a.to is not None
            _rename(a.path, a.to, "loader.strip-swap")
        dirs.add(a.path.parent)
    if fsync:
        for d in dirs:
            fsync_dir(d)
