"""Mutations stay inside the log dir: never through a symlink, never outside the tree."""

from __future__ import annotations

import os
from pathlib import Path

from kafkalog_cli.errors import KafkalogError


class UnsafePath(KafkalogError):
    pass


def ensure_mutable(path: Path, root: Path) -> None:
    """Refuse to change `path` if it is a symlink or resolves outside `root`."""
    if os.path.islink(path):
        raise UnsafePath(f"{path}: is a symlink; kafkalog does not change files through links "
                         "(replace it with the real file, or move it out of the log dir)")
    real = os.path.realpath(path)
    top = os.path.realpath(root)
    if os.path.commonpath([real, top]) != top:
        raise UnsafePath(f"{path}: resolves to {real}, outside the log dir {top}; refusing to "
                         "change it")
