"""The JVM-server start-up helper of the Spark fixtures, on a stand-in server (a Python
process that binds its port or fails as a JVM with maxRetries 0 does): no JVM needed."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest

from tests.spark import jvms
from tests.spark.jvms import listens, start_listening, stop_group

# binds the port in argv[1] and serves, or fails the way Spark's startServiceOnPort logs it
SERVER = """
import socket, sys, time
s = socket.socket()
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError as e:
    print("java.net.BindException:", "Address already in use" if e.errno == 98 else e)
    sys.exit(1)
s.listen()
time.sleep(600)
"""


def _cmd(port: int) -> list[str]:
    return [sys.executable, "-c", SERVER, str(port)]


def test_a_port_taken_before_the_bind_starts_the_server_again_on_another(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as hold:
        hold.bind(("127.0.0.1", 0))  # taken, but nothing listens: listens() stays False
        taken = hold.getsockname()[1]
        picks = iter([taken, taken])  # the first two picks lose the race, the third wins
        real = jvms.free_port
        monkeypatch.setattr(jvms, "free_port", lambda: next(picks, None) or real())
        proc, port = start_listening("the stand-in", _cmd, tmp_path / "log", cwd=tmp_path,
                                     env={})
        try:
            assert port != taken and listens(port)
            assert (tmp_path / "log").read_text().count("Address already in use") == 2
        finally:
            stop_group(proc)


def test_a_server_that_fails_for_another_reason_is_not_started_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    starts: list[int] = []

    def cmd(port: int) -> list[str]:
        starts.append(port)
        return [sys.executable, "-c", "import sys; print('no such class'); sys.exit(1)"]

    with pytest.raises(RuntimeError, match="no such class"):
        start_listening("the stand-in", cmd, tmp_path / "log", cwd=tmp_path, env={})
    assert len(starts) == 1


def test_it_gives_up_after_its_tries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as hold:
        hold.bind(("127.0.0.1", 0))
        monkeypatch.setattr(jvms, "free_port", lambda: hold.getsockname()[1])
        with pytest.raises(RuntimeError, match="Address already in use"):
            start_listening("the stand-in", _cmd, tmp_path / "log", cwd=tmp_path, env={},
                            tries=3)
    assert (tmp_path / "log").read_text().count("Address already in use") == 3
