"""Diagnostics on stderr: warnings, notes and progress never mix with data on stdout.

Settings come from the global options (`-q/--quiet`, `-v/--verbose`, `--color/--no-color`,
`--utc`), which `cli.main` accepts anywhere on the command line. Colour is on only for a
terminal and only when NO_COLOR is unset (https://no-color.org); progress bars only when
stderr is a terminal and not --quiet, so pipes and cron stay silent.
"""

from __future__ import annotations

import codecs
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime


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


def warn(msg: str) -> None:
    if not settings.quiet:
        sys.stderr.write(paint("kafkalog: warning:", "warning", sys.stderr) + f" {msg}\n")


def note(msg: str) -> None:
    if not settings.quiet:
        sys.stderr.write(f"kafkalog: {msg}\n")


def detail(msg: str) -> None:
    """Only with -v."""
    if settings.verbose and not settings.quiet:
        sys.stderr.write(f"kafkalog: {msg}\n")


def human_time(ms: int | None) -> str:
    """Epoch ms as ISO-8601 in UTC (--utc) or local time; JSON keeps epoch ms."""
    if ms is None or ms < 0:
        return "-" if ms is None else str(ms)
    try:
        dt = datetime.fromtimestamp(ms / 1000, UTC)
    except (OverflowError, OSError, ValueError):
        return str(ms)
    if not settings.utc:
        dt = dt.astimezone()
    return dt.isoformat(timespec="milliseconds").replace("+00:00", "Z")


@contextmanager
def progress(total: int, description: str) -> Iterator[Callable[[int], None]]:
    """A byte-counting progress bar on stderr when it is a terminal; a no-op otherwise."""
    if settings.quiet or not sys.stderr.isatty() or total <= 0:
        yield lambda n: None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    console = Console(file=sys.stderr, markup=False, highlight=False, emoji=False,
                      no_color=not settings.use_color(sys.stderr))
    with Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(),
                  TransferSpeedColumn(), TimeRemainingColumn(), console=console,
                  transient=True) as bar:
        task = bar.add_task(description, total=total)
        yield lambda n: bar.advance(task, n)
