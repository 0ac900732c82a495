"""Checksums: CRC-32C for v2 batches and producer snapshots, CRC-32 (IEEE) for magic 0/1."""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Any

_crc32c: Callable[[bytes | bytearray | memoryview], int] | None = None


def crc32c(data: bytes | bytearray | memoryview) -> int:
    global _crc32c
    if _crc32c is None:  # loaded on first use: reading commands with the compiled core never do
        _crc32c = _load_crc32c()
    return _crc32c(data)


def _load_crc32c() -> Any:
    """The crc32c package's C function. The package's __init__ looks up its own version
    through importlib.metadata (~35 ms, more than a small command's work); its extension
    module alone is loaded when it can be, the package as usual otherwise."""
    import importlib.machinery
    import importlib.util
    import sys

    name = "crc32c._crc32c"
    if name in sys.modules:
        return sys.modules[name].crc32c
    pkg = importlib.util.find_spec("crc32c")  # finds the package without running it
    for where in (pkg.submodule_search_locations or []) if pkg is not None else []:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            spec = importlib.util.spec_from_file_location(name, f"{where}/_crc32c{suffix}")
            if spec is None or spec.loader is None:
                continue
            try:
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
            except (ImportError, OSError):
                continue
            sys.modules[name] = module  # `import crc32c` later reuses it
            return module.crc32c
    from crc32c import crc32c as f

    return f


def crc32(data: bytes | bytearray | memoryview, value: int = 0) -> int:
    """CRC-32 of `data`, or of what came before and `data` when `value` is that CRC."""
    return zlib.crc32(data, value) & 0xFFFFFFFF
