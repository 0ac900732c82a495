"""One renderer per --format; commands hand it rows (dicts), it writes stdout.

jsonl and json stream (flat memory); table buffers rows per block; csv writes a header
from the first row's keys (or the columns given); text uses the command's line formatter.
"""

from __future__ import annotations

import base64
import csv
import io
import sys
from collections.abc import Callable, Iterable
from typing import Any, BinaryIO

import orjson

from kafkalog_cli.output.console import ESCAPE, shown

FORMATS = ("text", "json", "jsonl", "csv", "table")
PAYLOADS = ("utf8", "base64", "hex")


def payload_encoder(kind: str) -> Callable[[bytes | None], str | None]:
    if kind == "base64":
        return lambda b: None if b is None else base64.b64encode(b).decode("ascii")
    if kind == "hex":
        return lambda b: None if b is None else b.hex()
    # utf8: invalid bytes become visible \xNN escapes
    return utf8_visible


def _utf8_visible_pure(b: bytes | None) -> str | None:
    return None if b is None else b.decode("utf-8", "backslashreplace")


try:  # the compiled one-pass version (same output; see _speedups/fastcodec.pyx)
    import os as _os

    if _os.environ.get("KAFKALOG_PURE") == "1":
        raise ImportError
    from kafkalog_cli._speedups.fastcodec import utf8_visible
except ImportError:
    utf8_visible = _utf8_visible_pure


def json_bytes(obj: Any, option: int = 0) -> bytes:
    """orjson.dumps; a name from the file system that is not UTF-8 (orjson refuses its
    surrogate escapes) is written with those bytes as \\xNN."""
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
    def row(self, row: dict[str, Any]) -> None:
        self.out.write(json_bytes(row, orjson.OPT_APPEND_NEWLINE))


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
TIME_KEYS = frozenset({"timestamp", "maxTimestamp", "lastTimestamp", "deleteHorizonMs",
                       "firstTimestamp", "first_timestamp", "max_timestamp"})


def _cell(v: Any, key: str | None = None) -> Any:
    if isinstance(v, (list, dict)):
        return json_bytes(v).decode()
    if key in TIME_KEYS and isinstance(v, int) and v >= 0:
        from kafkalog_cli.output.console import human_time

        return human_time(v)
    return v


class CsvRenderer(Renderer):
    def __init__(self, out: BinaryIO | None = None, columns: list[str] | None = None) -> None:
        super().__init__(out)
        self._text = io.TextIOWrapper(self.out, encoding="utf-8", errors=ESCAPE, newline="",
                                      write_through=True)
        self._columns = columns
        self._writer: csv.DictWriter[str] | None = None

    def row(self, row: dict[str, Any]) -> None:
        if self._writer is None:
            self._writer = csv.DictWriter(self._text, fieldnames=self._columns or list(row),
                                          extrasaction="ignore")
            self._writer.writeheader()
        self._writer.writerow({k: _cell(v) for k, v in row.items()})

    def close(self) -> None:
        self._text.flush()
        self._text.detach()


class TableRenderer(Renderer):
    BLOCK = 1000

    def __init__(self, out: BinaryIO | None = None, columns: list[str] | None = None) -> None:
        super().__init__(out)
        self._rows: list[dict[str, Any]] = []
        self._columns = columns

    def row(self, row: dict[str, Any]) -> None:
        self._rows.append(row)
        if len(self._rows) >= self.BLOCK:
            self._flush()

    def _flush(self) -> None:
        if not self._rows:
            return
        from tabulate import tabulate

        # one table per run of rows with the same columns (batches, then their records)
        groups: list[list[dict[str, Any]]] = []
        for r in self._rows:
            if groups and groups[-1][0].keys() == r.keys():
                groups[-1].append(r)
            else:
                groups.append([r])
        for g in groups:
            cols = self._columns or list(g[0])
            table = tabulate([[_cell(r.get(c), c) for c in cols] for r in g], headers=cols,
                             tablefmt="simple", disable_numparse=True)
            self.out.write(table.encode("utf-8", ESCAPE) + b"\n\n")
        self._rows = []

    def close(self) -> None:
        self._flush()
        super().close()


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
                  columns: list[str] | None = None) -> Renderer:
    if fmt == "jsonl":
        return JsonlRenderer()
    if fmt == "json":
        return JsonRenderer()
    if fmt == "csv":
        return CsvRenderer(columns=columns)
    if fmt == "table":
        return TableRenderer(columns=columns)
    return TextRenderer(text_formatter)


def write_all(renderer: Renderer, rows: Iterable[dict[str, Any]]) -> None:
    for r in rows:
        renderer.row(r)
    renderer.close()
