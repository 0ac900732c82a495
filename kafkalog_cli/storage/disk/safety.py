"""Mutations stay inside the log dir: never through a symlink, never outside the tree.

Every path a mutating command writes, renames, creates or removes goes through here:
  1. `ensure_mutable(path, root)`: the path resolves inside the log dir `root` and is no
     symlink itself (its directory may be reached through the log dir's own link)
  2. files are opened with O_NOFOLLOW, so a link planted after the check fails the open
  3. temp files (`*.tmp`, `*.cleaned`) are created with O_EXCL once a stale one is removed
     (unlinking a link removes the link, never its target)
  4. renames check their source and their destination
Before the first change, commands refuse what they would otherwise meet half way
(`refuse_links`, `refuse_link`): a partition dir that is a symlink or holds one, a `.lock`,
checkpoint or checkpoint `.tmp` they write that is a symlink. Kafka never creates a link in
a log dir, so one there is someone's doing and needs a look, not a guess.
The one sanctioned place outside is the quarantine folder (quarantine.py).
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO, Literal, cast

from kafkalog_cli.errors import KafkalogError

_MODES: dict[str, tuple[int, str]] = {
    "append": (os.O_WRONLY | os.O_APPEND | os.O_CREAT, "ab"),
    "update": (os.O_RDWR | os.O_CREAT, "r+b"),  # keep the bytes (an index grown in place)
    "existing": (os.O_RDWR, "r+b"),  # a file that must be there (truncating a log)
    "replace": (os.O_WRONLY | os.O_CREAT | os.O_TRUNC, "wb"),
    "temp": (os.O_WRONLY | os.O_CREAT | os.O_EXCL, "wb"),  # after removing a stale one
}
Mode = Literal["append", "update", "existing", "replace", "temp"]


class UnsafePath(KafkalogError):
    """A change would go through a symlink or land outside the log dir (exit 8)."""


def _link_error(path: Path) -> UnsafePath:
    try:
        to = f" (to {os.readlink(path)})"
    except OSError:
        to = ""
    return UnsafePath(f"{path}: is a symlink{to}; kafkalog changes nothing through a link "
                      "(put the real file or directory in its place, or move the link out of "
                      "the log dir)")


def refuse_link(path: Path) -> None:
    """Refuse, before any change, a path the command will write that is a symlink."""
    if os.path.islink(path):
        raise _link_error(path)


def refuse_links(directory: Path, names: Iterable[str] | None = None) -> None:
    """Refuse a partition dir that is a symlink or holds one (`names` None), or the given
    entries of a directory (the log dir's root files) that are symlinks."""
    if names is not None:
        for name in names:
            refuse_link(directory / name)
        return
    refuse_link(directory)
    try:
        with os.scandir(directory) as it:
            links = sorted(e.name for e in it if e.is_symlink())
    except FileNotFoundError:
        return  # a partition dir append is about to create
    if links:
        raise _link_error(directory / links[0])


def within(path: Path | str, root: Path | str) -> bool:
    """Whether `path` is `root` or lies under it, both with their links resolved."""
    real, top = os.path.realpath(path), os.path.realpath(root)
    return os.path.commonpath([real, top]) == top


def _inside(path: Path, root: Path) -> None:
    if not within(path, root):
        real, top = os.path.realpath(path), os.path.realpath(root)
        raise UnsafePath(f"{path}: resolves to {real}, outside the log dir {top}; refusing to "
                         "change it")


def ensure_mutable(path: Path, root: Path) -> None:
    """Refuse to change `path` if it is a symlink or resolves outside `root`."""
    if os.path.islink(path):
        raise _link_error(path)
    _inside(path, root)


def open_file(path: Path, root: Path, mode: Mode) -> BinaryIO:
    """`path` opened for writing, never through a link; "temp" first removes a stale file
    (or link) of that name and then creates it exclusively."""
    if mode == "temp":
        _inside(path.parent, root)
        remove_stale(path, root)
    else:
        ensure_mutable(path, root)
    flags, fmode = _MODES[mode]
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as e:
        if e.errno == errno.ELOOP:  # a link planted since the check
            raise _link_error(path) from None
        raise
    return cast(BinaryIO, os.fdopen(fd, fmode))


def remove_stale(path: Path, root: Path) -> None:
    """Remove a leftover temp file; a link is removed itself, its target is left alone."""
    _inside(path.parent, root)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def unlink(path: Path, root: Path) -> None:
    ensure_mutable(path, root)
    os.unlink(path)


def rename(src: Path, dst: Path, root: Path) -> None:
    """Rename within the log dir; neither end may be a link or lie outside."""
    ensure_mutable(src, root)
    ensure_mutable(dst, root)
    os.rename(src, dst)


def mkdir(path: Path, root: Path) -> None:
    """Create a directory in the log dir (mkdir never follows a link at `path`)."""
    _inside(path.parent, root)
    os.mkdir(path)


def set_mtime(path: Path, root: Path, mtime: float) -> None:
    ensure_mutable(path, root)
    os.utime(path, (mtime, mtime), follow_symlinks=False)
