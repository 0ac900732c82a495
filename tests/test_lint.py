"""The lint gates of docs/style.md section 4 ("Conventions"), run as subprocesses.

- ruff check with at least E,F,W,I,B,UP,SIM,RUF,BLE,T20,S110 on kafkalog_cli, tests, bench
- mypy --strict on kafkalog_cli/codec, kafkalog_cli/storage, kafkalog_cli/errors.py
- lint-imports: the dependency-direction contracts in .importlinter

A test skips only when its tool is not installed (they come with the test extras). The
options are passed on the command line so that the gates do not depend on pyproject.toml;
caches are off, so the tests leave nothing in the work tree.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

RUFF_RULES = "E,F,W,I,B,UP,SIM,RUF,BLE,T20,S110"
# print is the output of bench scripts and of the conformance harness (scripts run directly,
# progress on stderr, reports under -s)
RUFF_PRINT_OK = ("bench/**", "tests/conformance/**")
RUFF_TARGETS = ("kafkalog_cli", "pyspark_kafkalog", "tests", "bench")
MYPY_TARGETS = ("kafkalog_cli/codec", "kafkalog_cli/storage", "kafkalog_cli/errors.py")


def _tool(name: str) -> str:
    """The tool's executable: next to this interpreter first (the venv), then on PATH."""
    scripts = sysconfig.get_path("scripts")
    found = shutil.which(name, path=os.pathsep.join([scripts, os.environ.get("PATH", "")]))
    if found is None:
        pytest.skip(f"{name} is not installed")
    return found


def _run(cmd: list[str], env: dict[str, str] | None = None) -> None:
    r = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, (f"{' '.join(cmd)} exited with {r.returncode}:\n"
                               f"{r.stdout}\n{r.stderr}")


def test_ruff_check() -> None:
    cmd = [_tool("ruff"), "check", "--no-cache", "--output-format", "concise",
           "--select", RUFF_RULES, "--line-length", "100", "--target-version", "py311"]
    for pattern in RUFF_PRINT_OK:
        cmd += ["--extend-per-file-ignores", f"{pattern}:T201"]
    _run([*cmd, *RUFF_TARGETS])


def test_mypy_strict() -> None:
    _run([_tool("mypy"), "--strict", "--python-version", "3.11", "--cache-dir", os.devnull,
          "--python-executable", sys.executable, *MYPY_TARGETS])


def test_import_contracts() -> None:
    env = dict(os.environ)
    # grimp imports kafkalog_cli to find it: use this checkout, installed or not
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    _run([_tool("lint-imports"), "--no-cache", "--no-logo",
          "--config", str(ROOT / ".importlinter")], env)
