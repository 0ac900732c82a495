"""Zig-zag base-128 varints as Kafka's ByteUtils writes them.

Decoders are pure and return (value, next_pos). A varint may take at most 5 bytes and
a varlong at most 10 (Java rejects longer ones); non-canonical encodings within those
limits are accepted, as Java accepts them.
"""

from __future__ import annotations

from kafkalog_cli.errors import CorruptBatch

_VARINT_MAX_BYTES = 5
_VARLONG_MAX_BYTES = 10


def _read_unsigned(buf: bytes | bytearray | memoryview, pos: int,
                   max_bytes: int) -> tuple[int, int]:
    result = 0
    shift = 0
    end = len(buf)
    for _ in range(max_bytes):
        if pos >= end:
            raise CorruptBatch("varint runs past the end of the data", pos=pos)
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
    raise CorruptBatch(f"varint longer than {max_bytes} bytes", pos=pos)


def read_varint(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    u, pos = _read_unsigned(buf, pos, _VARINT_MAX_BYTES)
    u &= 0xFFFFFFFF  # Java keeps only 32 bits of a 5-byte varint
    return (u >> 1) ^ -(u & 1), pos


def read_varlong(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    u, pos = _read_unsigned(buf, pos, _VARLONG_MAX_BYTES)
    u &= 0xFFFFFFFFFFFFFFFF
    return (u >> 1) ^ -(u & 1), pos


def encode_varint(value: int) -> bytes:
    """Zig-zag encode a signed 32-bit value."""
    return _encode_unsigned(((value << 1) ^ (value >> 31)) & 0xFFFFFFFF)


def encode_varlong(value: int) -> bytes:
    return _encode_unsigned(((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF)


def _encode_unsigned(u: int) -> bytes:
    out = bytearray()
    while u >= 0x80:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)
    return bytes(out)
