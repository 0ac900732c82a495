"""Kafka 0.7 messages (0.7.x `kafka.message.Message`, `FileMessageSet`, `ByteBufferMessageSet`).

A 0.7 `.kafka` segment is nothing but a sequence of entries: no header, no offsets, no index.

    entry            = size int32 (N) | message (N bytes)
    message, magic 0 = magic int8 = 0 | crc uint32 | payload (N - 5 bytes)
    message, magic 1 = magic int8 = 1 | attributes int8 | crc uint32 | payload (N - 6 bytes)

* crc is CRC-32 (IEEE, java.util.zip.CRC32) of the **payload only**; magic and attributes
  are not covered (0.7's Message: "we're not crc-ing the attributes header").
* attributes bits 0-1 are the codec (CompressionCodeMask 0x03: 0 none, 1 gzip, 2 snappy);
  a magic-0 message is never compressed; the other bits mean nothing to 0.7.
* A compressed message's payload is a nested sequence of entries as above, compressed
  whole: gzip as java.util.zip.GZIPOutputStream writes it, snappy as snappy-java's
  SnappyOutputStream (xerial framing) does. 0.7 producers wrap one level; the reader
  (ByteBufferMessageSet.deepIterator) would recurse, so nesting is accepted up to
  MAX_NESTING levels.
* N < 5 (Message.MinHeaderSize, the magic-0 header) ends a file for every 0.7 reader.
* A message's offset is its entry's byte position in the partition's stream: the segment's
  start (its file name) + the position in the file; the next offset is offset + 4 + N.
"""

from __future__ import annotations

import struct
from collections import deque
from collections.abc import Iterator, Sequence
from typing import Final

from kafkalog_cli.codec import compression
from kafkalog_cli.codec.checksum import crc32
from kafkalog_cli.errors import CorruptBatch

SIZE: Final = struct.Struct(">i")  # entry size N: the message bytes that follow
SIZE_LEN: Final = SIZE.size  # 4
HEAD_V0: Final = struct.Struct(">BI")  # magic, crc
HEAD_V1: Final = struct.Struct(">BBI")  # magic, attributes, crc
HEAD_SIZE: Final = {0: HEAD_V0.size, 1: HEAD_V1.size}  # 5, 6 = payload position
MIN_MESSAGE_SIZE: Final = HEAD_V0.size  # Message.MinHeaderSize
CODEC_MASK: Final = 0x03
CODECS: Final = (compression.NONE, compression.GZIP, compression.SNAPPY)
MAX_NESTING: Final = 4
CURRENT_MAGIC: Final = 1  # what 0.7 producers write (magic 0 came from 0.6)


def codec_name(codec: int) -> str:
    """0.7's codec names; 3 (lz4 since 0.8.2) is unknown to 0.7."""
    return compression.NAMES[codec] if codec in CODECS else f"unknown({codec})"


class Message07:
    """One 0.7 message (the N bytes after an entry's size)."""

    __slots__ = ("attributes", "crc", "magic", "payload", "size")

    def __init__(self, magic: int, attributes: int, crc: int, payload: bytes | memoryview,
                 size: int) -> None:
        self.magic = magic
        self.attributes = attributes
        self.crc = crc  # as stored
        self.payload = payload
        self.size = size  # N

    @property
    def codec(self) -> int:
        return self.attributes & CODEC_MASK if self.magic == 1 else compression.NONE

    @property
    def entry_size(self) -> int:
        return SIZE_LEN + self.size

    def compute_crc(self) -> int:
        return crc32(self.payload)

    def is_valid(self) -> bool:
        return self.crc == crc32(self.payload)

    def detach(self) -> Message07:
        if not isinstance(self.payload, bytes):
            self.payload = bytes(self.payload)
        return self

    def __repr__(self) -> str:
        return (f"Message07(magic={self.magic}, attributes={self.attributes}, crc={self.crc}, "
                f"size={self.size})")


def decode_message(data: bytes | memoryview) -> Message07:
    """Decode the N message bytes of one entry. The CRC is not checked here (`is_valid`)."""
    n = len(data)
    if n < MIN_MESSAGE_SIZE:
        raise CorruptBatch(f"message size {n} is below the minimum {MIN_MESSAGE_SIZE}")
    magic = data[0]
    if magic == 0:
        _, crc = HEAD_V0.unpack_from(data, 0)
        attributes = 0
    elif magic == 1:
        if n < HEAD_V1.size:
            raise CorruptBatch(f"magic-1 message size {n} is below its header size {HEAD_V1.size}")
        _, attributes, crc = HEAD_V1.unpack_from(data, 0)
    else:
        raise CorruptBatch(f"unknown magic byte {magic} (0.7 knows 0 and 1)")
    return Message07(magic, attributes, crc, memoryview(data)[HEAD_SIZE[magic]:], n)


def split_entries(data: bytes | memoryview) -> Iterator[tuple[int, Message07]]:
    """(position, message) of every entry of an in-memory set (a decompressed payload).

    Unlike a file, a set must end exactly on an entry boundary: anything else is corrupt."""
    mv = memoryview(data)
    end = len(mv)
    pos = 0
    while pos < end:
        if end - pos < SIZE_LEN:
            raise CorruptBatch(f"{end - pos} bytes after the last whole entry at {pos}")
        (n,) = SIZE.unpack_from(mv, pos)
        if n < MIN_MESSAGE_SIZE:
            raise CorruptBatch(f"entry at {pos} has size {n}, below the minimum "
                               f"{MIN_MESSAGE_SIZE}")
        if pos + SIZE_LEN + n > end:
            raise CorruptBatch(f"entry at {pos} declares {n} bytes; only "
                               f"{end - pos - SIZE_LEN} remain")
        try:
            msg = decode_message(mv[pos + SIZE_LEN:pos + SIZE_LEN + n])
        except CorruptBatch as e:
            raise CorruptBatch(f"entry at {pos}: {e.reason}") from None
        yield pos, msg
        pos += SIZE_LEN + n


def inner_messages(msg: Message07, max_size: int = compression.DEFAULT_MAX_DECOMPRESSED
                   ) -> Iterator[Message07]:
    """The messages a consumer gets from `msg`: itself, or what its compressed payload holds,
    one at a time. The set is checked whole first, so a bad one raises here, before any
    message comes out.

    Raises CorruptBatch when the payload does not decompress, an inner entry does not frame,
    an inner CRC does not match (0.7's InvalidMessageException), or the codec is unknown.
    `max_size` caps the decompressed bytes held at once, the levels of a nested set together."""
    if msg.codec == compression.NONE:
        return iter((msg,))
    data = _inflate(msg, max_size, 0)
    deque(_walk(data, max_size - len(data), 1, check=True), maxlen=0)
    return _walk(data, max_size - len(data), 1, check=False)


def _inflate(msg: Message07, max_size: int, depth: int) -> bytes:
    codec = msg.codec
    if codec not in CODECS:
        raise CorruptBatch(f"unknown compression codec {codec} (0.7 knows none, gzip, snappy)")
    if depth >= MAX_NESTING:
        raise CorruptBatch(f"compressed messages nested more than {MAX_NESTING} levels deep")
    return compression.decompress(codec, msg.payload, max_size=max_size)


def _walk(data: bytes, max_size: int, depth: int, check: bool) -> Iterator[Message07]:
    """The plain messages of a decompressed set, nested sets inflated in turn (`check`: with
    their CRCs checked, the first pass of inner_messages)."""
    for pos, inner in split_entries(data):
        if check and not inner.is_valid():
            raise CorruptBatch(f"inner message at {pos} of the decompressed set fails its CRC "
                               f"(stored {inner.crc}, computed {inner.compute_crc()})")
        if inner.codec == compression.NONE:
            yield inner
        else:
            nested = _inflate(inner, max_size, depth)
            yield from _walk(nested, max_size - len(nested), depth + 1, check)


def encode_message(payload: bytes, *, codec: int = compression.NONE,
                   magic: int = CURRENT_MAGIC, attributes: int | None = None) -> bytes:
    """One entry (size + message) around `payload`, which is already compressed if `codec`."""
    crc = crc32(payload)
    if magic == 0:
        if codec != compression.NONE:
            raise ValueError("a magic-0 message cannot be compressed")
        head = HEAD_V0.pack(0, crc)
    elif magic == 1:
        attrs = codec & CODEC_MASK if attributes is None else attributes
        head = HEAD_V1.pack(1, attrs & 0xFF, crc)
    else:
        raise ValueError(f"0.7 has no magic {magic}")
    return SIZE.pack(len(head) + len(payload)) + head + payload


def encode_message_set(payloads: Sequence[bytes], *, codec: int = compression.NONE,
                       magic: int = CURRENT_MAGIC) -> bytes:
    """What a 0.7 producer sends: plain entries, or one compressed wrapper holding them."""
    if codec == compression.NONE:
        return b"".join(encode_message(p, magic=magic) for p in payloads)
    if codec not in CODECS:
        raise ValueError(f"0.7 has no compression codec {codec}")
    inner = b"".join(encode_message(p, magic=magic) for p in payloads)
    return encode_message(compression.compress(codec, inner), codec=codec, magic=1)
