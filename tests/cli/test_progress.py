"""Progress goes to stderr on a terminal only: pipes and cron see nothing."""

import os
import subprocess
import sys

from tests.cli.run import run, run_on_tty


def test_silent_in_pipes(sample):
    r = run("index-rebuild", sample)
    assert r.code == 0 and r.err == ""
    r = run("recover", sample)
    assert r.code == 0 and r.err == ""


def test_a_bar_on_a_terminal_and_quiet_silences_it(sample):
    r = run_on_tty("index-rebuild", sample, stdout_tty=False)
    assert "index-rebuild" in r.err  # the bar's description, drawn on stderr
    assert "━" in r.err
    assert run_on_tty("index-rebuild", sample, "-q", stdout_tty=False).err == ""


def test_no_color_is_honoured(sample):
    (sample / "demo-0" / "stray.txt").write_text("x")  # a warning finding
    r = run("verify", sample, "--color")
    assert "\x1b[" in r.text  # forced on, even in a pipe
    r = run("verify", sample)
    assert "\x1b[" not in r.text  # a pipe: plain
    assert "\x1b[" in run_on_tty("verify", sample).text  # a terminal: colour
    env = dict(os.environ, NO_COLOR="1")
    p = subprocess.run([sys.executable, "-m", "kafkalog_cli", "verify", str(sample)], env=env,
                       capture_output=True)
    assert b"\x1b[" not in p.stdout
    assert "\x1b[" not in run_on_tty("verify", sample, env={"NO_COLOR": "1"}).text
