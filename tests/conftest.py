import shutil
from pathlib import Path

import pytest

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


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """`-n N` with the default `load` distribution: all Spark tests on one worker (see
    tests/spark/scheduling.py)."""
    if config.getvalue("dist") != "load":
        return None
    from tests.spark.scheduling import make_scheduler

    return make_scheduler(config, log)
