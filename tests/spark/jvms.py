"""Helpers for tests that run Spark JVMs as their own processes (a Spark Connect server, a
standalone master and worker): ports, waiting for start-up, stopping a process group."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

START_TIMEOUT = 120.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def listens(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def tail(log: Path, n: int = 40) -> str:
    lines = log.read_text(errors="replace").splitlines() if log.exists() else []
    return "\n".join(lines[-n:])


def wait_until(what: str, ready: Callable[[], bool],
               procs: list[subprocess.Popen[bytes]]) -> None:
    """Poll `ready` until it holds; RuntimeError ("`what` within N s") when it does not in
    time, or at once when one of `procs` has exited."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        for p in procs:
            if p.poll() is not None:
                args = p.args if isinstance(p.args, list) else [p.args]
                raise RuntimeError(f"{' '.join(map(str, args[:3]))} exited with {p.returncode}")
        if ready():
            return
        time.sleep(0.2)
    raise RuntimeError(f"{what} within {START_TIMEOUT:.0f} s")


def start_listening(what: str, cmd: Callable[[int], list[str]], log: Path, *, cwd: Path,
                    env: dict[str, str], tries: int = 3) -> tuple[subprocess.Popen[bytes], int]:
    """Start a JVM server (in its own process group, output to `log`) on a port picked free,
    and wait until it listens there. The port may be taken before the JVM binds it (any
    outgoing connection on the machine may get it): the JVM must then fail rather than move
    to another port (maxRetries 0), and starts again on a new one, `tries` times at most.
    RuntimeError, with the log's tail, when it does not come up."""
    for attempt in range(tries):
        port = free_port()
        start = log.stat().st_size if log.exists() else 0
        with open(log, "ab") as out:
            proc = subprocess.Popen(cmd(port), cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                    stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        try:
            wait_until(f"{what} did not listen on {port}", lambda p=port: listens(p), [proc])
            return proc, port
        except RuntimeError as e:
            stop_group(proc)
            with open(log, "rb") as f:
                f.seek(start)
                lost = b"Address already in use" in f.read()
            if not lost or attempt + 1 == tries:
                raise RuntimeError(f"{e}; {log} ends:\n{tail(log)}") from None
    raise AssertionError("unreachable")


def stop_group(proc: subprocess.Popen[bytes]) -> None:
    """A JVM started with start_new_session and whatever it started (executors, Python
    workers): TERM to the group, then KILL to what is left."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=20)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=20)


def damaged_copy(sample: Path, dest: Path) -> Path:
    """`sample` copied to dest/sample with a flipped byte and a torn tail in demo-1's second
    segment."""
    d = dest / "sample"
    shutil.copytree(sample, d)
    log = d / "demo-1" / "00000000000000000263.log"
    data = bytearray(log.read_bytes())
    data[400] ^= 0x5A
    log.write_bytes(bytes(data[:-7]))
    return d
