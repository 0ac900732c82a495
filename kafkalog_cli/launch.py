"""The `kafkalog` script's entry (and `python -m kafkalog_cli`'s): Ctrl-C while the CLI is
still being imported, or after it has handled its own, ends as it does mid-run, with one
line and exit code 32, not a traceback."""

from __future__ import annotations

import sys

from kafkalog_cli.errors import EXIT_INTERRUPTED


def main() -> None:
    try:
        from kafkalog_cli.cli import main as run

        run()
    except KeyboardInterrupt:
        if sys.stderr is not None:
            sys.stderr.write("kafkalog: error: interrupted\n")
        sys.exit(EXIT_INTERRUPTED)
