"""Text checkpoint files (CheckpointFile): `<version>\\n<count>\\n<entry>\\n...`.

Offset checkpoints (recovery point, log start, replication, cleaner) hold
`topic partition offset` lines; leader-epoch-checkpoint holds `epoch startOffset`.
"""

from __future__ import annotations

import itertools

from kafkalog_cli.errors import CorruptDataError


def _lines(text: str, fields: int) -> list[list[str]]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines:
        return []
    if lines[0].strip() != "0":
        raise CorruptDataError(f"unrecognised checkpoint version {lines[0].strip()!r}", pos=0)
    if len(lines) < 2:
        return []
    try:
        count = int(lines[1])
    except ValueError:
        raise CorruptDataError(f"malformed entry count {lines[1]!r}") from None
    entries = []
    for i, line in enumerate(lines[2:], start=3):
        parts = line.split()
        if len(parts) != fields:
            raise CorruptDataError(f"malformed line {i}: {line!r}")
        entries.append(parts)
    if len(entries) != count:
        raise CorruptDataError(f"checkpoint declares {count} entries but holds {len(entries)}")
    return entries


def parse_offsets(text: str) -> dict[tuple[str, int], int]:
    out: dict[tuple[str, int], int] = {}
    for topic, part, off in _lines(text, 3):
        try:
            out[(topic, int(part))] = int(off)
        except ValueError:
            raise CorruptDataError(f"malformed entry {topic} {part} {off}") from None
    return out


def parse_leader_epochs(text: str) -> list[tuple[int, int]]:
    try:
        return [(int(e), int(o)) for e, o in _lines(text, 2)]
    except ValueError:
        raise CorruptDataError("malformed leader-epoch entry") from None


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
