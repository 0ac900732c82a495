"""The read-only commands on s3:// URLs (a real S3 server, S3Proxy: tests/s3/server.py) print
what they print for the same data on local disk, with the same exit code; the commands that
change a log dir refuse URLs; a store that is missing, refuses us or is not there is one line
and exit 8."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.run import Result, run
from tests.conftest import CORPUS, FIXTURE
from tests.s3.server import CORPUS_DIRS, S3Server, free_port

SAMPLE_TS = "1700000000500"  # inside the sample's time range (epoch ms)

SAMPLE_COMMANDS = [
    ("info",),
    ("info", "--format", "json"),
    ("verify",),
    ("verify", "--format", "json"),
    ("verify", "--shallow", "--format", "json"),
    ("dump",),
    ("dump", "--format", "jsonl", "--print-data", "--payload", "base64"),
    ("dump", "--format", "jsonl", "--records", "--from-offset", "150", "--to-offset", "420"),
    ("dump", "--format", "jsonl", "--records", "--from-time", SAMPLE_TS),
    ("txn", "--format", "json"),
    ("find-by-time", "--timestamp", SAMPLE_TS, "--format", "json"),
    ("find-by-time", "--timestamp", "latest", "--format", "json"),
    # forked workers: each opens its own client (a shared one mixes up pooled connections)
    ("info", "-j", "4", "--format", "json"),
    ("dump", "-j", "4", "--format", "jsonl", "--records"),
    ("verify", "-j", "4", "--format", "json"),
    ("verify", "-j", "1", "--format", "json"),
]
CORPUS_COMMANDS = [
    ("info", "--format", "json"),
    ("verify", "--format", "json"),
    ("dump", "--format", "jsonl", "--print-data"),
]


def same_as_local(s3: S3Server, key: str, local: Path, *args: str) -> Result:
    """Run `args` on the URL and on the local copy: same exit code, same stdout (the URL
    read as the local path), same stderr."""
    url = s3.url(key)
    remote = run(*args, url)
    here = run(*args, local)
    assert remote.code == here.code, remote.err
    assert remote.text.replace(url, str(local)) == here.text
    assert remote.err.replace(url, str(local)) == here.err
    return remote


@pytest.mark.parametrize("args", SAMPLE_COMMANDS, ids=" ".join)
def test_sample_log_dir_reads_as_on_disk(s3: S3Server, args: tuple[str, ...]) -> None:
    r = same_as_local(s3, "sample", FIXTURE, *args)
    assert r.out  # something was compared


@pytest.mark.parametrize("args", [("verify", "--format", "json"),
                                  ("dump", "--format", "jsonl", "--print-data"),
                                  ("find-by-time", "--timestamp", SAMPLE_TS)], ids=" ".join)
@pytest.mark.parametrize("key", ["sample/demo-0", "sample/demo-0/00000000000000000000.log"])
def test_partition_dir_and_segment_urls(s3: S3Server, key: str, args: tuple[str, ...]) -> None:
    if key.endswith(".log") and args[0] == "find-by-time":
        args = ("dump", "--format", "jsonl", "--records", "--to-offset", "10")
    same_as_local(s3, key, FIXTURE / key.removeprefix("sample/"), *args)


@pytest.mark.parametrize("args", CORPUS_COMMANDS, ids=" ".join)
@pytest.mark.parametrize("name", CORPUS_DIRS)
def test_corpus_log_dirs_read_as_on_disk(s3: S3Server, name: str,
                                         args: tuple[str, ...]) -> None:
    same_as_local(s3, f"corpus/{name}", CORPUS / name, *args)


@pytest.fixture(scope="module")
def damaged(s3: S3Server, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample with a flipped byte and a torn tail (tests/spark/jvms.py), on S3 too."""
    from tests.spark.jvms import damaged_copy

    d = damaged_copy(FIXTURE, tmp_path_factory.mktemp("damaged"))
    s3.upload(d, "damaged")
    return d


@pytest.mark.parametrize("args", [("verify", "--format", "json"), ("verify",),
                                  ("dump", "--format", "jsonl", "--records"),
                                  ("info", "--format", "json")], ids=" ".join)
def test_damaged_log_dir_same_findings(s3: S3Server, damaged: Path,
                                       args: tuple[str, ...]) -> None:
    r = same_as_local(s3, "damaged", damaged, *args)
    if args == ("verify", "--format", "json"):
        assert r.code == 4 and b"LOG_CRC_MISMATCH" in r.out


MUTATING = [
    ("append", "{url}", "--topic", "demo", "--partition", "0"),
    ("retain", "{url}", "--retention-bytes", "1"),
    ("compact", "{url}"),
    ("recover", "{url}"),
    ("index-rebuild", "{url}"),
    ("migrate", "{url}", "{tmp}/out"),
    ("migrate", "{tmp}/in", "{url}"),
    ("generate", "{url}-new"),
    ("recover", "{tmp}", "--quarantine", "{url}-q"),
]


@pytest.mark.parametrize("args", MUTATING, ids=lambda a: " ".join(a).replace("{", "").
                         replace("}", ""))
def test_commands_that_change_a_log_dir_refuse_urls(s3: S3Server, tmp_path: Path,
                                                    args: tuple[str, ...]) -> None:
    url = s3.url("sample")
    before = s3.keys()
    r = run(*(a.format(url=url, tmp=tmp_path) for a in args), stdin=b'{"value": "x"}\n')
    assert r.code == 16, r.err
    assert r.err.count("\n") == 1 and "Traceback" not in r.err, r.err
    assert "s3://kafkalog/sample" in r.err and "read-only" in r.err
    assert s3.keys() == before  # nothing written to the store
    assert list(tmp_path.iterdir()) == []  # nor here


def one_line(r: Result, code: int, *words: str) -> None:
    assert r.code == code, r.err
    assert r.out == b""
    assert r.err.count("\n") == 1 and "Traceback" not in r.err, r.err
    for w in words:
        assert w in r.err, r.err


def run_env(*args: str, **env: str) -> Result:
    p = subprocess.run([sys.executable, "-m", "kafkalog_cli", *args], capture_output=True,
                       env={**os.environ, **env}, stdin=subprocess.DEVNULL, timeout=120)
    return Result(p.returncode, p.stdout, p.stderr.decode("utf-8", "replace"))


def test_missing_bucket_and_missing_prefix(s3: S3Server) -> None:
    one_line(run("verify", "s3://no-such-bucket/kafka-logs"), 8,
             "s3://no-such-bucket/kafka-logs: no such bucket")
    one_line(run("dump", s3.url("nothing/here")), 8, s3.url("nothing/here") + ": no such")


def test_wrong_credentials(s3: S3Server) -> None:
    url = s3.url("sample")
    one_line(run_env("info", url, AWS_SECRET_ACCESS_KEY="not-the-secret"), 8,
             url + ": access denied")
    one_line(run_env("dump", url, AWS_ACCESS_KEY_ID="nobody"), 8, url + ": access denied")


def test_unreachable_endpoint(s3: S3Server) -> None:
    url = s3.url("sample")
    one_line(run_env("verify", url, AWS_ENDPOINT_URL=f"http://127.0.0.1:{free_port()}"), 8,
             url + ": cannot reach the store")


def test_unknown_scheme_is_a_usage_error() -> None:
    one_line(run("verify", "nosuch://bucket/x"), 16, "nosuch://bucket/x: unknown URL scheme")


def test_without_pyarrow_one_line_names_the_extra(tmp_path: Path) -> None:
    """The base install (`make demo`) has no pyarrow: a URL then says what to install."""
    fake = tmp_path / "pyarrow"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise ImportError('no pyarrow in this install')\n")
    r = run_env("verify", "s3://kafkalog/sample",
                PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    one_line(r, 8, "s3://kafkalog/sample", "pip install 'kafkalog[s3]'")
    # local paths need no pyarrow
    r = run_env("verify", str(FIXTURE),
                PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    assert r.code == 0, r.err


def test_a_port_with_403_in_it_is_no_access_denied() -> None:
    """CI met a free port 54039: "403" inside it made an unreachable store "access denied"."""
    from kafkalog_cli.storage.disk.fs import describe

    down = OSError("AWS Error NETWORK_CONNECTION during HeadObject operation: curlCode: 7, "
                   "Could not connect to server; Details: Failed to connect to "
                   "127.0.0.1:54039 after 0 ms")
    assert describe("s3://b/k", down).startswith("s3://b/k: cannot reach the store: AWS Error")
    for port in (4030, 14031, 403):
        got = describe("s3://b/k", OSError(f"Failed to connect to 127.0.0.1:{port}"))
        assert "cannot reach the store" in got, got
    denied = OSError("AWS Error UNKNOWN (HTTP status 403) during HeadObject operation")
    assert describe("s3://b/k", denied).startswith("s3://b/k: access denied: ")
