"""Crash points for fault-injection tests.

Every mutating protocol calls `crash_point(name)` before and after each rename and write.
With KAFKALOG_CRASH_AT=<name>[:<n>] in the environment the process dies (os._exit, no
cleanup, like a power cut) at the n-th time that point is reached (default 1st).
KAFKALOG_CRASH_LIST=<file> appends every point reached to that file, so a test can
enumerate them. KAFKALOG_FAIL_AT=<name>[:<n>] instead raises OSError(ENOSPC) there: a
full disk in the middle of a protocol.
"""

from __future__ import annotations

import errno
import os

_counts: dict[str, int] = {}
CRASH_EXIT = 99


def crash_point(name: str) -> None:
    listing = os.environ.get("KAFKALOG_CRASH_LIST")
    if listing:
        with open(listing, "a") as f:
            f.write(name + "\n")
    for var in ("KAFKALOG_CRASH_AT", "KAFKALOG_FAIL_AT"):
        spec = os.environ.get(var)
        if not spec:
            continue
        want, _, nth = spec.partition(":")
        if want != name:
            continue
        key = var + name
        _counts[key] = _counts.get(key, 0) + 1
        if _counts[key] == int(nth or 1):
            if var == "KAFKALOG_CRASH_AT":
                os._exit(CRASH_EXIT)
            raise OSError(errno.ENOSPC, "No space left on device (injected)")
