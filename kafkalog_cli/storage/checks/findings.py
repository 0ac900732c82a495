"""Findings: what verify reports. Stable codes; severity decides the exit code."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

ERROR, WARNING, INFO = "error", "warning", "info"
MAX_LISTED = 100  # findings of one code listed per file


@dataclass(frozen=True, slots=True)
class Finding:
    severity: str
    code: str
    file: str
    position: int | None
    message: str
    expected: str | None = None
    found: str | None = None
    fix: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class Findings:
    """Collects every finding; never stops at the first. Past MAX_LISTED findings of one code
    in one file (a damaged gigabyte index can give one per entry), the rest are counted in
    one more finding, so memory stays bounded whatever the input."""

    def __init__(self) -> None:
        self._items: list[Finding] = []
        self._listed: dict[tuple[str, str], int] = {}
        # (code, file) -> [its note's place in _items, findings not listed, as the note says]
        self._more: dict[tuple[str, str], list[int]] = {}

    @property
    def items(self) -> list[Finding]:
        for (code, _file), more in self._more.items():
            at, n, shown = more
            if n != shown:
                note = self._items[at]
                self._items[at] = Finding(note.severity, code, note.file, None,
                                          f"{n} more {code} finding{'s' if n > 1 else ''} in "
                                          "this file, not listed", fix=note.fix)
                more[2] = n
        return self._items

    def add(self, severity: str, code: str, file: object, position: int | None, message: str,
            expected: object = None, found: object = None, fix: str | None = None) -> None:
        key = (code, str(file))
        listed = self._listed.get(key, 0)
        if listed < MAX_LISTED:
            self._listed[key] = listed + 1
            self._items.append(Finding(severity, code, key[1], position, message,
                                       None if expected is None else str(expected),
                                       None if found is None else str(found), fix))
            return
        more = self._more.get(key)
        if more is None:  # its note, worded when the items are read
            self._more[key] = [len(self._items), 1, 0]
            self._items.append(Finding(severity, code, key[1], None, "", fix=fix))
        else:
            more[1] += 1

    def absorb(self, other: Findings) -> None:
        """Add `other`'s findings after these, as if each had been added here in turn (the
        findings of a partition checked in a worker process)."""
        notes = {at: n for at, n, _ in other._more.values()}
        for at, fd in enumerate(other._items):
            key = (fd.code, fd.file)
            times = notes.get(at, 1)
            if at not in notes and self._listed.get(key, 0) < MAX_LISTED:
                self._listed[key] = self._listed.get(key, 0) + 1
                self._items.append(fd)
                continue
            more = self._more.get(key)
            if more is None:
                self._more[key] = [len(self._items), times, 0]
                self._items.append(Finding(fd.severity, fd.code, fd.file, None, "", fix=fd.fix))
            else:
                more[1] += times

    def refix(self, start: int, old: str, new: str) -> None:
        """Give the findings from `start` on whose fix is `old` the fix `new` (a command
        whose options are known only once a whole partition has been read)."""
        if old == new:
            return
        for n in range(start, len(self.items)):
            if self.items[n].fix == old:
                self.items[n] = replace(self.items[n], fix=new)

    def count(self, severity: str) -> int:
        """Findings of that severity, those not listed included."""
        items = self.items
        n = sum(1 for f in items if f.severity == severity)
        return n + sum(more[1] - 1 for more in self._more.values()
                       if items[more[0]].severity == severity)
