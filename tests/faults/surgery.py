"""Byte surgery on copies of segments (LevelDB log_test style helpers)."""

from pathlib import Path

from kafkalog_cli.storage.logdir import open_target


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


def shrink(path: Path, n: int) -> None:
    data = path.read_bytes()
    path.write_bytes(data[:-n])


def append_bytes(path: Path, extra: bytes) -> None:
    with open(path, "ab") as f:
        f.write(extra)


def segments(pdir: Path):
    return open_target(pdir).partition.segments
