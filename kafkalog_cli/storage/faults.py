"""Crash points for fault-injection tests.

Every mutating protocol calls `crash_point(name)` before and after each rename and write.
With KAFKALOG_CRASH_AT=<name>[:<n>] in the environment the process dies (os._exit, no
cleanup, like a power cut) at the n-th time that point is reached (default 1st).
KAFKALOG_CRASH_LIST=<file> appends every point reached to that file, so a test can
enumerate them.
"""

from __future__ import annotations

import os

_counts: dict[str, int] = {}
CRASH_EXIT = 99


def crash_point(name: str) -> None:
    listing = os.environ.get("KAFKALOG_CRASH_LIST")
    if listing:
        with open(listing, "a") as f:
            f.write(name + "\n")
    spec = os.environ.get("KAFKALOG_CRASH_AT")
    if not spec:
        return
    want, _, nth = spec.partition(":")
    if want != name:
        return
    _counts[name] = _counts.get(name, 0) + 1
    if _counts[name] == int(nth or 1):
        os._exit(CRASH_EXIT)
