"""The live screen's protocol: erase the bar, write, redraw; stdout written up to its last
newline while the bar is up. A pipe stands in for the terminal, and a few lines of terminal
emulation (carriage return, erase line, newline) show what a person would see."""

import os
import threading

import pytest

from kafkalog_cli.output import live
from kafkalog_cli.output.live import Screen


def _emulate(data: str) -> list[str]:
    """The lines a terminal shows after `data` (no scrolling, no cursor movement up)."""
    lines, col, i = [""], 0, 0
    while i < len(data):
        if data.startswith("\x1b[2K", i):  # erase the whole line
            lines[-1], i = "", i + 4
            continue
        if data.startswith("\x1b[K", i):  # erase to the end of the line
            lines[-1], i = lines[-1][:col], i + 3
            continue
        ch = data[i]
        if ch == "\r":
            col = 0
        elif ch == "\n":
            lines.append("")
            col = 0
        else:
            line = lines[-1].ljust(col)
            lines[-1] = line[:col] + ch + line[col + 1:]
            col += 1
        i += 1
    return lines


@pytest.fixture
def term(monkeypatch):
    """A Screen whose stderr and stdout both write into one pipe, in order."""
    monkeypatch.setenv("COLUMNS", "40")
    monkeypatch.setattr(live, "REFRESH_S", 0.01)
    r, w = os.pipe()
    err = os.fdopen(os.dup(w), "w")
    screen = Screen()
    widths: list[int] = []
    ticks = iter(range(10**9))

    def render(width: int) -> str:
        widths.append(width)
        return f"BAR {next(ticks)}"

    os.set_blocking(r, False)

    def read() -> str:
        try:
            return os.read(r, 1 << 20).decode()
        except BlockingIOError:
            return ""

    yield screen, lambda: screen.start(render, err), w, widths, read
    err.close()
    os.close(w)
    os.close(r)


def test_notes_and_data_scroll_above_the_bar_and_the_bar_goes(term):
    screen, start, out, widths, read = term
    start()
    screen.err("note 1\n")
    screen.out(out, b"data 1\npart")
    held = read()
    assert "part" not in held  # an unfinished line waits: a redraw would land in it
    screen.out(out, b"ial\n")
    screen.err("note 2\n")
    threading.Event().wait(0.05)  # let the refresh thread redraw a few times
    screen.stop()
    shown = _emulate(held + read())
    assert shown == ["note 1", "data 1", "partial", "note 2", ""]
    assert widths and set(widths) == {39}  # one cell short of COLUMNS


def test_stop_lets_the_held_tail_out(term):
    screen, start, out, _, read = term
    start()
    screen.out(out, b"no newline yet")
    screen.stop()
    assert _emulate(read()) == ["no newline yet"]
    screen.out(out, b" and after\n")  # no bar: straight through
    assert read() == " and after\n"


def test_a_huge_line_goes_out_and_the_bar_waits_for_its_end(term, monkeypatch):
    screen, start, out, _, read = term
    monkeypatch.setattr(live, "MAX_HELD", 8)
    start()
    screen.out(out, b"0123456789")  # longer than MAX_HELD: written at once
    threading.Event().wait(0.05)
    first = read()
    assert first.endswith("0123456789")  # and no bar drawn after it
    screen.out(out, b"abc\n")
    screen.stop()
    assert _emulate(first + read()) == ["0123456789abc", ""]


def test_one_bar_at_a_time(term):
    screen, start, *_ = term
    start()
    try:
        with pytest.raises(RuntimeError):
            start()
    finally:
        screen.stop()
    assert not screen.live
