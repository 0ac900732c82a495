"""Run the CLI as operators do: a real process, stdout and stderr apart."""

import subprocess
import sys


class Result:
    def __init__(self, code: int, out: bytes, err: str) -> None:
        self.code, self.out, self.err = code, out, err

    @property
    def text(self) -> str:
        return self.out.decode("utf-8", "replace")


def run(*args: object, stdin: bytes = b"") -> Result:
    p = subprocess.run([sys.executable, "-m", "kafkalog_cli", *map(str, args)], input=stdin,
                       capture_output=True, timeout=300)
    return Result(p.returncode, p.stdout, p.stderr.decode("utf-8", "replace"))
