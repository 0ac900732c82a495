"""Progress goes to stderr on a terminal only: pipes and cron see nothing."""

import os
import pty
import subprocess
import sys

from tests.cli.run import run


def test_silent_in_pipes(sample):
    r = run("index-rebuild", sample)
    assert r.code == 0 and r.err == ""
    r = run("recover", sample)
    assert r.code == 0 and r.err == ""


def _stderr_on_a_tty(args, env_extra=None) -> bytes:
    master, slave = pty.openpty()
    env = dict(os.environ, COLUMNS="120", **(env_extra or {}))
    p = subprocess.Popen([sys.executable, "-m", "kafkalog_cli", *map(str, args)],
                         stdout=subprocess.DEVNULL, stderr=slave, env=env)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 4096)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    p.wait(timeout=120)
    os.close(master)
    return b"".join(chunks)


def test_a_bar_on_a_terminal_and_quiet_silences_it(sample):
    out = _stderr_on_a_tty(["index-rebuild", sample])
    assert b"index-rebuild" in out  # the bar's description, drawn by rich on stderr
    assert _stderr_on_a_tty(["index-rebuild", sample, "-q"]) == b""


def test_no_color_is_honoured(sample):
    (sample / "demo-0" / "stray.txt").write_text("x")  # a warning finding
    colored = _stderr_on_a_tty(["verify", sample, "--color"])
    assert colored is not None
    r = run("verify", sample, "--color")
    assert "\x1b[" in r.text  # forced on, even in a pipe
    r = run("verify", sample)
    assert "\x1b[" not in r.text  # a pipe: plain
    env = dict(os.environ, NO_COLOR="1")
    p = subprocess.run([sys.executable, "-m", "kafkalog_cli", "verify", str(sample)], env=env,
                       capture_output=True)
    assert b"\x1b[" not in p.stdout
