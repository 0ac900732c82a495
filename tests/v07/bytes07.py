"""Kafka 0.7 bytes built by hand from the format description (never with kafkalog's encoder),
and byte surgery on `.kafka` files.

    entry = size int32 N | magic int8 | [attributes int8, magic 1 only] | crc uint32 | payload
    crc = CRC-32 (zlib/java.util.zip) of the payload only
"""

import struct
import zlib
from pathlib import Path


def entry(payload: bytes, *, magic: int = 1, attributes: int = 0, crc: int | None = None) -> bytes:
    c = zlib.crc32(payload) & 0xFFFFFFFF if crc is None else crc
    head = bytes([magic]) + (bytes([attributes]) if magic == 1 else b"") + struct.pack(">I", c)
    return struct.pack(">i", len(head) + len(payload)) + head + payload


def positions(data: bytes) -> list[tuple[int, int]]:
    """(position, N) of each whole entry, by plain arithmetic on the size fields."""
    out, pos = [], 0
    while pos + 4 <= len(data):
        (n,) = struct.unpack_from(">i", data, pos)
        if n < 5 or pos + 4 + n > len(data):
            break
        out.append((pos, n))
        pos += 4 + n
    return out


def payload_of(data: bytes, pos: int, n: int) -> bytes:
    magic = data[pos + 4]
    return data[pos + 4 + (5 if magic == 0 else 6):pos + 4 + n]


def segments(pdir: Path) -> list[Path]:
    return sorted(pdir.glob("*.kafka"))


def flip(path: Path, pos: int, mask: int = 0x01) -> None:
    data = bytearray(path.read_bytes())
    data[pos] ^= mask
    path.write_bytes(bytes(data))


def set_size(path: Path, pos: int, n: int) -> None:
    data = bytearray(path.read_bytes())
    struct.pack_into(">i", data, pos, n)
    path.write_bytes(bytes(data))


def truncate(path: Path, size: int) -> None:
    with open(path, "r+b") as f:
        f.truncate(size)
