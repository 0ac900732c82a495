import importlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# `make test` must give the same verdict on every clean clone: hypothesis draws the same
# examples each run (derandomize), keeps no example database, and never fails a test for
# being slow on a loaded machine (deadline, too_slow). KAFKALOG_HYPOTHESIS_PROFILE=explore
# draws fresh examples each run, to hunt for new failures.
settings.register_profile("ci", derandomize=True, database=None, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("explore", deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("KAFKALOG_HYPOTHESIS_PROFILE", "ci"))

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus"
FIXTURE = ROOT / "fixtures" / "sample"


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    """A private copy of the bundled sample log dir (tests never mutate fixtures/)."""
    dst = tmp_path / "sample"
    shutil.copytree(FIXTURE, dst)
    return dst


@pytest.fixture(scope="session")
def corpus() -> Path:
    assert CORPUS.is_dir(), f"the shared corpus is missing at {CORPUS}"
    return CORPUS


@pytest.fixture(scope="session")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """A real S3 server (S3Proxy) holding the sample fixture and some corpus dirs: see
    tests/s3/server.py. Started on first use, once per worker."""
    from tests.s3.server import s3_session

    yield from s3_session(tmp_path_factory)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """`-n N` with the default `load` distribution: all Spark tests on one worker (see
    tests/spark/scheduling.py)."""
    if config.getvalue("dist") != "load":
        return None
    from tests.spark.scheduling import make_scheduler

    return make_scheduler(config, log)


def compiled(name: str):
    """kafkalog_cli._speedups.NAME, or None where the compiled core was not built (each
    module's test_extension_is_built reports that)."""
    try:
        return importlib.import_module(f"kafkalog_cli._speedups.{name}")
    except ImportError:
        return None
