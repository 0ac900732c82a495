"""What a person sees: commands with a progress bar run in a real terminal (a tmux pane of a
fixed size), and the screen they leave is read back with `tmux capture-pane`.

The screen must hold exactly the lines the same command prints into pipes (each note and
each result on its own line, nothing glued to a bar) and no bar: a bar vanishes when its
command ends. The bytes the pane received (`pipe-pane`) show that a bar was drawn, so the
check is not passed by a run too quick to draw one. tmux comes from Debian's package
(`make test` installs it when missing).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli.run import run

BAR_GLYPHS = ("━", "╸", "╺")  # rich's bar: drawn while running, never left behind
EXIT_MARK = "__kafkalog_exit="


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Ten partitions of several segments; two damaged, so index-rebuild warns on stderr
    while its bar is up."""
    d = tmp_path_factory.mktemp("term") / "logs"
    r = run("generate", d, "--partitions", 10, "--records", 3000, "--value-bytes", 200,
            "--segment-bytes", 200_000, "--damage", "torn-tail", "--damage", "bit-flip")
    assert r.code == 0, r.err
    return d


def _tmux() -> str:
    path = shutil.which("tmux")
    if path is None:
        pytest.fail("tmux is not installed: `make test` installs it (apt-get install tmux)")
    return path


def _on_screen(tmp: Path, args: list[str], cols: int, rows: int) -> tuple[int, list[str], bytes]:
    """Run kafkalog in a `cols` x `rows` tmux pane; return its exit code, the lines on the
    screen and in the scrollback once it ended (wrapped lines joined), and every byte the
    pane received."""
    sock, raw, go = tmp / "tmux.sock", tmp / "pane.raw", tmp / "go"
    tmux = [_tmux(), "-S", str(sock), "-f", "/dev/null"]
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "TMUX")}
    env["SHELL"] = "/bin/sh"  # the pane's shell runs the POSIX script below
    cmd = shlex.join([sys.executable, "-m", "kafkalog_cli", *args])
    # wait for pipe-pane before starting, so the raw log holds every byte
    script = (f"while [ ! -e {shlex.quote(str(go))} ]; do sleep 0.02; done; {cmd}; "
              f"echo {EXIT_MARK}$?; sleep 600")
    subprocess.run([*tmux, "new-session", "-d", "-x", str(cols), "-y", str(rows), script],
                   env=env, check=True)
    try:
        subprocess.run([*tmux, "pipe-pane", "-t", "0", f"cat > {shlex.quote(str(raw))}"],
                       check=True)
        go.touch()
        deadline = time.monotonic() + 120
        while True:
            screen = subprocess.run([*tmux, "capture-pane", "-p", "-J", "-S", "-", "-t", "0"],
                                    check=True, capture_output=True, text=True).stdout
            if EXIT_MARK in screen or time.monotonic() > deadline:
                break
            time.sleep(0.1)
    finally:
        subprocess.run([*tmux, "kill-server"], check=False, capture_output=True)
    lines = [ln.rstrip() for ln in screen.split("\n") if ln.strip()]
    marks = [ln for ln in lines if ln.startswith(EXIT_MARK)]
    assert marks, f"the command did not finish in the pane:\n{screen}"
    lines.remove(marks[0])
    return int(marks[0][len(EXIT_MARK):]), lines, raw.read_bytes()


@pytest.mark.parametrize(("args", "cols"), [
    (["compact", "--all", "--force"], 120),
    (["index-rebuild"], 120),
    (["index-rebuild"], 50),  # a narrow pane: the bar still takes one line only
])
def test_the_screen_holds_the_output_and_no_bar(pristine, tmp_path, args, cols):
    work = tmp_path / "logs"
    shutil.copytree(pristine, work)
    piped = run(*args[:1], work, *args[1:])
    expected = sorted(ln for ln in (piped.text + piped.err).split("\n") if ln.strip())
    assert any("warning" in ln for ln in expected) or args[0] == "compact"

    shutil.rmtree(work)
    shutil.copytree(pristine, work)  # the same paths, the same work to do
    code, lines, raw = _on_screen(tmp_path, [*args[:1], str(work), *args[1:]], cols, 40)

    assert code == piped.code
    assert any(g.encode() in raw for g in BAR_GLYPHS), "no bar was drawn: nothing was tested"
    left = [ln for ln in lines if any(g in ln for g in BAR_GLYPHS)]
    assert not left, f"bars left on the screen: {left}"
    # every note and result on a line of its own, none lost, none glued to another
    assert sorted(lines) == expected
