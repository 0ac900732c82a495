"""Text checkpoint files (CheckpointFile): `<version>\\n<count>\\n<entry>\\n...`.

Offset checkpoints (recovery point, log start, replication, cleaner) hold
`topic partition offset` lines; leader-epoch-checkpoint holds `epoch startOffset`.
"""

from __future__ import annotations

import itertools
import re

from kafkalog_cli.codec.layout import INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN
from kafkalog_cli.errors import CorruptDataError

# Java's Integer/Long.parseInt: an optional sign and ASCII digits (Python's int() would
# also take "1_000" and non-ASCII digits), within the type's range
_JAVA_INT = re.compile(r"[+-]?[0-9]+\Z")


def decode_text(data: bytes | str) -> str:
    """A checkpoint's bytes as text; bytes that are not UTF-8 are corrupt, at their position."""
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise CorruptDataError(f"byte 0x{data[e.start]:02x} is not UTF-8 text",
                               pos=e.start) from None


def _number(text: str, lo: int, hi: int, what: str, pos: int) -> int:
    if _JAVA_INT.match(text):
        n = int(text)
        if lo <= n <= hi:
            return n
    raise CorruptDataError(f"malformed {what} {_quoted(text)}", pos=pos)


def _quoted(text: bytes | str) -> str:
    """`text` as an error quotes it: its repr, cut after 40 characters (one line, whatever
    a crafted file holds)."""
    if isinstance(text, bytes):
        text = text[:41].decode("utf-8", "replace")
    return repr(text[:40] + "...") if len(text) > 40 else repr(text.strip())


def _lines(data: bytes | str, fields: int) -> list[tuple[int, list[str]]]:
    """(byte position, fields) of each entry line; errors carry the byte position."""
    nl = data.find(b"\n") if isinstance(data, bytes) else data.find("\n")
    if (nl < 0 and len(data) > 64) or nl > 64:  # no version is that long: not split, not copied
        raise CorruptDataError(f"unrecognised checkpoint version {_quoted(data[:64])}", pos=0)
    lines = decode_text(data).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines:
        return []
    if lines[0].strip() != "0":
        raise CorruptDataError(f"unrecognised checkpoint version {_quoted(lines[0])}", pos=0)
    if len(lines) < 2:
        return []
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line.encode("utf-8")) + 1)
    count = _number(lines[1].strip(), 0, INT32_MAX, "entry count", starts[1])
    entries = []
    for i, line in enumerate(lines[2:], start=2):
        parts = line.split()
        if len(parts) != fields:
            raise CorruptDataError(f"malformed line {i + 1}: {_quoted(line)}", pos=starts[i])
        entries.append((starts[i], parts))
    if len(entries) != count:
        raise CorruptDataError(f"checkpoint declares {count} entries but holds {len(entries)}",
                               pos=starts[1])
    return entries


def parse_offsets(data: bytes | str) -> dict[tuple[str, int], int]:
    out: dict[tuple[str, int], int] = {}
    for pos, (topic, part, off) in _lines(data, 3):
        out[(topic, _number(part, INT32_MIN, INT32_MAX, "partition", pos))] = \
            _number(off, INT64_MIN, INT64_MAX, "offset", pos)
    return out


def parse_leader_epochs(data: bytes | str) -> list[tuple[int, int]]:
    return [(_number(e, INT32_MIN, INT32_MAX, "leader epoch", pos),
             _number(o, INT64_MIN, INT64_MAX, "start offset", pos))
            for pos, (e, o) in _lines(data, 2)]


def epoch_order_errors(entries: list[tuple[int, int]]
                       ) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Adjacent leader-epoch entries out of order: epochs must grow, start offsets must not
    shrink (LeaderEpochFileCache.assign)."""
    return [(a, b) for a, b in itertools.pairwise(entries)
            if b[0] <= a[0] or b[1] < a[1]]


def format_offsets(entries: dict[tuple[str, int], int]) -> str:
    body = "".join(f"{t} {p} {o}\n" for (t, p), o in entries.items())
    return f"0\n{len(entries)}\n{body}"


def format_leader_epochs(entries: list[tuple[int, int]]) -> str:
    body = "".join(f"{e} {o}\n" for e, o in entries)
    return f"0\n{len(entries)}\n{body}"
