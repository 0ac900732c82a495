"""SparkSession for the CLI: local, any cluster master, or Spark Connect; quiet and offline.

  --master local[*] (default) | local[N] | spark://... | yarn | k8s://... | sc://host:port
  SPARK_REMOTE=sc://host:port  selects Spark Connect when --master is not given

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
    context lives, so only whoever stops the context may delete it.
    """
    where = Path(tempfile.mkdtemp(prefix="kafkalog-ship-"))
    z = str(package_zip(where))
    if is_connect(spark):  # no SparkContext there: artifacts instead
        spark.addArtifacts(z, pyfile=True)
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
        self.spark: Any = None
        self._started = False
        self._shipped: Path | None = None
        self._tmp = tempfile.TemporaryDirectory(prefix="kafkalog-spark-")

    def __enter__(self) -> Any:
        require_pyspark("Spark mode")
        if is_remote(self.master):
            self.spark = self._connect()
        else:
            self.spark = self._classic()
        register(self.spark)
        return self.spark

    def __exit__(self, exc_type: object, *exc: object) -> None:
        if self._started and self.spark is not None:
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

    def _connect(self) -> Any:
        from pyspark.sql import SparkSession

        try:
            spark = SparkSession.builder.remote(self.master).getOrCreate()
        except ImportError as e:
            why = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise SparkUnavailable(f"Spark Connect needs its client libraries ({why}): pip "
                                   "install 'pyspark[connect]' (or pyspark-client)") from None
        self._started = False  # a shared server session: never stop it from here
        if _ship(self.master):  # addArtifacts has uploaded the zip: the local copy can go
            shutil.rmtree(ship_package(spark), ignore_errors=True)
        return spark


class DamagedData(KafkalogError):
    """A task met damaged data (failOnDataLoss); the message is the task's own."""

    exit_code = EXIT_UNFIXED


_OURS = re.compile(r"kafkalog_cli\.[\w.]+\.(OptionError|UsageError|DataLoss|CorruptDataError|"
                   r"CorruptBatch|LogDirIOError|KafkalogError): (.+)")


def translate(e: BaseException, log: Path) -> KafkalogError:
    """A Spark/Py4J exception as one kafkalog error line (our own message when the failure
    was ours, raised in a Python worker)."""
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
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    first = lines[0] if lines else type(e).__name__
    return KafkalogError(f"Spark job failed: {first[:500]} (Spark log: {log})")


def is_spark_error(e: BaseException) -> bool:
    mod = type(e).__module__ or ""
    return mod.startswith(("pyspark", "py4j", "grpc"))
