"""Where recovery starts validating, and the command line that runs it: what `verify`
reports with every partition, kept apart from the recovery planner so that a read-only
command does not import it."""

from __future__ import annotations

import shlex
from pathlib import Path


def validation_floor(bases: list[int], recovery_point: int) -> int:
    """Base offset of the segment holding the recovery point: plain `recover` validates it,
    every later segment and any segment whose `.index` is missing (LogLoader.recoverLog)."""
    floor = bases[0] if bases else 0
    for b in bases:
        if b <= recovery_point:
            floor = b
    return floor


def recover_command(pdir: Path, *, full: bool = False, force: bool = False) -> str:
    """The command line verify and recover print as the fix for a partition."""
    return (f"kafkalog recover {shlex.quote(str(pdir))}" + (" --full" if full else "")
            + (" --force" if force else ""))
