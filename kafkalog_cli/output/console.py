"""Diagnostics on stderr: warnings and notes never mix with data on stdout."""

from __future__ import annotations

import sys


def warn(msg: str) -> None:
    sys.stderr.write(f"kafkalog: warning: {msg}\n")


def note(msg: str) -> None:
    sys.stderr.write(f"kafkalog: {msg}\n")
