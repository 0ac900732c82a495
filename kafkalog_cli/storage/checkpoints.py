"""Reading and atomically updating a log dir's root checkpoint files."""

from __future__ import annotations

from pathlib import Path

from kafkalog_cli.codec.checkpoint import format_offsets, parse_offsets
from kafkalog_cli.errors import CorruptDataError
from kafkalog_cli.storage.files import atomic_write


def read_offsets(path: Path) -> dict[tuple[str, int], int]:
    """Entries of an offset checkpoint; empty when absent. Raises on a malformed file."""
    if not path.exists():
        return {}
    try:
        return parse_offsets(path.read_text("utf-8"))
    except CorruptDataError as e:
        raise e.located(str(path)) from None


def update_offsets(path: Path, updates: dict[tuple[str, int], int | None], *,
                   fsync: bool = True, replace_corrupt: bool = False) -> None:
    """Set (or, with None, drop) entries and rewrite the file atomically. With
    `replace_corrupt`, a file that does not parse is treated as empty, as the broker
    treats it (LogManager.loadLogs), and rewritten."""
    try:
        entries = read_offsets(path)
    except CorruptDataError:
        if not replace_corrupt:
            raise
        entries = {}
    for key, value in updates.items():
        if value is None:
            entries.pop(key, None)
        else:
            entries[key] = value
    atomic_write(path, format_offsets(entries).encode(), fsync=fsync)
