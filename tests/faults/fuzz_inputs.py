"""Inputs for the fuzz harness (fuzzing.py): small template log dirs and the mutations of
each kind of file in them.

Templates: one partition each, from fixtures/sample (v2 with every codec and transactions,
LogAppendTime, magic 0 and 1), the shared broker-written corpus (Kafka 0.9 magic-0 wrappers in
gzip, snappy and lz4, a compacted log, consumer offsets, a KRaft metadata log and snapshots)
when it is there, and a generated Kafka 0.7 partition. Mutations work on bytes, on header
fields at their real positions, inside compressed batches (decompress, edit, recompress,
rebuild the entry), on index entries, and on the lines and numbers of text files; a log's
checksums are often fixed afterwards (LevelDB log_test's FixChecksum) so that the damage gets
past the CRC to the deeper checks.
"""

from __future__ import annotations

import contextlib
import random
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "fixtures" / "sample"
CORPUS = ROOT.parent / "shared" / "corpus"  # as tests/conftest.py finds it

MIB = 1 << 20
CAP = 8 * MIB  # --max-decompressed-bytes given to the commands that take it
ROOT_FILES = ("recovery-point-offset-checkpoint", "replication-offset-checkpoint",
              "log-start-offset-checkpoint", "cleaner-offset-checkpoint", "meta.properties")


# -- templates: small log dirs, one partition each ----------------------------------------

@dataclass
class Template:
    name: str
    ld: Path  # the log dir
    part: Path  # the partition dir in it
    v07: bool = False
    timestamps: tuple[int, int] = (0, 0)  # range of record timestamps, for find-by-time -t


SEGMENT_FILES = (".log", ".index", ".timeindex", ".txnindex")


def _copy_partition(src: Path, dst: Path, max_segments: int = 2,
                    keep: Callable[[str], bool] = lambda n: True) -> None:
    """The first `max_segments` segments with their indexes, and every other file."""
    dst.mkdir(parents=True)
    bases = sorted(f.name[:20] for f in src.iterdir() if f.name.endswith(".log"))
    for f in sorted(src.iterdir()):
        of_segment = f.name.endswith(SEGMENT_FILES) and f.name[:20].isdigit()
        if f.is_file() and keep(f.name) and (not of_segment or
                                             f.name[:20] in bases[:max_segments]):
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
    if CORPUS.is_dir():
        _corpus_templates(add)

    from kafkalog_cli.storage.drills.generate07 import Gen07Spec, generate

    ld07 = work / "v07" / "ld"
    generate(ld07, Gen07Spec(records=60, batch_records=4, codecs=["none", "gzip", "snappy"],
                             segment_bytes=1500, seed=3))
    out.append(Template("v07", ld07, ld07 / "demo-0", v07=True))
    for t in out:
        t.timestamps = _timestamps(t)
    return out


def _corpus_templates(add: Callable[..., None]) -> None:
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


def _timestamps(t: Template) -> tuple[int, int]:
    if t.v07:
        return (0, 0)
    from kafkalog_cli.storage.disk.logdir import open_target

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
