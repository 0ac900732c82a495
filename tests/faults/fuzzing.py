"""One fuzz harness for every reader: mutate a file of a log dir, run each reading command on
it, and hold every run to the project's promises for bad input.

A *case* is one reader command run on one mutated input. For each input the harness copies
a small template log dir (one partition of fixtures/sample, of the shared broker-written
corpus, or a generated Kafka 0.7 one), mutates one of its files (a .log of magic 0, 1 or 2, a
KRaft .checkpoint, a 0.7 .kafka, an .index, .timeindex, .txnindex, .snapshot,
leader-epoch-checkpoint, a root checkpoint, meta.properties...) and runs dump (plain,
--records --print-data, jsonl, the file itself), verify, find-by-time (a time, earliest,
latest, max-timestamp), info, txn and recover --dry-run on it. Each run is a real child
process (forked from a driver that imported kafkalog once, so a run costs milliseconds, not
an interpreter start), with stdout, stderr and exit status of its own. Asserted per run:

  * no `Traceback` and no `internal error` on stderr; the process exits (no signal, no hang)
  * the exit code is one the command's help documents
  * every `kafkalog: error:` line is `<file in the case>:<byte position>: reason`, or a
    usage error naming an option
  * peak RSS <= 2 x the decompression cap + 64 MiB (the cap is --max-decompressed-bytes
    where the command takes it, else the 64 MiB default)
  * wall time <= TIME_BASE_S + TIME_PER_BYTE_S x the bytes of the case's files

Everything follows from (seed, case number), so a failure is replayed with
`python -m tests.faults.fuzzing --seed S --replay N`. `make test` runs a few thousand cases
with fixed seeds (tests/faults/test_fuzz_cli.py); `make fuzz` runs >= 100 000 with a fresh
seed (KAFKALOG_FUZZ_CASES, KAFKALOG_FUZZ_SEED, KAFKALOG_FUZZ_JOBS).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import shutil
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "fixtures" / "sample"
CORPUS = ROOT.parent / "shared" / "corpus"
if not CORPUS.is_dir():  # a worktree next to the main checkout
    CORPUS = Path("/work/shared/corpus")

MIB = 1 << 20
CAP = 8 * MIB  # --max-decompressed-bytes given to the commands that take it
DEFAULT_CAP = 64 * MIB  # compression.DEFAULT_MAX_DECOMPRESSED
TIME_BASE_S = 8.0
TIME_PER_BYTE_S = 20e-6  # 50 kB/s: far below any real speed, far above a quadratic blow-up
ROOT_FILES = ("recovery-point-offset-checkpoint", "replication-offset-checkpoint",
              "log-start-offset-checkpoint", "cleaner-offset-checkpoint", "meta.properties")

# documented exit codes per command (their --help epilogs)
EXITS = {"dump": {0, 4, 8, 16}, "verify": {0, 4, 8, 16}, "find-by-time": {0, 4, 8, 16},
         "info": {0, 8, 16}, "txn": {0, 4, 8, 16}, "recover": {0, 1, 4, 8, 16},
         "index-rebuild": {0, 1, 4, 8, 16}, "compact": {0, 4, 8, 16}, "retain": {0, 4, 8, 16}}
LOCATED = re.compile(r"^kafkalog: error: (/[^:]*):(\d+): \S")
OPTION = re.compile(r"(^|\W)--?[a-z][a-z-]*\b")


# -- templates: small log dirs, one partition each ----------------------------------------

@dataclass
class Template:
    name: str
    ld: Path  # the log dir
    part: Path  # the partition dir in it
    v07: bool = False
    timestamps: tuple[int, int] = (0, 0)  # range of record timestamps, for find-by-time -t


def _copy_partition(src: Path, dst: Path, max_segments: int = 2,
                    keep: Callable[[str], bool] = lambda n: True) -> None:
    dst.mkdir(parents=True)
    bases = sorted({f.name.split(".")[0] for f in src.iterdir() if f.name.endswith(".log")})
    chosen = set(bases[:max_segments])
    for f in sorted(src.iterdir()):
        stem = f.name.split(".")[0].split("-")[0]
        if f.is_file() and keep(f.name) and (len(stem) != 20 or not stem.isdigit() or
                                             f.name.split(".")[0] in chosen or
                                             not f.name.endswith((".log", ".index", ".timeindex",
                                                                  ".txnindex", ".snapshot"))):
            shutil.copyfile(f, dst / f.name)


def _root_files(src: Path, dst: Path, extra: tuple[str, ...] = ()) -> None:
    for n in (*ROOT_FILES, *extra):
        if (src / n).is_file():
            shutil.copyfile(src / n, dst / n)


def build_templates(work: Path) -> list[Template]:
    out: list[Template] = []

    def add(name: str, src_ld: Path, part: str, extra_root: tuple[str, ...] = (),
            **kw: object) -> None:
        ld = work / name / "ld"
        ld.mkdir(parents=True)
        _root_files(src_ld, ld, extra_root)
        _copy_partition(src_ld / part, ld / part, **kw)  # type: ignore[arg-type]
        out.append(Template(name, ld, ld / part))

    for part in ("demo-0", "demo-1", "appendtime-0", "legacy-v0-0", "legacy-v1-0"):
        add(f"sample-{part}", FIXTURE, part, max_segments=3)
    legacy = CORPUS / "kafka-0.9-legacy"
    for part in ("legacy-gzip-0", "legacy-snappy-0", "legacy-lz4-0", "legacy-compacted-0",
                 "__consumer_offsets-41"):
        add(f"k09-{part}", legacy, part)
    add("christseng-metadata", CORPUS / "christseng-kraft", "__cluster_metadata-0",
        extra_root=("bootstrap.checkpoint",))
    # two KRaft snapshots; its 850 KB log would slow every case down (christseng has one)
    add("rupia-kraft-snapshots", CORPUS / "rupia-kraft", "__cluster_metadata-0",
        keep=lambda n: n.startswith(("00000000000000852953-", "00000000000000860099-",
                                     "00000000000000839130.")) or not n[0].isdigit())
    add("donaldy-offsets", CORPUS / "donaldy-zk-2.7", "__consumer_offsets-39")
    add("ldi-offsets", CORPUS / "ldi-poc-kraft", "__consumer_offsets-6")
    add("seanorth", CORPUS / "seanorth-zk-snappy", "some-topic-0")
    add("nomanazeem-offsets", CORPUS / "nomanazeem-kraft", "__consumer_offsets-15")

    from kafkalog_cli.storage.v07_generate import Gen07Spec, generate

    ld07 = work / "v07" / "ld"
    generate(ld07, Gen07Spec(records=60, batch_records=4, codecs=["none", "gzip", "snappy"],
                             segment_bytes=1500, seed=3))
    out.append(Template("v07", ld07, ld07 / "demo-0", v07=True))
    for t in out:
        t.timestamps = _timestamps(t)
    return out


def _timestamps(t: Template) -> tuple[int, int]:
    if t.v07:
        return (0, 0)
    from kafkalog_cli.storage.logdir import open_target

    lo, hi = 2**62, -1
    with contextlib.suppress(Exception):
        for seg in open_target(t.part).partition.segments:  # type: ignore[union-attr]
            for _pos, b in seg.batches():
                if b.max_timestamp >= 0:
                    lo, hi = min(lo, b.max_timestamp), max(hi, b.max_timestamp)
    return (lo, hi) if hi >= 0 else (0, 0)


def kind_of(path: Path, v07: bool) -> str:
    n = path.name
    if v07 and n.endswith(".kafka"):
        return "kafka07"
    if n.endswith(".checkpoint") and n[:1].isdigit():
        return "kraft-checkpoint"
    if n == "bootstrap.checkpoint":
        return "kraft-checkpoint"
    if n.endswith(".log"):
        data = path.read_bytes()[:17]
        return f"log-v{data[16]}" if len(data) == 17 and data[16] in (0, 1, 2) else "log-v2"
    for suffix in (".index", ".timeindex", ".txnindex", ".snapshot"):
        if n.endswith(suffix):
            return suffix[1:]
    if n == "leader-epoch-checkpoint":
        return "leader-epoch"
    if n in ROOT_FILES[:4]:
        return "root-checkpoint"
    return "text"


@dataclass
class Input:
    """A file to mutate: its template and path relative to the template's log dir."""

    template: Template
    rel: str
    kind: str
    data: bytes


def inputs(templates: list[Template]) -> dict[str, list[Input]]:
    """Mutable files of every template, grouped by kind (cases pick a kind first)."""
    by_kind: dict[str, list[Input]] = {}
    for t in templates:
        for f in sorted(t.ld.rglob("*")):
            if not f.is_file() or f.name in (".lock", ".kafka_cleanshutdown"):
                continue
            k = kind_of(f, t.v07)
            by_kind.setdefault(k, []).append(Input(t, str(f.relative_to(t.ld)), k,
                                                   f.read_bytes()))
    return by_kind


# -- mutations --------------------------------------------------------------------------

INTS = (0, 1, -1, 2, 7, 14, 48, 49, 61, 127, 128, 255, 0x7FFF, -0x8000, 0xFFFF, 2**31 - 1,
        -(2**31), 2**32 - 1, 2**62, 2**63 - 1, -(2**63), 10**6, 10**9)
# v2 header fields: (position in the batch, width)
V2_FIELDS = ((0, 8), (8, 4), (12, 4), (16, 1), (21, 2), (22, 1), (23, 4), (27, 8), (35, 8),
             (43, 8), (51, 2), (53, 4), (57, 4))
LEGACY_FIELDS = ((0, 8), (8, 4), (16, 1), (17, 1), (18, 8), (18, 4), (22, 4), (26, 4))
ENTRY_SIZES = {"index": 8, "timeindex": 12, "txnindex": 34}


def _put_int(buf: bytearray, at: int, width: int, value: int) -> None:
    at = max(0, min(at, len(buf)))
    v = value % (1 << (8 * width))
    buf[at:at + width] = v.to_bytes(width, "big")


def _entries(buf: bytes | bytearray) -> Iterator[tuple[int, int]]:
    """(position, total size) of each framed current-format entry."""
    pos = 0
    while pos + 17 <= len(buf):
        size = int.from_bytes(buf[pos + 8:pos + 12], "big", signed=True)
        end = pos + 12 + size
        if size < 14 or end > len(buf):
            return
        yield pos, end - pos
        pos = end


def _entries07(buf: bytes | bytearray) -> Iterator[tuple[int, int]]:
    pos = 0
    while pos + 4 <= len(buf):
        size = int.from_bytes(buf[pos:pos + 4], "big", signed=True)
        if size < 5 or pos + 4 + size > len(buf):
            return
        yield pos, 4 + size
        pos += 4 + size


def fix_crcs(buf: bytearray, kind: str) -> None:
    """Recompute every entry's checksum, so a mutation reaches the checks past the CRC
    (LevelDB log_test's FixChecksum)."""
    from kafkalog_cli.codec.checksum import crc32, crc32c

    if kind == "kafka07":
        for pos, size in list(_entries07(buf)):
            head = 6 if buf[pos + 4] == 1 else 5
            if size >= 4 + head:
                _put_int(buf, pos + head, 4, crc32(bytes(buf[pos + 4 + head:pos + size])))
        return
    for pos, size in list(_entries(buf)):
        magic = buf[pos + 16]
        if magic == 2 and size >= 61:
            _put_int(buf, pos + 17, 4, crc32c(bytes(buf[pos + 21:pos + size])))
        elif magic in (0, 1):
            _put_int(buf, pos + 12, 4, crc32(bytes(buf[pos + 16:pos + size])))


def _mutate_bytes(rng: random.Random, data: bytes, ops: int = 3) -> bytes:
    buf = bytearray(data)
    for _ in range(rng.randint(1, ops)):
        if not buf:
            buf += rng.randbytes(rng.randint(1, 64))
            continue
        at = rng.randrange(len(buf))
        op = rng.randrange(9)
        if op == 0:
            buf[at] ^= 1 << rng.randrange(8)
        elif op == 1:
            buf[at] = rng.choice((0, 1, 0x7F, 0x80, 0xFF, rng.randrange(256)))
        elif op == 2:
            width = rng.choice((1, 2, 4, 8))
            _put_int(buf, at, width, rng.choice(INTS))
        elif op == 3:
            del buf[at:]
        elif op == 4:
            buf[at:at] = rng.randbytes(rng.randint(1, 64))
        elif op == 5:
            n = rng.randint(1, 256)
            buf[at:at + n] = bytes(len(buf[at:at + n]))
        elif op == 6:
            n = rng.randint(1, 512)
            buf[at:at] = buf[at:at + n]
        elif op == 7:
            del buf[at:at + rng.randint(1, 64)]
        else:  # a varint run that never ends, or one that ends oddly
            buf[at:at + 5] = bytes(rng.choice((0x80, 0xFF, 0x81)) for _ in range(5))
    return bytes(buf)


def _mutate_field(rng: random.Random, buf: bytearray, kind: str) -> None:
    """Overwrite a header field of one entry with an edge value."""
    ents = list(_entries07(buf) if kind == "kafka07" else _entries(buf))
    if not ents:
        return
    pos, _size = rng.choice(ents)
    if kind == "kafka07":
        at, width = rng.choice(((0, 4), (4, 1), (5, 1)))
    else:
        fields = V2_FIELDS if buf[pos + 16] == 2 else LEGACY_FIELDS
        at, width = rng.choice(fields)
    value = rng.choice(INTS)
    if (at, width) == (21, 2) or (at, width) == (22, 1) or (at, width) == (17, 1):
        value = rng.randrange(0, 256)  # attributes: another codec, flags
    _put_int(buf, pos + at, width, value)


def _deep(rng: random.Random, buf: bytearray, kind: str) -> bytearray:
    """Mutate what one compressed entry holds, recompress, and rebuild the entry around it,
    so the damage sits inside a valid checksum and a valid codec stream."""
    from kafkalog_cli.codec import compression as codecs

    if kind == "kafka07":
        return buf  # 0.7 wrappers get byte mutations + fix_crcs
    cands = []
    for pos, size in _entries(buf):
        magic = buf[pos + 16]
        codec = (buf[pos + 22] if magic == 2 else buf[pos + 17]) & 7
        if size > 61 or magic < 2:
            cands.append((pos, size, magic, codec))
    if not cands:
        return buf
    pos, size, magic, codec = rng.choice(cands)
    entry = bytes(buf[pos:pos + size])
    try:
        if magic == 2:
            body = entry[61:]
            inner = codecs.decompress(codec, body) if codec else body
            # edit the records: varint fields near the start hit lengths and deltas
            new = _mutate_bytes(rng, inner, ops=2)
            if rng.random() < 0.3 and len(new) > 2:
                head = bytearray(new)
                _put_int(head, rng.randrange(min(8, len(head))), 1, rng.choice((0x01, 0x7F,
                                                                                 0xFE, 0x80)))
                new = bytes(head)
            packed = codecs.compress(codec, new) if codec else new
            out = bytearray(entry[:61]) + packed
            _put_int(out, 8, 4, len(out) - 12)
            if rng.random() < 0.5:
                _put_int(out, 57, 4, rng.choice((0, 1, len(new), 2**31 - 1, -1,
                                                 int.from_bytes(entry[57:61], "big") + 1)))
        else:
            from kafkalog_cli.codec.message_v01 import LegacyBatch, encode_message

            b = LegacyBatch(entry)
            if codec == 0 or b.value is None:
                return buf
            inner = codecs.decompress(codec, b.value, legacy_lz4=magic == 0)
            inner_buf = bytearray(inner)
            if rng.random() < 0.5:
                _mutate_field(rng, inner_buf, "log-v0")  # nested header: size, attributes...
            else:
                inner_buf = bytearray(_mutate_bytes(rng, bytes(inner_buf), ops=2))
            if rng.random() < 0.7:
                fix_crcs(inner_buf, "log")
            packed = codecs.compress(codec, bytes(inner_buf), legacy_lz4=magic == 0)
            out = bytearray(encode_message(b.last_offset, None if b.key is None else
                                           bytes(b.key), packed, magic=magic,
                                           timestamp=b.timestamp, attributes=b.attributes))
    except Exception:  # noqa: BLE001 - a seed that does not re-encode keeps its bytes
        return buf
    return buf[:pos] + out + buf[pos + size:]


# aligned fields of one index entry: (position in the entry, width)
INDEX_FIELDS = {"index": ((0, 4), (4, 4)), "timeindex": ((0, 8), (8, 4)),
                "txnindex": ((0, 2), (2, 8), (10, 8), (18, 8), (26, 8))}


def _mutate_index(rng: random.Random, data: bytes, kind: str, big: bool) -> bytes:
    size = ENTRY_SIZES[kind]
    buf = bytearray(data)
    op = rng.randrange(5)
    if op == 0 and buf:  # an edge value in an aligned field
        at, width = rng.choice(INDEX_FIELDS[kind])
        _put_int(buf, rng.randrange(max(1, len(buf) // size)) * size + at, width,
                 rng.choice(INTS))
    elif op == 1:  # preallocated: a zero-filled tail as a live broker leaves it (10 MiB)
        buf += bytes(rng.choice((size, size * 3, 4096, 64 * 1024) +
                                ((MIB, 10 * MIB) if big else ())))
    elif op == 2 and len(buf) >= 2 * size:  # entries out of order
        a, b = (i * size for i in sorted(rng.sample(range(len(buf) // size), 2)))
        buf[a:a + size], buf[b:b + size] = buf[b:b + size], buf[a:a + size]
    else:
        return _mutate_bytes(rng, data)
    return bytes(buf)


def _bomb(rng: random.Random, buf: bytearray, big: bool) -> bytearray:
    """Append a v2 batch of many minimal records, compressed: a small file that claims a
    large count and inflates to a lot (with `big`, past the decompression cap)."""
    from kafkalog_cli.codec import compression as codecs
    from kafkalog_cli.codec.batch_v2 import encode_batch, encode_record

    n = rng.choice((1000, 20_000) + ((10**5, 10**6, 5 * 10**6, 2 * CAP // 7) if big else ()))
    codec = rng.choice((codecs.GZIP, codecs.ZSTD, codecs.LZ4))
    head = bytearray(encode_batch([(0, 0, None, None, [])], base_offset=10**6)[:61])
    body = codecs.compress(codec, encode_record(0, 0, None, None) * n)
    _put_int(head, 8, 4, 61 - 12 + len(body))
    _put_int(head, 22, 1, codec)
    _put_int(head, 57, 4, n)
    out = head + body
    fix_crcs(out, "log-v2")
    return buf + out


TEXT_TOKENS = ("-1", "0", "1", "2", "9223372036854775807", "9223372036854775808",
               "-9223372036854775809", "99999999999999999999999", "x", "", " ", "\t",
               "1e3", "0x10", "+5", "٣", "topic-with-dash", "a b", "2147483648")


def _mutate_text(rng: random.Random, data: bytes) -> bytes:
    lines = data.split(b"\n")
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(lines))
        op = rng.randrange(7)
        if op == 0:
            toks = lines[i].split(b" ")
            toks[rng.randrange(len(toks))] = rng.choice(TEXT_TOKENS).encode()
            lines[i] = b" ".join(toks)
        elif op == 1:  # a byte that is not UTF-8
            at = rng.randrange(len(lines[i]) + 1)
            lines[i] = lines[i][:at] + bytes([rng.choice((0x80, 0xFF, 0xC3, 0xED))]) + \
                lines[i][at:]
        elif op == 2:
            del lines[i]
            if not lines:
                lines = [b""]
        elif op == 3:
            lines.insert(i, lines[i])
        elif op == 4:
            lines[i] = rng.choice((b"", b" ", b"0", b"1 2 3 4", b"a 0 0", b"\x00" * 8))
        elif op == 5:
            lines.insert(i, rng.choice(TEXT_TOKENS).encode())
        else:
            return _mutate_bytes(rng, b"\n".join(lines))
    return b"\n".join(lines)


def mutate(rng: random.Random, inp: Input, big: bool = False) -> tuple[bytes, str]:
    """Mutated bytes for `inp` and a short description of what was done. `big` adds the
    inputs that need streaming records and packed index entries to stay in the memory
    bound (10 MiB zero-filled indexes, batches of millions of records)."""
    kind = inp.kind
    if kind in ("root-checkpoint", "leader-epoch", "text"):
        how = "text" if rng.random() < 0.85 else "bytes"
        data = _mutate_text(rng, inp.data) if how == "text" else _mutate_bytes(rng, inp.data)
        return data, how
    if kind in ENTRY_SIZES:
        return _mutate_index(rng, inp.data, kind, big), "index"
    if kind.startswith("log") or kind in ("kraft-checkpoint", "kafka07"):
        buf = bytearray(inp.data)
        how = rng.choice(("bytes", "field", "deep", "deep", "field+bytes", "bomb"))
        if how == "bomb" and kind == "log-v2":
            return bytes(_bomb(rng, buf, big)), how
        if how == "bomb":
            how = "bytes"
        if how == "deep":
            buf = _deep(rng, buf, kind)
        if "field" in how:
            for _ in range(rng.randint(1, 2)):
                _mutate_field(rng, buf, kind)
        if "bytes" in how:
            buf = bytearray(_mutate_bytes(rng, bytes(buf)))
        if rng.random() < 0.6:
            fix_crcs(buf, kind)
            how += "+crc"
        return bytes(buf), how
    return _mutate_bytes(rng, inp.data), "bytes"


# -- commands ---------------------------------------------------------------------------

def commands(rng: random.Random, t: Template, ld: Path, part: Path, victim: Path,
             kind: str) -> list[list[str]]:
    cap = ["--max-decompressed-bytes", str(CAP)]
    if t.v07:
        times = ["earliest", "latest"]
    else:
        lo, hi = t.timestamps
        times = [str(rng.randint(lo, hi)) if hi else "0", str(lo), "earliest", "latest",
                 "max-timestamp"]
    out = [["dump", str(part)],
           ["dump", str(part), "--records", "--print-data", *cap],
           ["verify", str(ld), *cap],
           ["find-by-time", str(part), "-t", rng.choice(times)],
           ["info", str(ld)],
           ["recover", str(ld), "--dry-run", *(["--full"] if rng.random() < 0.5 else [])]]
    if not t.v07:
        out.append(["dump", str(part), "--records", "--format", "jsonl", "--no-batches", *cap])
        out.append(["txn", str(part)])
        # the dry runs of the commands that rewrite read everything too
        out.append(rng.choice([["index-rebuild", str(part), "--dry-run"],
                               ["compact", str(part), "--dry-run", "--all"],
                               ["retain", str(part), "--dry-run", "--retention-ms", "1"]]))
    out.append(["dump", str(victim), "--records", "--print-data", *cap])
    return out


# -- running ----------------------------------------------------------------------------

@dataclass
class Run:
    argv: list[str]
    code: int
    err: str
    maxrss_kib: int
    seconds: float
    input_bytes: int

    def problems(self, case_dir: Path) -> list[str]:
        out = []
        cmd = self.argv[0]
        if "Traceback" in self.err:
            out.append("traceback")
        if "internal error" in self.err:
            out.append("internal-error")
        if self.code < 0:
            out.append(f"signal {-self.code}")
        elif self.code not in EXITS[cmd]:
            out.append(f"exit {self.code} not documented for {cmd}")
        for line in self.err.splitlines():
            if line.startswith("kafkalog: error:") and not located(line, case_dir, self.code):
                out.append("error line without file:position")
                break
        cap = CAP if "--max-decompressed-bytes" in self.argv else DEFAULT_CAP
        if self.maxrss_kib * 1024 > 2 * cap + 64 * MIB:
            out.append(f"peak RSS {self.maxrss_kib // 1024} MiB > {(2 * cap >> 20) + 64} MiB")
        if self.seconds > time_bound(self.input_bytes):
            out.append(f"took {self.seconds:.1f} s for {self.input_bytes} bytes")
        return out


def located(line: str, case_dir: Path, code: int) -> bool:
    """`<file of the case>:<byte>: reason`; a usage error (16) may instead name the option,
    or the PATH argument it cannot use."""
    m = LOCATED.match(line)
    if m and m.group(1).startswith(str(case_dir)):
        return True
    msg = line[len("kafkalog: error:"):]
    return code == 16 and (OPTION.search(msg) is not None or str(case_dir) in msg)


def time_bound(input_bytes: int) -> float:
    return TIME_BASE_S + TIME_PER_BYTE_S * input_bytes


def _child(argv: list[str], err_path: str, limit_s: int) -> None:
    """In the forked child: run the CLI with its own stdout/stderr, exit with its code."""
    code = 70
    try:
        err = os.open(err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(null, 1)
        os.dup2(err, 2)
        signal.alarm(limit_s)  # default action: the child dies of SIGALRM (a hang)
        from kafkalog_cli.cli import main

        try:
            main(argv)
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:  # noqa: BLE001 - whatever escapes main is what we look for
        with contextlib.suppress(BaseException):
            traceback.print_exc()
            sys.stderr.flush()
        code = 70
    os._exit(code)


def run_one(argv: list[str], tmp: Path, input_bytes: int) -> Run:
    err_path = tmp / "stderr"
    limit = int(time_bound(input_bytes) * 4) + 5
    sys.stdout.flush()
    sys.stderr.flush()
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        _child(argv, str(err_path), limit)
    _, status, ru = os.wait4(pid, 0)
    seconds = time.monotonic() - t0
    err = err_path.read_bytes().decode("utf-8", "replace")
    return Run(argv, os.waitstatus_to_exitcode(status), err, ru.ru_maxrss, seconds,
               input_bytes)


@dataclass
class Report:
    seed: str
    cases: int = 0
    inputs: int = 0
    error_lines: int = 0
    unlocated_lines: int = 0
    max_rss_kib: int = 0
    max_rss_run: str = ""
    slowest: float = 0.0
    slowest_run: str = ""
    failures: list[dict[str, object]] = field(default_factory=list)
    signatures: dict[str, int] = field(default_factory=dict)
    unlocated_examples: dict[str, str] = field(default_factory=dict)

    def add(self, run: Run, case_dir: Path, info: dict[str, object]) -> None:
        self.cases += 1
        what = f"{' '.join(run.argv)} ({info['file']}, {info['mutation']})"
        if run.maxrss_kib > self.max_rss_kib:
            self.max_rss_kib, self.max_rss_run = run.maxrss_kib, what
        if run.seconds > self.slowest:
            self.slowest, self.slowest_run = run.seconds, what
        for line in run.err.splitlines():
            if line.startswith("kafkalog: error:"):
                self.error_lines += 1
                if not located(line, case_dir, run.code):
                    self.unlocated_lines += 1
                    shape = _shape(line, case_dir)
                    self.unlocated_examples.setdefault(shape, line)
        for p in run.problems(case_dir):
            sig = f"{run.argv[0]}: {p}: {_shape(_last_error(run.err), case_dir)}"
            self.signatures[sig] = self.signatures.get(sig, 0) + 1
            if self.signatures[sig] <= 2:
                self.failures.append({**info, "argv": run.argv, "code": run.code,
                                      "problem": p, "stderr": run.err[-3000:],
                                      "maxrss_kib": run.maxrss_kib,
                                      "seconds": round(run.seconds, 2)})

    def as_dict(self) -> dict[str, object]:
        return {**self.summary(), "signatures": self.signatures,
                "unlocated_examples": self.unlocated_examples, "failures": self.failures}

    def summary(self) -> dict[str, object]:
        return {"seed": self.seed, "cases": self.cases, "inputs": self.inputs,
                "error_lines": self.error_lines, "unlocated_error_lines": self.unlocated_lines,
                "max_rss_mib": round(self.max_rss_kib / 1024, 1), "max_rss_run": self.max_rss_run,
                "slowest_s": round(self.slowest, 2), "slowest_run": self.slowest_run,
                "failure_kinds": len(self.signatures)}


def _last_error(err: str) -> str:
    lines = [x for x in err.splitlines() if x.strip()]
    for line in reversed(lines):
        if line.startswith("kafkalog: error:") or "Error" in line:
            return line
    return lines[-1] if lines else ""


def _shape(line: str, case_dir: Path) -> str:
    """A line with the case path and numbers blanked, to group failures by kind."""
    line = line.replace(str(case_dir), "<case>")
    return re.sub(r"-?\d+", "N", line)[:200]


def run_input(rng: random.Random, by_kind: dict[str, list[Input]], work: Path, number: int,
              report: Report, seed: str, keep: bool = False, big: bool = False) -> int:
    """Mutate one input and run every command on it; returns how many runs it took."""
    kind = rng.choice(sorted(by_kind))
    inp = rng.choice(by_kind[kind])
    data, how = mutate(rng, inp, big)
    case_dir = work / f"case-{number}"
    if case_dir.exists():
        shutil.rmtree(case_dir)
    ld = case_dir / "ld"
    shutil.copytree(inp.template.ld, ld)
    victim = ld / inp.rel
    victim.write_bytes(data)
    if rng.random() < 0.15:  # a second damaged file of the same log dir (an index and its log)
        other = rng.choice([i for k in sorted(by_kind) for i in by_kind[k]
                            if i.template is inp.template and i.rel != inp.rel] or [inp])
        if other is not inp:
            (ld / other.rel).write_bytes(mutate(rng, other, big)[0])
            how += f"; {other.rel}"
    part = ld / inp.template.part.name
    if rng.random() < 0.04:  # a partition dir name with a byte that is not UTF-8
        bad = os.fsdecode(rng.choice((b"\xff", b"\xc3", b"\xed\xa0\x80")) +
                          os.fsencode(part.name))
        part = part.rename(part.with_name(bad))
        victim = ld / inp.rel.replace(inp.template.part.name, bad, 1)
        how += "+dirname"
    input_bytes = sum(f.stat().st_size for f in ld.rglob("*") if f.is_file())
    info = {"seed": seed, "case": number, "file": f"{inp.template.name}/{inp.rel}",
            "kind": kind, "mutation": how, "big": big,
            "pure": os.environ.get("KAFKALOG_PURE") == "1"}
    argvs = commands(rng, inp.template, ld, part, victim, kind)
    for argv in argvs:
        r = run_one(argv, case_dir, input_bytes)
        report.add(r, case_dir, info)
    report.inputs += 1
    if not keep:
        shutil.rmtree(case_dir, ignore_errors=True)
    return len(argvs)


def fuzz(seed: str, cases: int, work: Path, *, only: int | None = None,
         keep: bool = False, progress: bool = False, big: bool = False) -> Report:
    """Run at least `cases` command runs (one input at a time) from `seed`."""
    _preload()
    shutil.rmtree(work / "templates", ignore_errors=True)
    templates = build_templates(work / "templates")
    by_kind = inputs(templates)
    report = Report(seed)
    number, done = 0, 0
    last = time.monotonic()
    while done < cases:
        if only is None or number == only:
            rng = random.Random(f"{seed}:{number}")
            done += run_input(rng, by_kind, work, number, report, seed, keep, big)
            if only is not None:
                break
        number += 1
        if progress and time.monotonic() - last > 30:
            last = time.monotonic()
            _say(json.dumps(report.summary()), sys.stderr)
    return report


def _preload() -> None:
    """Import what every run imports, once, so forked runs start warm."""
    import importlib

    from kafkalog_cli import cli

    for name, (module, _summary) in cli.COMMANDS.items():
        if name not in ("export",):
            importlib.import_module(f"kafkalog_cli.commands.{module}")
    for mod in ("kafkalog_cli.codec.compression", "zstandard", "lz4.block", "cramjam",
                "snappy", "orjson"):
        with contextlib.suppress(ImportError):
            importlib.import_module(mod)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", default=os.environ.get("KAFKALOG_FUZZ_SEED") or
                    os.urandom(6).hex())
    ap.add_argument("--cases", type=int, default=int(os.environ.get("KAFKALOG_FUZZ_CASES",
                                                                    "100000")))
    ap.add_argument("--jobs", type=int, default=int(os.environ.get("KAFKALOG_FUZZ_JOBS",
                                                                   "2")))
    ap.add_argument("--replay", type=int, help="run only input number N and keep its files")
    ap.add_argument("--big", action="store_true",
                    default=os.environ.get("KAFKALOG_FUZZ_BIG") == "1",
                    help="also 10 MiB zero-filled indexes and batches of millions of records")
    ap.add_argument("--work", type=Path, help="where case dirs go (default: a temp dir)")
    ap.add_argument("--json", action="store_true", help="print the report as one JSON object")
    ap.add_argument("--progress", action="store_true", help="a summary on stderr every 30 s")
    a = ap.parse_args()
    work = a.work or Path(tempfile.mkdtemp(prefix="kafkalog-fuzz-"))
    if a.work is None and a.replay is None:  # failures are replayed from their seed
        import atexit

        atexit.register(shutil.rmtree, work, True)
    if a.replay is not None or a.jobs <= 1:
        report = fuzz(a.seed, a.cases if a.replay is None else 1, work, only=a.replay,
                      keep=a.replay is not None, progress=a.progress, big=a.big)
        if a.json:
            _say(json.dumps(report.as_dict()))
        else:
            _print(report.as_dict())
        if a.replay is not None:
            _say(f"case files kept in {work}", sys.stderr)
        sys.exit(1 if report.failures else 0)  # (atexit handlers run on SystemExit)
    # several drivers, each with its own seed suffix, so jobs never repeat a case
    import subprocess

    _say(f"fuzzing {a.cases} cases with seed {a.seed} in {a.jobs} jobs, in {work}", sys.stderr)
    procs = [subprocess.Popen([sys.executable, "-m", "tests.faults.fuzzing", "--seed",
                               f"{a.seed}.{j}", "--cases", str(-(-a.cases // a.jobs)),
                               "--jobs", "1", "--json", "--progress", "--work",
                               str(work / f"job{j}"), *(["--big"] if a.big else [])],
                              stdout=subprocess.PIPE, text=True) for j in range(a.jobs)]
    bad = False
    for p in procs:
        out, _ = p.communicate()
        _print(json.loads(out))
        bad |= p.returncode != 0
    sys.exit(1 if bad else 0)


def _say(text: str, stream: object = None) -> None:
    out = stream or sys.stdout
    out.write(text + "\n")  # type: ignore[attr-defined]
    out.flush()  # type: ignore[attr-defined]


def _print(report: dict[str, object]) -> None:
    _say(json.dumps({k: v for k, v in report.items()
                     if k not in ("signatures", "unlocated_examples", "failures")}, indent=1))
    for sig, n in sorted(report["signatures"].items(), key=lambda kv: -kv[1]):  # type: ignore[attr-defined]
        _say(f"{n:6d}  {sig}")
    for f in report["failures"]:  # type: ignore[attr-defined]
        _say(json.dumps(f, indent=1))
        _say(f"replay: {'KAFKALOG_PURE=1 ' if f['pure'] else ''}python -m tests.faults.fuzzing "
             f"--seed {f['seed']} --replay {f['case']}{' --big' if f['big'] else ''}")


if __name__ == "__main__":
    main()
