"""Diagnostics on stderr: warnings, notes and progress never mix with data on stdout.

Settings come from the global options (`-q/--quiet`, `-v/--verbose`, `--color[=WHEN]`,
`--no-color`, `--utc`), which `cli.main` accepts anywhere on the command line. Colour is on
only for a terminal and only when NO_COLOR is unset (https://no-color.org); progress bars only
when stderr is a terminal and not --quiet, so pipes and cron stay silent. Everything for
stderr goes through `live.screen`, which keeps it above a bar that is up (see live.py).
"""

from __future__ import annotations

import codecs
import functools
import io
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from kafkalog_cli.output.live import gate_stdout, screen


@dataclass
class Settings:
    quiet: bool = False
    verbose: int = 0
    color: bool | None = None  # None: decide by terminal and NO_COLOR
    utc: bool = False

    def use_color(self, stream=None) -> bool:  # type: ignore[no-untyped-def]
        if self.color is not None:
            return self.color
        s = stream or sys.stdout
        return not os.environ.get("NO_COLOR") and hasattr(s, "isatty") and s.isatty()


settings = Settings()

# Codec error handler for everything written out: a name from the file system with a byte
# that is not UTF-8 (kept by Python as a surrogate escape, PEP 383) shows as \xNN, so the
# output stays UTF-8 and still says which byte it was; other unencodable characters as
# backslashreplace writes them.
ESCAPE = "kafkalog.escape"


def _escape(e: UnicodeError) -> tuple[str, int]:
    if not isinstance(e, UnicodeEncodeError):
        raise e
    out = []
    for c in e.object[e.start:e.end]:
        n = ord(c)
        out.append(f"\\x{n - 0xDC00:02x}" if 0xDC80 <= n <= 0xDCFF else
                   f"\\u{n:04x}" if n <= 0xFFFF else f"\\U{n:08x}")
    return "".join(out), e.end


codecs.register_error(ESCAPE, _escape)


def shown(s: str) -> str:
    """`s` safe for any UTF-8 output (JSON included): name bytes that are not UTF-8 as
    \\xNN."""
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return s.encode("utf-8", ESCAPE).decode("utf-8")
    return s


def escape_std_streams() -> None:
    """Text written to stdout and stderr shows such bytes as \\xNN too, never fails."""
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors=ESCAPE)


_STYLES = {"error": "red", "warning": "yellow", "info": "cyan", "ok": "green"}


def paint(text: str, style: str, stream=None) -> str:  # type: ignore[no-untyped-def]
    if not settings.use_color(stream):
        return text
    import click

    return click.style(text, fg=_STYLES.get(style, style), bold=style == "error")


def _emit(line: str) -> None:
    if screen.live:
        screen.err(line + "\n")
    else:
        sys.stderr.write(line + "\n")


def warn(msg: str) -> None:
    if not settings.quiet:
        _emit(paint("kafkalog: warning:", "warning", sys.stderr) + f" {msg}")


def note(msg: str) -> None:
    if not settings.quiet:
        _emit(f"kafkalog: {msg}")


def adopt_terminal() -> None:
    """Once the settings are known: when a bar may share the terminal with stdout, route
    stdout through the live screen so data never lands on the bar's line."""
    if _bars_on() and sys.stdout.isatty():
        gate_stdout()


def human_time(ms: int | None) -> str:
    """Epoch ms as ISO-8601 in UTC (--utc) or local time; JSON keeps epoch ms."""
    if ms is None or ms < 0:
        return "-" if ms is None else str(ms)
    return _iso(ms, settings.utc, time.tzname)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@functools.lru_cache(maxsize=1024)  # tables repeat times (info: a row per partition)
def _iso(ms: int, utc: bool, _zone: tuple[str, str]) -> str:
    """`_zone`: the local zone it was made in (TZ and time.tzset() may change it)."""
    try:
        dt = _EPOCH + timedelta(milliseconds=ms)  # exact: ms / 1000 rounds (.999 -> .998)
        if not utc:
            dt = dt.astimezone()
    except (OverflowError, OSError, ValueError):
        return str(ms)
    return dt.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _bars_on() -> bool:
    return not settings.quiet and sys.stderr.isatty()


@contextmanager
def progress(total: int, description: str) -> Iterator[Callable[[int], None]]:
    """A byte-counting progress bar on stderr when it is a terminal; a no-op otherwise."""
    if not _bars_on() or total <= 0 or screen.live:
        yield lambda n: None
        return
    from rich.progress import DownloadColumn, TimeRemainingColumn, TransferSpeedColumn

    with _bar(description, total, DownloadColumn(), TransferSpeedColumn(),
              TimeRemainingColumn()) as (bar, task):
        yield lambda n: bar.advance(task, n)


@contextmanager
def count_progress(description: str) -> Iterator[Callable[[int, int], None]]:
    """A bar of done/total units (e.g. Spark tasks) whose total becomes known as it runs;
    yields `update(done, total)`. A no-op where `progress` would be one."""
    if not _bars_on() or screen.live:
        yield lambda done, total: None
        return
    from rich.progress import MofNCompleteColumn

    with _bar(description, None, MofNCompleteColumn()) as (bar, task):
        yield lambda done, total: bar.update(task, completed=done, total=total)


@contextmanager
def _bar(description: str, total: int | None, *columns: Any) -> Iterator[tuple[Any, Any]]:
    """rich computes and renders the bar (rate, ETA, colours); `screen` puts it on the
    terminal. On success and on error alike the bar vanishes: it is progress, not a result."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn
    from rich.table import Column

    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=80, markup=False, highlight=False,
                      emoji=False, legacy_windows=False,
                      color_system="standard" if settings.use_color(sys.stderr) else None)
    bar = Progress(TextColumn("{task.description}", markup=False,
                              table_column=Column(no_wrap=True)),
                   BarColumn(), *columns, console=console, auto_refresh=False)
    task = bar.add_task(description, total=total)

    def render(width: int) -> str:
        console.width = width
        console.print(bar.get_renderable(), end="", crop=True, no_wrap=True, overflow="crop")
        text = buf.getvalue()
        buf.seek(0)
        buf.truncate()
        return text.partition("\n")[0]

    screen.start(render)
    try:
        yield bar, task
    finally:
        screen.stop()
