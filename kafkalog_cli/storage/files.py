"""Durable file operations: atomic replace (Utils.atomicMoveWithFallback) and directory fsync."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from kafkalog_cli.errors import LogDirIOError


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes, *, fsync: bool = True) -> None:
    """Write `<path>.tmp`, fsync it, rename it over `path`, fsync the directory."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            if fsync:
                os.fsync(f.fileno())
        os.replace(tmp, path)
        if fsync:
            fsync_dir(path.parent)
    except OSError as e:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise LogDirIOError(f"{path}: cannot write: {e.strerror}") from None
