"""The root command's global options, handed to the output layer.

`cli.py` calls this (lazily, like every command module) rather than importing `output`
itself: only `commands` imports `output` (import-linter contracts in `.importlinter`).
"""

from __future__ import annotations

from kafkalog_cli.output.console import adopt_terminal, escape_std_streams, settings


def apply(*, quiet: bool, verbose: int, color: bool | None, utc: bool) -> None:
    settings.quiet, settings.verbose, settings.color, settings.utc = quiet, verbose, color, utc
    escape_std_streams()  # before the gate, which keeps stdout's error handler
    adopt_terminal()
