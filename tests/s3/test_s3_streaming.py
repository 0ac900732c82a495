"""Reads from a store are ranged and streamed: verifying a 45 MB segment object asks for each
byte about once, in requests of at most a scanner buffer, and the process's memory does not
grow with the object."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.s3.server import S3Server

LOG = "00000000000000000000.log"


@pytest.fixture(scope="module")
def big(s3: S3Server, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, int]:
    """One partition whose single segment is ~45 MB, only on S3 (the local copy is removed)."""
    import shutil

    from kafkalog_cli.storage.drills.generate import GenSpec, generate

    out = tmp_path_factory.mktemp("big")
    generate(out, GenSpec(records=1500, batch_records=50, value_bytes=32000,
                          segment_bytes=1 << 30, codecs=["none"]))
    size = (out / "demo-0" / LOG).stat().st_size
    url = s3.upload(out / "demo-0", "big/demo-0")
    shutil.rmtree(out)
    return url, size


def test_verify_reads_each_byte_about_once_in_bounded_requests(
        big: tuple[str, int], monkeypatch: pytest.MonkeyPatch) -> None:
    from kafkalog_cli.storage.checks.check import CheckOptions, Stats, check_partition
    from kafkalog_cli.storage.checks.findings import Findings
    from kafkalog_cli.storage.disk import fs
    from kafkalog_cli.storage.disk.logdir import open_target
    from kafkalog_cli.storage.disk.scan import DEFAULT_CHUNK

    url, size = big
    asked: list[tuple[str, int]] = []  # (object, bytes) of every read
    real_readinto, real_read = fs.RemoteFile.readinto, fs.RemoteFile.read

    def readinto(self: fs.RemoteFile, buf: memoryview) -> int:
        asked.append((self.path.name, len(buf)))
        return real_readinto(self, buf)

    def read(self: fs.RemoteFile, n: int = -1) -> bytes:
        asked.append((self.path.name, n if n >= 0 else self.size))
        return real_read(self, n)

    monkeypatch.setattr(fs.RemoteFile, "readinto", readinto)
    monkeypatch.setattr(fs.RemoteFile, "read", read)
    part = open_target(url).partition
    assert part is not None and fs.is_remote(part.path)
    f, stats = Findings(), Stats()
    assert check_partition(part, f, CheckOptions(), stats) == 1500
    assert [x for x in f.items if x.severity == "error"] == []
    log_reads = [n for name, n in asked if name == LOG]
    assert size <= sum(log_reads) <= size + 2 * DEFAULT_CHUNK  # about once, not per batch
    assert max(log_reads) <= DEFAULT_CHUNK < size // 8  # never the whole object


def _peak_rss_kb(*args: str) -> int:
    """ru_maxrss of `kafkalog ARGS` alone (a fresh parent waits for it)."""
    code = ("import resource, subprocess, sys\n"
            "r = subprocess.run([sys.executable, '-m', 'kafkalog_cli', *sys.argv[1:]],"
            " stdout=subprocess.DEVNULL)\n"
            "assert r.returncode == 0, r.returncode\n"
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
    p = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                       env=os.environ, timeout=300)
    assert p.returncode == 0, p.stderr
    return int(p.stdout)


def test_memory_does_not_grow_with_the_object(s3: S3Server, big: tuple[str, int]) -> None:
    url, size = big
    small = _peak_rss_kb("verify", s3.url("sample/demo-0"))
    large = _peak_rss_kb("verify", url)
    # a whole-object download would add the object's 45 MB; two 4 MB buffers are the scan's
    assert (large - small) * 1024 < size // 3, (small, large, size)


def test_the_object_is_really_only_on_s3(big: tuple[str, int]) -> None:
    assert not Path(big[0]).exists() and big[0].startswith("s3://")
