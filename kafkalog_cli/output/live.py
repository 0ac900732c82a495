"""The terminal while a progress bar is up: one live line on stderr that all other output
scrolls above.

A bar is a line redrawn in place with the cursor left at its end, so whatever reaches the
terminal next lands on that line: a note glued to a stale bar, then the next redraw below it
(`compact ━━━━╺━━━ 17.2/68.8 MB ? -:--:--demo-1: dirty ratio 1.0`). rich's Live avoids this
only for text it prints itself on its own stream, which would move data off stdout. So
`Screen` draws the bar and is the one door to the terminal while it is up:

1. Notes and warnings go through `Screen.err`; data on stdout goes through the gate that
   `gate_stdout` puts under `sys.stdout` (renderers write `sys.stdout.buffer`).
2. Each write, under the lock the refresh thread shares, erases the bar (`\\r` + erase line),
   writes, then redraws it on the fresh line below. Stdout is written up to its last newline;
   the unfinished rest waits for the next write or for the bar to go, so a redraw never lands
   in the middle of a data line.
3. `stop` erases the bar for good and writes what stdout still held: a finished command
   leaves its output and no bar.
"""

from __future__ import annotations

import io
import os
import sys
import threading
from collections.abc import Callable
from typing import Any, TextIO

ERASE = "\r\x1b[2K"
REFRESH_S = 0.1
# a stdout line longer than this is written before its newline comes (the bar then waits)
MAX_HELD = 64 * 1024


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def terminal_width(fd: int) -> int:
    """COLUMNS when set (as shutil does), else the terminal's width, else 80."""
    try:
        return max(int(os.environ["COLUMNS"]), 1)
    except (KeyError, ValueError):
        pass
    try:
        return os.get_terminal_size(fd).columns or 80
    except OSError:
        return 80


class Screen:
    """The live line and every write to the terminal while it is up."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._render: Callable[[int], str] | None = None  # terminal width -> the bar line
        self._err: TextIO = sys.stderr
        self._line: str | None = None  # the bar as last rendered
        self._shown = False  # the bar is on screen, cursor at its end
        self._midline = False  # stdout left the cursor inside a line: do not draw
        self._held = b""  # stdout bytes after the last newline, while the bar is up
        self._held_fd = 1
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def live(self) -> bool:
        return self._render is not None

    def start(self, render: Callable[[int], str], err: TextIO | None = None) -> None:
        """Show the line `render` draws for a width, on `err` (stderr)."""
        with self._lock:
            if self._render is not None:
                raise RuntimeError("one progress bar at a time")
            self._err, self._render, self._midline = err or sys.stderr, render, False
            self._line = None
            self._stop.clear()
            self._draw()
        self._thread = threading.Thread(target=self._refresh, name="kafkalog-progress",
                                        daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Erase the bar for good, then write what stdout held back."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        with self._lock:
            self._erase()
            self._render = None
            held, self._held = self._held, b""
            if held:
                _write_all(self._held_fd, held)

    def forget(self) -> None:
        """In a forked worker: the bar is the parent's, and so are its lock and thread (a
        lock another thread held at the fork would never be released here)."""
        self._lock = threading.RLock()
        self._render, self._thread, self._shown, self._held = None, None, False, b""

    def err(self, text: str) -> None:
        """Whole lines for stderr (notes, warnings), above the bar."""
        with self._lock:
            self._erase()
            self._err.write(text)
            self._err.flush()
            self._draw()

    def out(self, fd: int, data: bytes) -> None:
        """Bytes for stdout (`fd`), above the bar; see step 2 of the module doc."""
        with self._lock:
            if self._render is None:
                _write_all(fd, data)
                return
            data, self._held_fd = self._held + data, fd
            cut = data.rfind(b"\n") + 1
            if not cut and len(data) <= MAX_HELD:
                self._held = data
                return
            cut = cut or len(data)
            self._erase()
            _write_all(fd, data[:cut])
            self._held = data[cut:]
            self._midline = not data[:cut].endswith(b"\n")
            self._draw()

    def _refresh(self) -> None:
        while not self._stop.wait(REFRESH_S):
            with self._lock:
                self._draw(fresh=True)

    def _draw(self, fresh: bool = False) -> None:
        """Draw the bar; rendered anew only by the refresh thread (10 times a second) or
        when there is none yet, so a burst of output lines costs no rendering."""
        if self._render is None or self._midline:
            return
        err = self._err
        if fresh or self._line is None:
            # one cell short of the width: a full line leaves some terminals wrapping early
            self._line = self._render(max(terminal_width(err.fileno()) - 1, 1))
        err.write("\r" + self._line + "\x1b[K")
        err.flush()
        self._shown = True

    def _erase(self) -> None:
        if self._shown:
            self._err.write(ERASE)
            self._err.flush()
            self._shown = False


screen = Screen()


class _StdoutGate(io.RawIOBase):
    """fd 1 as the raw stream under `sys.stdout`: every write goes through `screen.out`."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def isatty(self) -> bool:
        return os.isatty(self._fd)

    def write(self, b: Any, /) -> int:  # any buffer (bytes, bytearray, memoryview)
        data = bytes(b)
        screen.out(self._fd, data)
        return len(data)


def gate_stdout() -> None:
    """Put the gate under sys.stdout (a terminal; idempotent). Before any renderer takes
    `sys.stdout.buffer`, so data written from then on cannot tear the bar."""
    old = sys.stdout
    if isinstance(getattr(old, "buffer", None), _GatedBuffer):
        return
    old.flush()
    sys.stdout = io.TextIOWrapper(_GatedBuffer(_StdoutGate(old.fileno())),
                                  encoding=old.encoding, errors=old.errors,
                                  line_buffering=True)


class _GatedBuffer(io.BufferedWriter):
    """A BufferedWriter over the gate (its own type, so `gate_stdout` knows its work)."""

