"""What `make demo` and `make test` install (README: set-up a newcomer can trust)."""

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def planned(target: str, tmp_path: Path) -> str:
    """The commands make would run for `target` on a fresh machine (-B: as if nothing existed)."""
    return subprocess.run(["make", "-n", "-B", target, f"VENV={tmp_path / 'venv'}"], cwd=ROOT,
                          capture_output=True, text=True, check=True).stdout


def test_demo_installs_kafkalog_alone(tmp_path):
    installs = [ln for ln in planned("demo", tmp_path).splitlines() if "pip install" in ln]
    assert any(" -e . " in ln + " " for ln in installs), installs
    assert not any("[" in ln for ln in installs), f"demo installs extras: {installs}"


def test_test_adds_the_test_extras(tmp_path):
    assert "-e '.[test]'" in planned("test", tmp_path)


def test_readme_names_what_make_test_needs():
    readme = (ROOT / "README.md").read_text()
    section = readme.split("### What the set-up needs", 1)[1].split("\n#", 1)[0]
    for need in ("Java 17", "Maven", "npm", "PyPI", "Maven Central"):
        assert need in section, need
