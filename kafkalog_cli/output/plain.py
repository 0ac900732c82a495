"""tabulate's "plain" table, drawn directly when every cell is a plain value.

`tabulate` guesses each cell's type (int, float, bool, number with thousands separators...)
through several conversions a cell; on `info` over 2 000 partitions that was a third of the
command's time. Where each column is plainly integers (in canonical form) or plainly text
(ASCII, no surrounding spaces, not a number of any kind tabulate knows), the table is drawn
here as tabulate draws it: integer columns (and their headers) flush right, text flush left,
each at least its header's width plus 2, two spaces between columns, trailing spaces cut.
Anything else is left to tabulate (tests/output/test_plain.py compares both).
"""

from __future__ import annotations

import re
from typing import Any

_INT = r"-?(?:0|[1-9][0-9]*)"
_CELL = r"[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?"  # ASCII, no spaces at the ends
_INTS = re.compile(f"{_INT}(?:\n{_INT})*")  # a column's cells joined by newlines
_CELLS = re.compile(f"{_CELL}(?:\n{_CELL})*")
_HEADER = re.compile(_CELL)
# what tabulate reads as a number with thousands separators (1,000.5), as it spells it
_THOUSANDS = re.compile(r"^(([+-]?[0-9]{1,3})(?:,([0-9]{3}))*)?(?(1)\.[0-9]*|\.[0-9]+)?$")
MIN_PADDING = 2  # tabulate's


def _kind(cells: list[Any]) -> str | None:
    """"int" or "str" as tabulate would type the column, or None when unsure."""
    try:
        joined = "\n".join(cells)
    except TypeError:  # not all text: tabulate formats numbers its own way
        return None
    if joined.count("\n") != len(cells) - 1:  # a cell of several lines
        return None
    if _INTS.fullmatch(joined):
        return "int"
    if not _CELLS.fullmatch(joined):
        return None
    for c in cells:  # one text cell makes the column text, whatever the others
        if not _THOUSANDS.match(c) and c not in ("True", "False"):
            try:
                float(c)
            except ValueError:
                return "str"
    return None


def plain_table(rows: list[list[Any]], headers: list[str]) -> str:
    """tabulate(rows, headers=headers, tablefmt="plain"), the same text."""
    cols = [[r[i] for r in rows] for i in range(len(headers))] if rows else []
    kinds = [_kind(c) for c in cols]
    if not rows or any(len(r) != len(headers) for r in rows) or None in kinds or \
            not all(_HEADER.fullmatch(h) for h in headers):
        from tabulate import tabulate

        return str(tabulate(rows, headers=headers, tablefmt="plain"))
    widths = [max(len(h) + MIN_PADDING, max(map(len, c))) for h, c in zip(headers, cols,
                                                                          strict=True)]
    right = [k == "int" for k in kinds]
    fmts = [f"{{:>{w}}}" if r else f"{{:<{w}}}" for w, r in zip(widths, right, strict=True)]
    line = "  ".join(fmts)
    out = [line.format(*headers).rstrip()]
    out += [line.format(*r).rstrip() for r in rows]
    return "\n".join(out)
