"""Tables that fit the terminal.

A table goes out as tabulate draws it when it fits the screen, or when stdout is not a
terminal: a pipe or a file always gets every value whole on its row. On a terminal a table
wider than the screen (a `dump` table is ~300 columns) would wrap into unreadable lines, so
it is shown as psql's expanded display does (`\\x auto`): one block per row, a `name | value`
line per column, values cut into pieces of the width left and continued on the next lines.
Nothing is abbreviated: the pieces of a value, joined, give the value back.
"""

from __future__ import annotations

import unicodedata
from typing import Any, BinaryIO

from kafkalog_cli.output.live import terminal_width

SEP = " | "
MIN_VALUE_WIDTH = 10


def width_of(out: BinaryIO) -> int | None:
    """The terminal's width when `out` is one, else None (print values whole)."""
    try:
        return terminal_width(out.fileno()) if out.isatty() else None
    except (AttributeError, OSError, ValueError):  # a BytesIO, a closed stream
        return None


def cells(text: str) -> int:
    """Terminal cells of `text`: East Asian wide characters take two, combining marks none."""
    if text.isascii():
        return len(text)
    return sum(0 if unicodedata.combining(ch) else
               2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def table(headers: list[str], rows: list[list[Any]], width: int | None, **fmt: Any) -> str:
    """`rows` as a tabulate table, or expanded (see the module doc) when it is wider than
    `width`; `fmt` goes to tabulate."""
    from tabulate import tabulate

    text: str = tabulate(rows, headers=headers, **fmt)
    if width is None or max(map(cells, text.split("\n")), default=0) <= width:
        return text
    return expanded(headers, rows, width)


def expanded(headers: list[str], rows: list[list[Any]], width: int) -> str:
    name_w = max(map(cells, headers), default=0)
    value_w = max(width - name_w - len(SEP), MIN_VALUE_WIDTH)
    out: list[str] = []
    for n, row in enumerate(rows, 1):
        title = f"-[ RECORD {n} ]"
        out.append(title + "-" * max(width - len(title), 0))
        for h, v in zip(headers, row, strict=False):
            pieces = _pieces("" if v is None else str(v), value_w)
            head = h + " " * (name_w - cells(h)) + SEP
            out.append(head + pieces[0] if pieces[0] else head.rstrip(" "))
            out.extend(" " * name_w + SEP + p for p in pieces[1:])
    return "\n".join(out)


def _pieces(value: str, width: int) -> list[str]:
    """`value` cut into lines of at most `width` cells (and at its own newlines)."""
    pieces: list[str] = []
    for line in value.split("\n"):
        if line.isascii():
            pieces += [line[i:i + width] for i in range(0, len(line), width)] or [""]
            continue
        cur: list[str] = []
        used = 0
        for ch in line:
            w = cells(ch)
            if used + w > width and cur:
                pieces.append("".join(cur))
                cur, used = [], 0
            cur.append(ch)
            used += w
        pieces.append("".join(cur))
    return pieces
