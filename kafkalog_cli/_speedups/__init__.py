"""Optional compiled hot loops (Cython). Nothing here is required: every module has a
pure-Python twin that gives the same results (see kafkalog_cli.codec.batch_v2.ACCELERATED).

Built by setup.py from fastcodec.pyx when a C compiler is available; KAFKALOG_NO_EXT=1 skips
the build and KAFKALOG_PURE=1 ignores an installed build at run time.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType


def pure() -> bool:
    """KAFKALOG_PURE=1: run the pure-Python twins even where a build is installed."""
    return os.environ.get("KAFKALOG_PURE") == "1"


def compiled(name: str) -> ModuleType | None:
    """The compiled module `name` ("fastscan", ...), or None: not built, or pure() asked.
    Callers that take names from it also treat an AttributeError (a build from an older
    .pyx) as not built."""
    if pure():
        return None
    try:
        return importlib.import_module(f"{__name__}.{name}")
    except ImportError:
        return None
