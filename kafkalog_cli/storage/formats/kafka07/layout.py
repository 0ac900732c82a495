"""Kafka 0.7 partitions on disk: file and dir names, and what a path holds.

Layout (0.7.x `kafka.log.Log`, `LogManager`):
  <log dir>/<topic>-<partition>/<start, 20 digits>.kafka   segments, nothing else
  <log dir>/.kafka_cleanshutdown                           written at a clean shutdown
* A segment's name is the byte offset of its first entry in the partition's stream; 0.7
  parses it with `Long.parseLong` (any width) and writes it 20 digits wide (nameFromOffset).
* Log.validateSegments refuses to load a partition unless each segment starts where the
  previous one ends (start + size); roll() names the new segment after the log end.
* The partition dir name is split at the last '-' (Utils.getTopicPartition); the partition
  must be an int. 0.7 has no `-delete`/`-future` dirs, no indexes, no checkpoints.
A dir holding both `.kafka` segments and 0.8+ files (or a log dir holding both kinds of
partition dirs) is *mixed*: reported, never guessed at.
Entries are read by scan.py.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from kafkalog_cli.errors import LogDirIOError
from kafkalog_cli.storage.disk import fs
from kafkalog_cli.storage.disk.logdir import listdir

SUFFIX: Final = ".kafka"
CLEAN_SHUTDOWN: Final = ".kafka_cleanshutdown"  # KafkaServer.CLEAN_SHUTDOWN_FILE in 0.7
LOCK: Final = ".lock"  # not 0.7's, but kafkalog takes it before changing anything
NAME_WIDTH: Final = 20
_SEGMENT_RE = re.compile(r"^(\d+)\.kafka$")
_PARTITION_RE = re.compile(r"^(.+)-(\d+)$")
# 0.8+ partition dir contents: a dir holding these beside .kafka segments is mixed
_MODERN_RE = re.compile(r"^\d{20}\.(log|index|timeindex|txnindex|snapshot)(\.\w+)?$|"
                        r"^(leader-epoch-checkpoint|partition\.metadata)$")

def segment_name(start: int) -> str:
    return f"{start:0{NAME_WIDTH}d}{SUFFIX}"


def parse_segment_name(name: str) -> int | None:
    """The start of a `<digits>.kafka` segment, or None for any other name."""
    m = _SEGMENT_RE.match(name)
    return int(m.group(1)) if m else None


def parse_partition_dir(name: str) -> tuple[str, int] | None:
    """(topic, partition) as 0.7's Utils.getTopicPartition splits it; None where it fails."""
    m = _PARTITION_RE.match(name)
    if not m or int(m.group(2)) >= 2**31:
        return None
    return m.group(1), int(m.group(2))


@dataclass
class Segment07:
    path: Path
    start: int  # byte offset of its first entry (the file name)
    size: int  # file size now

    @property
    def end(self) -> int:
        """The offset just after the file's last byte (where the next segment must start)."""
        return self.start + self.size


@dataclass
class Partition07:
    path: Path
    segments: list[Segment07] = field(default_factory=list)
    modern_files: list[str] = field(default_factory=list)  # 0.8+ files beside the segments
    bad_names: list[str] = field(default_factory=list)  # *.kafka that 0.7 cannot parse
    odd_names: list[str] = field(default_factory=list)  # digits, but not 20 of them
    unknown: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.name = parse_partition_dir(self.path.name)  # None: 0.7 cannot load the dir
        self.topic, self.partition = self.key = self.name or (self.path.name, -1)

    @property
    def mixed(self) -> bool:
        return bool(self.modern_files)

    # what the commands changing partitions ask of every format's partitions
    log_dir: None = None  # no checkpoints: nothing in the log dir says where recovery starts
    topic_error: None = None  # 0.7 had no topic-name rule beyond the dir name's split

    @property
    def log_bytes(self) -> int:
        """Its segments' bytes: what progress bars and -j's planning count."""
        return sum(seg.size for seg in self.segments)

    def rescan(self) -> Partition07:
        return scan_partition(self.path)

    def migrate(self, dest: Path, opts: Any, emit: Any, *, topic: str) -> Any:
        """This partition as a current one at `dest` (kafka07/migrate.py)."""
        from kafkalog_cli.storage.formats.kafka07.migrate import migrate_partition

        return migrate_partition(self, dest, opts, emit, topic=topic)


@dataclass
class Target07:
    """What a PATH holding 0.7 data names."""

    path: Path
    kind: str  # "file", "partition", "logdir"
    partitions: list[Partition07] = field(default_factory=list)
    file: Path | None = None  # kind "file": the one segment named
    modern_dirs: list[Path] = field(default_factory=list)  # 0.8+ partition dirs beside 0.7 ones
    bad_dirs: list[str] = field(default_factory=list)  # subdirs that are no partition
    linked: list[Path] = field(default_factory=list)  # symlinks named <topic>-<n>: not followed
    root_files: list[str] = field(default_factory=list)

    @property
    def log_dir(self) -> Path | None:
        return self.path if self.kind == "logdir" else None

    @property
    def format(self) -> Any:
        from kafkalog_cli.storage.formats.kafka07 import FORMAT

        return FORMAT


def _entry_is(e: os.DirEntry[str], kind: str) -> bool:
    """Without following links; what cannot be stat'ed is neither."""
    try:
        return e.is_dir(follow_symlinks=False) if kind == "dir" else \
            e.is_file(follow_symlinks=False)
    except OSError:
        return False


def _holds_v07(entries: list[os.DirEntry[str]]) -> bool:
    # the suffix first: a log dir's every partition dir is probed, most hold no .kafka file
    return any(e.name.endswith(SUFFIX) and _SEGMENT_RE.match(e.name) and _entry_is(e, "file")
               for e in entries)


def _holds_modern(entries: list[os.DirEntry[str]]) -> bool:
    return any(_MODERN_RE.match(e.name) for e in entries)


def scan_partition(path: Path) -> Partition07:
    part = Partition07(path)
    for e in listdir(path):
        if _entry_is(e, "dir"):
            part.unknown.append(e.name + "/")
            continue
        start = parse_segment_name(e.name)
        if start is not None:
            try:
                size = e.stat(follow_symlinks=True).st_size
            except OSError as err:
                raise LogDirIOError(f"{e.path}: cannot stat: {err.strerror}") from None
            part.segments.append(Segment07(Path(e.path), start, size))
            if len(e.name) != NAME_WIDTH + len(SUFFIX):
                part.odd_names.append(e.name)
        elif e.name.endswith(SUFFIX):
            part.bad_names.append(e.name)
        elif _MODERN_RE.match(e.name):
            part.modern_files.append(e.name)
        else:
            part.unknown.append(e.name)
    part.segments.sort(key=lambda s: s.start)
    return part


def find_target(path: str | Path) -> Target07 | None:
    """The 0.7 data PATH names, or None when it holds no `.kafka` segment (not ours)."""
    p = Path(path)
    try:
        if p.is_file():
            if parse_segment_name(p.name) is None:
                return None
            part = scan_partition(p.parent)
            part.segments = [s for s in part.segments if s.path.name == p.name]
            return Target07(p, "file", [part], file=p)
        if not p.is_dir():
            return None
    except OSError:
        return None
    entries = listdir(p)
    if _holds_v07(entries):
        return Target07(p, "partition", [scan_partition(p)])
    # every subdir is listed (the current format's scan reads the same listings, shared;
    # by their text, the Path's own: a Path built and hashed per dir cost more than the
    # listing, and `./x`, an entry's path under `.`, is not the Path's `x`)
    kinds: list[tuple[os.DirEntry[str], list[os.DirEntry[str]], bool]] = []
    for e in entries:
        if _entry_is(e, "dir"):
            try:
                sub = listdir(fs.child(p, e.name))
            except LogDirIOError:
                continue
            kinds.append((e, sub, _holds_v07(sub)))
    if not any(v07 for _e, _sub, v07 in kinds):
        return None
    t = Target07(p, "logdir")
    for e, sub, v07 in kinds:
        if v07:
            t.partitions.append(scan_partition(Path(e.path)))
        elif _holds_modern(sub):
            t.modern_dirs.append(Path(e.path))
        else:
            t.bad_dirs.append(e.name)
    t.root_files = [e.name for e in entries if not _entry_is(e, "dir")]
    t.linked = [Path(e.path) for e in entries if e.is_symlink() and parse_partition_dir(e.name)]
    return t
