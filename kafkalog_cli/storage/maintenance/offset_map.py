"""Kafka's SkimpyOffsetMap: key -> latest offset in bounded memory.

One flat byte array; a slot is MD5(key) (16 bytes) + offset (int64 BE) = 24 bytes, empty
when all zero. Probe i reads the 4-byte window of the hash at min(i, 12), plus i - 12 past
the 13th probe (32-bit wrap), slot = abs(probe) % slots (INT_MIN -> 0). Two keys with the
same MD5 count as one key, as in Kafka. A dict of bytes would need ~8x the memory.

kafkalog_cli/_speedups/fastclean.pyx is the compiled twin (the same table, byte for byte,
and the cleaner's per-batch loops over it); `OffsetMap` is bound to it unless it is not
built or KAFKALOG_PURE=1. This class is the specification.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

from kafkalog_cli import _speedups

ENTRY = 24
_HASH = 16
_I32 = struct.Struct(">i")
_Q = struct.Struct(">q")
_ZERO = bytes(ENTRY)
_INT_MIN = -(2**31)


class FullError(Exception):
    """The map holds `max_entries` keys: the round must stop here."""


class OffsetMap:
    def __init__(self, memory: int, load_factor: float = 0.9) -> None:
        self.slots = memory // ENTRY
        if self.slots * load_factor <= 1:
            raise ValueError("the dedupe buffer holds fewer than 2 entries")
        self.max_entries = int(self.slots * load_factor)
        self.buf = bytearray(self.slots * ENTRY)
        self.size = 0
        self.latest_offset = -1

    def _probes(self, h: bytes) -> Iterator[int]:
        slots = self.slots
        for i in range(13):
            p = _I32.unpack_from(h, i)[0]
            yield (0 if p == _INT_MIN else abs(p)) % slots
        base = _I32.unpack_from(h, 12)[0]
        i = 1
        while True:
            p = ((base + i + 2**31) % 2**32) - 2**31
            yield (0 if p == _INT_MIN else abs(p)) % slots
            i += 1

    def put(self, key: bytes, offset: int) -> None:
        if self.size >= self.max_entries:
            raise FullError
        h = _md5(key)
        buf = self.buf
        for slot in self._probes(h):
            pos = slot * ENTRY
            cur = buf[pos:pos + _HASH]
            if cur == h:
                _Q.pack_into(buf, pos + _HASH, offset)
                break
            if buf[pos:pos + ENTRY] == _ZERO:
                buf[pos:pos + _HASH] = h
                _Q.pack_into(buf, pos + _HASH, offset)
                self.size += 1
                break
        self.latest_offset = offset

    def table(self) -> bytes:
        """The whole slot array."""
        return bytes(self.buf)

    def get(self, key: bytes) -> int:
        h = _md5(key)
        buf = self.buf
        for n, slot in enumerate(self._probes(h)):
            if n >= self.slots + 12:  # SkimpyOffsetMap.get's maxAttempts
                return -1
            pos = slot * ENTRY
            if buf[pos:pos + _HASH] == h:
                return int(_Q.unpack_from(buf, pos + _HASH)[0])
            if buf[pos:pos + ENTRY] == _ZERO:
                return -1
        return -1


def _md5(key: bytes) -> bytes:
    import hashlib  # here: OpenSSL's load is ~6 ms of start-up, and the compiled map has MD5

    return hashlib.md5(key).digest()


OffsetMapPure = OffsetMap
# the compiled module (map_section, filter_section), or None: the pure loops
FAST: Any = None


def _use_compiled() -> None:
    global OffsetMap, FAST
    fc = _speedups.compiled("fastclean")
    if fc is None:
        return
    try:
        compiled = fc.OffsetMap, fc.map_section, fc.filter_section
    except AttributeError:  # built from an older .pyx
        return
    OffsetMap = compiled[0]  # type: ignore[misc]  # the compiled twin replaces the class
    FAST = fc


_use_compiled()
