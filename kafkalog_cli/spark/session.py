"""SparkSession for the CLI: local, any cluster master, or Spark Connect; quiet and offline.

  --master local[*] (default) | local[N] | spark://... | yarn | k8s://... | sc://host:port
  SPARK_REMOTE=sc://host:port  selects Spark Connect when --master is not given

Spark Connect (sc://): the server is checked for reachability first (its client would
otherwise retry for ten minutes), the CLI's session is a new server-side session set to
UTC, and it is released on exit (the server keeps running).

Executors must import kafkalog_cli. In local mode they run this interpreter (PYSPARK_PYTHON),
which has it installed. For any other master the package's pure-Python sources are zipped
and shipped (SparkContext.addPyFile, or addArtifacts(pyfile=True) over Connect) unless
KAFKALOG_SPARK_SHIP=0 says the executors have kafkalog installed (which also gives them
the compiled decoder). Its dependencies (crc32c, lz4, python-snappy, zstandard, orjson,
pyarrow) must be installed on the executors either way.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kafkalog_cli.errors import EXIT_UNFIXED, KafkalogError, UsageError
from kafkalog_cli.spark import SparkUnavailable, register, require_pyspark

DEFAULT_MASTER = "local[*]"

# log4j2: warnings and errors only, on stderr (which goes to the log file, see build()).
# The repl/gateway loggers are named so Spark does not announce its default log level.
LOG4J2 = """\
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
logger.repl.name = org.apache.spark.repl.Main
logger.repl.level = error
logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer
logger.gateway.level = error
logger.context.name = org.apache.spark.SparkContext
logger.context.level = error
logger.utils.name = org.apache.spark.util.Utils
logger.utils.level = error
logger.hadoop.name = org.apache.hadoop
logger.hadoop.level = error
"""


def quiet_conf(log4j_file: str, java_options: str = "") -> dict[str, str]:
    tz = "-Duser.timezone=UTC"
    return {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
            "spark.sql.session.timeZone": "UTC",
            "spark.driver.extraJavaOptions":
                f"-Dlog4j2.configurationFile={log4j_file} {tz} {java_options}".strip(),
            "spark.executor.extraJavaOptions": tz}


def is_remote(master: str) -> bool:
    return master.startswith("sc://")


def same_machine(master: str) -> bool:
    """local, local[N] and local-cluster[...]: executors run here, with this interpreter."""
    return master.startswith("local")


def in_process(master: str) -> bool:
    """local and local[N]: executors share this process's working directory."""
    return master == "local" or master.startswith("local[")


def is_connect(spark: Any) -> bool:
    """True for a Spark Connect session (no SparkContext, no RDDs)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


CONNECT_PORT = 15002  # Spark Connect's default
CONNECT_TIMEOUT = 10.0  # seconds to wait for a TCP connection to the server


class ConnectUnreachable(KafkalogError):
    """No Spark Connect server answers at the sc:// address; exit code 8 (operational)."""


def connect_endpoint(url: str) -> tuple[str, int]:
    """(host, port) of an sc://host[:port][/;param=value...] URL."""
    from urllib.parse import urlparse

    u = urlparse("http" + url[2:]) if url.startswith("sc://") else None
    try:
        host, port = (u.hostname, u.port) if u else (None, None)
    except ValueError:  # a port that is not a number, or out of range
        host = None
    if not host:
        raise UsageError(f"bad Spark Connect URL {url!r} (expected sc://host[:port])")
    return host, port or CONNECT_PORT


def check_reachable(url: str, timeout: float = CONNECT_TIMEOUT) -> None:
    """Fail fast, with one line, when nothing listens at the URL's host and port."""
    host, port = connect_endpoint(url)
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as e:
        why = e.strerror or str(e) or type(e).__name__
        raise ConnectUnreachable(f"cannot reach the Spark Connect server at {host}:{port} "
                                 f"({why})") from None


def resolve_master(master: str | None) -> str:
    """--master, else SPARK_REMOTE, else local[*]."""
    return master or os.environ.get("SPARK_REMOTE") or DEFAULT_MASTER


def log_path() -> Path:
    """Where the JVM's own output goes (KAFKALOG_SPARK_LOG, else a file in the temp dir)."""
    p = os.environ.get("KAFKALOG_SPARK_LOG")
    return Path(p) if p else Path(tempfile.gettempdir()) / f"kafkalog-spark-{os.getpid()}.log"


@contextmanager
def _stderr_to(path: Path) -> Iterator[None]:
    """Point fd 2 at `path` while the JVM starts: it inherits it, so its banner and logs land
    there instead of on the user's terminal."""
    sys.stderr.flush()
    saved = os.dup(2)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.dup2(fd, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(fd)


def package_zip(dest: Path) -> Path:
    """kafkalog_cli's Python sources as a zip for addPyFile (compiled parts are left out:
    executors fall back to the pure-Python codec)."""
    root = Path(__file__).resolve().parent.parent
    out = dest / "kafkalog_cli.zip"
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for f in sorted(root.rglob("*.py")):
            if "__pycache__" not in f.parts:
                z.write(f, Path("kafkalog_cli") / f.relative_to(root))
    return out


def ship_package(spark: Any) -> Path:
    """Make kafkalog_cli importable on the executors of `spark` (classic or Connect).

    Returns the temporary dir holding the zip: Spark serves it from there for as long as the
    context lives, so only whoever stops the context may delete it. Over Spark Connect the
    zip is uploaded at once, and the dir is already gone.
    """
    where = Path(tempfile.mkdtemp(prefix="kafkalog-ship-"))
    z = str(package_zip(where))
    if is_connect(spark):  # no SparkContext there: a session artifact instead
        try:
            spark.addArtifacts(z, pyfile=True)
        finally:
            shutil.rmtree(where, ignore_errors=True)
    else:
        spark.sparkContext.addPyFile(z)
    return where


def _ship(master: str) -> bool:
    v = os.environ.get("KAFKALOG_SPARK_SHIP", "auto").lower()
    if v in ("1", "true", "yes"):
        return True
    if v in ("0", "false", "no"):
        return False
    return not same_machine(master)


class Session:
    """A SparkSession with the kafkalog source registered; stops it on exit if it started it."""

    def __init__(self, master: str | None = None, app_name: str = "kafkalog",
                 conf: dict[str, str] | None = None, java_options: str = "") -> None:
        self.master = resolve_master(master)
        self.app_name = app_name
        self.conf = conf or {}
        self.java_options = java_options  # extra driver JVM flags (local mode: all of Spark)
        self.log = log_path()
        self.error_log: Path | None = None if is_remote(self.master) else self.log
        self.spark: Any = None
        self._started = False
        self._shipped: Path | None = None
        self._tmp = tempfile.TemporaryDirectory(prefix="kafkalog-spark-")

    def __enter__(self) -> Any:
        require_pyspark("Spark mode")
        try:
            if is_remote(self.master):
                self._connect()
            else:
                self.spark = self._classic()
            register(self.spark)
        except BaseException:
            self.__exit__(*sys.exc_info())
            raise
        return self.spark

    def __exit__(self, exc_type: object, *exc: object) -> None:
        if self._started and self.spark is not None:
            if is_connect(self.spark):  # releases our server-side session, not the server;
                # one attempt only: a server that has gone away must not hold up the exit
                self.spark.client.set_retry_policies([])
            self.spark.stop()
            if exc_type is None and "KAFKALOG_SPARK_LOG" not in os.environ:
                self.log.unlink(missing_ok=True)  # nothing went wrong: no litter in $TMPDIR
            if self._shipped is not None:
                shutil.rmtree(self._shipped, ignore_errors=True)
        self._tmp.cleanup()

    def _classic(self) -> Any:
        from pyspark import SparkContext
        from pyspark.sql import SparkSession

        if same_machine(self.master):
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("TZ", "UTC")
        log4j = Path(self._tmp.name) / "log4j2.properties"
        log4j.write_text(LOG4J2)
        builder = SparkSession.builder.master(self.master).appName(self.app_name)
        for k, v in {**quiet_conf(str(log4j), self.java_options), **self.conf}.items():
            builder = builder.config(k, v)
        self._started = SparkContext._active_spark_context is None
        if self._started:
            with _stderr_to(self.log):
                spark = builder.getOrCreate()
        else:
            spark = builder.getOrCreate()
        if _ship(self.master):
            self._shipped = ship_package(spark)
        return spark

    def _connect(self) -> None:
        hint = "pip install 'pyspark[connect]' (or pyspark-client)"
        try:
            import pyspark.sql.connect.session  # noqa: F401  (the client libraries)
        except ImportError as e:
            why = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise SparkUnavailable(f"Spark Connect needs its client libraries ({why}): "
                                   f"{hint}") from None
        check_reachable(self.master)
        from pyspark.sql import SparkSession

        # a server-side session of our own (never the caller's): UTC as in local mode, and
        # released on exit, with whatever was shipped to it. Made through pyspark.sql's
        # builder, which also switches pyspark.sql.functions to their Connect versions.
        self.spark = spark = SparkSession.builder.remote(self.master).create()
        self._started = True
        spark.conf.set("spark.sql.session.timeZone", "UTC")
        if _ship(self.master):
            ship_package(spark)


class DamagedData(KafkalogError):
    """A task met damaged data (failOnDataLoss); the message is the task's own."""

    exit_code = EXIT_UNFIXED


_OURS = re.compile(r"kafkalog_cli\.[\w.]+\.(OptionError|UsageError|DataLoss|CorruptDataError|"
                   r"CorruptBatch|LogDirIOError|KafkalogError): (.+)")


def translate(e: BaseException, log: Path | None) -> KafkalogError:
    """A Spark/Py4J/gRPC exception as one kafkalog error line (our own message when the
    failure was ours, raised in a Python worker). log=None: Spark Connect, whose log is the
    server's."""
    text = str(e)
    found = _OURS.findall(text)
    if found:
        kind, msg = found[-1]
        msg = msg.strip()
        if kind in ("OptionError", "UsageError"):
            return UsageError(msg)
        if kind in ("DataLoss", "CorruptDataError", "CorruptBatch"):
            return DamagedData(msg)
        return KafkalogError(msg)
    code, details = getattr(e, "code", None), getattr(e, "details", None)
    if callable(code) and callable(details):  # a bare grpc.RpcError: its str() is a repr
        text = f"Spark Connect: {getattr(code(), 'name', code())}: {details()}"
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    first = lines[0] if lines else type(e).__name__
    where = f"Spark log: {log}" if log is not None else "see the Spark Connect server's log"
    return KafkalogError(f"Spark job failed: {first[:500]} ({where})")


def is_spark_error(e: BaseException) -> bool:
    mod = type(e).__module__ or ""
    return mod.startswith(("pyspark", "py4j", "grpc"))
