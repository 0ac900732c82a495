"""Nothing is lost: files removed and bytes cut go to a quarantine folder first.

Default place: `<parent of log dir>/.kafkalog-quarantine/<log dir name>/<UTC timestamp>/`.
Not inside the log dir: LogManager.loadLogs parses every directory there as
`<topic>-<partition>` and refuses to start on one it cannot parse. A manifest
(`manifest.jsonl`, one fsynced JSON line per action, written before the action) says what
came from where. It is the one place outside the log dir a mutating command writes to, so
it may not be inside the log dir, nor be reached through a link that is.
"""

from __future__ import annotations

import errno
import os
import shutil
import time
from pathlib import Path
from typing import Any

import orjson

from kafkalog_cli.errors import LogDirIOError, UsageError
from kafkalog_cli.storage.disk.files import fsync_dir
from kafkalog_cli.storage.drills.faults import crash_point

PARTIAL = ".partial"  # a copy to another file system, until it is whole and durable


def default_root(log_dir: Path) -> Path:
    log_dir = log_dir.resolve()
    return log_dir.parent / ".kafkalog-quarantine" / log_dir.name


class Quarantine:
    def __init__(self, log_dir: Path, root: Path | None = None, *, enabled: bool = True,
                 fsync: bool = True) -> None:
        self.log_dir = log_dir.resolve()
        self.base = root if root is not None else default_root(log_dir)
        self._refuse_inside()
        self.enabled = enabled
        self.fsync = fsync
        self._dir: Path | None = None
        self._planned: Path | None = None
        self.entries: list[dict[str, Any]] = []

    def _refuse_inside(self) -> None:
        """The quarantine folder, or any folder on the way to it, may not be the log dir."""
        top = str(self.log_dir)
        p = Path(os.path.abspath(self.base))
        if os.path.commonpath([os.path.realpath(p), top]) == top or \
                any(os.path.realpath(a) == top for a in p.parents):
            raise UsageError(f"{self.base}: the quarantine folder would be inside the log dir "
                             f"{top} (a broker refuses to start on a folder there); choose one "
                             "outside with --quarantine DIR")

    def reserve(self) -> None:
        """Choose this run's folder now; it is still made only when first used. Worker
        processes that share this object (forked) then all use the one folder."""
        if self._dir is None and self._planned is None:
            self._planned = self._fresh()

    def _fresh(self) -> Path:
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        d = self.base / stamp
        n = 1
        while d.exists():
            n += 1
            d = self.base / f"{stamp}-{n}"
        return d

    @property
    def dir(self) -> Path:
        if self._dir is None:
            d = self._planned or self._fresh()
            try:
                self._mkdirs(d)
            except OSError as e:
                raise LogDirIOError(f"{d}: cannot create the quarantine folder: {e.strerror} "
                                    "(choose one with --quarantine DIR)") from None
            self._dir = d
        return self._dir

    def _mkdirs(self, d: Path) -> None:
        """d and its missing parents, each made durable in its own parent (a power cut must
        not lose the folder a moved file went to)."""
        missing = []
        while not d.exists():
            missing.append(d)
            d = d.parent
        for m in reversed(missing):
            m.mkdir(exist_ok=True)
            if self.fsync:
                fsync_dir(m.parent)

    def _dest(self, path: Path, suffix: str = "") -> Path:
        """Where `path` goes: its place under the log dir, in this run's folder. Never a name
        already there: one run may quarantine the same name more than once (each round of a
        compact replaces the segment at the same base offset), so later ones get .2, .3..."""
        try:
            rel = path.resolve().relative_to(self.log_dir)
        except ValueError:
            rel = Path(path.name)
        first = self.dir / (str(rel) + suffix)
        self._mkdirs(first.parent)
        dest, n = first, 1
        while dest.exists() or dest.with_name(dest.name + PARTIAL).exists():
            n += 1
            dest = first.with_name(f"{first.name}.{n}")
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
        from kafkalog_cli.storage.disk.safety import ensure_mutable

        ensure_mutable(path, self.log_dir)
        crash_point("quarantine.remove.before")
        if not self.enabled:
            path.unlink()
            crash_point("quarantine.remove.after")
            return
        dest = self._dest(path)
        self._record({"action": "moved", "from": os.path.abspath(path), "to": str(dest),
                      "reason": reason, **info})
        try:
            os.rename(path, dest)
        except OSError as e:
            if e.errno != errno.EXDEV:
                raise LogDirIOError(f"{path}: cannot move to {dest}: {e.strerror}") from None
            self._copy_across(path, dest)
        if self.fsync:
            fsync_dir(dest.parent)
            fsync_dir(path.parent)
        crash_point("quarantine.remove.after")

    def _copy_across(self, path: Path, dest: Path) -> None:
        """A move to another file system: the copy is whole and durable under its final name
        before the original goes, so a crash or power cut leaves at least one of them."""
        partial = dest.with_name(dest.name + PARTIAL)
        try:
            shutil.copy2(path, partial)
            with open(partial, "rb") as f:
                os.fsync(f.fileno())
            os.rename(partial, dest)
            fsync_dir(dest.parent)
        except OSError as e:
            partial.unlink(missing_ok=True)
            raise LogDirIOError(f"{path}: cannot copy to {dest}: {e.strerror}") from None
        crash_point("quarantine.remove.copied")
        path.unlink()

    def save_range(self, path: Path, start: int, end: int, reason: str, **info: Any) -> None:
        """Copy bytes [start, end) of `path` into the quarantine before they are cut."""
        if not self.enabled or end <= start:
            return
        dest = self._dest(path, f".bytes-{start}-{end}")
        self._record({"action": "cut", "from": os.path.abspath(path), "to": str(dest),
                      "start": start, "end": end, "reason": reason, **info})
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
