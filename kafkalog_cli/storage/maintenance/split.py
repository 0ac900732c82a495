"""Cut a segment into pieces at batch boundaries, crash-safely: the rolls the broker's append
path would have made (recover uses it where the broker's recovery would find an index full,
rebuild.py; LocalLog.splitOverflowedSegment replaces a segment by its pieces the same way).

  1. each piece is written as `<base>.log.cleaned` (its byte range of the `.log`, copied in
     chunks) with `.index`/`.timeindex`/`.txnindex.cleaned` rebuilt from it, and fsynced
  2. replace.replace_segments swaps the pieces in for the segment (`.cleaned` -> `.swap`,
     the old files to `.deleted` and the quarantine)
A crash in 1 leaves `.cleaned` files that the next run (or the broker) removes, the segment
untouched; from 2 on, the loader passes finish the swap.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from kafkalog_cli.codec import index_entry as ie
from kafkalog_cli.errors import KafkalogError
from kafkalog_cli.storage.disk import naming, safety
from kafkalog_cli.storage.disk.files import fsync_dir
from kafkalog_cli.storage.disk.segment import Segment
from kafkalog_cli.storage.drills.faults import crash_point
from kafkalog_cli.storage.maintenance.quarantine import Quarantine
from kafkalog_cli.storage.maintenance.rebuild import rebuild_segment
from kafkalog_cli.storage.maintenance.replace import replace_segments

CHUNK = 1024 * 1024


@dataclass
class Split:
    base: int  # the segment's base offset: the first piece keeps it
    cuts: list[tuple[int, int]]  # (base offset, position) where each later piece starts
    end: int  # bytes of the `.log` the pieces hold (its valid bytes)
    interval: int  # index.interval.bytes for the pieces' indexes
    txn_entries: list[ie.AbortedTxn]  # the segment's; each piece gets those it holds

    def pieces(self) -> list[tuple[int, int, int]]:
        """(base offset, start position, end position) of every piece."""
        starts = [(self.base, 0), *self.cuts]
        ends = [pos for _off, pos in self.cuts] + [self.end]
        return [(off, start, end) for (off, start), end in zip(starts, ends, strict=True)]


def _copy(src: Path, start: int, end: int, dst: Path, root: Path, fsync: bool) -> None:
    with open(src, "rb") as f, safety.open_file(dst, root, "temp") as out:
        f.seek(start)
        left = end - start
        while left:
            chunk = f.read(min(CHUNK, left))
            if not chunk:
                raise KafkalogError(f"{src}:{start + (end - start) - left}: the file shrank "
                                    "while it was split")
            out.write(chunk)
            left -= len(chunk)
        out.flush()
        if fsync:
            os.fsync(out.fileno())


def _write(path: Path, data: bytes, root: Path, fsync: bool) -> None:
    with safety.open_file(path, root, "temp") as f:
        f.write(data)
        f.flush()
        if fsync:
            os.fsync(f.fileno())


def split_segment(directory: Path, split: Split, quarantine: Quarantine, *,
                  fsync: bool = True) -> None:
    root = directory.parent
    src = directory / naming.segment_file_name(split.base, naming.LOG)
    pieces = split.pieces()
    for i, (base, start, end) in enumerate(pieces):
        _copy(src, start, end, directory / naming.segment_file_name(base, naming.LOG,
                                                                    naming.CLEANED), root, fsync)
        r = rebuild_segment(Segment(directory, base, has_log=True, temp=naming.CLEANED),
                            split.interval)
        if r.stop is not None or r.truncated:
            raise KafkalogError(f"{src}:{start}: the piece from offset {base} does not read "
                                "back; nothing was replaced")
        oi, ti, _ = r.index_bytes()
        upper = pieces[i + 1][0] if i + 1 < len(pieces) else None
        txn = [e for e in split.txn_entries
               if e.last_offset >= base and (upper is None or e.last_offset < upper)]
        files = {naming.INDEX: oi, naming.TIMEINDEX: ti}
        if txn:
            files[naming.TXNINDEX] = ie.encode_txn_entries(txn)
        for kind, data in files.items():
            _write(directory / naming.segment_file_name(base, kind, naming.CLEANED), data, root,
                   fsync)
        crash_point("split.piece")
    if fsync:
        fsync_dir(directory)
    replace_segments(directory, [p[0] for p in pieces], [split.base], quarantine, fsync=fsync)
