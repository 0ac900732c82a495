"""Run an expensive fixture body once per test session, also under pytest-xdist.

Under ``pytest -n 2`` each worker would set up a module fixture for itself: two brokers at
once on a 2-core box, for the same result. ``once()`` lets the first worker build it (under
a file lock in the session's shared temp dir) and the other load the pickled result; the
pattern the pytest-xdist docs recommend for session fixtures.
"""
from __future__ import annotations

import fcntl
import os
import pickle
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any


def once(tmp_path_factory, name: str, build: Callable[[Path], Any]) -> Any:
    """``build(workdir)`` once per session (all xdist workers); its result must pickle.
    A failed build stores nothing: the next caller tries again in a fresh workdir."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # shared by every worker of this session
    result = base / f"once-{name}.pickle"
    with open(base / f"once-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if result.exists():
            return pickle.loads(result.read_bytes())
        workdir = base / f"once-{name}-{uuid.uuid4().hex[:8]}"
        workdir.mkdir(parents=True)
        value = build(workdir)
        tmp = result.with_suffix(".tmp")
        tmp.write_bytes(pickle.dumps(value))
        tmp.rename(result)
        return value
