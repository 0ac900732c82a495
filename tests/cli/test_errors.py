"""Every command, bad input: one line `kafkalog: error: ...`, a documented exit code, never a
traceback, and nothing half-written."""

import os
import subprocess
import sys

import pytest

from kafkalog_cli.cli import COMMANDS
from tests.cli.run import Result, run

USAGE, OPERATIONAL, PROBLEMS = 16, 8, 4

# commands that take PATH... first
PATH_COMMANDS = ["dump", "verify", "index-rebuild", "recover", "retain", "compact", "info"]


def check(r, codes):
    assert "Traceback" not in r.err, r.err
    assert r.code in codes, (r.code, r.err)
    last = r.err.strip().splitlines()[-1] if r.err.strip() else ""
    if r.code in (USAGE, OPERATIONAL):
        assert last.startswith("kafkalog: error: "), r.err


@pytest.mark.parametrize("cmd", [*PATH_COMMANDS, "find-by-time", "txn", "migrate"])
@pytest.mark.parametrize("how", ["missing", "dangling symlink"])
def test_missing_path(tmp_path, cmd, how):
    # fsck(8) treats what it cannot open as an operational error: 8, not 16 (usage)
    nope = tmp_path / "nope"
    if how == "dangling symlink":
        nope.symlink_to(tmp_path / "gone")
    extra = {"find-by-time": ["-t", "0"], "migrate": [tmp_path / "out"]}.get(cmd, [])
    r = run(cmd, nope, *extra)
    check(r, {OPERATIONAL})
    assert f"{nope}: no such file or directory" in r.err and r.out == b""
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("cmd", "names"), [("info", ["README.md", "notes.log"]),
                                             ("dump", ["README.md"])])  # dump reads any .log
def test_a_file_that_holds_no_kafka_data_is_refused_before_any_output(tmp_path, cmd, names):
    # info printed an empty table and exited 0; dump printed "Dumping README.md" first
    for name in names:
        (tmp_path / name).write_text("not kafka\n")
        r = run(cmd, tmp_path / name)
        check(r, {USAGE})
        assert r.out == b"" and str(tmp_path / name) in r.err


@pytest.mark.parametrize("cmd", [*PATH_COMMANDS, "find-by-time"])
def test_not_a_log_dir(tmp_path, cmd):
    (tmp_path / "notes.txt").write_text("not kafka")
    extra = ["-t", "0"] if cmd == "find-by-time" else []
    r = run(cmd, tmp_path, *extra)
    check(r, {USAGE})
    assert "not a Kafka log dir" in r.err


@pytest.mark.parametrize("cmd", ["dump", "verify", "info", "recover", "index-rebuild"])
def test_unreadable_segment(sample, cmd):
    # root can read any file: a directory where a .log should be is unreadable for everyone
    pdir = sample / "demo-0"
    bogus = pdir / "00000000000000999999.log"
    bogus.mkdir()
    before = {p: p.read_bytes() for p in sample.rglob("*") if p.is_file()}
    r = run(cmd, pdir)
    check(r, {0, 1, PROBLEMS, OPERATIONAL})
    assert {p: p.read_bytes() for p in sample.rglob("*") if p.is_file()} == before or r.code == 1


MUTATING = {"index-rebuild", "recover", "retain", "compact"}


@pytest.mark.parametrize("what", ["fifo", "dir"])
@pytest.mark.parametrize("name", ["00000000000000999999.log", "00000000000000000000.index",
                                  "00000000000000000000.timeindex"])
@pytest.mark.parametrize("cmd", PATH_COMMANDS)
def test_a_fifo_or_dir_named_like_a_segment_file_is_never_opened(sample, cmd, name, what):
    # opening a FIFO for reading blocks until a writer comes: it must never be opened; a
    # broker lists only files, then opens an index by name. A command that changes the
    # dir refuses it before any write (recover cut a .log, then failed to write the index)
    pdir = sample / "demo-0"
    target = pdir / name
    if target.exists():
        target.unlink()
    os.mkfifo(target) if what == "fifo" else target.mkdir()
    before = {p.name: p.read_bytes() for p in pdir.iterdir() if p.is_file()}
    try:
        p = subprocess.run([sys.executable, "-m", "kafkalog_cli", cmd, pdir], timeout=60,
                           capture_output=True)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{cmd} blocked on the FIFO")
    r = Result(p.returncode, p.stdout, p.stderr.decode("utf-8", "replace"))
    if cmd in MUTATING:
        check(r, {OPERATIONAL})
        assert r.err.splitlines() == [
            f"kafkalog: error: {target}: {'a FIFO' if what == 'fifo' else 'a directory'} "
            "where Kafka keeps a segment's file; move it out of the log dir and run again"]
        assert {p.name: p.read_bytes() for p in pdir.iterdir() if p.is_file()} == before
        assert not (sample.parent / ".kafkalog-quarantine").exists()
    else:
        check(r, {0, PROBLEMS})
    if cmd == "verify":
        assert r.code == PROBLEMS and b"NOT_A_FILE" in r.out and name.encode() in r.out


@pytest.mark.parametrize(("name", "args"), [
    ("replication-offset-checkpoint", ["verify", "{p}"]),
    ("replication-offset-checkpoint", ["retain", "{p}", "--dry-run"]),
    (".kafka_cleanshutdown", ["append", "{p}", "--topic", "demo", "--partition", "0"]),
])
def test_a_fifo_at_the_log_dir_root_is_never_read(sample, name, args):
    (sample / name).unlink()
    os.mkfifo(sample / name)
    try:
        p = subprocess.run([sys.executable, "-m", "kafkalog_cli",
                            *[a.replace("{p}", str(sample)) for a in args]], timeout=60,
                           input=b'{"value": "x"}\n', capture_output=True)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{args[0]} blocked on the FIFO {name}")
    r = Result(p.returncode, p.stdout, p.stderr.decode("utf-8", "replace"))
    check(r, {0, 1, PROBLEMS, OPERATIONAL})
    if r.code == OPERATIONAL:
        assert f"{sample / name}: not a regular file" in r.err


@pytest.mark.parametrize(("args", "code"), [
    (["dump", "{p}", "--format", "xml"], USAGE),
    (["dump", "{p}", "--payload", "rot13"], USAGE),
    (["dump", "{p}", "--from-offset", "-5"], USAGE),
    (["dump", "{p}", "--from-time", "next tuesday"], USAGE),
    (["verify", "{p}", "--max-decompressed-bytes", "0"], USAGE),
    (["index-rebuild", "{p}", "--index-interval-bytes", "-1"], USAGE),
    (["find-by-time", "{p}"], USAGE),
    (["find-by-time", "{p}", "-t", "2024-01-01T00:00:00"], USAGE),  # no zone
    (["append", "{p}"], USAGE),
    (["append", "{p}", "--topic", "t", "--partition", "-1"], USAGE),
    (["append", "{p}", "--topic", "t", "--partition", "0", "--codec", "brotli"], USAGE),
    (["append", "{p}", "--topic", "t", "--partition", "0", "--transactional"], USAGE),
    (["append", "{p}", "--topic", "t", "--partition", "0", "--magic", "0", "--codec", "zstd"],
     USAGE),
    (["append", "{p}", "--topic", "t", "--partition", "0", "--input", "/nonexistent"],
     OPERATIONAL),  # a file that cannot be opened, as a missing PATH
    (["append", "{p}/demo-0", "--topic", "demo", "--partition", "0"], USAGE),  # not a log dir
    (["recover", "{p}", "--quarantine", "/tmp/q", "--no-quarantine"], USAGE),
    (["retain", "{p}", "--topic-config", "/nonexistent.json"], OPERATIONAL),
    (["retain", "{p}", "--topic-config", "{p}/meta.properties"], USAGE),  # not JSON
    (["compact", "{p}"], USAGE),  # a log dir without --topic/--all
    (["compact", "{p}", "--min-cleanable-ratio", "2"], USAGE),
    (["generate", "{p}"], USAGE),  # exists, no --force
    (["no-such-command"], USAGE),
])
def test_wrong_option_values(sample, args, code):
    before = {p: p.read_bytes() for p in sample.rglob("*") if p.is_file()}
    r = run(*[a.replace("{p}", str(sample)) for a in args])
    check(r, {code})
    assert {p: p.read_bytes() for p in sample.rglob("*") if p.is_file()} == before


def test_bad_append_input_writes_nothing(tmp_path):
    for bad in (b'{"value": "ok"}\nnot json\n', b'{"key": 5}\n', b'[1, 2]\n',
                b'{"value": "x", "timestamp": "noon"}\n',
                b'{"value": "x", "headers": [{"value": "no key"}]}\n'):
        r = run("append", tmp_path / "ld", "--create", "--topic", "t", "--partition", "0",
                stdin=bad)
        check(r, {USAGE})
        assert ":1:" in r.err or ":2:" in r.err  # names the line
        assert not (tmp_path / "ld").exists()
    r = run("append", tmp_path / "ld", "--create", "--topic", "t", "--partition", "0", "--payload",
            "base64",
            stdin=b'{"value": "***"}\n')
    check(r, {USAGE})


def test_corrupt_files_are_problems_not_crashes(sample):
    (sample / "demo-0" / "00000000000000000000.snapshot").write_bytes(b"\x00\x01\x02")
    (sample / "recovery-point-offset-checkpoint").write_text("7\nnonsense\n")
    for cmd in ("verify", "dump", "info"):
        r = run(cmd, sample)
        check(r, {0, PROBLEMS})
    r = run("dump", sample / "demo-0" / "00000000000000000000.snapshot")
    check(r, {PROBLEMS, OPERATIONAL, USAGE})
    assert "snapshot" in r.err


def test_every_registered_command_is_covered():
    covered = set(PATH_COMMANDS) | {"find-by-time", "append", "generate"}
    assert set(COMMANDS) - covered <= {"export", "migrate", "txn"}  # covered by their own tests
    assert os.environ.get("KAFKALOG_DEBUG") is None


_INTERRUPTED_IMPORT = """
import builtins, sys
real = builtins.__import__
def slow_import(name, *args, **kwargs):
    if name == "kafkalog_cli.cli":  # Ctrl-C while the CLI (click, ...) is being imported
        raise KeyboardInterrupt
    return real(name, *args, **kwargs)
builtins.__import__ = slow_import
from kafkalog_cli.launch import main
main()
"""


def test_ctrl_c_while_the_cli_is_imported_is_exit_32_and_one_line():
    # the first ~0.15 s of a run: a traceback and status -2 (130 in a shell) before
    p = subprocess.run([sys.executable, "-c", _INTERRUPTED_IMPORT], capture_output=True,
                       timeout=60)
    assert (p.returncode, p.stderr) == (32, b"kafkalog: error: interrupted\n")


def test_a_name_with_a_newline_or_an_escape_keeps_findings_and_errors_on_one_line(sample):
    # a file name may hold any byte but / and NUL: raw, a newline split a finding (or an
    # error) in two for a script reading lines, and an escape sequence reached the terminal
    (sample / "demo-0" / "notes\nerror   FAKE \x1b[2J").write_bytes(b"x")
    r = run("verify", sample / "demo-0")
    lines = [x for x in r.out.decode().splitlines() if "notes" in x]
    assert lines == [f"warning UNKNOWN_FILE               {sample / 'demo-0'}/notes\\x0aerror"
                     "   FAKE \\x1b[2J: not a file Kafka writes in a partition dir"]
    assert "\x1b" not in r.out.decode()
    r = run("dump", sample / "no\nsuch")
    assert r.code == OPERATIONAL and r.err.count("\n") == 1 and "no\\x0asuch" in r.err


@pytest.mark.parametrize(("how", "env", "traced"), [
    (["--debug"], {}, True), ([], {"KAFKALOG_DEBUG": "1"}, True),
    ([], {"KAFKALOG_DEBUG": "0"}, False), ([], {"KAFKALOG_DEBUG": "false"}, False)])
def test_debug_shows_a_traceback_and_keeps_the_exit_code(tmp_path, how, env, traced):
    """--debug (or KAFKALOG_DEBUG set to a true value, as click reads it) adds a traceback;
    the error line and the exit code stay those of a run without it (8, not Python's 1)."""
    p = subprocess.run([sys.executable, "-m", "kafkalog_cli", *how, "verify",
                        str(tmp_path / "missing")], capture_output=True, text=True,
                       env={**os.environ, **env})
    assert p.returncode == 8
    assert ("Traceback (most recent call last)" in p.stderr) == traced
    assert p.stderr.rstrip().endswith("no such file or directory")


@pytest.mark.parametrize("cmd", ["index-rebuild", "recover", "verify", "dump", "retain"])
def test_an_empty_path_is_not_the_current_directory(tmp_path, cmd):
    """"" (an unset $LOGDIR) is a usage error, not this directory: index-rebuild "" rewrote
    the indexes of the log dir the shell was in."""
    ld = tmp_path / "ld"
    assert run("generate", ld, "--records", "50").code == 0
    (ld / "demo-0" / "00000000000000000000.index").unlink()
    p = subprocess.run([sys.executable, "-m", "kafkalog_cli", cmd, ""], cwd=ld,
                       capture_output=True, text=True)
    assert p.returncode == 16 and "an empty path" in p.stderr, p.stderr
    assert not (ld / "demo-0" / "00000000000000000000.index").exists()


@pytest.mark.parametrize("damages", [["torn-tail", "bit-flip"], ["torn-tail", "torn-tail"]])
def test_generate_damages_that_do_not_fit_leave_no_out(tmp_path, damages):
    """Damages a one-batch partition cannot take are a usage error (16), not an internal
    error, and the half-written OUT is removed: a rerun needs no --force."""
    out = tmp_path / "gq"
    args = ["generate", out, "--records", "3"] + [a for d in damages for a in ("--damage", d)]
    r = run(*args)
    assert r.code == 16 and "no whole batch left" in r.err and "internal" not in r.err, r.err
    assert not out.exists()
    assert run("generate", out, "--records", "3").code == 0


def test_generate_refuses_a_batch_past_its_int32_length_before_writing(tmp_path):
    """--value-bytes x --batch-records past what a batch's length field holds is a usage
    error at once (16), not an internal error after minutes and gigabytes."""
    r = run("generate", tmp_path / "g", "--value-bytes", 2**31 - 1)
    assert r.code == 16 and "--value-bytes" in r.err and "internal" not in r.err, r.err
    assert not (tmp_path / "g").exists()
