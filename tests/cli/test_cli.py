import json
import os
import signal
import subprocess
import sys

import pytest

from kafkalog_cli.cli import COMMANDS
from tests.cli.run import run

PRODUCT = ["append", "dump", "verify", "index-rebuild", "find-by-time", "retain", "compact",
           "recover"]


def test_help_lists_all_eight_product_commands():
    r = run("--help")
    assert r.code == 0
    for name in PRODUCT:
        assert f"\n  {name} " in r.text


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_command_has_help(name):
    r = run(name, "--help")
    assert r.code == 0
    assert r.text.startswith("Usage: kafkalog " + name)


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_command_help_has_a_summary_line_and_examples(name):
    text = run(name, "--help").text
    summary = " ".join(text.split("\n\n", 2)[1].split())  # the first paragraph, unwrapped
    assert summary.endswith(".") and "Examples" not in summary  # a summary comes first
    examples = text.split("Examples:", 1)[1].split("\nOptions:", 1)[0]
    assert f"kafkalog {name}" in examples  # real invocations, not placeholders


@pytest.mark.parametrize("args", [
    ["dump", "--format", "xml", "."],
    ["verify", "--no-such-option", "."],
    ["dump"],
    ["find-by-time", ".", "-t", "yesterday-ish"],
])
def test_usage_errors_are_one_line_and_exit_16(args):
    r = run(*args)
    assert r.code == 16
    assert "Traceback" not in r.err
    assert r.err.strip().splitlines()[-1].startswith("kafkalog: error: ")


@pytest.mark.parametrize("args", [["dump", "/nonexistent/path"], ["verify", "/nonexistent"]])
def test_a_missing_path_is_one_line_and_exit_8(args):
    # fsck(8): what cannot be opened is an operational error
    r = run(*args)
    assert r.code == 8 and r.out == b""
    assert "Traceback" not in r.err
    assert r.err.strip().splitlines() == [f"kafkalog: error: {args[1]}: no such file or directory"]


def test_not_a_log_dir_is_a_usage_error(tmp_path):
    (tmp_path / "random.txt").write_text("hello")
    r = run("verify", tmp_path)
    assert r.code == 16 and "not a Kafka log dir" in r.err


@pytest.mark.parametrize("cmd", ["dump --records", "info", "verify --all"])
@pytest.mark.parametrize("fmt", ["text", "json", "jsonl", "csv", "table"])
def test_every_format_ends_cleanly_on_a_closed_pipe_and_fails_on_a_full_disk(sample, cmd, fmt):
    # a reader gone (| head): no message, and what a shell reports for cat there (141: 128 +
    # SIGPIPE), never 0 (the run did not end); > /dev/full: one error line, 8 (csv's text
    # layer closed stdout when it was collected, and the last flush raised a traceback, exit 1)
    r, w = os.pipe()
    os.close(r)  # the reader already gone: the first write fails, whatever the output's size
    try:
        cat = subprocess.run(["cat", sample / "demo-0" / "00000000000000000000.log"],
                             stdout=w, stderr=subprocess.PIPE)
        p = subprocess.run([sys.executable, "-m", "kafkalog_cli", *cmd.split(), sample, "-j",
                            "1", "--format", fmt], stdout=w, stderr=subprocess.PIPE)
    finally:
        os.close(w)
    assert cat.returncode == -signal.SIGPIPE  # the peer: killed, which a shell shows as 141
    assert (p.returncode, p.stderr) == (128 + signal.SIGPIPE, b"")
    pipe = f"set -o pipefail; {sys.executable} -m kafkalog_cli {cmd} {sample} -j 1 " \
           f"--format {fmt} | head -c 20"
    p = subprocess.run(["bash", "-c", pipe], capture_output=True)
    cut = {141} if cmd.startswith("dump") else {0, 141}  # dump's 200 KB overflow the pipe
    assert len(p.stdout) == 20 and p.stderr == b"" and p.returncode in cut
    with open("/dev/full", "wb") as full:
        p = subprocess.run([sys.executable, "-m", "kafkalog_cli", *cmd.split(), sample,
                            "-j", "1", "--format", fmt], stdout=full, capture_output=False,
                           stderr=subprocess.PIPE)
    assert (p.returncode, p.stderr) == (8, b"kafkalog: error: No space left on device\n")


def test_dump_json_fields_follow_kafka_names(sample):
    r = run("dump", sample / "demo-0", "--records", "--format", "json", "--payload", "base64")
    rows = json.loads(r.out)
    batch = next(x for x in rows if x["kind"] == "batch")
    assert set(batch) >= {"baseOffset", "lastOffset", "count", "magic", "compression",
                          "timestampType", "maxTimestamp", "producerId", "producerEpoch",
                          "baseSequence", "isTransactional", "isControl",
                          "partitionLeaderEpoch", "crc", "position", "size"}
    rec = next(x for x in rows if x["kind"] == "record")
    assert set(rec) >= {"topic", "partition", "offset", "timestamp", "timestampType", "key",
                        "value", "headers"}
    assert rec["topic"] == "demo" and rec["partition"] == 0
    markers = [x for x in rows if x["kind"] == "record" and "control" in x]
    assert {m["control"]["type"] for m in markers} == {"COMMIT", "ABORT"}


@pytest.mark.parametrize("fmt", ["text", "json", "jsonl", "csv", "table"])
def test_every_format_renders(sample, fmt):
    r = run("dump", sample / "legacy-v0-0", "--records", "--format", fmt)
    assert r.code == 0 and len(r.out) > 100


def test_dump_filters(sample):
    r = run("dump", sample / "demo-0", "--records", "--no-batches", "--format", "jsonl",
            "--from-offset", "100", "--to-offset", "150")
    offs = [json.loads(x)["offset"] for x in r.out.splitlines()]
    assert offs and min(offs) >= 100 and max(offs) <= 150
    assert len(offs) == len(set(offs))
    r = run("dump", sample / "demo-0", "--only", "control", "--format", "jsonl")
    assert all(json.loads(x)["isControl"] for x in r.out.splitlines())
    r = run("dump", sample / "demo-0", "--key", "key-00007", "--no-batches", "--format", "jsonl")
    keys = {json.loads(x)["key"] for x in r.out.splitlines()}
    assert keys == {"key-00007"}


def test_dump_payload_encodings(sample):
    import base64

    b64 = [json.loads(x) for x in run("dump", sample / "demo-1", "--records", "--no-batches",
                                      "--format", "jsonl", "--payload", "base64").out.splitlines()]
    hexed = [json.loads(x) for x in run("dump", sample / "demo-1", "--records", "--no-batches",
                                        "--format", "jsonl", "--payload", "hex").out.splitlines()]
    for a, b in zip(b64, hexed, strict=True):
        if a["value"] is not None:
            assert base64.b64decode(a["value"]).hex() == b["value"]


def test_invalid_utf8_is_shown_visibly(tmp_path):
    from kafkalog_cli.codec.batch_v2 import encode_batch

    pdir = tmp_path / "ld" / "t-0"
    pdir.mkdir(parents=True)
    (pdir / "00000000000000000000.log").write_bytes(encode_batch([(0, 1, b"k", b"ok\xff\xfe", [])]))
    r = run("dump", pdir, "--records", "--no-batches", "--format", "jsonl")
    assert json.loads(r.out)["value"] == "ok\\xff\\xfe"
