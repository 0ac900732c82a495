"""Kafka's compression codecs, with a cap on decompressed bytes.

Codec ids (CompressionType): 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd.

gzip   RFC 1952 member(s), as java.util.zip writes them; concatenated members accepted, and
       bytes after a member that do not start a member ignored (as GZIPInputStream does).
snappy snappy-java (xerial) stream framing, which is not the official snappy framing:
         +--------------------------+-------------+-------------+----------------------+
         | 82 'SNAPPY' 00 (8 bytes) | version i32 | compat i32  | (len i32, block) ... |
         +--------------------------+-------------+-------------+----------------------+
       Input without that header is one raw snappy block (SnappyInputStream does the same).
       Under 4 bytes after the last chunk are no chunk length: snappy-java ends there.
lz4    Kafka's own LZ4 frame subset (KafkaLZ4BlockOutputStream), little-endian:
         magic 04 22 4D 18 | FLG | BD | [content size u64] | HC | blocks | 00000000 | [checksum]
       block = size u32 (bit 31 set: stored uncompressed) + data [+ xxh32 if FLG bit 4].
       HC = (xxh32(FLG..) >> 8) & 0xFF; magic-0 messages carry a wrong HC (hashed from the
       magic), which Kafka neither verifies nor fixes, so we accept it there.
zstd   One or more frames written by a streaming compressor: no content size in the frame
       header, so one-shot decompression cannot size its output (python-zstandard #150).
       The streaming reader returns a cut frame's data without a word; zstd-jni fails with
       "Truncated source", so the frames' block headers are walked to their last block.

A payload cut short (its CRC recomputed, or the cut made before the batch was written) is
"<codec> data is truncated", never left for the record decoder to trip over.

Decompression is bounded by `max_size` so that a hostile file cannot exhaust memory.
"""

from __future__ import annotations

import functools
import importlib
import struct
import threading
import zlib
from collections.abc import Callable
from typing import Any, Final, Protocol, cast

from kafkalog_cli import _speedups
from kafkalog_cli.errors import CodecUnavailable, CorruptBatch, DecompressionLimit

NONE: Final = 0
GZIP: Final = 1
SNAPPY: Final = 2
LZ4: Final = 3
ZSTD: Final = 4
NAMES: Final = ("none", "gzip", "snappy", "lz4", "zstd")
BY_NAME: Final = {name: i for i, name in enumerate(NAMES)}

DEFAULT_MAX_DECOMPRESSED: Final = 64 * 1024 * 1024

# compression.<codec>.level ranges (CompressionType.minLevel/maxLevel, KIP-390): lz4's from
# net.jpountz.lz4.LZ4Constants, zstd's from ZSTD_minCLevel/ZSTD_MAX_CLEVEL. gzip also takes
# -1, Deflater.DEFAULT_COMPRESSION. none and snappy have no level.
LEVELS: Final = {GZIP: (1, 9), LZ4: (1, 17), ZSTD: (-131072, 22)}
GZIP_DEFAULT_LEVEL: Final = -1


def level_error(codec: int, level: int) -> str | None:
    """Why Kafka refuses `level` for `codec`, or None when it takes it."""
    if codec not in LEVELS:
        return f"{name(codec)} takes no compression level (gzip, lz4 and zstd do)"
    lo, hi = LEVELS[codec]
    if lo <= level <= hi or (codec == GZIP and level == GZIP_DEFAULT_LEVEL):
        return None
    extra = f" or {GZIP_DEFAULT_LEVEL}" if codec == GZIP else ""
    return f"{level} is out of range [{lo}, {hi}]{extra} for {name(codec)}"


def name(codec: int) -> str:
    return NAMES[codec] if 0 <= codec < len(NAMES) else f"unknown({codec})"


_PURE: Final = _speedups.pure()


def _optional(module: str) -> Callable[[], Any]:
    """A loader of an optional accelerator: `module`, imported on the first call (a run that
    needs no such codec does not pay for it), or None when it is missing (not installed, not
    built) or KAFKALOG_PURE=1."""
    @functools.cache
    def load() -> Any:
        if _PURE:
            return None
        try:
            return importlib.import_module(module)
        except ImportError:
            return None
    return load


# kafkalog_cli/_speedups/fastinflate.pyx, the snappy, lz4 and zstd frame walks compiled (it
# brings cramjam). It returns None for anything it does not decode cleanly, and the pure functions
# below (its specification, tested equal) then raise with their messages.
_fast_module = _optional("kafkalog_cli._speedups.fastinflate")
# python-isal's zlib API, inflating 2-3x faster than zlib (10 ms to import)
_isal_zlib = _optional("isal.isal_zlib")


def decompress(codec: int, data: bytes | memoryview, *,
               max_size: int = DEFAULT_MAX_DECOMPRESSED, legacy_lz4: bool = False) -> bytes:
    """Inflate `data`; raise CorruptBatch on bad input, DecompressionLimit past `max_size`."""
    if codec == GZIP:
        return _gunzip(data, max_size)
    out: bytes | None
    if codec == SNAPPY:
        fast = _fast_module()
        out = None if fast is None else fast.unsnappy(data, max_size)
        return _unsnappy(data, max_size) if out is None else out
    if codec == LZ4:
        fast = _fast_module()
        out = None if fast is None else fast.unlz4(data, max_size, legacy_lz4)
        return _unlz4(data, max_size, legacy_lz4) if out is None else out
    if codec == ZSTD:
        return _unzstd(data, max_size)
    if codec == NONE:
        return bytes(data)
    raise CorruptBatch(f"unknown compression codec {codec}")


def compress(codec: int, data: bytes, *, level: int | None = None,
             legacy_lz4: bool = False) -> bytes:
    """Deflate `data` in a form Kafka's readers accept."""
    if codec == GZIP:
        return _gzip(data, level)
    if codec == SNAPPY:
        return _snappy_xerial(data)
    if codec == LZ4:
        return _lz4_frame(data, level, legacy_lz4)
    if codec == ZSTD:
        return _zstd(data, level)
    if codec == NONE:
        return data
    raise ValueError(f"unknown compression codec {codec}")


def _too_big(max_size: int) -> DecompressionLimit:
    return DecompressionLimit(f"decompressed data exceeds the cap of {max_size} bytes "
                              "(raise it with --max-decompressed-bytes if this is genuine)")


# -- gzip -------------------------------------------------------------------------------

def _gunzip(data: bytes | memoryview, max_size: int) -> bytes:
    isal = _isal_zlib()
    if isal is not None:
        try:
            return _inflate_members(isal, data, max_size)
        except (isal.error, CorruptBatch, DecompressionLimit):
            pass  # rare: zlib below says what is wrong, in the words the pure path uses
    try:
        return _inflate_members(zlib, data, max_size)
    except zlib.error as e:
        raise CorruptBatch(f"gzip data is corrupt: {e}") from None


def _inflate_members(inflater: Any, data: bytes | memoryview, max_size: int) -> bytes:
    """Concatenated gzip members through `inflater` (zlib or isal_zlib, the same API)."""
    d = inflater.decompressobj(16 + zlib.MAX_WBITS)
    piece: bytes = d.decompress(data, max_size + 1)
    if d.eof and not d.unused_data and len(piece) <= max_size:
        return piece  # one member, as Kafka writes: no copy
    out = bytearray()
    while True:
        out += piece
        if len(out) > max_size:
            raise _too_big(max_size)
        if not d.eof:
            if d.unconsumed_tail:
                raise _too_big(max_size)
            raise CorruptBatch("gzip data is truncated")
        rest = d.unused_data
        if not rest or not _gzip_header(rest):
            return bytes(out)  # GZIPInputStream.readTrailer ignores what is not a member
        d = inflater.decompressobj(16 + zlib.MAX_WBITS)
        piece = d.decompress(rest, max_size + 1 - len(out))


_GZIP_MAGIC_CM: Final = b"\x1f\x8b\x08"
_GZIP_FIXED_HEADER: Final = 10  # magic 2, CM 1, FLG 1, MTIME 4, XFL 1, OS 1
_GZIP_FHCRC, _GZIP_FEXTRA, _GZIP_FNAME, _GZIP_FCOMMENT = 2, 4, 8, 16


def _gzip_header(data: bytes) -> bool:
    """Whether `data` starts with a whole gzip member header, as GZIPInputStream.readHeader
    (RFC 1952 2.3) reads one: after a member, Kafka's reader takes what follows as the next
    member only then, and ignores it otherwise."""
    if len(data) < _GZIP_FIXED_HEADER or not data.startswith(_GZIP_MAGIC_CM):
        return False
    flg = data[3]
    pos = _GZIP_FIXED_HEADER
    if flg & _GZIP_FEXTRA:
        if pos + 2 > len(data):
            return False
        pos += 2 + int.from_bytes(data[pos:pos + 2], "little")
    for field in (_GZIP_FNAME, _GZIP_FCOMMENT):
        if flg & field:
            zero = data.find(b"\0", pos)
            if zero < 0:
                return False
            pos = zero + 1
    if flg & _GZIP_FHCRC:
        if pos + 2 > len(data) or int.from_bytes(data[pos:pos + 2], "little") != \
                zlib.crc32(data[:pos]) & 0xFFFF:
            return False
        pos += 2
    return pos <= len(data)


def _gzip(data: bytes, level: int | None) -> bytes:
    # Like java.util.zip.GZIPOutputStream: FLG 0, MTIME 0. Python writes the same member layout.
    lvl = 6 if level is None else level
    c = zlib.compressobj(lvl, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return c.compress(data) + c.flush()


# -- snappy -----------------------------------------------------------------------------

_XERIAL_MAGIC: Final = b"\x82SNAPPY\x00"
_XERIAL_HEADER: Final = struct.Struct(">8sii")
_XERIAL_BLOCK_LEN: Final = struct.Struct(">i")
_XERIAL_BLOCK_SIZE: Final = 32 * 1024  # snappy-java's default block size


class _Snappy(Protocol):
    """The part of python-snappy (>= 0.7, no type stubs) used here."""

    UncompressError: type[Exception]

    def compress(self, data: bytes) -> bytes: ...

    def uncompress(self, data: bytes) -> bytes: ...


def _snappy_module() -> _Snappy:
    try:
        import snappy  # type: ignore[import-untyped]  # python-snappy ships no type stubs
    except ImportError:  # pragma: no cover - dependency is declared
        raise CodecUnavailable(
            "snappy data needs python-snappy: pip install python-snappy") from None
    return cast(_Snappy, snappy)


def _raw_snappy_length(block: bytes | memoryview) -> int:
    """The uncompressed length stored as the varint prefix of a raw snappy block."""
    result = shift = 0
    for i in range(min(5, len(block))):
        b = block[i]
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result
        shift += 7
    raise CorruptBatch("snappy data is corrupt: a block has a bad length prefix")


def _unsnappy(data: bytes | memoryview, max_size: int) -> bytes:
    snappy = _snappy_module()
    mv = memoryview(data)
    blocks: list[memoryview] = []
    if len(mv) >= _XERIAL_HEADER.size and bytes(mv[:8]) == _XERIAL_MAGIC:
        _, version, _compat = _XERIAL_HEADER.unpack_from(mv, 0)
        if version < 1:
            raise CorruptBatch(f"snappy-java stream has unsupported version {version}")
        pos = _XERIAL_HEADER.size
        end = len(mv)
        while pos < end:
            # newer snappy-java tolerates a repeated stream header between chunks
            if end - pos >= _XERIAL_HEADER.size and bytes(mv[pos:pos + 8]) == _XERIAL_MAGIC:
                pos += _XERIAL_HEADER.size
                continue
            if end - pos < 4:
                break  # SnappyInputStream.hasNextChunk: under 4 bytes left is the end
            (n,) = _XERIAL_BLOCK_LEN.unpack_from(mv, pos)
            pos += 4
            if n < 0:
                raise CorruptBatch(f"snappy data is corrupt: chunk length {n}")
            if pos + n > end:
                raise CorruptBatch(f"snappy data is truncated: a chunk of {n} bytes runs "
                                   f"{pos + n - end} bytes past the end")
            blocks.append(mv[pos:pos + n])
            pos += n
    else:
        blocks.append(mv)
    total = 0
    for b in blocks:
        total += _raw_snappy_length(b)
        if total > max_size:
            raise _too_big(max_size)
    out = bytearray()
    try:
        for b in blocks:
            out += snappy.uncompress(bytes(b))
    except snappy.UncompressError as e:  # python-snappy wraps cramjam's DecompressionError
        raise CorruptBatch(f"snappy data is corrupt: {e}") from None
    return bytes(out)


def _snappy_xerial(data: bytes) -> bytes:
    snappy = _snappy_module()
    out = bytearray(_XERIAL_HEADER.pack(_XERIAL_MAGIC, 1, 1))
    for i in range(0, len(data), _XERIAL_BLOCK_SIZE):
        block = snappy.compress(data[i:i + _XERIAL_BLOCK_SIZE])
        out += _XERIAL_BLOCK_LEN.pack(len(block)) + block
    return bytes(out)


# -- lz4 --------------------------------------------------------------------------------

_LZ4_MAGIC: Final = b"\x04\x22\x4d\x18"
_LZ4_U32: Final = struct.Struct("<I")
_LZ4_FLG_VERSION_MASK: Final = 0xC0
_LZ4_FLG_INDEPENDENT: Final = 0x20
_LZ4_FLG_BLOCK_CHECKSUM: Final = 0x10
_LZ4_FLG_CONTENT_SIZE: Final = 0x08
_LZ4_FLG_CONTENT_CHECKSUM: Final = 0x04
_LZ4_UNCOMPRESSED_BIT: Final = 0x80000000
_LZ4_KAFKA_FLG: Final = 0x60  # version 01, independent blocks
_LZ4_KAFKA_BD: Final = 0x40  # 64 KiB blocks
_LZ4_KAFKA_BLOCK: Final = 64 * 1024


def _xxh32(data: bytes, seed: int = 0) -> int:
    """xxHash32, only ever used on the 2-10 byte LZ4 frame descriptor."""
    p1, p2, p3, p4, p5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
    m = 0xFFFFFFFF

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & m

    n = len(data)
    i = 0
    if n >= 16:
        v = [(seed + p1 + p2) & m, (seed + p2) & m, seed & m, (seed - p1) & m]
        while i + 16 <= n:
            for j in range(4):
                (lane,) = _LZ4_U32.unpack_from(data, i + 4 * j)
                v[j] = (rotl((v[j] + lane * p2) & m, 13) * p1) & m
            i += 16
        h = (rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18)) & m
    else:
        h = (seed + p5) & m
    h = (h + n) & m
    while i + 4 <= n:
        (lane,) = _LZ4_U32.unpack_from(data, i)
        h = (rotl((h + lane * p3) & m, 17) * p4) & m
        i += 4
    while i < n:
        h = (rotl((h + data[i] * p5) & m, 11) * p1) & m
        i += 1
    h ^= h >> 15
    h = (h * p2) & m
    h ^= h >> 13
    h = (h * p3) & m
    h ^= h >> 16
    return h


def _unlz4(data: bytes | memoryview, max_size: int, legacy: bool) -> bytes:
    import lz4.block  # type: ignore[import-untyped]  # lz4 ships no type stubs

    mv = memoryview(data)
    end = len(mv)
    if end < 7:
        raise CorruptBatch("lz4 data is truncated in its frame header")
    if bytes(mv[:4]) != _LZ4_MAGIC:
        raise CorruptBatch("lz4 data does not start with the LZ4 frame magic")
    flg, bd = mv[4], mv[5]
    if (flg & _LZ4_FLG_VERSION_MASK) >> 6 != 1 or flg & 0x03 or bd & 0x8F:
        raise CorruptBatch("lz4 frame descriptor has an unsupported version or reserved bits set")
    if not flg & _LZ4_FLG_INDEPENDENT:
        raise CorruptBatch("lz4 frame uses dependent blocks, which Kafka does not write")
    code = (bd >> 4) & 0x07
    if code < 4:
        raise CorruptBatch(f"lz4 frame has invalid block size code {code}")
    max_block = 1 << (2 * code + 8)
    pos = 6
    if flg & _LZ4_FLG_CONTENT_SIZE:
        pos += 8
    if pos >= end:
        raise CorruptBatch("lz4 data is truncated in its frame header")
    if not legacy:
        hc = (_xxh32(bytes(mv[4:pos])) >> 8) & 0xFF
        if mv[pos] != hc:
            raise CorruptBatch("lz4 frame descriptor checksum does not match")
    pos += 1
    out = bytearray()
    block_checksum = 4 if flg & _LZ4_FLG_BLOCK_CHECKSUM else 0
    while True:
        if pos + 4 > end:
            raise CorruptBatch("lz4 data is truncated: no end mark")
        (word,) = _LZ4_U32.unpack_from(mv, pos)
        pos += 4
        if word == 0:
            # Lz4BlockInputStream reads the content checksum (ignored here, as by older
            # Kafka) when FLG says there is one; bytes after it are never read
            if flg & _LZ4_FLG_CONTENT_CHECKSUM and end - pos < 4:
                raise CorruptBatch("lz4 data is truncated: the content checksum is missing")
            break
        n = word & ~_LZ4_UNCOMPRESSED_BIT
        if n > max_block:
            raise CorruptBatch(f"lz4 data is corrupt: a block of {n} bytes is larger than "
                               f"the frame allows ({max_block})")
        if pos + n > end:
            raise CorruptBatch(f"lz4 data is truncated: a block of {n} bytes runs "
                               f"{pos + n - end} bytes past the end")
        block = mv[pos:pos + n]
        pos += n + block_checksum
        room = max_size - len(out)
        if word & _LZ4_UNCOMPRESSED_BIT:
            if n > room:
                raise _too_big(max_size)
            out += block
        else:
            try:
                out += lz4.block.decompress(block, uncompressed_size=min(max_block, max(room, 0)))
            except (lz4.block.LZ4BlockError, ValueError) as e:
                if room < max_block:
                    raise _too_big(max_size) from None
                raise CorruptBatch(f"lz4 block is corrupt: {e}") from None
    return bytes(out)


def _lz4_frame(data: bytes, level: int | None, legacy: bool) -> bytes:
    import lz4.block

    descriptor = bytes((_LZ4_KAFKA_FLG, _LZ4_KAFKA_BD))
    # magic-0 messages get Kafka's historical wrong checksum, hashed from the magic on
    hashed = _LZ4_MAGIC + descriptor if legacy else descriptor
    out = bytearray(_LZ4_MAGIC + descriptor + bytes(((_xxh32(hashed) >> 8) & 0xFF,)))
    mode = "high_compression" if level and level > 9 else "default"
    for i in range(0, len(data), _LZ4_KAFKA_BLOCK):
        raw = data[i:i + _LZ4_KAFKA_BLOCK]
        packed = lz4.block.compress(raw, mode=mode, store_size=False) if mode == "default" \
            else lz4.block.compress(raw, mode=mode, compression=level, store_size=False)
        if len(packed) >= len(raw):
            out += _LZ4_U32.pack(len(raw) | _LZ4_UNCOMPRESSED_BIT) + raw
        else:
            out += _LZ4_U32.pack(len(packed)) + packed
    out += b"\x00\x00\x00\x00"
    return bytes(out)


# -- zstd -------------------------------------------------------------------------------

_ZSTD_READ: Final = 32 * 1024


class _ZstdContexts(threading.local):
    """One decompressor a thread, reused from batch to batch: making one (its context
    allocated and zeroed) cost about 2.5 % of a text dump of zstd batches. Each reader it
    makes starts a fresh session, so a corrupt batch leaves nothing for the next."""

    dctx: Any = None
    # set with dctx: fastinflate's zstd_cut_frame, else (pure, or a .so built before it had
    # one) _zstd_cut_frame
    cut_frame: Any = None


_zstd_contexts = _ZstdContexts()


def _unzstd(data: bytes | memoryview, max_size: int) -> bytes:
    import io

    import zstandard

    dctx = _zstd_contexts.dctx
    if dctx is None:
        dctx = _zstd_contexts.dctx = zstandard.ZstdDecompressor()
        _zstd_contexts.cut_frame = getattr(_fast_module(), "zstd_cut_frame", _zstd_cut_frame)
    try:
        reader = dctx.stream_reader(io.BytesIO(data), read_across_frames=True)
        out = bytearray()
        # read() allocates what it is asked for: asking for max_size + 1 at once cost ~70 us a
        # batch at the 256 MiB default, 4x the decompression, and pieces of 64 KiB or more
        # still cost 2.5x (the heap grows and trims for each); 32 KiB pieces do not. read() may
        # also stop at a frame boundary; keep going until the input is exhausted.
        while True:
            more = reader.read(min(_ZSTD_READ, max_size + 1 - len(out)))
            if not more:
                break
            out += more
            if len(out) > max_size:
                raise _too_big(max_size)
    except zstandard.ZstdError as e:
        raise CorruptBatch(f"zstd data is corrupt: {e}") from None
    # The reader returns what a cut frame held without a word (zstd-jni, Kafka's reader,
    # fails with "Truncated source"): check that every frame ends.
    cut = _zstd_contexts.cut_frame(data)
    if cut is not None:
        raise CorruptBatch(f"zstd data is truncated: its frame at byte {cut} has no end")
    return bytes(out)


# RFC 8878 section 3.1: a frame is magic u32 LE | frame header | blocks | [checksum u32];
# a skippable frame is magic 0x184D2A5? | size u32 LE | size bytes.
_ZSTD_U32: Final = struct.Struct("<I")
_ZSTD_MAGIC: Final = 0xFD2FB528
_ZSTD_SKIPPABLE: Final = 0x184D2A50
_ZSTD_SKIPPABLE_MASK: Final = 0xFFFFFFF0
# frame header descriptor byte: content-size flag (bits 6-7), single segment (5),
# checksum (2), dictionary id flag (0-1); index = the flag, value = the field's size
_ZSTD_FCS_SIZE: Final = (0, 2, 4, 8)
_ZSTD_DID_SIZE: Final = (0, 1, 2, 4)
_ZSTD_BLOCK_HEADER: Final = 3  # u24 LE: last block (bit 0), type (1-2), size (3-23)
_ZSTD_RLE_BLOCK: Final = 1  # type 1 stores its one byte, whatever the size says


def _zstd_cut_frame(data: bytes | memoryview) -> int | None:
    """The position of the first frame that `data` cuts off before its end (a header, a
    block or its checksum short), else None. Only the block headers are read: a few a batch,
    as a block holds up to 128 KiB. Stops, saying None, at anything that is not a frame:
    the decoder has already judged that."""
    end = len(data)
    pos = 0
    while pos < end:
        start = pos
        if end - pos < 8:  # the smallest frame: magic, descriptor, an empty last block
            return start
        magic = _ZSTD_U32.unpack_from(data, pos)[0]
        if magic != _ZSTD_MAGIC:
            if magic & _ZSTD_SKIPPABLE_MASK != _ZSTD_SKIPPABLE:
                return None
            pos += 8 + _ZSTD_U32.unpack_from(data, pos + 4)[0]
            if pos > end:
                return start
            continue
        fhd = data[pos + 4]
        single = fhd >> 5 & 1
        fcs = _ZSTD_FCS_SIZE[fhd >> 6] or single  # flag 0: 1 byte in single-segment frames
        pos += 6 - single + _ZSTD_DID_SIZE[fhd & 3] + fcs
        head = 0
        while not head & 1:
            if pos + _ZSTD_BLOCK_HEADER > end:
                return start
            head = data[pos] | data[pos + 1] << 8 | data[pos + 2] << 16
            pos += _ZSTD_BLOCK_HEADER + (1 if head & 6 == _ZSTD_RLE_BLOCK << 1 else head >> 3)
        if fhd & 4:
            pos += 4
        if pos > end:
            return start
    return None


def _zstd(data: bytes, level: int | None) -> bytes:
    import zstandard

    # streaming writers (zstd-jni, as Kafka uses) leave the content size out of the header
    c = zstandard.ZstdCompressor(level=3 if level is None else level, write_content_size=False)
    return c.compress(data)
