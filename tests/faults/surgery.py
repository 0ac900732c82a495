"""Byte surgery on copies of segments (LevelDB log_test style helpers)."""

import zlib
from pathlib import Path

from hypothesis import strategies as st

from kafkalog_cli.codec.checksum import crc32c
from kafkalog_cli.storage.disk.logdir import open_target


def batch_positions(log: Path) -> list[tuple[int, int]]:
    """(position, size) of every batch, found with kafka-python-independent arithmetic."""
    data = log.read_bytes()
    out, pos = [], 0
    while pos + 12 <= len(data):
        size = int.from_bytes(data[pos + 8:pos + 12], "big") + 12
        if pos + size > len(data):
            break
        out.append((pos, size))
        pos += size
    return out


def flip_byte(path: Path, pos: int, mask: int = 0x01) -> None:
    data = bytearray(path.read_bytes())
    data[pos] ^= mask
    path.write_bytes(bytes(data))


def fix_checksum(path: Path, pos: int) -> None:
    """Make the batch at `pos` pass its CRC again (LevelDB's FixChecksum), so damage made
    inside it reaches the deeper checks: v2 stores CRC-32C of attributes..end at byte 17,
    magic 0/1 CRC-32 of magic..end at byte 12."""
    data = bytearray(path.read_bytes())
    size = int.from_bytes(data[pos + 8:pos + 12], "big") + 12
    if data[pos + 16] == 2:
        data[pos + 17:pos + 21] = crc32c(bytes(data[pos + 21:pos + size])).to_bytes(4, "big")
    else:
        data[pos + 12:pos + 16] = zlib.crc32(bytes(data[pos + 16:pos + size])).to_bytes(4, "big")
    path.write_bytes(bytes(data))


def shrink(path: Path, n: int) -> None:
    data = path.read_bytes()
    path.write_bytes(data[:-n])


def append_bytes(path: Path, extra: bytes) -> None:
    with open(path, "ab") as f:
        f.write(extra)


def segments(pdir: Path):
    return open_target(pdir).partition.segments


# hostile edits for fuzz tests: (kind, where, argument)
mutation = st.one_of(
    st.tuples(st.just("flip"), st.integers(0, 10**6), st.integers(1, 255)),
    st.tuples(st.just("cut"), st.integers(0, 10**6), st.just(0)),
    st.tuples(st.just("insert"), st.integers(0, 10**6), st.binary(min_size=1, max_size=64)),
    st.tuples(st.just("size"), st.integers(0, 10**6), st.integers(-(2**31), 2**31 - 1)),
)


def mutate(data: bytes, muts) -> bytes:
    buf = bytearray(data)
    for kind, at, arg in muts:
        if not buf:
            break
        at %= len(buf)
        if kind == "flip":
            buf[at] ^= arg
        elif kind == "cut":
            del buf[at:]
        elif kind == "insert":
            buf[at:at] = arg
        else:  # overwrite a size field with a hostile value
            buf[at:at + 4] = int(arg).to_bytes(4, "big", signed=True)
    return bytes(buf)
