"""A segment: its `.log` and sibling indexes, read as a stream of batches."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from kafkalog_cli.codec.entry import Batch
from kafkalog_cli.codec.model import Damage
from kafkalog_cli.errors import LogDirIOError
from kafkalog_cli.storage.disk import fs, naming
from kafkalog_cli.storage.disk.index import OffsetIndex, TimeIndex, TxnIndex
from kafkalog_cli.storage.disk.scan import CURRENT, EntryScanner, Framing

DamageSink = Callable[[Damage], None]
E = TypeVar("E")


def open_readable(path: fs.FilePath) -> io.RawIOBase:
    """Unbuffered: a local file, or an object opened for ranged reads (fs.py)."""
    try:
        return fs.open_binary(path)  # type: ignore[no-any-return]
    except OSError as e:
        raise LogDirIOError(f"{path}: cannot open: {e.strerror}") from None


def scan_entries(path: fs.FilePath, framing: Framing[E], start: int = 0, end: int | None = None,
                 on_damage: DamageSink | None = None, max_entry: int | None = None,
                 resync: bool = False, chunk: int | None = None) -> Iterator[tuple[int, E]]:
    """(position, entry) for every whole entry of a segment file in the framing of its
    format; damage goes to `on_damage`, each report before the entry after it."""
    with open_readable(path) as f:
        kw = {} if max_entry is None else {"max_entry": max_entry}
        if chunk is not None:
            kw["chunk_size"] = chunk
        scanner = EntryScanner(f, start, fs.file_size(f) if end is None else end,
                               framing=framing, resync=resync, **kw)

        def report() -> None:  # and forget: damage every few bytes must not pile up
            if on_damage:
                for d in scanner.damages:
                    on_damage(d)
            scanner.damages.clear()
        try:
            for pos, got in scanner:
                report()
                yield pos, got
        except OSError as e:
            raise LogDirIOError(f"{path}: read failed: {e.strerror}") from None
        report()


def scan_after(path: fs.FilePath, framing: Framing[E], start: int,
               on_entry: Callable[[E], None] = lambda _e: None) -> tuple[int, bool]:
    """Each whole entry after byte `start` (-1: all) to `on_entry`, skipping damage: what a
    cut at `start` drops besides the bad entry there. How many, and whether the search for
    them gave up somewhere (its work cap spent: more may follow)."""
    gave_up = False
    n = 0

    def on_damage(d: Damage) -> None:
        nonlocal gave_up
        gave_up = gave_up or d.code == "unsearched"
    for pos, got in scan_entries(path, framing, max(start, 0), None, on_damage, resync=True):
        if pos > start:
            n += 1
            on_entry(got)
    return n, gave_up


def iter_batches(path: fs.FilePath, start: int = 0, end: int | None = None,
                 on_damage: DamageSink | None = None,
                 max_entry: int | None = None, resync: bool = False) -> Iterator[tuple[int, Batch]]:
    """(position, batch) for every framable entry; damage goes to `on_damage`.

    An entry whose header does not decode (unknown magic, malformed legacy message) is
    reported and skipped: its size field framed it, so the scan can go on.
    """
    return scan_entries(path, CURRENT, start, end, on_damage, max_entry, resync)


@dataclass
class Segment:
    """Files of one segment in a partition dir; any of them may be missing."""

    directory: Path
    base_offset: int
    has_log: bool = False
    has_index: bool = False
    has_timeindex: bool = False
    has_txnindex: bool = False
    temp: str = ""  # read the files with this suffix (e.g. ".swap" while planning a recovery)
    listed_bytes: int = -1  # the `.log`'s size when its dir was listed (-1: not listed)
    # paths made (a Path costs microseconds to build; a check asks for each several times)
    _paths: dict[tuple[str, str], Path] = field(default_factory=dict, init=False, repr=False,
                                                compare=False)
    _files: dict[tuple[str, str], fs.FilePath] = field(default_factory=dict, init=False,
                                                       repr=False, compare=False)

    def path(self, suffix: str) -> Path:
        key = (suffix, self.temp)
        p = self._paths.get(key)
        if p is None:
            p = self._paths[key] = self.directory / naming.segment_file_name(
                self.base_offset, suffix, self.temp)
        return p

    def file(self, suffix: str) -> fs.FilePath:
        """`path(suffix)` for a reader, which only opens it (fs.child): the check of a small
        partition reads five files, and building their Paths cost a fifth of it."""
        key = (suffix, self.temp)
        p = self._files.get(key)
        if p is None:
            p = self._files[key] = fs.child(self.directory, naming.segment_file_name(
                self.base_offset, suffix, self.temp))
        return p

    @property
    def log_path(self) -> Path:
        return self.path(naming.LOG)

    @property
    def size(self) -> int:
        try:
            return fs.size(self.file(naming.LOG))
        except OSError:
            return 0

    def batches(self, start: int = 0, end: int | None = None,
                on_damage: DamageSink | None = None,
                resync: bool = False) -> Iterator[tuple[int, Batch]]:
        return iter_batches(self.file(naming.LOG), start, end, on_damage, resync=resync)

    def offset_index(self) -> OffsetIndex | None:
        return OffsetIndex.read(self.file(naming.INDEX), self.base_offset) if self.has_index \
            else None

    def time_index(self) -> TimeIndex | None:
        return TimeIndex.read(self.file(naming.TIMEINDEX), self.base_offset) \
            if self.has_timeindex else None

    def txn_index(self) -> TxnIndex | None:
        return TxnIndex.read(self.file(naming.TXNINDEX), self.base_offset) \
            if self.has_txnindex else None


def log_end_offset(segments: list[Segment]) -> int | None:
    """Next offset after the last batch of the newest segment holding one (None if none does)."""
    for seg in reversed(segments):
        last = None
        for _pos, b in seg.batches(on_damage=lambda d: None):
            last = b.last_offset
        if last is not None:
            return last + 1
    return None
