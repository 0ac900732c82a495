"""A big `.log` cut into pieces at batch starts, each read on its own (dump's `-j`): one
huge partition then keeps every worker busy, and output held ahead of its turn is a piece's,
not a partition's.

A cut is a position the scanner itself would reach: found by hopping from a known batch
start over size fields, each entry framed as the scanner frames it (size at least the
minimum, whole in the file, under the entry cap) and a v2 batch whose header fits, so that
decoding its header cannot fail. Between two cuts the scanner then yields exactly the
batches, and reports exactly the damage (none), that a scan of the whole file yields there;
where anything else comes up, cutting stops and the rest of the file is one piece, read as
the whole file would be. The hops read a v2 header each (one pread), and a run spends at most
`budget` of them: a file of tiny batches is cut less, never walked at length.
"""

from __future__ import annotations

import os
import struct

from kafkalog_cli import _speedups
from kafkalog_cli.codec.layout import MAGIC_POS, V2_HEADER_SIZE
from kafkalog_cli.errors import LogDirIOError
from kafkalog_cli.storage.disk import fs
from kafkalog_cli.storage.disk.files import open_regular
from kafkalog_cli.storage.disk.scan import CURRENT, DEFAULT_MAX_ENTRY, Fault

PIECE_BYTES = 16 << 20  # a piece's `.log` bytes (at least: it ends at a batch start)
# ... or records (their count in v2 headers): a compressed piece of that size holds several
# times the records, and what a worker holds ahead of its turn is their text
PIECE_RECORDS = 1 << 14
MIN_PIECE = 1 << 20  # bytes: a smaller last piece is left to the one before it
_RECORDS = struct.Struct(">i")
_RECORDS_POS = V2_HEADER_SIZE - _RECORDS.size  # recordsCount, the header's last field
# the hops in C (fastscan.walk_cuts): the same cuts, without a Python call per batch
_fastscan = _speedups.compiled("fastscan")


class HopBudget:
    """Size fields a run may read to find cuts (each a pread)."""

    def __init__(self, hops: int) -> None:
        self.left = hops


def records_per_byte(path: fs.FilePath, start: int = 0, batches: int = 8) -> float:
    """Records per byte in the first `batches` v2 batches from `start` (their headers'
    counts; 0.0 where there are none, or for an object in a store): what -j's planning
    weighs a partition's bytes by."""
    fd = _open(path)
    if fd is None:
        return 0.0
    try:
        pos, records = start, 0
        end = os.fstat(fd).st_size
        for _ in range(batches):
            hop = _hop(fd, pos, end)
            if hop is None:
                break
            pos, records = pos + hop[0], records + hop[1]
        return records / (pos - start) if pos > start else 0.0
    except OSError:
        return 0.0
    finally:
        os.close(fd)


def _open(path: fs.FilePath) -> int | None:
    """A regular local file's descriptor, else None (an object in a store is not walked)."""
    if fs.is_remote(path):
        return None
    try:
        return open_regular(path)
    except (OSError, LogDirIOError):
        return None


def _hop(fd: int, pos: int, end: int) -> tuple[int, int] | None:
    """(length, record count) of the entry at `pos` if the scanner frames it (its own
    framing's check) as a whole v2 batch whose header decodes, else None: one header read."""
    head = bytearray(V2_HEADER_SIZE)
    if os.preadv(fd, [head], pos) < V2_HEADER_SIZE:
        return None
    total = CURRENT.frame(head, 0, end - pos, DEFAULT_MAX_ENTRY)
    if isinstance(total, Fault) or head[MAGIC_POS] != 2 or total < V2_HEADER_SIZE:
        return None
    return total, max(0, _RECORDS.unpack_from(head, _RECORDS_POS)[0])


def cuts(path: fs.FilePath, start: int, budget: HopBudget) -> list[int]:
    """Batch starts after `start` where the file may be cut (see the module doc), each piece
    PIECE_BYTES or PIECE_RECORDS long and the last at least MIN_PIECE; [] for a file too
    small to cut, an object in a store, anything that is not a regular file or cannot be
    read."""
    fd = _open(path)
    if fd is None:
        return []
    try:
        size = os.fstat(fd).st_size
        return _walk(fd, start, size, budget) if size - start >= 2 * MIN_PIECE else []
    except OSError:
        return []
    finally:
        os.close(fd)


def _walk(fd: int, pos: int, end: int, budget: HopBudget) -> list[int]:
    if _fastscan is not None:
        got = _fastscan.walk_cuts(fd, pos, end, budget.left, PIECE_BYTES, PIECE_RECORDS,
                                  MIN_PIECE, DEFAULT_MAX_ENTRY)
        if got is None:
            raise OSError("a header could not be read")
        out: list[int] = got[0]
        budget.left -= got[1]
        return out
    return _walk_pure(fd, pos, end, budget)


def _walk_pure(fd: int, pos: int, end: int, budget: HopBudget) -> list[int]:
    out: list[int] = []
    last, records = pos, 0
    while budget.left > 0 and end - pos >= MIN_PIECE:  # the last piece takes the rest
        budget.left -= 1
        hop = _hop(fd, pos, end)
        if hop is None:
            break
        pos, records = pos + hop[0], records + hop[1]
        if (pos - last >= PIECE_BYTES or records >= PIECE_RECORDS) and end - pos >= MIN_PIECE:
            out.append(pos)
            last, records = pos, 0
    return out
