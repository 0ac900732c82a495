"""Shell completion through click's own hooks (`_KAFKALOG_COMPLETE=...`), as the shells call it:
subcommands, choices, log-dir paths, and --topic/--partition read from the directory given
earlier on the command line."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def complete(words: str, cword: int | str, shell: str = "bash") -> list[tuple[str, str]]:
    env = {**os.environ, "_KAFKALOG_COMPLETE": f"{shell}_complete", "COMP_WORDS": words,
           "COMP_CWORD": str(cword)}
    r = subprocess.run([sys.executable, "-m", "kafkalog_cli"], env=env, capture_output=True,
                       text=True, timeout=60, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    if shell == "bash":  # "type,value" per line
        return [tuple(ln.split(",", 1)) for ln in r.stdout.splitlines() if ln]
    if shell == "zsh":  # type, value, help ("_" when none), one per line
        lines = r.stdout.splitlines()
        return [(lines[i], lines[i + 1]) for i in range(0, len(lines), 3)]
    return [tuple(ln.split(",", 1)) for ln in r.stdout.splitlines() if ln]  # fish


@pytest.fixture
def log_dir(tmp_path):
    for name in ("orders-0", "orders-3", "payments-1", "__consumer_offsets-7"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "00000000000000000000.log").write_bytes(b"")
    (tmp_path / "not-a-partition").mkdir()
    (tmp_path / "recovery-point-offset-checkpoint").write_text("0\n0\n")
    return tmp_path


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_source_scripts_are_generated(shell):
    env = {**os.environ, "_KAFKALOG_COMPLETE": f"{shell}_source"}
    r = subprocess.run([sys.executable, "-m", "kafkalog_cli"], env=env, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0 and "_KAFKALOG_COMPLETE" in r.stdout


def test_subcommands_and_choices():
    assert ("plain", "txn") in complete("kafkalog t", 1)
    assert complete("kafkalog dump --decode ", 3) == [
        ("plain", v) for v in ("auto", "none", "offsets", "transactions", "share", "metadata")]


def test_paths_complete_as_files_and_log_dirs_as_directories():
    assert complete("kafkalog dump ", 2) == [("file", "")]
    assert complete("kafkalog txn /va", 2) == [("file", "/va")]
    assert complete("kafkalog append /va", 2) == [("dir", "/va")]


def test_topic_from_the_log_dir_given_earlier(log_dir):
    assert complete(f"kafkalog append {log_dir} --topic ", 4) == [
        ("plain", "__consumer_offsets"), ("plain", "orders"), ("plain", "payments")]
    assert complete(f"kafkalog append {log_dir} --topic or", 4) == [("plain", "orders")]
    assert complete(f"kafkalog compact {log_dir} --topic p", 4) == [("plain", "payments")]
    # a partition dir names its own topic; an option before the dir does not confuse it
    assert complete(f"kafkalog --debug compact --dry-run {log_dir}/orders-3 --topic ", 6) == [
        ("plain", "orders")]


def test_partition_of_the_topic_given_earlier(log_dir):
    assert complete(f"kafkalog append {log_dir} --topic orders --partition ", 6) == [
        ("plain", "0"), ("plain", "3")]
    assert complete(f"kafkalog append --topic payments {log_dir} --partition ", 6) == [
        ("plain", "1")]
    assert complete(f"kafkalog append {log_dir} --partition ", 4) == [
        ("plain", "0"), ("plain", "1"), ("plain", "3"), ("plain", "7")]


def test_no_directory_or_a_missing_one_completes_nothing(tmp_path):
    assert complete("kafkalog append --topic ", 3) == []
    assert complete(f"kafkalog append {tmp_path}/missing --topic ", 4) == []


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_topic_completion_in_zsh_and_fish(log_dir, shell):
    if shell == "zsh":
        got = complete(f"kafkalog append {log_dir} --topic o", 4, "zsh")
    else:  # fish passes the word being completed, also the last of COMP_WORDS
        got = complete(f"kafkalog append {log_dir} --topic o", "o", "fish")
    assert got == [("plain", "orders")]
