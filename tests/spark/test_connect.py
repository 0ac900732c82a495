"""kafkalog against a real Spark Connect server, judged by the local engine (`kafkalog dump`,
`kafkalog verify`), never by Spark output itself.

One server per run: a separate JVM (`spark-submit --class ...SparkConnectServer`, local[2],
bound to 127.0.0.1 on a free port), started for this module and killed after it; conftest.py
and scheduling.py keep this module on the worker that runs test_spark.py. The server's Python
is this interpreter, which has kafkalog installed, but editable: setuptools' import hook for
that is invisible to pkgutil.iter_modules(), which Spark uses to find `pyspark_*` modules, so
the server's PYTHONPATH gets a dir holding only pyspark_kafkalog, where a regular install puts
it (site-packages).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.cli.run import Result
from tests.conftest import FIXTURE, ROOT
from tests.spark.jvms import damaged_copy, free_port, start_listening, stop_group, tail
from tests.spark.test_spark import DEMO0, _b64, arrow_records, dump_records, spark_records

pa = pytest.importorskip("pyarrow")
pytest.importorskip("pyspark")
pytest.importorskip("grpc", reason="the Spark Connect client: pip install 'kafkalog[connect]'")

class Server:
    def __init__(self, url: str, log: Path, started_in: float) -> None:
        self.url, self.log, self.started_in = url, log, started_in

    def tail(self, n: int = 40) -> str:
        return tail(self.log, n)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    from pyspark.find_spark_home import _find_spark_home

    from kafkalog_cli.spark.session import LOG4J2, quiet_conf

    home = Path(_find_spark_home())
    work = tmp_path_factory.mktemp("connect")  # the server's cwd: not this repo
    site = work / "site"
    site.mkdir()
    (site / "pyspark_kafkalog").symlink_to(ROOT / "pyspark_kafkalog", target_is_directory=True)
    log4j = work / "log4j2.properties"
    log4j.write_text(LOG4J2)  # WARN and up, on stderr, which goes to server.log
    log = work / "server.log"
    base = {**quiet_conf(str(log4j), "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"),
            "spark.connect.grpc.binding.address": "127.0.0.1",
            "spark.connect.grpc.port.maxRetries": "0",  # that port or none
            "spark.sql.shuffle.partitions": "2"}

    def cmd(port: int) -> list[str]:
        out = [str(home / "bin" / "spark-submit"), "--class",
               "org.apache.spark.sql.connect.service.SparkConnectServer",
               "--name", "kafkalog-connect-tests", "--master", "local[2]"]
        for k, v in {**base, "spark.connect.grpc.binding.port": str(port)}.items():
            out += ["--conf", f"{k}={v}"]
        return out

    env = {k: v for k, v in os.environ.items()
           if k not in ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED", "PYSPARK_SUBMIT_ARGS",
                        "SPARK_CONF_DIR", "KAFKALOG_SPARK_SHIP")}
    env.update(SPARK_HOME=str(home), PYSPARK_PYTHON=sys.executable,
               PYSPARK_DRIVER_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1", TZ="UTC",
               PYTHONPATH=str(site))
    t0 = time.monotonic()
    try:
        proc, port = start_listening("the Spark Connect server", cmd, log, cwd=work, env=env)
    except RuntimeError as e:
        pytest.fail(str(e), pytrace=False)
    try:
        s = Server(f"sc://127.0.0.1:{port}", log, time.monotonic() - t0)
        sys.stderr.write(f"Spark Connect server up in {s.started_in:.1f} s at {s.url}\n")
        yield s
    finally:
        stop_group(proc)


@pytest.fixture(scope="module")
def sessions(server: Server) -> Iterator[Any]:
    """Makes fresh server-side sessions from this process (released at the end). In-process
    sessions come from pyspark.sql.connect directly: they leave this process's local
    SparkSession and pyspark.sql.functions in classic mode."""
    from pyspark.sql.connect.session import SparkSession

    made: list[Any] = []

    def new() -> Any:
        made.append(SparkSession.builder.remote(server.url).create())
        return made[-1]

    yield new
    for s in made:
        s.stop()


@pytest.fixture(scope="module")
def plain(sessions: Any) -> Any:
    """A session that never calls register() or ships anything."""
    return sessions()


def kafkalog(*args: object, cwd: Path | None = None, **env: str) -> Result:
    """The CLI in its own process (a fresh client), with these environment variables."""
    e = {k: v for k, v in os.environ.items() if k not in ("SPARK_REMOTE", "KAFKALOG_SPARK_SHIP")}
    e.update(env)
    p = subprocess.run([sys.executable, "-m", "kafkalog_cli", *map(str, args)], env=e,
                       cwd=cwd, capture_output=True, timeout=300)
    return Result(p.returncode, p.stdout, p.stderr.decode("utf-8", "replace"))


@pytest.fixture
def damaged(tmp_path: Path) -> Path:
    return damaged_copy(FIXTURE, tmp_path)


# -- auto-registration (pyspark_kafkalog) ------------------------------------------------------

def test_a_session_that_never_registered_reads_the_source(sessions: Any, plain: Any) -> None:
    from kafkalog_cli.spark.datasource import KafkalogDataSource

    # control: what one session registers at run time, another does not see ...
    probe = type("Probe", (KafkalogDataSource,),
                 {"__module__": "__main__", "name": classmethod(lambda cls: "kafkalogprobe")})
    first = sessions()
    first.dataSource.register(probe)
    assert first.read.format("kafkalogprobe").load(str(DEMO0)).count() == \
        len(dump_records(DEMO0))
    with pytest.raises(Exception, match="kafkalogprobe"):
        plain.read.format("kafkalogprobe").load(str(DEMO0)).count()
    # ... so "kafkalog" in a fresh session is the server's own: found via pyspark_kafkalog
    df = plain.read.format("kafkalog").option("includeHeaders", "true").load(str(FIXTURE))
    assert spark_records(df) == dump_records(FIXTURE)


# -- the CLI over Spark Connect ---------------------------------------------------------------

def test_export_parquet_equals_dump(server: Server, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    r = kafkalog("export", FIXTURE, "--to", "parquet", tmp_path / "pq", "--master", server.url,
                 KAFKALOG_SPARK_SHIP="0")
    assert (r.code, r.out) == (0, b""), r.err
    t = pq.read_table(tmp_path / "pq")
    assert t.schema.field("timestamp").type == pa.timestamp("us", tz="UTC")
    assert arrow_records(t) == dump_records(FIXTURE)


def test_verify_equals_local_verify_clean_and_damaged(server: Server, damaged: Path) -> None:
    # the damaged copy by a relative path: the server runs in another directory
    for path, cwd, code in ((FIXTURE, None, 0), (Path(damaged.name), damaged.parent, 4)):
        local = kafkalog("verify", path, "--format", "json", cwd=cwd)
        remote = kafkalog("verify", "--engine", "spark", path, "--format", "json", cwd=cwd,
                          SPARK_REMOTE=server.url, KAFKALOG_SPARK_SHIP="0")
        assert local.code == code, local.err
        assert (remote.code, orjson.loads(remote.out)) == (code, orjson.loads(local.out)), \
            remote.err
    assert any(f["code"] == "LOG_CRC_MISMATCH" for f in orjson.loads(local.out)["findings"])


def test_damaged_data_fails_the_export_with_the_tasks_message(server: Server,
                                                              damaged: Path) -> None:
    r = kafkalog("export", damaged, "--to", "parquet", damaged.parent / "out", "--master",
                 server.url, KAFKALOG_SPARK_SHIP="0")
    assert r.code == 4 and r.err.count("\n") == 1 and "Traceback" not in r.err, r.err
    crc = [f for f in orjson.loads(kafkalog("verify", damaged, "--format", "json").out)
           ["findings"] if f["code"] == "LOG_CRC_MISMATCH"]
    assert len(crc) == 1
    f = crc[0]  # the same batch, and the same two checksums, as the local check names
    assert r.err.startswith(f"kafkalog: error: {os.path.abspath(f['file'])}:{f['position']}: "
                            f"batch CRC mismatch (stored {f['found']}, computed {f['expected']})")


def test_shipped_package_is_what_the_server_runs(sessions: Any, plain: Any) -> None:
    from pyspark.sql.connect.functions import udf
    from pyspark.sql.types import StringType

    from kafkalog_cli.spark import register

    @udf(returnType=StringType())
    def where() -> str:
        import kafkalog_cli
        import kafkalog_cli.codec.batch_v2 as b

        return f"{kafkalog_cli.__file__}|{b.ACCELERATED}"

    installed = plain.range(1).select(where()).first()[0]
    assert installed.startswith(str(ROOT / "kafkalog_cli")), installed  # control
    shipped = sessions()
    register(shipped, ship=True)
    path, accelerated = shipped.range(1).select(where()).first()[0].split("|")
    assert "kafkalog_cli.zip" in path and not path.startswith(str(ROOT)), path
    assert accelerated == "False"  # the zip has no compiled decoder
    df = shipped.read.format("kafkalog").option("includeHeaders", "true").load(str(DEMO0))
    assert spark_records(df) == dump_records(DEMO0)


def test_ship_env_exports_json_equal_to_dump(server: Server, tmp_path: Path) -> None:
    r = kafkalog("export", DEMO0, "--to", "json", tmp_path / "js", "-o",
                 'startingOffsets={"demo":{"0":600}}', SPARK_REMOTE=server.url,
                 KAFKALOG_SPARK_SHIP="1")
    assert r.code == 0, r.err
    lines = [orjson.loads(x) for f in sorted((tmp_path / "js").glob("*.json"))
             for x in f.read_bytes().splitlines()]
    want = [r for r in dump_records(DEMO0) if r[4] >= 600]
    assert want and sorted((d["offset"], _b64(d.get("key")), _b64(d.get("value")),
                            d["timestamp"]) for d in lines) == \
        [(r[4], r[0], r[1], _iso(r[5])) for r in want]


def _iso(us: int) -> str:
    """Spark's JSON timestamp text in UTC (the CLI's Connect session is set to UTC)."""
    from datetime import UTC, datetime

    t = datetime.fromtimestamp(us / 1e6, UTC)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


# -- failures: one line, a documented exit code -------------------------------------------------

def test_unreachable_server_is_one_line_and_exit_8(tmp_path: Path) -> None:
    port = free_port()  # nothing listens there now
    t0 = time.monotonic()
    r = kafkalog("export", FIXTURE, "--to", "parquet", tmp_path / "out", "--master",
                 f"sc://127.0.0.1:{port}")
    assert time.monotonic() - t0 < 60  # not the client's ten minutes of retries
    assert (r.code, r.out) == (8, b"")
    assert r.err == f"kafkalog: error: cannot reach the Spark Connect server at " \
                    f"127.0.0.1:{port} (Connection refused)\n"
    assert not (tmp_path / "out").exists()
    r = kafkalog("verify", "--engine", "spark", FIXTURE, SPARK_REMOTE="sc://:15002")
    assert r.code == 16 and r.err.count("\n") == 1 and "bad Spark Connect URL" in r.err, r.err


def test_missing_connect_client_libraries_say_how_to_install(tmp_path: Path) -> None:
    # a script file, not `python -c`: PySpark takes a __main__ without __file__ for doctests
    script = tmp_path / "no_grpc.py"
    script.write_text("import sys\nsys.modules['grpc'] = None\n"
                      "from kafkalog_cli.cli import main\nmain(sys.argv[1:])\n")
    p = subprocess.run([sys.executable, str(script), "verify", "--engine", "spark", FIXTURE,
                        "--master", "sc://127.0.0.1:1"], capture_output=True, text=True,
                       timeout=120)
    assert (p.returncode, p.stdout) == (8, ""), p.stderr
    assert p.stderr.count("\n") == 1 and "Spark Connect needs its client libraries" in p.stderr
    assert "pip install 'pyspark[connect]'" in p.stderr
