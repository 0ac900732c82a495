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
