# cython: language_level=3
"""Compiled framing for Kafka's snappy (snappy-java) and lz4 (KafkaLZ4BlockOutputStream) data,
and the zstd frame walk that finds a cut frame.

The pure-Python `_unsnappy`/`_unlz4` in kafkalog_cli/codec/compression.py are the
specification; profiling showed their Python frame walks cost more than the codecs. Here the
walk is C and every block is decompressed (by cramjam, the library python-snappy already
uses for snappy, and the same liblz4 as the lz4 package) straight into the one bytes object
returned, with no intermediate copies.

Each decompressing function returns the decompressed bytes, or None when anything is wrong (bad framing, a
corrupt block, the cap): the caller then runs the pure function, which raises the exception
with its exact message. Errors are rare, so the second pass costs nothing in practice and the
messages live in one place. Nothing is ever written past `max_size` bytes.
"""

from cpython.buffer cimport (PyBUF_READ, PyBUF_SIMPLE, PyBUF_WRITE, PyBuffer_Release,
                             PyObject_GetBuffer)
from cpython.memoryview cimport PyMemoryView_FromMemory
from cpython.object cimport PyObject
from cpython.ref cimport Py_DECREF
from libc.stdint cimport int32_t, uint32_t
from libc.string cimport memcmp, memcpy

import cramjam

cdef extern from "Python.h":
    PyObject* _new_bytes "PyBytes_FromStringAndSize"(const char* s, Py_ssize_t n) except NULL
    char* _bytes_data "PyBytes_AS_STRING"(PyObject* b)
    int _PyBytes_Resize(PyObject** b, Py_ssize_t n) except -1

_lz4_block_into = cramjam.lz4.decompress_block_into
_snappy_raw_into = cramjam.snappy.decompress_raw_into

cdef const char* _XERIAL_MAGIC = b"\x82SNAPPY\x00"
cdef Py_ssize_t _XERIAL_HEADER = 16
cdef uint32_t _UNCOMPRESSED_BIT = 0x80000000u

cdef uint32_t P1 = 2654435761u
cdef uint32_t P2 = 2246822519u
cdef uint32_t P3 = 3266489917u
cdef uint32_t P4 = 668265263u
cdef uint32_t P5 = 374761393u


cdef inline uint32_t _rotl(uint32_t x, int r) noexcept nogil:
    return (x << r) | (x >> (32 - r))


cdef inline uint32_t _le32(const unsigned char* p) noexcept nogil:
    return p[0] | (<uint32_t>p[1] << 8) | (<uint32_t>p[2] << 16) | (<uint32_t>p[3] << 24)


cdef uint32_t _xxh32(const unsigned char* p, Py_ssize_t n, uint32_t seed) noexcept nogil:
    cdef Py_ssize_t i = 0
    cdef uint32_t h, v1, v2, v3, v4
    if n >= 16:
        v1 = seed + P1 + P2
        v2 = seed + P2
        v3 = seed
        v4 = seed - P1
        while i + 16 <= n:
            v1 = _rotl(v1 + _le32(p + i) * P2, 13) * P1
            v2 = _rotl(v2 + _le32(p + i + 4) * P2, 13) * P1
            v3 = _rotl(v3 + _le32(p + i + 8) * P2, 13) * P1
            v4 = _rotl(v4 + _le32(p + i + 12) * P2, 13) * P1
            i += 16
        h = _rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)
    else:
        h = seed + P5
    h += <uint32_t>n
    while i + 4 <= n:
        h = _rotl(h + _le32(p + i) * P3, 17) * P4
        i += 4
    while i < n:
        h = _rotl(h + <uint32_t>p[i] * P5, 11) * P1
        i += 1
    h ^= h >> 15
    h *= P2
    h ^= h >> 13
    h *= P3
    h ^= h >> 16
    return h


def xxh32(const unsigned char[::1] data, uint32_t seed=0):
    """xxHash32 of `data` (tested equal to compression._xxh32)."""
    return _xxh32(&data[0] if data.shape[0] else NULL, data.shape[0], seed)


cdef object _owned(PyObject* raw, Py_ssize_t size, Py_ssize_t used):
    """Take ownership of the fresh bytes `raw` of `size` bytes, cut in place to `used`."""
    if used != size:
        _PyBytes_Resize(&raw, used)  # shrinks in place; on failure it frees raw and raises
    result = <object>raw
    Py_DECREF(result)  # drop the reference _new_bytes gave us: `result` holds its own
    return result


cdef inline object _view(const unsigned char* p, Py_ssize_t n, int flags):
    return PyMemoryView_FromMemory(<char*>p, n, flags)


# -- lz4 --------------------------------------------------------------------------------

def unlz4(const unsigned char[::1] src, Py_ssize_t max_size, bint legacy):
    """Kafka's LZ4 frame, decompressed; None when the pure `_unlz4` must raise."""
    cdef Py_ssize_t end = src.shape[0]
    if end < 7:
        return None
    cdef const unsigned char* s = &src[0]
    if memcmp(s, b"\x04\x22\x4d\x18", 4) != 0:
        return None
    cdef unsigned char flg = s[4], bd = s[5]
    if (flg & 0xC0) >> 6 != 1 or flg & 0x03 or bd & 0x8F or not flg & 0x20:
        return None
    cdef int code = (bd >> 4) & 0x07
    if code < 4:
        return None
    cdef Py_ssize_t max_block = (<Py_ssize_t>1) << (2 * code + 8)
    cdef Py_ssize_t pos = 6 + (8 if flg & 0x08 else 0)
    if pos >= end:
        return None
    if not legacy and s[pos] != ((_xxh32(s + 4, pos - 4, 0) >> 8) & 0xFF):
        return None
    pos += 1
    cdef Py_ssize_t block_checksum = 4 if flg & 0x10 else 0
    # first walk: check the framing and bound the output by what each block may hold
    cdef Py_ssize_t p = pos, n, bound = 0
    cdef uint32_t word
    while True:
        if p + 4 > end:
            return None
        word = _le32(s + p)
        p += 4
        if word == 0:
            if flg & 0x04 and end - p < 4:
                return None  # the content checksum is cut off
            break
        n = word & ~_UNCOMPRESSED_BIT
        if n > max_block or p + n > end:
            return None
        if word & _UNCOMPRESSED_BIT:
            bound += n
        elif n == 0:
            return None  # an empty compressed block: leave its verdict to the lz4 package
        else:
            bound += max_block
        p += n + block_checksum
    cdef Py_ssize_t size = bound if bound < max_size else max_size
    cdef PyObject* raw = _new_bytes(NULL, size)
    cdef unsigned char* out = <unsigned char*>_bytes_data(raw)
    cdef Py_ssize_t used = 0, room, got
    p = pos
    try:
        while True:
            word = _le32(s + p)
            p += 4
            if word == 0:
                break
            n = word & ~_UNCOMPRESSED_BIT
            # size >= used + this block's bound unless the cap cut it: room is what pure allows
            room = size - used
            if word & _UNCOMPRESSED_BIT:
                if n > room:
                    raise ValueError
                memcpy(out + used, s + p, n)
                got = n
            else:
                if room > max_block:
                    room = max_block
                # output_len given (positionally: no kwargs dict a block), or cramjam may
                # read a size prefix from the block
                got = _lz4_block_into(_view(s + p, n, PyBUF_READ),
                                      _view(out + used, room, PyBUF_WRITE), room)
                if got < 0 or got > room:
                    raise ValueError
            used += got
            p += n + block_checksum
    except Exception:
        Py_DECREF(<object>raw)
        return None
    return _owned(raw, size, used)


# -- snappy -----------------------------------------------------------------------------

cdef inline int32_t _be32(const unsigned char* p) noexcept nogil:
    return <int32_t>((<uint32_t>p[0] << 24) | (<uint32_t>p[1] << 16) | (<uint32_t>p[2] << 8)
                     | p[3])


cdef Py_ssize_t _next_chunk(const unsigned char* s, Py_ssize_t end, Py_ssize_t* pos,
                            Py_ssize_t* start) noexcept nogil:
    """Length of the next snappy-java chunk (its data at *start), -1 at the end, -2 if bad."""
    cdef Py_ssize_t n
    while True:
        if pos[0] >= end:
            return -1
        # newer snappy-java tolerates a repeated stream header between chunks
        if end - pos[0] >= _XERIAL_HEADER and memcmp(s + pos[0], _XERIAL_MAGIC, 8) == 0:
            pos[0] += _XERIAL_HEADER
            continue
        if end - pos[0] < 4:
            return -1  # snappy-java: fewer than 4 bytes left is the end of the stream
        n = _be32(s + pos[0])
        pos[0] += 4
        if n < 0 or pos[0] + n > end:
            return -2
        start[0] = pos[0]
        pos[0] += n
        return n


cdef Py_ssize_t _snappy_length(const unsigned char* p, Py_ssize_t n) noexcept nogil:
    """The varint uncompressed length in front of a raw snappy block, -1 if bad."""
    cdef Py_ssize_t result = 0, i
    cdef int shift = 0
    for i in range(5 if n > 5 else n):
        result |= <Py_ssize_t>(p[i] & 0x7F) << shift
        if p[i] < 0x80:
            return result
        shift += 7
    return -1


def unsnappy(const unsigned char[::1] src, Py_ssize_t max_size):
    """snappy-java stream or one raw snappy block; None when the pure `_unsnappy` must raise."""
    cdef Py_ssize_t end = src.shape[0]
    cdef const unsigned char* s = &src[0] if end else NULL
    cdef bint xerial = end >= _XERIAL_HEADER and memcmp(s, _XERIAL_MAGIC, 8) == 0
    cdef Py_ssize_t pos = _XERIAL_HEADER, start = 0, n, m, total = 0
    if xerial:
        if _be32(s + 8) < 1:
            return None
        # first walk: check the framing and sum the lengths the blocks declare
        while True:
            n = _next_chunk(s, end, &pos, &start)
            if n == -1:
                break
            if n == -2:
                return None
            m = _snappy_length(s + start, n)
            if m < 0:
                return None
            total += m
            if total > max_size:
                return None
    else:
        total = _snappy_length(s, end)
        if total < 0 or total > max_size:
            return None
    cdef PyObject* raw = _new_bytes(NULL, total)
    cdef unsigned char* out = <unsigned char*>_bytes_data(raw)
    cdef Py_ssize_t used = 0
    pos = _XERIAL_HEADER
    try:
        if xerial:
            while True:
                n = _next_chunk(s, end, &pos, &start)
                if n == -1:
                    break
                m = _snappy_length(s + start, n)
                if _snappy_raw_into(_view(s + start, n, PyBUF_READ),
                                    _view(out + used, m, PyBUF_WRITE)) != m:
                    raise ValueError
                used += m
        elif _snappy_raw_into(_view(s, end, PyBUF_READ), _view(out, total, PyBUF_WRITE)) != total:
            raise ValueError
        else:
            used = total
    except Exception:
        Py_DECREF(<object>raw)
        return None
    return _owned(raw, total, used)


# -- zstd -------------------------------------------------------------------------------

cdef Py_ssize_t _FCS_SIZE[4]
_FCS_SIZE[:] = [0, 2, 4, 8]
cdef Py_ssize_t _DID_SIZE[4]
_DID_SIZE[:] = [0, 1, 2, 4]


def zstd_cut_frame(data):
    """compression._zstd_cut_frame, compiled (tested equal): where the first frame cut off
    before its end starts, else None."""
    cdef Py_buffer view
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)  # (no typed memoryview: half the cost)
    try:
        return _cut_frame(<const unsigned char*>view.buf, view.len)
    finally:
        PyBuffer_Release(&view)


cdef object _cut_frame(const unsigned char* s, Py_ssize_t end):
    cdef Py_ssize_t pos = 0, start, fcs
    cdef uint32_t magic, head
    cdef unsigned char fhd, single
    while pos < end:
        start = pos
        if end - pos < 8:
            return start
        magic = _le32(s + pos)
        if magic != 0xFD2FB528u:
            if magic & 0xFFFFFFF0u != 0x184D2A50u:
                return None
            pos += 8 + <Py_ssize_t>_le32(s + pos + 4)
            if pos > end:
                return start
            continue
        fhd = s[pos + 4]
        single = (fhd >> 5) & 1
        fcs = _FCS_SIZE[fhd >> 6]
        if fcs == 0:
            fcs = single
        pos += 6 - single + _DID_SIZE[fhd & 3] + fcs
        head = 0
        while not head & 1:
            if pos + 3 > end:
                return start
            head = s[pos] | (<uint32_t>s[pos + 1] << 8) | (<uint32_t>s[pos + 2] << 16)
            pos += 3 + (1 if (head & 6) == 2 else <Py_ssize_t>(head >> 3))
        if fhd & 4:
            pos += 4
        if pos > end:
            return start
    return None
