"""Without PySpark the CLI still works, and asking for Spark says how to get it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURE

# a process in which `import pyspark` fails, as on a machine without the extra
NO_PYSPARK = ("import sys; sys.modules['pyspark'] = None; "
              "from kafkalog_cli.cli import main; main(sys.argv[1:])")


def kafkalog_without_pyspark(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", NO_PYSPARK, *map(str, args)],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("args", [
    ("export", FIXTURE, "--to", "parquet", "OUT"),
    ("verify", "--engine", "spark", FIXTURE),
])
def test_spark_commands_fail_with_one_line_saying_how_to_install(args: tuple[object, ...],
                                                                 tmp_path: Path) -> None:
    args = tuple(tmp_path / "out" if a == "OUT" else a for a in args)
    p = kafkalog_without_pyspark(*args)
    assert p.returncode == 8
    assert p.stdout == ""
    assert p.stderr.count("\n") == 1 and p.stderr.startswith("kafkalog: error: ")
    assert "pip install 'kafkalog[spark]'" in p.stderr
    assert not (tmp_path / "out").exists()


def test_the_rest_of_the_cli_works_without_pyspark() -> None:
    assert kafkalog_without_pyspark("verify", FIXTURE).returncode == 0
    helptext = kafkalog_without_pyspark("--help")
    assert helptext.returncode == 0 and "export" in helptext.stdout
    assert "--engine" in kafkalog_without_pyspark("verify", "--help").stdout


def test_auto_registration_module_is_packaged_and_kafkalog_cli_does_not_import_pyspark() -> None:
    import tomllib

    from setuptools import find_packages

    from tests.conftest import ROOT

    found = find_packages(str(ROOT), include=tomllib.loads((ROOT / "pyproject.toml").read_text())
                          ["tool"]["setuptools"]["packages"]["find"]["include"])
    assert "pyspark_kafkalog" in found and "kafkalog_cli.spark" in found
    p = subprocess.run([sys.executable, "-c", "import sys, kafkalog_cli.cli, kafkalog_cli.spark, "
                        "kafkalog_cli.spark.session, kafkalog_cli.spark.jobs; "
                        "assert not [m for m in sys.modules if m.startswith('pyspark')]"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
