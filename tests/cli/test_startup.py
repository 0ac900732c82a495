"""Start-up is part of every command's wall time (2 000 small partitions, a 30 MiB file): a
reading command imports neither what only the mutating commands need nor slow third-party
packages the compiled core makes unnecessary."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

SAMPLE = Path(__file__).resolve().parents[2] / "fixtures" / "sample"

# what a read-only run of a partition of the current format has no use for
NOT_FOR_READING = (
    "kafkalog_cli.storage.drills.generate",
    "kafkalog_cli.storage.drills.damage",
    "kafkalog_cli.storage.maintenance.writer",
    "kafkalog_cli.storage.maintenance.recover_run",
    "kafkalog_cli.storage.formats.kafka07.migrate",
    "kafkalog_cli.storage.formats.kafka07.recovery",
    "kafkalog_cli.storage.maintenance.recovery",
    "multiprocessing",  # never: -j forks its workers itself (commands/workers.py)
    "kafkalog_cli.commands.workers",  # -j 1: no workers
    "pickle",  # -j 1: only workers hand results over
    "click.shell_completion",  # only under the shell's _KAFKALOG_COMPLETE
    "kafkalog_cli.storage.maintenance.quarantine",  # and the lock: commands that change dirs
    "orjson", "csv",  # text output: only JSON and CSV need them
    "shutil",  # only writes copy files
    "kafkalog_cli.codec.internal.decoders",  # dump: only records of internal topics
)

PROBE = """
import json, sys, runpy
sys.argv = ["kafkalog", *json.loads(sys.argv[1])]
code = None
try:
    runpy.run_module("kafkalog_cli", run_name="__main__")
except SystemExit as e:
    code = e.code
sys.stdout.flush()
sys.__stderr__.write(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def modules_after(*args: str) -> tuple[int, set[str]]:
    r = subprocess.run([sys.executable, "-c", PROBE, json.dumps(args)], capture_output=True,
                       text=True, check=False)
    report = json.loads(r.stderr.strip().splitlines()[-1])
    return report["code"], set(report["modules"])


@pytest.mark.parametrize("args", [("verify", "-j", "1"), ("info", "-j", "1"),
                                  ("dump", "--records", "-j", "1")])
def test_reading_commands_import_only_what_they_use(args):
    code, mods = modules_after(*args[:1], str(SAMPLE), *args[1:])
    assert code in (0, None)
    assert not mods & set(NOT_FOR_READING), sorted(mods & set(NOT_FOR_READING))


@pytest.mark.parametrize("args", [("verify", "-j", "1"), ("dump", "--records", "-j", "1")])
def test_the_crc32c_package_init_is_not_run(args):
    # its __init__ reads its version through importlib.metadata (~35 ms); the compiled
    # core computes CRC-32C itself, and the pure path needs only the package's extension
    code, mods = modules_after(*args[:1], str(SAMPLE), *args[1:])
    assert code in (0, None)
    assert "crc32c" not in mods
    assert "importlib.metadata" not in mods


def test_the_crc_from_the_extension_alone_is_the_package_crc():
    import subprocess

    probe = ("from kafkalog_cli.codec import checksum; a = checksum.crc32c(b'123456789'); "
             "import crc32c; print(a, crc32c.crc32c(b'123456789'), "
             "checksum.crc32c(bytes(range(256)) * 9), crc32c.crc32c(bytes(range(256)) * 9))")
    a, b, c, d = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                                check=True).stdout.split()
    assert a == b == str(0xE3069283)  # the CRC-32C check value
    assert c == d
