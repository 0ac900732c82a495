"""Record batch v2 (magic 2): decode and encode side by side. Header layout: see layout.py.

Record (inside the possibly compressed records section):
    length varint | attributes int8 | timestampDelta varlong | offsetDelta varint |
    keyLength varint | key | valueLength varint | value | headerCount varint |
    (headerKeyLength varint | headerKey | headerValueLength varint | headerValue)*
Lengths of -1 mean null. A LogAppendTime batch reports maxTimestamp for every record,
whatever the deltas say (the broker stamps the header only).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from typing import Final

from kafkalog_cli import _speedups
from kafkalog_cli.codec import compression as codecs
from kafkalog_cli.codec.checksum import crc32c
from kafkalog_cli.codec.control import ControlInfo, parse_control
from kafkalog_cli.codec.java_utf8 import java_utf8
from kafkalog_cli.codec.layout import (
    ATTR_CODEC_MASK,
    ATTR_CONTROL,
    ATTR_DELETE_HORIZON,
    ATTR_TIMESTAMP_TYPE,
    ATTR_TRANSACTIONAL,
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    LOG_OVERHEAD_SIZE,
    NO_TIMESTAMP,
    V2_ATTRIBUTES_POS,
    V2_CRC,
    V2_CRC_POS,
    V2_HEADER,
    V2_HEADER_SIZE,
)
from kafkalog_cli.codec.model import Header, Record
from kafkalog_cli.codec.varint import encode_varint, encode_varlong, read_varint, read_varlong
from kafkalog_cli.errors import CorruptBatch

MAGIC = 2
# RecordBatch.records() decodes batches of up to this many records into a list in one pass
# (about 300 bytes a record beside their keys and values), larger ones record by record
EAGER_RECORDS: Final = 4096


def increment_sequence(seq: int, n: int) -> int:
    """Producer sequences wrap at Integer.MAX_VALUE, not at 2**32 (DefaultRecordBatch)."""
    return n - (INT32_MAX - seq) - 1 if seq > INT32_MAX - n else seq + n


def decrement_sequence(seq: int, n: int) -> int:
    """The inverse of increment_sequence (DefaultRecordBatch.decrementSequence)."""
    return INT32_MAX - (n - seq) + 1 if seq < n else seq - n


class RecordBatch:
    """A v2 batch over its bytes. The header is parsed eagerly, records on demand."""

    __slots__ = ("_data", "attributes", "base_offset", "base_sequence", "base_timestamp", "count",
                 "crc", "last_offset_delta", "length", "max_timestamp", "partition_leader_epoch",
                 "producer_epoch", "producer_id")
    magic = MAGIC
    # header fields, filled from V2_HEADER in __init__ (declared here: unpack_from is untyped)
    base_offset: int
    length: int
    partition_leader_epoch: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    count: int

    def __init__(self, data: bytes | memoryview) -> None:
        """`data` holds the whole entry (12-byte log overhead included)."""
        (self.base_offset, self.length, self.partition_leader_epoch, _magic, self.crc,
         self.attributes, self.last_offset_delta, self.base_timestamp, self.max_timestamp,
         self.producer_id, self.producer_epoch, self.base_sequence,
         self.count) = V2_HEADER.unpack_from(data, 0)
        self._data = data

    @property
    def data(self) -> bytes | memoryview:
        return self._data

    def detach(self) -> RecordBatch:
        """Copy the bytes so the batch outlives the scanner's reused buffer."""
        if not isinstance(self._data, bytes):
            self._data = bytes(self._data)
        return self

    @property
    def size(self) -> int:
        return self.length + LOG_OVERHEAD_SIZE

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def compression(self) -> int:
        return self.attributes & ATTR_CODEC_MASK

    @property
    def timestamp_type(self) -> int:
        return 1 if self.attributes & ATTR_TIMESTAMP_TYPE else 0

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & ATTR_TRANSACTIONAL)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & ATTR_CONTROL)

    @property
    def delete_horizon_ms(self) -> int | None:
        return self.base_timestamp if self.attributes & ATTR_DELETE_HORIZON else None

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == -1:
            return -1
        return increment_sequence(self.base_sequence, self.last_offset_delta)

    def compute_crc(self) -> int:
        return crc32c(memoryview(self._data)[V2_ATTRIBUTES_POS:self.size])

    def is_valid(self) -> bool:
        return self.size >= V2_HEADER_SIZE and self.compute_crc() == self.crc

    def records_bytes(self, max_decompressed: int = codecs.DEFAULT_MAX_DECOMPRESSED) -> bytes:
        """The records section, inflated."""
        body = memoryview(self._data)[V2_HEADER_SIZE:self.size]
        codec = self.compression
        if codec == codecs.NONE:
            return bytes(body)
        return codecs.decompress(codec, body, max_size=max_decompressed)

    def records_section(self, max_decompressed: int = codecs.DEFAULT_MAX_DECOMPRESSED
                        ) -> tuple[bytes, int | None]:
        """What decode_records takes: the inflated records section (empty when the batch
        has no records) and the LogAppendTime every record carries, if any."""
        if self.count == 0:
            return b"", None
        if self.count < 0:
            raise CorruptBatch(f"negative record count {self.count}")
        data = self.records_bytes(max_decompressed)
        if self.count > len(data):  # every record takes at least one byte
            raise CorruptBatch(f"record count {self.count} exceeds the records section size")
        return data, self.max_timestamp if self.attributes & ATTR_TIMESTAMP_TYPE else None

    def records(self, max_decompressed: int = codecs.DEFAULT_MAX_DECOMPRESSED
                ) -> Iterator[Record]:
        """The records, decoded as they are read: memory holds the inflated section and the
        records the caller keeps, never one object per record of a batch that claims
        millions. A malformed section raises CorruptBatch here, before the first record,
        positioned relative to the batch's first byte.

        Up to EAGER_RECORDS records decode in one pass into a list (the common case, and the
        fastest); a larger batch is checked whole first, then decoded record by record."""
        data, lat = self.records_section(max_decompressed)
        if not self.count:
            return iter(())
        args = (data, self.count, self.base_offset, self.base_timestamp, self.base_sequence, lat)
        try:
            if self.count <= EAGER_RECORDS:
                return iter(decode_records(*args))
            check_records(*args)
        except CorruptBatch as e:
            raise self.locate_records_error(e) from None
        return iter_records(*args)

    def locate_records_error(self, e: CorruptBatch) -> CorruptBatch:
        """Turn a position in the records section into one in the batch: the same bytes
        past the header, or (compressed) the batch itself, with the offset in the reason."""
        if self.compression == codecs.NONE:
            e.located(None, V2_HEADER_SIZE)
        else:
            e.nested(f"the {codecs.name(self.compression)}-decompressed records")
        return e

    def control(self, record: Record) -> ControlInfo:
        return parse_control(record.key, record.value)


def _varint_slow(data: bytes, pos: int) -> tuple[int, int]:
    return read_varint(data, pos)


def iter_records(data: bytes, count: int, base_offset: int, base_timestamp: int,
                 base_sequence: int, log_append_time: int | None) -> Iterator[Record]:
    """Decode `count` records one at a time; every structural rule of DefaultRecord.readFrom
    is enforced, and a broken one raises CorruptBatch when the decoding reaches it (after
    the records before it have come out).

    A record offset or CreateTime timestamp past the 64-bit range is corrupt: Java's long
    arithmetic would wrap it round to a negative value no producer wrote.
    """
    pos = 0
    end = len(data)
    rv = _varint_slow
    # the deltas that keep base + delta a long (offset deltas are ints: only a base within
    # 2**31 of either end can overflow)
    ts_lo, ts_hi = INT64_MIN - base_timestamp, INT64_MAX - base_timestamp
    check_offsets = not INT64_MIN - INT32_MIN <= base_offset <= INT64_MAX - INT32_MAX
    try:
        for _ in range(count):
            start = pos
            b = data[pos]
            if b < 0x80:
                length = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                length, pos = rv(data, pos)
            rec_end = pos + length
            if length < 0 or rec_end > end:
                raise CorruptBatch(f"record length {length} runs past the records section", pos=pos)
            attributes = data[pos]
            ts_delta, pos = read_varlong(data, pos + 1)
            b = data[pos]
            if b < 0x80:
                offset_delta = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                offset_delta, pos = rv(data, pos)
            b = data[pos]
            if b < 0x80:
                klen = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                klen, pos = rv(data, pos)
            if klen >= 0:
                key: bytes | None = data[pos:pos + klen]
                pos += klen
            else:
                key = None
            b = data[pos]
            if b < 0x80:
                vlen = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                vlen, pos = rv(data, pos)
            if vlen >= 0:
                value: bytes | None = data[pos:pos + vlen]
                pos += vlen
            else:
                value = None
            b = data[pos]
            if b == 0:
                headers: list[Header] = []
                pos += 1
            else:
                headers, pos = _decode_headers(data, pos, rec_end)
            if pos != rec_end:
                raise CorruptBatch("record structure does not match its length field", pos=pos)
            if check_offsets and not INT64_MIN <= base_offset + offset_delta <= INT64_MAX:
                raise CorruptBatch("record offset does not fit a long", pos=start)
            if log_append_time is None and not ts_lo <= ts_delta <= ts_hi:
                raise CorruptBatch("record timestamp does not fit a long", pos=start)
            seq = -1 if base_sequence < 0 else increment_sequence(base_sequence, offset_delta)
            yield Record(base_offset + offset_delta,
                         log_append_time if log_append_time is not None
                         else base_timestamp + ts_delta,
                         key, value, headers, seq, attributes)
    except IndexError:
        raise CorruptBatch("premature end of the records section", pos=pos) from None
    if pos != end:
        raise CorruptBatch(f"{end - pos} bytes remain after the last record", pos=pos)


def decode_records(data: bytes, count: int, base_offset: int, base_timestamp: int,
                   base_sequence: int, log_append_time: int | None) -> list[Record]:
    """All `count` records in a list, or the CorruptBatch iter_records would raise."""
    return list(iter_records_pure(data, count, base_offset, base_timestamp, base_sequence,
                                   log_append_time))


def check_records(data: bytes, count: int, base_offset: int, base_timestamp: int,
                  base_sequence: int, log_append_time: int | None) -> None:
    """Raise the CorruptBatch decode_records would raise, keeping no record."""
    deque(iter_records_pure(data, count, base_offset, base_timestamp, base_sequence,
                             log_append_time), maxlen=0)


def _decode_headers(data: bytes, pos: int, rec_end: int) -> tuple[list[Header], int]:
    n, pos = read_varint(data, pos)
    if n < 0 or n > rec_end - pos:
        raise CorruptBatch(f"invalid header count {n}", pos=pos)
    headers: list[Header] = []
    for _ in range(n):
        klen, pos = read_varint(data, pos)
        if klen < 0:
            raise CorruptBatch("header key is null", pos=pos)
        hkey = data[pos:pos + klen]
        pos += klen
        vlen, pos = read_varint(data, pos)
        if vlen >= 0:
            hval: bytes | None = data[pos:pos + vlen]
            pos += vlen
        else:
            hval = None
        if pos > rec_end:
            raise CorruptBatch("record header runs past the record", pos=pos)
        # not UTF-8 is no error: Kafka reads the key as a Java String (U+FFFD for malformed
        # parts, DefaultRecord.readHeaders), and consumers get the record
        headers.append((java_utf8(hkey), hval))
    return headers, pos


# -- encoding ---------------------------------------------------------------------------

def encode_record(offset_delta: int, timestamp_delta: int, key: bytes | None,
                  value: bytes | None, headers: Sequence[Header] = ()) -> bytes:
    body = bytearray(b"\x00")  # attributes: unused
    body += encode_varlong(timestamp_delta)
    body += encode_varint(offset_delta)
    for field in (key, value):
        if field is None:
            body += encode_varint(-1)
        else:
            body += encode_varint(len(field))
            body += field
    body += encode_varint(len(headers))
    for hkey, hval in headers:
        k = hkey.encode("utf-8")
        body += encode_varint(len(k))
        body += k
        if hval is None:
            body += encode_varint(-1)
        else:
            body += encode_varint(len(hval))
            body += hval
    return encode_varint(len(body)) + bytes(body)


def encode_batch(records: Iterable[tuple[int, int, bytes | None, bytes | None, Sequence[Header]]],
                 *, base_offset: int | None = None, codec: int = codecs.NONE,
                 level: int | None = None, timestamp_type: int = 0,
                 log_append_time: int | None = None, producer_id: int = -1,
                 producer_epoch: int = -1, base_sequence: int = -1,
                 partition_leader_epoch: int = -1, transactional: bool = False,
                 control: bool = False, delete_horizon_ms: int | None = None,
                 last_offset_delta: int | None = None,
                 max_timestamp: int | None = None, empty_ok: bool = True) -> bytes:
    """Build one v2 batch from (offset, timestamp, key, value, headers) tuples.

    `base_offset`/`last_offset_delta` default to the first/last record offsets; a cleaner
    keeps the originals, so they can be given. An empty record list makes the header-only
    batch the cleaner leaves for producer state (baseTimestamp -1).
    """
    recs = list(records)
    if base_offset is None:
        if not recs:
            raise ValueError("an empty batch needs an explicit base_offset")
        base_offset = recs[0][0]
    if recs:
        first_ts = recs[0][1]
        base_ts = delete_horizon_ms if delete_horizon_ms is not None else first_ts
        body = b"".join(encode_record(off - base_offset, ts - base_ts, k, v, h)
                        for off, ts, k, v, h in recs)
        max_ts = max(r[1] for r in recs) if max_timestamp is None else max_timestamp
        lod = recs[-1][0] - base_offset if last_offset_delta is None else last_offset_delta
    else:
        base_ts = NO_TIMESTAMP if delete_horizon_ms is None else delete_horizon_ms
        body = b""
        max_ts = NO_TIMESTAMP if max_timestamp is None else max_timestamp
        lod = 0 if last_offset_delta is None else last_offset_delta
        codec = codecs.NONE
    return assemble_batch(body, len(recs), base_offset=base_offset, last_offset_delta=lod,
                          base_timestamp=base_ts, max_timestamp=max_ts, codec=codec, level=level,
                          timestamp_type=timestamp_type, log_append_time=log_append_time,
                          producer_id=producer_id, producer_epoch=producer_epoch,
                          base_sequence=base_sequence,
                          partition_leader_epoch=partition_leader_epoch,
                          transactional=transactional, control=control,
                          delete_horizon=delete_horizon_ms is not None)


def assemble_batch(body: bytes, count: int, *, base_offset: int, last_offset_delta: int,
                   base_timestamp: int, max_timestamp: int, codec: int = codecs.NONE,
                   level: int | None = None, timestamp_type: int = 0,
                   log_append_time: int | None = None, producer_id: int = -1,
                   producer_epoch: int = -1, base_sequence: int = -1,
                   partition_leader_epoch: int = -1, transactional: bool = False,
                   control: bool = False, delete_horizon: bool = False) -> bytes:
    """The batch around an encoded (uncompressed) records section of `count` records: the
    compression, the header and its CRC. encode_batch's second half, shared with the
    compiled cleaner, which re-encodes the kept records itself."""
    if codec != codecs.NONE:
        body = codecs.compress(codec, body, level=level)
    max_ts = max_timestamp
    attributes = codec & ATTR_CODEC_MASK
    if timestamp_type == 1:
        attributes |= ATTR_TIMESTAMP_TYPE
        if log_append_time is not None:
            max_ts = log_append_time
    if transactional:
        attributes |= ATTR_TRANSACTIONAL
    if control:
        attributes |= ATTR_CONTROL
    if delete_horizon:
        attributes |= ATTR_DELETE_HORIZON
    length = V2_HEADER_SIZE - LOG_OVERHEAD_SIZE + len(body)
    header = bytearray(V2_HEADER.pack(base_offset, length, partition_leader_epoch, MAGIC, 0,
                                      attributes, last_offset_delta, base_timestamp, max_ts,
                                      producer_id, producer_epoch, base_sequence, count))
    out = header + body
    V2_CRC.pack_into(out, V2_CRC_POS, crc32c(memoryview(out)[V2_ATTRIBUTES_POS:]))
    return bytes(out)


# -- optional compiled decoder ------------------------------------------------------------
# kafkalog_cli/_speedups/fastcodec.pyx (built by setup.py when a compiler is available) gives
# the same results and the same CorruptBatch; RecordBatch.records() looks `decode_records`,
# `check_records` and `iter_records` up at call time, so rebinding the names here is all it
# takes. KAFKALOG_PURE=1 keeps the pure ones.
iter_records_pure = iter_records
decode_records_pure = decode_records
check_records_pure = check_records
ACCELERATED = False


def _use_compiled_decoder() -> None:
    global decode_records, check_records, iter_records, ACCELERATED
    fc = _speedups.compiled("fastcodec")
    if fc is None:
        return
    try:
        compiled = fc.decode_records, fc.check_records, fc.iter_records
    except AttributeError:  # built from an older fastcodec.pyx
        return
    decode_records, check_records, iter_records = compiled
    ACCELERATED = True


_use_compiled_decoder()
