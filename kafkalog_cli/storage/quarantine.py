"""Nothing is lost: files removed and bytes cut go to a quarantine folder first.

Default place: `<parent of log dir>/.kafkalog-quarantine/<log dir name>/<UTC timestamp>/`.
Not inside the log dir: LogManager.loadLogs parses every directory there as
`<topic>-<partition>` and refuses to start on one it cannot parse. A manifest
(`manifest.jsonl`, one fsynced JSON line per action, written before the action) says what
came from where.
"""

from __future__ import annotations

import errno
import os
import shutil
import time
from pathlib import Path
from typing import Any

import orjson

from kafkalog_cli.errors import LogDirIOError
from kafkalog_cli.storage.faults import crash_point
from kafkalog_cli.storage.files import fsync_dir


def default_root(log_dir: Path) -> Path:
    log_dir = log_dir.resolve()
    return log_dir.parent / ".kafkalog-quarantine" / log_dir.name


class Quarantine:
    def __init__(self, log_dir: Path, root: Path | None = None, *, enabled: bool = True,
                 fsync: bool = True) -> None:
        self.log_dir = log_dir.resolve()
        self.base = root if root is not None else default_root(log_dir)
        self.enabled = enabled
        self.fsync = fsync
        self._dir: Path | None = None
        self.entries: list[dict[str, Any]] = []

    @property
    def dir(self) -> Path:
        if self._dir is None:
            stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
            d = self.base / stamp
            n = 1
            while d.exists():
                n += 1
                d = self.base / f"{stamp}-{n}"
            try:
                d.mkdir(parents=True)
            except OSError as e:
                raise LogDirIOError(f"{d}: cannot create the quarantine folder: {e.strerror} "
                                    "(choose one with --quarantine DIR)") from None
            self._dir = d
        return self._dir

    def _dest(self, path: Path, suffix: str = "") -> Path:
        try:
            rel = path.resolve().relative_to(self.log_dir)
        except ValueError:
            rel = Path(path.name)
        dest = self.dir / (str(rel) + suffix)
        dest.parent.mkdir(parents=True, exist_ok=True)
        return dest

    def _record(self, entry: dict[str, Any]) -> None:
        self.entries.append(entry)
        with open(self.dir / "manifest.jsonl", "ab") as f:
            f.write(orjson.dumps(entry) + b"\n")
            f.flush()
            if self.fsync:
                os.fsync(f.fileno())

    def remove(self, path: Path, reason: str, **info: Any) -> None:
        """Move `path` into the quarantine (or delete it when quarantining is off)."""
        from kafkalog_cli.storage.safety import ensure_mutable

        ensure_mutable(path, self.log_dir)
        crash_point("quarantine.remove.before")
        if not self.enabled:
            path.unlink()
            crash_point("quarantine.remove.after")
            return
        dest = self._dest(path)
        self._record({"action": "moved", "from": str(path), "to": str(dest), "reason": reason,
                      **info})
        try:
            os.rename(path, dest)
        except OSError as e:
            if e.errno != errno.EXDEV:
                raise LogDirIOError(f"{path}: cannot move to {dest}: {e.strerror}") from None
            shutil.copy2(path, dest)  # another file system: copy, make durable, then remove
            with open(dest, "rb") as f:
                os.fsync(f.fileno())
            path.unlink()
        if self.fsync:
            fsync_dir(dest.parent)
            fsync_dir(path.parent)
        crash_point("quarantine.remove.after")

    def save_range(self, path: Path, start: int, end: int, reason: str, **info: Any) -> None:
        """Copy bytes [start, end) of `path` into the quarantine before they are cut."""
        if not self.enabled or end <= start:
            return
        dest = self._dest(path, f".bytes-{start}-{end}")
        self._record({"action": "cut", "from": str(path), "to": str(dest), "start": start,
                      "end": end, "reason": reason, **info})
        with open(path, "rb") as src, open(dest, "wb") as out:
            src.seek(start)
            left = end - start
            while left:
                chunk = src.read(min(left, 1 << 20))
                if not chunk:
                    break
                out.write(chunk)
                left -= len(chunk)
            out.flush()
            if self.fsync:
                os.fsync(out.fileno())
        crash_point("quarantine.save_range.after")
