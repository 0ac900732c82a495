"""A real S3 server for the tests: S3Proxy (`make s3proxy`), one per pytest worker.

`s3` (session-scoped, offered to every test by tests/conftest.py) starts it on 127.0.0.1 on a
free port with jclouds' in-memory `transient` backend, creates the bucket, uploads the sample
fixture and a few corpus log dirs with pyarrow.fs, and points the usual AWS variables at it
(os.environ, so CLI subprocesses and Spark JVMs started afterwards inherit them).
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
VERSION = "2.6.0"
BUCKET = "kafkalog"
IDENTITY, CREDENTIAL = "kafkalog-test", "kafkalog-test-secret"
# corpus log dirs the tests read from S3 too: ZooKeeper-era and KRaft brokers, snappy batches
CORPUS_DIRS = ("seanorth-zk-snappy", "nomanazeem-kraft", "william0423-zk-2.4")


def jar() -> Path:
    given = os.environ.get("KAFKALOG_S3PROXY_JAR")
    if given:
        return Path(given)
    ref = Path(os.environ.get("KAFKALOG_KAFKA_REF") or ROOT / ".kafka-ref")
    return ref / f"s3proxy-{VERSION}" / f"s3proxy-{VERSION}-jar-with-dependencies.jar"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def aws_env(endpoint: str) -> dict[str, str]:
    """What a user sets for an S3-compatible store. The two checksum settings: pyarrow's AWS
    SDK validates response checksums S3Proxy does not send ("Failed to flush response
    stream" on every GetObject) and sends request checksums it rejects."""
    return {"AWS_ACCESS_KEY_ID": IDENTITY, "AWS_SECRET_ACCESS_KEY": CREDENTIAL,
            "AWS_ENDPOINT_URL": endpoint, "AWS_REGION": "us-east-1",
            "AWS_EC2_METADATA_DISABLED": "true",
            "AWS_RESPONSE_CHECKSUM_VALIDATION": "when_required",
            "AWS_REQUEST_CHECKSUM_CALCULATION": "when_required"}


class S3Server:
    def __init__(self, endpoint: str, work: Path) -> None:
        self.endpoint, self.work = endpoint, work
        self.bucket = BUCKET

    @property
    def fs(self) -> Any:
        from pyarrow import fs

        return fs.S3FileSystem(access_key=IDENTITY, secret_key=CREDENTIAL, region="us-east-1",
                               endpoint_override=self.endpoint, allow_bucket_creation=True)

    def url(self, key: str) -> str:
        return f"s3://{self.bucket}/{key}"

    def upload(self, local: Path, key: str) -> str:
        from pyarrow import fs

        fs.copy_files(str(local), f"{self.bucket}/{key}", destination_filesystem=self.fs)
        return self.url(key)

    def keys(self, key: str = "") -> dict[str, int]:
        from pyarrow import fs

        sel = fs.FileSelector(f"{self.bucket}/{key}".rstrip("/"), recursive=True)
        return {i.path: i.size for i in self.fs.get_file_info(sel)
                if i.type == fs.FileType.File}


def start(work: Path) -> tuple[subprocess.Popen[bytes], S3Server]:
    j = jar()
    if not j.is_file():
        pytest.fail(f"{j}: S3Proxy is missing; run `make s3proxy`", pytrace=False)
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    props = work / "s3proxy.properties"
    props.write_text(f"s3proxy.endpoint={endpoint}\n"
                     "s3proxy.authorization=aws-v2-or-v4\n"
                     f"s3proxy.identity={IDENTITY}\ns3proxy.credential={CREDENTIAL}\n"
                     "jclouds.provider=transient\n"
                     f"jclouds.identity={IDENTITY}\njclouds.credential={CREDENTIAL}\n")
    log = work / "s3proxy.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(["java", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
                                 "-Xmx512m", "-jar", str(j), "--properties", str(props)],
                                cwd=work, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 60
    while True:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"S3Proxy did not start; {log} ends:\n"
                        f"{log.read_text(errors='replace')[-2000:]}", pytrace=False)
        time.sleep(0.1)
    return proc, S3Server(endpoint, work)


def s3_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    from tests.conftest import CORPUS, FIXTURE

    proc, server = start(tmp_path_factory.mktemp("s3proxy"))
    saved = {k: os.environ.get(k) for k in aws_env("")}
    os.environ.update(aws_env(server.endpoint))
    try:
        server.fs.create_dir(BUCKET)
        server.upload(FIXTURE, "sample")
        for name in CORPUS_DIRS:
            server.upload(CORPUS / name, f"corpus/{name}")
        yield server
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
