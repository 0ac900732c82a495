"""Findings: what verify reports. Stable codes; severity decides the exit code."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

ERROR, WARNING, INFO = "error", "warning", "info"


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
    """Collects every finding; never stops at the first."""

    def __init__(self) -> None:
        self.items: list[Finding] = []

    def add(self, severity: str, code: str, file: object, position: int | None, message: str,
            expected: object = None, found: object = None, fix: str | None = None) -> None:
        self.items.append(Finding(severity, code, str(file), position, message,
                                  None if expected is None else str(expected),
                                  None if found is None else str(found), fix))

    def refix(self, start: int, old: str, new: str) -> None:
        """Give the findings from `start` on whose fix is `old` the fix `new` (a command
        whose options are known only once a whole partition has been read)."""
        if old == new:
            return
        for n in range(start, len(self.items)):
            if self.items[n].fix == old:
                self.items[n] = replace(self.items[n], fix=new)

    def count(self, severity: str) -> int:
        return sum(1 for f in self.items if f.severity == severity)
