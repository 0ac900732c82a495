"""Deliberate damage for drills and tests: each kind mimics a real failure, deterministically."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

from kafkalog_cli.codec.layout import LOG_OVERHEAD
from kafkalog_cli.errors import UsageError
from kafkalog_cli.storage.disk import naming
from kafkalog_cli.storage.disk.logdir import PartitionDir

KINDS = ("torn-tail", "bit-flip", "zero-tail", "garbage-tail", "missing-index", "swap-leftover",
         "cleaned-leftover", "deleted-leftover", "orphan-index", "bad-checkpoint")


def _batches(log: Path) -> list[tuple[int, int]]:
    data = log.read_bytes()
    out, pos = [], 0
    while pos + 12 <= len(data):
        size = LOG_OVERHEAD.unpack_from(data, pos)[1] + 12
        if size < 26 or pos + size > len(data):
            break
        out.append((pos, size))
        pos += size
    return out


def apply_damage(part: PartitionDir, kind: str, seed: int) -> str:
    """Damage one partition; returns what was done (for the drill's answer key)."""
    rng = random.Random(seed)
    segs = [s for s in part.segments if s.size > 0]
    if not segs:
        return "nothing to damage (no data)"
    last, mid = segs[-1], segs[len(segs) // 2]
    if kind in ("torn-tail", "bit-flip") and not _batches((last if kind == "torn-tail"
                                                          else mid).log_path):
        raise UsageError(f"--damage {kind}: {part.path} has no whole batch left to damage "
                         "(another --damage took it); write more --records")
    if kind == "torn-tail":
        pos, size = _batches(last.log_path)[-1]
        cut = rng.randrange(1, size)
        data = last.log_path.read_bytes()
        last.log_path.write_bytes(data[:-cut])
        return f"{last.log_path}: last batch at byte {pos} torn ({cut} bytes cut)"
    if kind == "bit-flip":
        pos, size = rng.choice(_batches(mid.log_path))
        at = pos + rng.randrange(21, size)
        flipped = bytearray(mid.log_path.read_bytes())
        flipped[at] ^= 1 << rng.randrange(8)
        mid.log_path.write_bytes(bytes(flipped))
        return f"{mid.log_path}: bit flipped at byte {at} (batch at {pos})"
    if kind in ("zero-tail", "garbage-tail"):
        n = rng.randrange(100, 5000)
        extra = bytes(n) if kind == "zero-tail" else bytes([0xFF]) + rng.randbytes(n - 1)
        with open(last.log_path, "ab") as f:
            f.write(extra)
        return f"{last.log_path}: {n} {kind.split('-')[0]} bytes appended"
    if kind == "missing-index":
        p = mid.path(naming.INDEX)
        p.unlink(missing_ok=True)
        return f"{p}: removed"
    if kind in ("swap-leftover", "cleaned-leftover", "deleted-leftover"):
        temp = {"swap-leftover": naming.SWAP, "cleaned-leftover": naming.CLEANED,
                "deleted-leftover": naming.DELETED}[kind]
        src = segs[0]
        for suffix in (naming.LOG, naming.INDEX, naming.TIMEINDEX):
            if src.path(suffix).exists():
                shutil.copy2(src.path(suffix), src.path(suffix).with_name(
                    src.path(suffix).name + temp))
        return f"{src.log_path}{temp}: leftover of an interrupted replacement"
    if kind == "orphan-index":
        p = part.path / naming.segment_file_name(last.base_offset + 10**9, naming.INDEX)
        p.write_bytes(b"")
        return f"{p}: index without a log"
    if kind == "bad-checkpoint":
        if part.log_dir is None:
            return "no log dir"
        p = part.log_dir.path / naming.RECOVERY_POINT
        p.write_text("0\n2\nbroken line\n")
        return f"{p}: malformed"
    raise ValueError(kind)
