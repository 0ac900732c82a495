"""One renderer per --format; commands hand it rows (dicts), it writes stdout.

jsonl and json stream (flat memory); table buffers rows per block; csv writes one header, the
columns the command declares or the union of every row's fields; text uses the command's
line formatter. csv and tables never drop a field: what a JSON row holds, they show
(docs/json.md names every field).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from typing import Any, BinaryIO

from kafkalog_cli import _speedups
from kafkalog_cli.output.console import ESCAPE, shown

# orjson and base64 are imported where a format needs them: text output, what most runs
# print, never loads them (together ~10 ms of every run's start-up)

FORMATS = ("text", "json", "jsonl", "csv", "table")
PAYLOADS = ("utf8", "base64", "hex")


def payload_encoder(kind: str) -> Callable[[bytes | None], str | None]:
    if kind == "base64":
        import base64

        return lambda b: None if b is None else base64.b64encode(b).decode("ascii")
    if kind == "hex":
        return lambda b: None if b is None else b.hex()
    # utf8: invalid bytes become visible \xNN escapes
    return utf8_visible


def _utf8_visible_pure(b: bytes | memoryview | None) -> str | None:
    return None if b is None else str(b, "utf-8", "backslashreplace")  # memoryview too


# the compiled one-pass version (same output; see _speedups/fastcodec.pyx)
utf8_visible = getattr(_speedups.compiled("fastcodec"), "utf8_visible", _utf8_visible_pure)


def json_bytes(obj: Any, option: int = 0) -> bytes:
    """orjson.dumps; a name from the file system that is not UTF-8 (orjson refuses its
    surrogate escapes) is written with those bytes as \\xNN."""
    import orjson

    try:
        return orjson.dumps(obj, option=option)
    except orjson.JSONEncodeError:
        return orjson.dumps(_shown_deep(obj), option=option)


def _shown_deep(v: Any) -> Any:
    if isinstance(v, str):
        return shown(v)
    if isinstance(v, dict):
        return {_shown_deep(k): _shown_deep(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_shown_deep(x) for x in v]
    return v


class Renderer:
    def __init__(self, out: BinaryIO | None = None) -> None:
        self.out = out or sys.stdout.buffer

    def row(self, row: dict[str, Any]) -> None:
        raise NotImplementedError

    def text(self, line: str) -> None:
        """A line that only text output shows (headers like `Dumping <file>`)."""

    def close(self) -> None:
        self.out.flush()


class JsonlRenderer(Renderer):
    def __init__(self, out: BinaryIO | None = None) -> None:
        import orjson

        super().__init__(out)
        self._option = orjson.OPT_APPEND_NEWLINE

    def row(self, row: dict[str, Any]) -> None:
        self.out.write(json_bytes(row, self._option))


class JsonRenderer(Renderer):
    """A JSON array written as rows come, so memory stays flat."""

    def __init__(self, out: BinaryIO | None = None) -> None:
        super().__init__(out)
        self._first = True

    def row(self, row: dict[str, Any]) -> None:
        self.out.write(b"[\n" if self._first else b",\n")
        self._first = False
        self.out.write(json_bytes(row))

    def close(self) -> None:
        self.out.write(b"[]\n" if self._first else b"\n]\n")
        super().close()


# epoch-ms fields that tables show as dates (JSON, JSONL and CSV keep the numbers)
TIME_KEYS = frozenset({"timestamp", "maxTimestamp", "firstTimestamp", "lastTimestamp",
                       "deleteHorizonMs", "targetTimestamp", "now"})


# control characters but newline, as tables show them: a \r or \t would break the layout, an
# escape sequence would reach the terminal (the same \xNN as utf8 payloads' invalid bytes)
_CONTROLS = {c: f"\\x{c:02x}" for c in [*range(0x0a), *range(0x0b, 0x20), 0x7f]}


def cell(v: Any, key: str | None = None, table: bool = False) -> Any:
    """One value as CSV and tables show it: booleans `true`/`false` as in JSON, null empty
    (csv_field tells it from an empty string), lists and objects as JSON text; a table shows
    an epoch-ms time as a date, and control characters other than newline as \\xNN."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, dict)):
        v = json_bytes(v).decode()
    elif table and key in TIME_KEYS and isinstance(v, int) and v >= 0:
        from kafkalog_cli.output.console import human_time

        return human_time(v)
    return v.translate(_CONTROLS) if table and isinstance(v, str) else v


Flatten = Callable[[dict[str, Any]], Iterable[dict[str, Any]]]


def exploding(lists: dict[str, str], carry: tuple[str, ...] = ("topic", "partition"),
              kind: str = "partition") -> Flatten:
    """For csv and tables: a row whose fields hold lists of objects becomes the row without
    them (`kind` added when absent), then one row per object, `kind` naming the list and
    `carry` copied from the parent (so each row says which partition it belongs to)."""
    def flat(row: dict[str, Any]) -> Iterable[dict[str, Any]]:
        parent = {k: v for k, v in row.items() if k not in lists}
        yield parent if "kind" in parent else {"kind": kind, **parent}
        ids = {c: row[c] for c in carry if c in row}
        for name, child_kind in lists.items():
            for child in row.get(name) or ():
                yield {"kind": child_kind, **ids, **child}
    return flat


def csv_field(v: Any) -> str:
    """One csv cell as PostgreSQL's COPY ... CSV writes it: null (None, or a field the row
    lacks) an empty cell, an empty string a quoted empty cell `""` (a record's null key and
    its zero-length key are different values); any other value as the csv module's
    QUOTE_MINIMAL wrote it, `cell`'s text, quoted (quotes doubled) only when it holds a
    comma, a quote, CR or LF (RFC 4180)."""
    if v is None:
        return ""
    if not isinstance(v, str):
        v = cell(v)
        if not isinstance(v, str):
            v = str(v)  # numbers: as the csv module wrote them
    if not v:
        return '""'
    if '"' in v:
        return '"' + v.replace('"', '""') + '"'
    if "," in v or "\n" in v or "\r" in v:
        return '"' + v + '"'
    return v


class _Encoded:
    """Where csv lines go: their text, UTF-8, straight to `out`. Not a TextIOWrapper, which
    closes the stream it wraps when it is collected: after a closed pipe or a full disk,
    stdout was closed under the error handling."""

    def __init__(self, out: BinaryIO) -> None:
        self._out = out

    def write(self, text: str) -> int:
        self._out.write(text.encode("utf-8", ESCAPE))
        return len(text)


class CsvRenderer(Renderer):
    """One header for every row: `columns` when the command knows them before its first row
    (streaming; a field outside them is a bug and raises), else the union of every row's
    fields, in order of appearance (rows are held until close). Lines end in CRLF, as the
    csv module's did; each cell is `csv_field`'s (null empty, an empty string `""`), which
    the csv module cannot write (Python 3.11 quotes all empty cells or none). With one
    column, a null is an empty line (as in PostgreSQL; the csv module wrote `""`)."""

    def __init__(self, out: BinaryIO | None = None, columns: list[str] | None = None) -> None:
        super().__init__(out)
        self._text = _Encoded(self.out)
        self._columns = columns
        self._held: list[dict[str, Any]] = []
        self._header: list[str] | None = None  # once written
        self._known: frozenset[str] = frozenset()

    def _start(self, columns: list[str]) -> None:
        self._header, self._known = columns, frozenset(columns)
        self._text.write(",".join(map(csv_field, columns)) + "\r\n")

    def _line(self, row: dict[str, Any]) -> None:
        assert self._header is not None
        if not self._known.issuperset(row):
            wrong = [k for k in row if k not in self._known]
            raise ValueError("dict contains fields not in fieldnames: "
                             + ", ".join(map(repr, wrong)))
        get = row.get
        self._text.write(",".join([csv_field(get(c)) for c in self._header]) + "\r\n")

    def row(self, row: dict[str, Any]) -> None:
        if self._columns is None:
            self._held.append(row)
            return
        if self._header is None:
            self._start(self._columns)
        self._line(row)

    def close(self) -> None:
        if self._columns is None:
            union = list(dict.fromkeys(k for r in self._held for k in r))
            if union:
                self._start(union)
                for r in self._held:
                    self._line(r)
        elif self._header is None:
            self._start(self._columns)  # no rows: the header alone


class TableRenderer(Renderer):
    """One table per run of rows with the same fields (batches, then their records); cells
    are never cut, whatever the width."""

    BLOCK = 1000

    def __init__(self, out: BinaryIO | None = None) -> None:
        from kafkalog_cli.output.fit import width_of

        super().__init__(out)
        self._rows: list[dict[str, Any]] = []
        self._width = width_of(self.out)  # a terminal's: wide tables go expanded (fit.py)

    def row(self, row: dict[str, Any]) -> None:
        self._rows.append(row)
        if len(self._rows) >= self.BLOCK:
            self._flush()

    def _flush(self) -> None:
        if not self._rows:
            return
        import tabulate as tabulate_module

        from kafkalog_cli.output.fit import table

        tabulate_module.PRESERVE_WHITESPACE = True  # a value's own spaces are data
        groups: list[list[dict[str, Any]]] = []
        for r in self._rows:
            if groups and groups[-1][0].keys() == r.keys():
                groups[-1].append(r)
            else:
                groups.append([r])
        for g in groups:
            cols = list(g[0])
            text = table(cols, [[cell(r[c], c, table=True) for c in cols] for r in g],
                         self._width, tablefmt="simple", disable_numparse=True)
            self.out.write(text.encode("utf-8", ESCAPE) + b"\n\n")
        self._rows = []

    def close(self) -> None:
        self._flush()
        super().close()


class FlatRenderer(Renderer):
    """csv and tables over rows that hold lists of objects: each row is flattened first."""

    def __init__(self, inner: Renderer, flatten: Flatten) -> None:
        super().__init__(inner.out)
        self._inner, self._flatten = inner, flatten

    def row(self, row: dict[str, Any]) -> None:
        for r in self._flatten(row):
            self._inner.row(r)

    def close(self) -> None:
        self._inner.close()


class TextRenderer(Renderer):
    def __init__(self, formatter: Callable[[dict[str, Any]], str | None],
                 out: BinaryIO | None = None) -> None:
        super().__init__(out)
        self._fmt = formatter

    def row(self, row: dict[str, Any]) -> None:
        line = self._fmt(row)
        if line is not None:
            self.out.write(line.encode("utf-8", ESCAPE) + b"\n")

    def text(self, line: str) -> None:
        self.out.write(line.encode("utf-8", ESCAPE) + b"\n")


def make_renderer(fmt: str, text_formatter: Callable[[dict[str, Any]], str | None],
                  columns: list[str] | None = None, flatten: Flatten | None = None,
                  out: BinaryIO | None = None) -> Renderer:
    """`columns` (csv): the header, known before the first row; `flatten` (csv, table): turns
    a row holding lists of objects into flat rows; `out`: where to (default stdout)."""
    if fmt == "jsonl":
        return JsonlRenderer(out)
    if fmt == "json":
        return JsonRenderer(out)
    if fmt in ("csv", "table"):
        flat: Renderer = CsvRenderer(out, columns) if fmt == "csv" else TableRenderer(out)
        return flat if flatten is None else FlatRenderer(flat, flatten)
    return TextRenderer(text_formatter, out)


def write_document(doc: Any, out: BinaryIO | None = None) -> None:
    """`--format json` of a command whose output is one document rather than rows."""
    import orjson

    o = out or sys.stdout.buffer
    o.write(json_bytes(doc, orjson.OPT_INDENT_2) + b"\n")
    o.flush()


def write_report(fmt: str, head: dict[str, Any], partitions: list[dict[str, Any]],
                 lists: dict[str, str], log_dirs: list[dict[str, Any]] | None = None) -> None:
    """Not text: json prints `{**head, "partitions": [...]}`; jsonl one line per partition
    with `head` added; csv and tables that, each list of objects named in `lists` as rows
    of their own (see `exploding`). `log_dirs` (objects naming a `logDir`), when given, are
    json's `"logDirs"` and follow the partitions in the other formats (kind `logDir`, their
    lists' rows carrying `logDir`)."""
    if fmt == "json":
        extra = {} if log_dirs is None else {"logDirs": log_dirs}
        write_document({**head, "partitions": partitions, **extra})
        return
    of_part = exploding(lists)
    of_dir = exploding(lists, carry=("logDir",), kind="logDir")
    out = make_renderer(fmt, lambda r: None,
                        flatten=lambda r: (of_dir if "logDir" in r else of_part)(r))
    for p in [*partitions, *(log_dirs or ())]:
        out.row({**p, **head})
    out.close()
