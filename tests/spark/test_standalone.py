"""kafkalog against a real Spark standalone cluster (`--master spark://...`), judged by the
local engine (`kafkalog dump`, `kafkalog verify`), never by Spark output itself.

One master and one worker (1 core, 1 GB) per run, each in its own JVM (`spark-class ...Master`
/ `...Worker`) bound to 127.0.0.1 on free ports, started for this module and killed after it;
the CLI's executors then run in a third JVM, in the worker's work dir. conftest.py and
scheduling.py keep this module on the worker that runs test_spark.py and test_connect.py.

Shipping: the worker (and so its executors and their Python workers) gets a PYTHONPATH whose
only module shadows the editable install's import hook (`__editable___kafkalog_*_finder`), so
the executors cannot import the installed kafkalog_cli at all: everything that works here
works because session.py zipped the package and shipped it with SparkContext.addPyFile.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from tests.cli.run import Result
from tests.conftest import FIXTURE, ROOT
from tests.s3.server import S3Server
from tests.spark.jvms import damaged_copy, start_listening, stop_group, tail, wait_until
from tests.spark.test_spark import arrow_records, dump_records

pa = pytest.importorskip("pyarrow")
pytest.importorskip("pyspark")

REGISTERED = "Successfully registered with master"  # in the worker's log (INFO)


def _hide_installed_package(site: Path) -> Path:
    """A dir that, on PYTHONPATH, makes this interpreter unable to import kafkalog_cli
    outside the repo. An editable install is either an import hook, whose .pth imports its
    finder module by name and finds this no-op one first, or (`make`'s, editable_mode=compat)
    a .pth path entry for the repo, which this dir's sitecustomize takes off sys.path."""
    site.mkdir()
    for d in map(Path, sys.path):
        for f in d.glob("__editable___kafkalog_*_finder.py") if d.is_dir() else ():
            (site / f.name).write_text("def install():\n    pass\n")
    (site / "sitecustomize.py").write_text(
        f"import sys\nsys.path[:] = [p for p in sys.path if p.rstrip('/') != {str(ROOT)!r}]\n")
    return site


# the CLI's driver and executors: C1 only and serial GC (short jobs; two cores for four JVMs),
# and no task retries (a failing task fails the job at once). Through spark-defaults.conf,
# which the CLI's own settings (session.quiet_conf) add to rather than replace.
JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
DEFAULTS = f"""\
spark.driver.defaultJavaOptions {JVM}
spark.executor.defaultJavaOptions {JVM}
spark.task.maxFailures 1
"""


class Cluster:
    def __init__(self, url: str, work: Path, started_in: float) -> None:
        self.url, self.work, self.started_in = url, work, started_in
        self.conf_dir = work / "conf"  # SPARK_CONF_DIR for the CLI


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, s3: S3Server) -> Iterator[Cluster]:
    # s3 first: the worker, and so its executors, get the store's AWS_* variables from env
    from pyspark.find_spark_home import _find_spark_home

    home = Path(_find_spark_home())
    work = tmp_path_factory.mktemp("standalone")  # the daemons' cwd: not this repo
    hidden = _hide_installed_package(work / "site")
    env = {k: v for k, v in os.environ.items()
           if k not in ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED", "PYSPARK_SUBMIT_ARGS",
                        "SPARK_CONF_DIR", "KAFKALOG_SPARK_SHIP", "PYTHONPATH", "MASTER")}
    env.update(SPARK_HOME=str(home), PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1",
               TZ="UTC", SPARK_NO_DAEMONIZE="1", PYTHONPATH=str(hidden),
               SPARK_DAEMON_JAVA_OPTS=JVM)
    (work / "conf").mkdir()
    (work / "conf" / "spark-defaults.conf").write_text(DEFAULTS)
    cls = "org.apache.spark.deploy."

    def master_cmd(port: int) -> list[str]:
        return [str(home / "bin" / "spark-class"), cls + "master.Master", "--host",
                "127.0.0.1", "--port", str(port), "--webui-port", "0"]  # 0: any free port

    procs: list[subprocess.Popen[bytes]] = []
    logs = {"master": work / "master.log", "worker": work / "worker.log"}
    t0 = time.monotonic()
    try:
        try:  # before the worker, which gives up on a master that is not there yet
            master, port = start_listening(
                "the master", master_cmd, logs["master"], cwd=work,
                env={**env, "SPARK_MASTER_OPTS": "-Dspark.port.maxRetries=0 "
                     # no REST submission server: its fixed port (6066), taken by another
                     # run's master, failed the master's start-up and it never answered
                     # the worker ("the worker did not register")
                     "-Dspark.master.rest.enabled=false"})
        except RuntimeError as e:
            pytest.fail(str(e), pytrace=False)
        procs.append(master)
        url = f"spark://127.0.0.1:{port}"
        worker_cmd = [str(home / "bin" / "spark-class"), cls + "worker.Worker", url, "--host",
                      "127.0.0.1", "--cores", "1", "--memory", "1g", "--webui-port", "0",
                      "--work-dir", str(work / "work")]
        with open(logs["worker"], "wb") as out:
            procs.append(subprocess.Popen(worker_cmd, cwd=work, env=env,
                                          stdin=subprocess.DEVNULL, stdout=out,
                                          stderr=subprocess.STDOUT, start_new_session=True))
        try:
            wait_until("the worker did not register",
                  lambda: REGISTERED in logs["worker"].read_text(errors="replace"), procs)
        except RuntimeError as e:
            pytest.fail(f"{e}; {logs['worker']} ends:\n{tail(logs['worker'])}\n"
                        f"{logs['master']} ends:\n{tail(logs['master'])}", pytrace=False)
        c = Cluster(url, work, time.monotonic() - t0)
        sys.stderr.write(f"Spark standalone cluster up in {c.started_in:.1f} s at {url}\n")
        yield c
    finally:
        for p in reversed(procs):
            stop_group(p)


def _env(**env: str) -> dict[str, str]:
    """The driver must be reachable from the executors: SPARK_LOCAL_IP, as an operator would
    set it on a machine whose hostname does not resolve to a routable address."""
    e = {k: v for k, v in os.environ.items() if k not in ("SPARK_REMOTE", "KAFKALOG_SPARK_SHIP")}
    e.update(SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable, TZ="UTC")
    e.update(env)
    return e


def start(*args: object, cwd: Path | None = None, **env: str) -> subprocess.Popen[bytes]:
    """The CLI in its own process (a fresh driver), with these environment variables."""
    return subprocess.Popen([sys.executable, "-m", "kafkalog_cli", *map(str, args)],
                            env=_env(**env), cwd=cwd, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def finish(p: subprocess.Popen[bytes]) -> Result:
    try:
        out, err = p.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        p.kill()
        raise
    return Result(p.returncode, out, err.decode("utf-8", "replace"))


def kafkalog(*args: object, cwd: Path | None = None, **env: str) -> Result:
    return finish(start(*args, cwd=cwd, **env))


@pytest.fixture
def damaged(tmp_path: Path) -> Path:
    return damaged_copy(FIXTURE, tmp_path)


def test_executors_cannot_import_the_installed_package(cluster: Cluster) -> None:
    """The control for everything below: with the worker's PYTHONPATH, outside the repo, this
    interpreter has no kafkalog_cli (but still pyarrow, for the Python data source)."""
    env = {**os.environ, "PYTHONPATH": str(cluster.work / "site")}
    p = subprocess.run([sys.executable, "-c", "import pyarrow, pyspark, kafkalog_cli"],
                       cwd=cluster.work, env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and "No module named 'kafkalog_cli'" in p.stderr, p.stderr


def test_export_parquet_equals_dump_and_needs_the_shipped_package(cluster: Cluster,
                                                                  tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    conf = str(cluster.conf_dir)
    shipped = start("export", FIXTURE, "--to", "parquet", tmp_path / "pq", "--master",
                    cluster.url, SPARK_CONF_DIR=conf)
    # KAFKALOG_SPARK_SHIP=0 on executors without kafkalog: the job fails (one line) instead,
    # so the successes in this module are the shipped zip's. At once, as in the next test.
    unshipped = start("export", FIXTURE / "demo-0", "--to", "parquet", tmp_path / "pq0",
                      "--master", cluster.url, KAFKALOG_SPARK_SHIP="0", SPARK_CONF_DIR=conf,
                      KAFKALOG_SPARK_LOG=str(tmp_path / "spark0.log"))
    r = finish(shipped)
    assert (r.code, r.out) == (0, b""), r.err
    t = pq.read_table(tmp_path / "pq")
    assert t.schema.field("timestamp").type == pa.timestamp("us", tz="UTC")
    assert arrow_records(t) == dump_records(FIXTURE)
    # the executors ran in the worker's work dir, and were sent the zip (addPyFile)
    assert list((cluster.work / "work").glob("app-*/*/kafkalog_cli.zip"))

    r = finish(unshipped)
    assert r.code != 0 and r.err.count("\n") == 1 and "Traceback" not in r.err, r.err
    assert "No module named 'kafkalog_cli'" in \
        (tmp_path / "spark0.log").read_text(errors="replace")


def test_verify_equals_local_verify_clean_and_damaged(cluster: Cluster, damaged: Path) -> None:
    # the damaged copy by a relative path: the executors run in another directory. Both
    # drivers at once: the second starts while the first has the worker's only core.
    runs = [(path, cwd, code, start("verify", "--engine", "spark", "--master", cluster.url,
                                    path, "--format", "json", cwd=cwd,
                                    SPARK_CONF_DIR=str(cluster.conf_dir)))
            for path, cwd, code in ((FIXTURE, None, 0), (Path(damaged.name), damaged.parent, 4))]
    for path, cwd, code, proc in runs:
        local = kafkalog("verify", path, "--format", "json", cwd=cwd)
        remote = finish(proc)
        assert local.code == code, local.err
        assert (remote.code, orjson.loads(remote.out)) == (code, orjson.loads(local.out)), \
            remote.err
    assert any(f["code"] == "LOG_CRC_MISMATCH" for f in orjson.loads(local.out)["findings"])


def test_export_from_s3_equals_dump_with_no_local_copy(cluster: Cluster, s3: S3Server,
                                                      tmp_path: Path) -> None:
    """Executors in the worker's JVM open the objects themselves: the data exists only on S3
    (its local copy is removed after the upload)."""
    import shutil

    import pyarrow.parquet as pq

    d = tmp_path / "upload" / "sample"
    shutil.copytree(FIXTURE, d)
    url = s3.upload(d, "standalone-only/sample")
    shutil.rmtree(tmp_path / "upload")
    r = kafkalog("export", url, "--to", "parquet", tmp_path / "pq", "--master", cluster.url,
                 "-o", "minPartitions=3", SPARK_CONF_DIR=str(cluster.conf_dir))
    assert (r.code, r.out) == (0, b""), r.err
    rows = arrow_records(pq.read_table(tmp_path / "pq"))
    assert all(row[14].startswith(url + "/") for row in rows)
    local = sorted(((*row[:14], row[14].replace(url, str(FIXTURE)), *row[15:]) for row in rows),
                   key=lambda row: (row[14], row[15], row[4]))
    assert local == dump_records(FIXTURE)
