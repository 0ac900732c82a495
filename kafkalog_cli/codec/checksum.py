"""Checksums: CRC-32C for v2 batches and producer snapshots, CRC-32 (IEEE) for magic 0/1."""

from __future__ import annotations

import zlib
from collections.abc import Callable

_crc32c: Callable[[bytes | bytearray | memoryview], int] | None = None


def crc32c(data: bytes | bytearray | memoryview) -> int:
    global _crc32c
    if _crc32c is None:  # imported on first use: the package costs ~35 ms of start-up
        from crc32c import crc32c as f
        _crc32c = f
    return _crc32c(data)


def crc32(data: bytes | bytearray | memoryview, value: int = 0) -> int:
    """CRC-32 of `data`, or of what came before and `data` when `value` is that CRC."""
    return zlib.crc32(data, value) & 0xFFFFFFFF
