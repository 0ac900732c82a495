"""Legacy message sets, magic 0 and 1 (LegacyRecord / AbstractLegacyRecordBatch).

A shallow entry is one message; a compressed one is a wrapper whose value holds an inner
message set. Inner offsets are absolute under a magic-0 wrapper and relative (0, 1, ...)
under a magic-1 wrapper, whose own offset is that of the last inner message. Layout: see
layout.py.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import NamedTuple

from kafkalog_cli.codec import compression as codecs
from kafkalog_cli.codec.checksum import crc32
from kafkalog_cli.codec.layout import (
    LEGACY_ATTR_CODEC_MASK,
    LEGACY_ATTR_TIMESTAMP_TYPE,
    LEGACY_CRC,
    LEGACY_LEN,
    LEGACY_RECORD_OVERHEAD,
    LEGACY_V0_HEAD,
    LEGACY_V0_HEAD_SIZE,
    LEGACY_V1_TS,
    LOG_OVERHEAD,
    LOG_OVERHEAD_SIZE,
    MAGIC_POS,
    MIN_ENTRY_SIZE,
    NO_TIMESTAMP,
)
from kafkalog_cli.codec.model import Record
from kafkalog_cli.errors import CorruptBatch


class LegacyBatch:
    """One shallow legacy entry (a plain message or a compressed wrapper)."""

    __slots__ = ("_data", "_inner", "attributes", "crc", "key", "last_offset", "length", "magic",
                 "timestamp", "value")
    # _inner: a compressed wrapper's checked inner set, once decoded (see _inner_set)
    # v2-only fields, so that every batch answers the same questions
    producer_id = -1
    producer_epoch = -1
    base_sequence = -1
    last_sequence = -1
    partition_leader_epoch = -1
    is_transactional = False
    is_control = False
    delete_horizon_ms = None
    # filled in __init__ (declared here: unpack_from is untyped); key and value are views
    # into `data` until detach() copies them
    last_offset: int
    length: int
    crc: int
    magic: int
    attributes: int
    timestamp: int
    key: bytes | memoryview | None
    value: bytes | memoryview | None

    def __init__(self, data: bytes | memoryview) -> None:
        self.last_offset, self.length, self.crc, self.magic, self.attributes = \
            LEGACY_V0_HEAD.unpack_from(data, 0)
        # errors are positioned relative to the entry's first byte
        if self.length < MIN_ENTRY_SIZE:
            raise CorruptBatch(f"message size {self.length} is below the minimum {MIN_ENTRY_SIZE}",
                               pos=LOG_OVERHEAD_SIZE - LEGACY_LEN.size)
        end = LOG_OVERHEAD_SIZE + self.length
        if len(data) < end:
            raise CorruptBatch(f"message of {self.length} bytes runs past the end of the data",
                               pos=LOG_OVERHEAD_SIZE - LEGACY_LEN.size)
        pos = LEGACY_V0_HEAD_SIZE
        if self.magic == 1:
            if end < pos + LEGACY_V1_TS.size:
                raise CorruptBatch("magic-1 message too short for its timestamp", pos=pos)
            (self.timestamp,) = LEGACY_V1_TS.unpack_from(data, pos)
            pos += LEGACY_V1_TS.size
        else:
            self.timestamp = NO_TIMESTAMP
        self.key, pos = _read_bytes(data, pos, end)
        self.value, pos = _read_bytes(data, pos, end)
        if pos != end:
            raise CorruptBatch(f"{end - pos} bytes remain after the message value", pos=pos)
        self._data = data
        self._inner: _InnerSet | None = None

    @property
    def data(self) -> bytes | memoryview:
        return self._data

    def detach(self) -> LegacyBatch:
        if not isinstance(self._data, bytes):
            self._data = bytes(self._data)
            self.key = None if self.key is None else bytes(self.key)
            self.value = None if self.value is None else bytes(self.value)
        return self

    @property
    def size(self) -> int:
        return self.length + LOG_OVERHEAD_SIZE

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def compression(self) -> int:
        return self.attributes & LEGACY_ATTR_CODEC_MASK

    @property
    def timestamp_type(self) -> int:
        if self.magic == 0:
            return -1
        return 1 if self.attributes & LEGACY_ATTR_TIMESTAMP_TYPE else 0

    @property
    def max_timestamp(self) -> int:
        return self.timestamp

    @property
    def base_timestamp(self) -> int:
        return self.timestamp

    def compute_crc(self) -> int:
        return crc32(memoryview(self._data)[MAGIC_POS:self.size])

    def is_valid(self) -> bool:
        return self.length >= MIN_ENTRY_SIZE and self.compute_crc() == self.crc

    def records(self, max_decompressed: int = codecs.DEFAULT_MAX_DECOMPRESSED
                ) -> Iterator[Record]:
        """The message itself, or a wrapper's inner messages decoded as they are read (the
        inner set is checked whole first: a malformed one raises CorruptBatch here)."""
        if self.compression == codecs.NONE:
            key = None if self.key is None else bytes(self.key)
            value = None if self.value is None else bytes(self.value)
            return iter((Record(self.last_offset, self.timestamp, key, value, [], -1,
                                self.attributes, self.crc),))
        inner = self._inner_set(max_decompressed)
        return self._inner_records(inner)

    @property
    def base_offset(self) -> int:
        if self.compression == codecs.NONE:
            return self.last_offset
        return self._inner_set().first_offset

    @property
    def count(self) -> int:
        if self.compression == codecs.NONE:
            return 1
        return self._inner_set().messages

    def _inner_set(self, max_decompressed: int = codecs.DEFAULT_MAX_DECOMPRESSED) -> _InnerSet:
        """A compressed wrapper's inner set, inflated and checked on first use (the cap of
        that first use applies)."""
        if self._inner is None:
            self._inner = self._decode(max_decompressed)
        return self._inner

    def _decode(self, max_decompressed: int) -> _InnerSet:
        if self.value is None:
            raise CorruptBatch("compressed wrapper message has a null value")
        if self.compression == codecs.ZSTD:
            raise CorruptBatch("zstd is not allowed below magic 2")
        data = codecs.decompress(self.compression, self.value, max_size=max_decompressed,
                                 legacy_lz4=self.magic == 0)
        what = self._inner_what()
        # framing first, then each message, then what the set holds: the order in which the
        # first problem is reported
        for _ in _iter_entries(data, what):
            pass
        count = 0
        first = last = 0
        compressed_at: int | None = None
        for pos, m in _iter_messages(data, what):
            if not count:
                first = m.last_offset
            last = m.last_offset
            count += 1
            if compressed_at is None and m.compression != codecs.NONE:
                compressed_at = pos + LEGACY_V0_HEAD_SIZE - 1  # its attributes
        if not count:
            raise CorruptBatch("compressed wrapper message holds no inner messages")
        if compressed_at is not None:  # Kafka does not nest wrappers
            raise CorruptBatch("compressed wrapper holds a compressed inner message",
                               pos=compressed_at).nested(what)
        if self.magic == 0:
            delta = 0  # v0: inner offsets are absolute
        elif self.last_offset == 0:
            delta = 0  # librdkafka writes wrappers with offset 0
        elif self.last_offset < last:
            raise CorruptBatch(f"wrapper offset {self.last_offset} is below its last inner "
                               f"relative offset {last}")
        else:
            delta = self.last_offset - last
        return _InnerSet(data, delta, first + delta, count)

    def _inner_what(self) -> str:
        return f"the {codecs.name(self.compression)}-decompressed message set"

    def _inner_records(self, inner: _InnerSet) -> Iterator[Record]:
        log_append = self.timestamp_type == 1
        for _, m in _iter_messages(inner.data, self._inner_what()):
            yield Record(m.last_offset + inner.delta,
                         self.timestamp if log_append else m.timestamp,
                         None if m.key is None else bytes(m.key),
                         None if m.value is None else bytes(m.value), [], -1,
                         m.attributes, m.crc)

    def inner_crc_failures(self) -> Iterator[int]:
        """Offsets of inner messages whose own CRC does not match (deep verification)."""
        if self.compression == codecs.NONE:
            return
        for _, m in _iter_messages(self._inner_set().data, self._inner_what()):
            if not m.is_valid():
                yield m.last_offset


class _InnerSet(NamedTuple):
    """A compressed wrapper's inner message set, checked: bytes, offset delta, and what the
    batch summary needs without decoding a record."""

    data: bytes
    delta: int
    first_offset: int
    messages: int


def _read_bytes(data: bytes | memoryview, pos: int, end: int) -> tuple[memoryview | None, int]:
    if pos + LEGACY_LEN.size > end:
        raise CorruptBatch("message is too short for its length fields", pos=pos)
    (n,) = LEGACY_LEN.unpack_from(data, pos)
    if n < 0:
        return None, pos + LEGACY_LEN.size
    if pos + LEGACY_LEN.size + n > end:
        raise CorruptBatch(f"message field of {n} bytes runs past the message", pos=pos)
    pos += LEGACY_LEN.size
    return memoryview(data)[pos:pos + n], pos + n


def _iter_entries(data: bytes, what: str) -> Iterator[tuple[int, memoryview]]:
    """(position, bytes) of each entry of an inner message set, framed by their size fields;
    an error names its byte in the set `what` (in the reason)."""
    mv = memoryview(data)
    pos = 0
    end = len(mv)
    while pos < end:
        if end - pos < LOG_OVERHEAD_SIZE:
            raise CorruptBatch("inner message set ends inside an entry header",
                               pos=pos).nested(what)
        _off, size = LOG_OVERHEAD.unpack_from(mv, pos)
        if size < MIN_ENTRY_SIZE or pos + LOG_OVERHEAD_SIZE + size > end:
            raise CorruptBatch(f"inner message of size {size} does not fit",
                               pos=pos).nested(what)
        yield pos, mv[pos:pos + LOG_OVERHEAD_SIZE + size]
        pos += LOG_OVERHEAD_SIZE + size


def _iter_messages(data: bytes, what: str) -> Iterator[tuple[int, LegacyBatch]]:
    """(position, message) of each entry of an inner message set; an error in a message
    names its byte in the set `what` (in the reason)."""
    for pos, e in _iter_entries(data, what):
        try:
            m = LegacyBatch(e)
        except CorruptBatch as err:
            raise err.located(None, pos).nested(what) from None
        yield pos, m


# -- encoding ---------------------------------------------------------------------------

def encode_message(offset: int, key: bytes | None, value: bytes | None, *, magic: int = 1,
                   timestamp: int = NO_TIMESTAMP, attributes: int = 0) -> bytes:
    body = bytearray(LEGACY_CRC.pack(0))
    body += bytes((magic, attributes & 0xFF))
    if magic == 1:
        body += LEGACY_V1_TS.pack(timestamp)
    for field in (key, value):
        if field is None:
            body += LEGACY_LEN.pack(-1)
        else:
            body += LEGACY_LEN.pack(len(field)) + field
    LEGACY_CRC.pack_into(body, 0, crc32(memoryview(body)[4:]))
    assert len(body) >= LEGACY_RECORD_OVERHEAD[magic]
    return LOG_OVERHEAD.pack(offset, len(body)) + bytes(body)


def encode_message_set(records: Sequence[tuple[int, int, bytes | None, bytes | None]], *,
                       magic: int = 1, codec: int = codecs.NONE, timestamp_type: int = 0,
                       log_append_time: int | None = None, level: int | None = None) -> bytes:
    """Legacy entries for (offset, timestamp, key, value) tuples: plain, or one wrapper."""
    ts_attr = LEGACY_ATTR_TIMESTAMP_TYPE if (magic == 1 and timestamp_type == 1) else 0
    if codec == codecs.NONE:
        return b"".join(encode_message(o, k, v, magic=magic, timestamp=t, attributes=ts_attr)
                        for o, t, k, v in records)
    if codec == codecs.ZSTD:
        raise ValueError("zstd needs magic 2")
    last = records[-1][0]
    first = records[0][0]
    inner = b"".join(encode_message(o if magic == 0 else o - first, k, v, magic=magic,
                                    timestamp=t) for o, t, k, v in records)
    payload = codecs.compress(codec, inner, level=level, legacy_lz4=magic == 0)
    if magic == 1:
        wrapper_ts = log_append_time if ts_attr and log_append_time is not None \
            else max(t for _, t, _, _ in records)
    else:
        wrapper_ts = NO_TIMESTAMP
    return encode_message(last, None, payload, magic=magic, timestamp=wrapper_ts,
                          attributes=codec | ts_attr)
