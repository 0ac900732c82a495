"""One scan of a path classifies every file once: log dirs, partition dirs, segments.

A target is a single file, a partition dir, a log dir (root files + partition dirs), or
a folder holding several log dirs (an archive). Files we do not recognise are kept in
`unknown`, to be reported, never silently ignored. A symlink named like a partition dir is
not followed; it is kept in `linked` too, so that commands that change partitions can refuse
it rather than pass over it.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafkalog_cli.codec.checkpoint import parse_offsets
from kafkalog_cli.errors import CorruptDataError, KafkalogError, LogDirIOError, UsageError
from kafkalog_cli.storage.disk import fs, naming
from kafkalog_cli.storage.disk.files import read_regular
from kafkalog_cli.storage.disk.naming import FileKind, FileName, PartitionName
from kafkalog_cli.storage.disk.segment import Segment


@dataclass
class PartitionDir:
    path: Path
    name: PartitionName | None
    segments: list[Segment] = field(default_factory=list)
    snapshots: list[int] = field(default_factory=list)  # producer snapshot offsets
    temp_files: list[FileName] = field(default_factory=list)  # .cleaned/.swap/.deleted
    orphan_indexes: list[FileName] = field(default_factory=list)
    kraft_snapshots: list[FileName] = field(default_factory=list)
    special: list[FileName] = field(default_factory=list)  # leader-epoch, partition.metadata…
    unknown: list[str] = field(default_factory=list)
    # named as a segment's file (.log, an index, a snapshot) and a directory, FIFO, socket
    # or device: (name, what it is). Never opened (a FIFO blocks); nothing changes the dir
    not_files: list[tuple[str, str]] = field(default_factory=list)
    log_dir: LogDir | None = None
    _log_bytes: int | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def log_bytes(self) -> int:
        """Its segments' `.log` bytes when the dir was listed (or, for a segment listed
        otherwise, when first asked): what progress bars and -j's planning count (each asks;
        a stat of every file each time cost more than the check of a small partition). The
        work itself reads the files as they are."""
        if self._log_bytes is None:
            self._log_bytes = sum(seg.listed_bytes if seg.listed_bytes >= 0 else seg.size
                                  for seg in self.segments)
        return self._log_bytes

    @property
    def topic(self) -> str:
        return self.name.topic if self.name else self.path.name

    @property
    def partition(self) -> int:
        return self.name.partition if self.name else -1

    @property
    def key(self) -> tuple[str, int]:
        return self.topic, self.partition

    @property
    def state(self) -> str:
        """"" for a live partition; "stray", "delete" or "future" for a dir a broker renamed
        (`<topic>-<n>.<uuid>-stray`: no longer assigned to it, deleted later; `-delete`:
        deleted, awaiting removal; `-future`: a replica moving in from another log dir)."""
        return self.name.state if self.name else ""

    @property
    def topic_error(self) -> str | None:
        """Why Kafka refuses this dir's topic name, or None. Such a partition's entry is
        written into no checkpoint: its line would not parse back."""
        return naming.topic_name_error(self.topic)

    def has(self, name: str) -> bool:
        return any(f.name == name for f in self.special)

    def rescan(self) -> PartitionDir:
        """The dir as it is now (after a change, or under a lock just taken)."""
        return scan_partition(self.path, self.log_dir)

    def refuse_if_interrupted(self) -> None:
        """Refuse to change a partition holding a .cleaned or .swap file: a segment
        replacement (a compact's, or a broker cleaner's) was cut short, and until `recover`
        (or a broker's LogLoader) finishes or undoes it, a plan made on the files that look
        current would be undone by it or collide with it. (.deleted files are harmless:
        what they held was already replaced.)"""
        for f in self.temp_files:
            if f.temp in (naming.CLEANED, naming.SWAP):
                raise KafkalogError(f"{self.path / f.name}: left by an interrupted segment "
                                    "replacement; run `kafkalog recover` first")

    def refuse_if_not_files(self) -> None:
        """Refuse to change a partition where a segment's file is a directory or a special
        file: a broker cannot load it, and a write to that name would fail half-way."""
        for name, what in self.not_files:
            raise LogDirIOError(f"{self.path / name}: {what} where Kafka keeps a segment's "
                                "file; move it out of the log dir and run again")


@dataclass
class RemoteIndexCache:
    """Tiered storage's `remote-log-index-cache/`: the indexes of remote segments a broker
    fetched (RemoteIndexCache). A cache: the broker fetches what is missing again."""

    path: Path
    files: list[FileName] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)  # directories end in "/"
    bytes: int = 0


@dataclass
class LogDir:
    path: Path
    partitions: list[PartitionDir] = field(default_factory=list)
    root_files: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    bad_dirs: list[str] = field(default_factory=list)  # subdirs Kafka cannot parse
    linked: list[PartitionDir] = field(default_factory=list)  # symlinks named <topic>-<n>
    remote_index_cache: RemoteIndexCache | None = None
    _checkpoints: dict[str, dict[tuple[str, int], int] | CorruptDataError] = field(
        default_factory=dict)
    _tiered: bool | None = field(default=None, repr=False, compare=False)

    @property
    def tiered(self) -> bool:
        """Whether the broker runs with tiered storage: it keeps a remote-log-index-cache/
        here. A log dir opened as a partition's parent (parent_log_dir) was not listed, so
        it looks, once."""
        if self.remote_index_cache is not None:
            return True
        if self._tiered is None:
            self._tiered = (self.path / naming.REMOTE_INDEX_CACHE).is_dir()
        return self._tiered

    def checkpoint(self, name: str) -> dict[tuple[str, int], int] | None:
        """A root offset checkpoint as a map; None if absent. Raises if it does not parse."""
        if name not in self._checkpoints:
            p = self.path / name
            if not p.exists():
                return None
            try:
                self._checkpoints[name] = parse_offsets(read_regular(p))
            except (CorruptDataError, OSError, LogDirIOError) as e:
                err = e if isinstance(e, CorruptDataError) else CorruptDataError(str(e))
                self._checkpoints[name] = err.located(str(p), 0)
        v = self._checkpoints[name]
        if isinstance(v, CorruptDataError):
            raise v
        return v


_listed: dict[str, list[os.DirEntry[str]]] | None = None  # while listings_shared() runs


@contextlib.contextmanager
def listings_shared() -> Iterator[None]:
    """Within it, a directory listed again is not read again: the format probes list every
    partition dir of a log dir, then the scan of the format found lists each once more
    (on 2 000 small partitions the second listing was a fifth of `info`'s scan). Only for
    the span of one look at a path: the lists (read-only to callers) go with it."""
    global _listed
    outer = _listed
    if outer is None:
        _listed = {}
    try:
        yield
    finally:
        _listed = outer


def listdir(path: fs.FilePath) -> list[os.DirEntry[str]]:
    """`path`'s entries by name; shared by its text (hashing a Path costs more than listing
    a small dir), a str where the caller has no Path."""
    listed = _listed
    key = str(path) if listed is not None else ""  # an object's: its URL
    if listed is not None and (entries := listed.get(key)) is not None:
        return entries
    try:
        entries = fs.listdir(path)
    except OSError as e:
        raise LogDirIOError(f"{path}: cannot list directory: {e.strerror}") from None
    if listed is not None:
        listed[key] = entries
    return entries


def _special(entry: os.DirEntry[str]) -> str:
    """What `entry` is when a FIFO, socket or device (or a link to one) where a file would
    be, else ""."""
    try:
        mode = entry.stat().st_mode
    except OSError:
        return ""  # a dangling link: reading it fails with one clear error
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else ""


def _listed_size(entry: os.DirEntry[str]) -> int:
    try:
        return entry.stat().st_size  # one syscall on the entry: no Path is built
    except OSError:
        return -1  # read as it is when asked


def scan_partition(path: Path, log_dir: LogDir | None = None,
                   name: PartitionName | None = None) -> PartitionDir:
    """`name`: the dir's name parsed already (the log dir's scan has it), else parsed here."""
    part = PartitionDir(path, name or naming.parse_partition_dir(path.name), log_dir=log_dir)
    segs: dict[int, Segment] = {}
    index_files: list[FileName] = []
    for entry in listdir(path):
        fn = naming.parse_file_name(entry.name)
        if entry.is_dir(follow_symlinks=False):
            if fn.kind is FileKind.SEGMENT:
                part.not_files.append((entry.name, "a directory"))
            else:
                part.unknown.append(entry.name + "/")
            continue
        if not entry.is_file() and (what := _special(entry)):  # reading it could block
            if fn.kind is FileKind.SEGMENT:
                part.not_files.append((entry.name, what))
            else:
                part.unknown.append(entry.name)
            continue
        if fn.kind is FileKind.SEGMENT:
            assert fn.offset is not None
            if fn.temp:
                part.temp_files.append(fn)
            elif fn.suffix == naming.SNAPSHOT:
                part.snapshots.append(fn.offset)
            elif fn.suffix == naming.LOG:
                seg = segs.setdefault(fn.offset, Segment(path, fn.offset))
                seg.has_log = True
                seg.listed_bytes = _listed_size(entry)
            else:
                index_files.append(fn)
        elif fn.kind in (FileKind.KRAFT_SNAPSHOT, FileKind.KRAFT_SNAPSHOT_PART):
            part.kraft_snapshots.append(fn)
        elif fn.kind in (FileKind.LEADER_EPOCH, FileKind.PARTITION_METADATA,
                         FileKind.QUORUM_STATE):
            part.special.append(fn)
        else:
            part.unknown.append(entry.name)
    for fn in index_files:
        owner = segs.get(fn.offset) if fn.offset is not None else None
        if owner is None:
            part.orphan_indexes.append(fn)
            continue
        if fn.suffix == naming.INDEX:
            owner.has_index = True
        elif fn.suffix == naming.TIMEINDEX:
            owner.has_timeindex = True
        else:
            owner.has_txnindex = True
    part.segments = [segs[k] for k in sorted(segs)]
    return part


def _looks_like_log_dir(path: Path, entries: list[os.DirEntry[str]]) -> bool:
    names = {e.name for e in entries}
    if names & set(naming.ROOT_FILES):
        return True
    return any(e.is_dir(follow_symlinks=False) and naming.parse_partition_dir(e.name)
               and _holds_segments(path / e.name) for e in entries)


def _holds_segments(path: Path) -> bool:
    try:
        return any(naming.parse_file_name(e.name).kind is FileKind.SEGMENT
                   for e in fs.listdir(path))
    except OSError:
        return False


def scan_remote_index_cache(path: Path) -> RemoteIndexCache:
    cache = RemoteIndexCache(path)
    for entry in listdir(path):
        fn = naming.parse_file_name(entry.name)
        if entry.is_dir(follow_symlinks=False):
            cache.unknown.append(entry.name + "/")
        elif fn.kind is FileKind.REMOTE_INDEX and entry.is_file(follow_symlinks=False):
            cache.files.append(fn)
            cache.bytes += entry.stat(follow_symlinks=False).st_size
        else:
            cache.unknown.append(entry.name)
    return cache


def scan_log_dir(path: Path) -> LogDir:
    ld = LogDir(path)
    for entry in listdir(path):
        if entry.is_dir(follow_symlinks=False):
            if entry.name == naming.REMOTE_INDEX_CACHE:
                ld.remote_index_cache = scan_remote_index_cache(path / entry.name)
                continue
            name = naming.parse_partition_dir(entry.name)
            if name is None:
                ld.bad_dirs.append(entry.name)
                continue
            ld.partitions.append(scan_partition(path / entry.name, ld, name))
        elif not entry.is_file() and _special(entry):  # never read: it could block
            ld.unknown.append(entry.name)
        elif entry.is_symlink() and (name := naming.parse_partition_dir(entry.name)):
            ld.linked.append(PartitionDir(path / entry.name, name, log_dir=ld))
            ld.unknown.append(entry.name)
        elif entry.name in naming.ROOT_FILES or entry.name.endswith(".tmp") or \
                entry.name == "bootstrap.checkpoint":
            ld.root_files.append(entry.name)
        else:
            ld.unknown.append(entry.name)
    ld._tiered = ld.remote_index_cache is not None  # listed: no need to look again
    return ld


@dataclass
class Target:
    """What a PATH argument names."""

    path: Path
    kind: str  # "file", "partition", "logdir", "archive"
    log_dirs: list[LogDir] = field(default_factory=list)
    partition: PartitionDir | None = None

    @property
    def format(self) -> Any:
        from kafkalog_cli.storage.formats.current import FORMAT

        return FORMAT

    def partitions(self, *, linked: bool = False) -> list[PartitionDir]:
        """With `linked`, also the symlinks named like partition dirs in its log dirs (for
        the commands that change partitions: they refuse those)."""
        if self.partition is not None:
            return [self.partition]
        return [p for ld in self.log_dirs
                for p in ld.partitions + (ld.linked if linked else [])]


def require_exists(path: str | Path) -> None:
    """A PATH that does not exist is operational, as fsck(8) treats what it cannot open (8);
    one that exists but holds no Kafka data is a usage error (16)."""
    p = fs.as_path(path)
    if not p.exists():
        if fs.is_remote(p):
            raise LogDirIOError(f"{p}: no such bucket, object or prefix")
        dangling = " (a symlink to nothing)" if p.is_symlink() else ""
        raise LogDirIOError(f"{p}: no such file or directory{dangling}")


def parent_log_dir(pdir: Path) -> LogDir | None:
    """The log dir holding partition dir `pdir`, when its parent has a log dir's root files
    (its checkpoints say, e.g., where recovery starts)."""
    parent = pdir.parent
    return LogDir(parent) if any((parent / n).exists() for n in naming.ROOT_FILES) else None


def open_target(path: str | Path) -> Target:
    """`path` may be a URL (s3://…, fs.py): the same scan, by listing prefixes."""
    p = fs.as_path(path)
    require_exists(p)
    if p.is_file():
        return Target(p, "file")
    if not p.is_dir():
        raise UsageError(f"{p}: not a regular file or directory")
    entries = listdir(p)
    if any(naming.parse_file_name(e.name).kind in (FileKind.SEGMENT, FileKind.KRAFT_SNAPSHOT)
           for e in entries if e.is_file()):
        return Target(p, "partition", partition=scan_partition(p, parent_log_dir(p)))
    if _looks_like_log_dir(p, entries):
        return Target(p, "logdir", [scan_log_dir(p)])
    # a folder of log dirs (an archive): look one and two levels down
    found: list[LogDir] = []
    for e in entries:
        if e.is_dir(follow_symlinks=False):
            sub = p / e.name
            sub_entries = listdir(sub)
            if _looks_like_log_dir(sub, sub_entries):
                found.append(scan_log_dir(sub))
    if found:
        return Target(p, "archive", found)
    if naming.parse_partition_dir(p.name):
        return Target(p, "partition", partition=scan_partition(p))
    raise UsageError(f"{p}: not a Kafka log dir, partition dir or segment file")
