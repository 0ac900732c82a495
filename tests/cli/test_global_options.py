"""Global options: -q keeps results and errors only, --color as git, ls and ripgrep spell it,
and a mistyped command gets a suggestion as a mistyped option does."""

import shutil

import pytest

from tests.cli.run import run, run_on_tty
from tests.conftest import FIXTURE


def _stray(d):
    (d / "demo-0" / "stray.txt").write_text("x")  # a warning finding


def _stale_index(d):
    (d / "demo-0" / "00000000000000000000.index").unlink()


def _no_high_watermark(d):
    (d / "replication-offset-checkpoint").unlink()


NOW = "1800000000000"  # compact and retain: the same clock for both runs
# command, extra args, setup, a line only the loud run prints, a line -q keeps (a result)
QUIET_CASES = [
    ("verify", [], _stray, "verified 5 partitions", "UNKNOWN_FILE"),
    ("index-rebuild", [], _stale_index, "unchanged ", "rewrote "),
    ("compact", ["--all", "--now", NOW], None, "skipped: nothing cleanable", "round 1:"),
    ("recover", [], None, "nothing to do", None),
    ("retain", ["--retention-ms", "1000", "--now", NOW], _no_high_watermark,
     "note: no high watermark", None),
]


@pytest.mark.parametrize(("cmd", "extra", "setup", "loud_only", "kept"), QUIET_CASES,
                         ids=[c[0] for c in QUIET_CASES])
def test_quiet_keeps_results_and_errors_only(tmp_path, cmd, extra, setup, loud_only, kept):
    dirs = {}
    for name in ("quiet", "loud"):
        dirs[name] = tmp_path / name / "logs"
        shutil.copytree(FIXTURE, dirs[name])
        if setup:
            setup(dirs[name])
    # on a terminal, where bars, notes and summaries would show
    quiet = run_on_tty(cmd, dirs["quiet"], *extra, "-q")
    loud = run_on_tty(cmd, dirs["loud"], *extra)
    assert quiet.code == loud.code
    assert quiet.err == ""  # no bar, note or warning
    assert loud_only in loud.text and loud_only not in quiet.text
    if kept:
        assert kept in quiet.text
    # what -q prints is what the loud run prints, less some lines
    loud_lines = set(loud.text.replace(str(dirs["loud"]), str(dirs["quiet"])).splitlines())
    assert set(quiet.text.splitlines()) <= loud_lines


def test_quiet_still_prints_errors(tmp_path):
    r = run_on_tty("recover", tmp_path / "missing", "-q")
    assert r.code != 0
    assert r.err.startswith("kafkalog: error: ") and r.text == ""


@pytest.mark.parametrize(("args", "colored"), [
    (["--color", "verify"], True),  # bare --color takes no value: not the command's name
    (["verify", "--color=always"], True),
    (["--color", "always", "verify"], True),  # ripgrep's spelling
    (["verify", "--color", "always"], True),
    (["verify", "--color=auto"], False),  # a pipe
    (["--color", "never", "verify"], False),
    (["verify", "--color=never"], False),
    (["verify", "--no-color"], False),
    (["--color", "verify", "--no-color"], False),  # the last one wins, as in git
    (["--no-color", "verify", "--color=always"], True),
])
def test_color_when(sample, args, colored):
    _stray(sample)
    r = run(*args, sample)
    assert r.code == 0, r.err
    assert ("\x1b[" in r.text) is colored


def test_color_auto_on_a_terminal_and_a_bad_when(sample):
    _stray(sample)
    assert "\x1b[" in run_on_tty("verify", sample, "--color=auto").text
    assert "\x1b[" not in run_on_tty("verify", sample, "--color=never").text
    r = run("--color=sometimes", "verify", sample)
    assert r.code == 16
    assert "'sometimes' is not one of 'always', 'never', 'auto'" in r.err


def test_a_mistyped_command_gets_a_suggestion(sample):
    r = run("verfy", sample)
    assert r.code == 16
    assert r.err.splitlines()[-1] == ("kafkalog: error: No such command 'verfy'. "
                                      "Did you mean 'verify'?")
    r = run("index-rebiuld", sample)
    assert "Did you mean 'index-rebuild'?" in r.err
    r = run("frobnicate", sample)
    assert r.code == 16
    assert r.err.splitlines()[-1] == "kafkalog: error: No such command 'frobnicate'."


def test_a_global_flags_name_as_an_options_value_stays_the_value():
    """`dump --key -q`: -q is the key the option takes, not the global quiet flag (it was
    moved away, and --key then took the next word); a -q elsewhere is still global."""
    from kafkalog_cli.cli import _globals_first

    assert _globals_first(["dump", "x", "--key", "-q", "--format", "jsonl", "-v"]) == \
        ["-v", "dump", "x", "--key", "-q", "--format", "jsonl"]
    assert _globals_first(["verify", "-q", "x", "-j", "2"]) == ["-q", "verify", "x", "-j", "2"]
    assert _globals_first(["find-by-time", "x", "-t", "--utc"]) == \
        ["find-by-time", "x", "-t", "--utc"]
