"""Kafka 0.7's framing for the one scanner (storage/disk/scan.py), with damage reports.

Framing and validation are 0.7's FileMessageSet.recover/validateMessage: a size, then that
many message bytes, whose payload CRC must match (codec/message_v07.py has the layout).

Scanner stop reasons (Damage codes), each at the entry's position in its file:
  torn-tail      fewer than 4 bytes left, or an entry running past the end of the file with
                 nothing valid after it: a writer died mid-append
  size-past-end  an entry running past the end of the file, with valid entries after it
  bad-size       size below 5 (magic 0) or 6 (magic 1): 0.7's readers stop there
  zero-tail      only zero bytes from here to the end (lost writes)
  bad-magic      a magic byte other than 0 or 1
  crc-mismatch   the payload's CRC-32 differs from the stored one
  entry-too-big  an entry larger than the scanner's cap
  unsearched     any of the above, after which the search for a valid entry gave up
                 (ProbeBudget): what follows is unchecked
After damage, a bounded probe looks for the next entry whose CRC checks out; with
`resync=True` the scan goes on from there (so a checker sees what follows), otherwise it
stops, as 0.7's recovery does. The probes of one scan share a work budget proportional to
the file size (ProbeBudget), so a scan takes time linear in the file whatever it holds.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Final

from kafkalog_cli.codec.checksum import crc32
from kafkalog_cli.codec.message_v07 import (
    HEAD_SIZE,
    MIN_MESSAGE_SIZE,
    SIZE,
    SIZE_LEN,
    Message07,
    decode_message,
)
from kafkalog_cli.codec.model import Damage
from kafkalog_cli.errors import CorruptBatch
from kafkalog_cli.storage.disk.scan import (
    DEFAULT_CHUNK,
    DEFAULT_MAX_ENTRY,
    PROBE_STEP,
    EntryScanner,
    Fault,
    ProbeBudget,
    ReadableFile,
    Window,
)
from kafkalog_cli.storage.disk.segment import DamageSink, scan_entries

PROBE_WINDOW: Final = 4 * 1024 * 1024  # how far past damage the probe looks for an entry start
PROBE_MAX_ENTRY: Final = 1024 * 1024  # largest entry the probe can recognise
_CRC_CHUNK: Final = 1024 * 1024
# a plausible entry start: size 5 .. 16 MiB (high byte 0, not 0..4), then magic 0 or 1
_CANDIDATE = re.compile(rb"(?=\x00(?!\x00\x00[\x00-\x04])[\x00-\xff]{3}[\x00\x01])", re.S)


class Framing07:
    """0.7 entries: a size int32, then that many message bytes; a message is checked whole
    (magic, layout, payload CRC), and damage is searched past by `probe_next`."""

    head = SIZE_LEN

    def frame(self, buf: bytearray, p: int, left: int, max_entry: int) -> int | Fault:
        (n,) = SIZE.unpack_from(buf, p)
        if n < MIN_MESSAGE_SIZE:
            return Fault("bad-size", f"entry size {n} is below the minimum {MIN_MESSAGE_SIZE}",
                         n)
        if SIZE_LEN + n > left:
            return Fault("size-past-end", f"entry declares {n} bytes; only {left - SIZE_LEN} "
                         "remain in the file", n)
        if n > max_entry:
            return Fault("entry-too-big", f"entry of {n} bytes is larger than the cap of "
                         f"{max_entry}", n)
        return int(SIZE_LEN + n)

    def entry(self, view: memoryview) -> Message07 | Fault:
        n = len(view) - SIZE_LEN
        magic = view[SIZE_LEN]
        if magic not in HEAD_SIZE:
            return Fault("bad-magic", f"unknown magic byte {magic} (0.7 knows 0 and 1)", n)
        try:
            msg = decode_message(view[SIZE_LEN:])
        except CorruptBatch as e:
            return Fault("bad-size", e.reason, n)
        if not msg.is_valid():
            return Fault("crc-mismatch", f"payload CRC-32 {msg.compute_crc()} does not match "
                         f"the stored {msg.crc}", n)
        return msg

    def tail(self, s: EntryScanner[Message07], pos: int, left: int) -> None:
        self.broken(s, pos, left, Fault(
            "torn-tail", f"{left} bytes at the end of the file: not even an entry size", 0))

    def broken(self, s: EntryScanner[Message07], pos: int, left: int,
               fault: Fault) -> int | None:
        code, reason, size = fault
        nxt = probe_next(s.file, pos, size, s.end, s.budget)
        if nxt is None and s.budget.spent_out:
            code = "unsearched"
            reason += ("; the search for a valid entry after it stopped, its work cap "
                       "spent: what follows is unchecked")
        elif nxt is None:
            if code == "size-past-end":
                code = "torn-tail"
                reason += " (the tail of an append that did not finish)"
            elif code == "bad-size" and s.all_zero(pos, left):
                code, reason = "zero-tail", "only zero bytes from here to the end"
        s.add(Damage(pos, code, reason, (s.end if nxt is None else nxt) - pos))
        return nxt if s.resync else None


def _plausible(data: bytes | memoryview, q: int, room: int) -> int | None:
    """Entry size at data[q] if a header there frames within `room` bytes, else None."""
    (n,) = SIZE.unpack_from(data, q)
    if n < MIN_MESSAGE_SIZE or SIZE_LEN + n > room:
        return None
    magic = data[q + SIZE_LEN]
    if magic > 1 or n < HEAD_SIZE[magic]:
        return None
    return int(n)


def _valid_at(data: bytes, q: int, n: int) -> bool:
    magic = data[q + SIZE_LEN]
    head = q + SIZE_LEN + HEAD_SIZE[magic]
    crc = int.from_bytes(data[head - 4:head], "big")
    return crc32(memoryview(data)[head:q + SIZE_LEN + n]) == crc


def _header_at(f: ReadableFile, q: int, file_size: int) -> int | None:
    """Entry size of a plausible header at file position `q` (framing within the file)."""
    f.seek(q)
    head = f.read(SIZE_LEN + 1)
    if len(head) < SIZE_LEN + 1:
        return None
    return _plausible(head, 0, file_size - q)


def _frames_at(f: ReadableFile, q: int, file_size: int, budget: ProbeBudget) -> int | None:
    """Size of a valid entry (CRC checked) at file position `q` whose successor frames or
    which ends the file; None otherwise. Reads the file, so large entries count too (their
    payload is checksummed a chunk at a time)."""
    if file_size - q < SIZE_LEN + MIN_MESSAGE_SIZE:
        return None
    n = _header_at(f, q, file_size)
    if n is None or n > DEFAULT_MAX_ENTRY:
        return None
    after = q + SIZE_LEN + n
    if after != file_size and _header_at(f, after, file_size) is None:
        return None  # (checked before the CRC: it costs 5 bytes)
    if not budget.spend(n):
        return None
    f.seek(q + SIZE_LEN)
    head = f.read(HEAD_SIZE[1])
    head = head[:HEAD_SIZE[head[0]]]
    crc, pos = 0, q + SIZE_LEN + len(head)
    while pos < after:
        chunk = f.read(min(_CRC_CHUNK, after - pos))
        if not chunk:
            return None
        crc = crc32(chunk, crc)
        pos += len(chunk)
    return n if crc == int.from_bytes(head[-4:], "big") else None


def probe_next(f: ReadableFile, pos: int, size: int, file_size: int,
               budget: ProbeBudget | None = None) -> int | None:
    """Position of the next entry after damage at `pos` whose CRC checks out and whose
    successor frames (or which ends the file); None within the probe window (or once the
    scan's probe budget is spent)."""
    if budget is None:
        budget = ProbeBudget(file_size)
    if pos + 1 >= file_size:
        return None
    # the declared size is only a hint: try where it points first, without trusting it
    hint = pos + SIZE_LEN + size
    if size >= MIN_MESSAGE_SIZE and hint < file_size and _frames_at(f, hint, file_size, budget):
        return hint
    base = pos + 1
    w = Window(f, base, min(PROBE_WINDOW + PROBE_MAX_ENTRY, file_size - base), budget)
    room = w.limit
    q_end = min(PROBE_WINDOW, room - SIZE_LEN) + 1  # candidates q < q_end (5 header bytes)
    searched, step = 0, PROBE_STEP
    while searched < q_end:
        chunk_end = min(q_end, searched + step)
        step *= 2
        if not w.cover(chunk_end + SIZE_LEN):
            return None
        for m in _CANDIDATE.finditer(w.data, searched, chunk_end + SIZE_LEN):
            q = m.start()
            n = _plausible(w.data, q, room - q)
            if n is None:
                continue
            after = q + SIZE_LEN + n
            # the successor must frame, unless this entry ends the file or its successor
            # lies past the window (then the CRC has to do); the cheap check goes first
            if base + after != file_size and after + SIZE_LEN + 1 <= room:
                if not w.cover(after + SIZE_LEN + 1):
                    return None
                if not _plausible(w.data, after, file_size - base - after):
                    continue
            if not w.cover(after) or not budget.spend(n):
                return None
            if _valid_at(w.data, q, n):
                return base + q
        searched = chunk_end
    return None


def iter_entries(path: Path, *, on_damage: DamageSink | None = None, start: int = 0,
                 resync: bool = False, max_entry: int = DEFAULT_MAX_ENTRY,
                 chunk: int = DEFAULT_CHUNK) -> Iterator[tuple[int, Message07]]:
    """(position, message) of each valid entry of a `.kafka` file, from `start`.

    The message's payload is a view that is valid until the next entry is requested
    (`detach()` keeps it). Damage goes to `on_damage`; see the module doc for the codes."""
    return scan_entries(path, FRAMING, start, None, on_damage, max_entry, resync, chunk)


FRAMING = Framing07()
