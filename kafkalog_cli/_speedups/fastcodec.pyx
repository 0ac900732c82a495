# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
# cython: cdivision=True, embedsignature=True
"""Compiled twin of `kafkalog_cli.codec.batch_v2.decode_records_pure` (and of its
`iter_records_pure` and `check_records_pure`).

Same signature, same `Record` objects, same values, and the same `CorruptBatch` (message and
`pos` included) for every malformed input: each check below mirrors one line of the pure
function, in the same order. The pure function is the specification; tests/codec/
test_fastcodec.py compares the two on random and mutated inputs.

Arguments outside the fast path (`data` not exactly `bytes`, an argument not exactly `int`, or
an int that does not fit 64 bits) are handed to the pure function, so the results stay identical
for those too.

Records are allocated with the type's tp_alloc and their eight slots written directly (Record is
a plain `__slots__` class whose __init__ only stores its arguments); `_probe_record_layout`
checks that at import and otherwise we call `Record(...)` like the pure code does.

GC: header tuples (str, bytes | None) are untracked at birth, as CPython itself would do at
their first collection. Records and their headers lists stay tracked unless
`set_untracked_records(True)` (opt-in, see there): keeping a whole batch of records alive makes
the cyclic GC run and promote them, which costs about as much as the decoding itself.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.long cimport PyLong_FromLong, PyLong_FromLongLong
from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t

from kafkalog_cli.codec.java_utf8 import ERRORS as _JAVA_NAME
from kafkalog_cli.codec.model import Record
from kafkalog_cli.errors import CorruptBatch

cdef bytes _JAVA_BYTES = _JAVA_NAME.encode()
cdef const char* _JAVA = _JAVA_BYTES  # the error handler header keys decode with (as Kafka)

cdef extern from *:
    """
    #include <structmember.h>  /* PyMemberDef (moved to descrobject.h in 3.12) */
    /* A fresh instance with every slot NULL (tp_alloc zeroes the object; for a heap type it
       also takes the reference to the type and GC-tracks the object, NULL slots are fine). */
    static PyObject *kl_alloc(PyObject *type) {
        PyTypeObject *t = (PyTypeObject *)type;
        return t->tp_alloc(t, 0);
    }
    /* Store a new reference into an empty object slot (the slot of a fresh kl_alloc). */
    static inline void kl_set_slot(PyObject *o, Py_ssize_t off, PyObject *v) {
        Py_INCREF(v);
        *(PyObject **)((char *)o + off) = v;
    }
    /* Offset of a writable object slot (T_OBJECT_EX member descriptor), else -1. */
    static Py_ssize_t kl_member_offset(PyObject *descr) {
        PyMemberDef *m;
        if (Py_TYPE(descr) != &PyMemberDescr_Type) return -1;
        m = ((PyMemberDescrObject *)descr)->d_member;
        if (m->type != 16 /* T_OBJECT_EX */ || (m->flags & 1 /* READONLY */)) return -1;
        return m->offset;
    }
    """
    void PyObject_GC_UnTrack(object o)
    object kl_alloc(object type)
    void kl_set_slot(object o, Py_ssize_t off, object v)
    Py_ssize_t kl_member_offset(object descr)

# error codes (0 = fine); the message for each is built in _raise
cdef enum:
    E_PREMATURE = 1      # IndexError in the pure loop
    E_VARINT_PAST = 2    # read_varint / read_varlong ran out of data
    E_VARINT_LONG = 3    # more than 5 bytes
    E_VARLONG_LONG = 4   # more than 10 bytes
    E_REC_LENGTH = 5
    E_STRUCTURE = 6
    E_TRAILING = 7
    E_HEADER_COUNT = 8
    E_HEADER_KEY_NULL = 9
    E_HEADER_PAST = 10
    E_OFFSET_OVERFLOW = 12   # base + delta past a long (Java would wrap it)
    E_TIMESTAMP_OVERFLOW = 13

cdef struct Err:
    int code
    int64_t pos
    int64_t value

cdef int64_t INT32_MAX_ = 2147483647
cdef int64_t I64_MAX = 0x7FFFFFFFFFFFFFFF
cdef int64_t I64_MIN = -I64_MAX - 1

# --- Record slot layout ------------------------------------------------------------------

cdef object _Record = Record  # a C-level reference: no global lookup per record
cdef bint _fast_record = False
cdef bint _untrack_records = True
cdef Py_ssize_t _off_offset = 0, _off_timestamp = 0, _off_key = 0, _off_value = 0
cdef Py_ssize_t _off_headers = 0, _off_sequence = 0, _off_attributes = 0, _off_crc = 0

_SLOT_NAMES = ("offset", "timestamp", "key", "value", "headers", "sequence", "attributes", "crc")


def _probe_record_layout():
    """True if Record is a plain class whose only state is the eight object slots we fill."""
    global _fast_record, _off_offset, _off_timestamp, _off_key, _off_value, _off_headers
    global _off_sequence, _off_attributes, _off_crc
    _fast_record = False
    try:
        slots = Record.__slots__
        if isinstance(slots, str):
            slots = (slots,)
        if (type(Record) is not type or Record.__mro__ != (Record, object)
                or Record.__new__ is not object.__new__
                or sorted(slots) != sorted(_SLOT_NAMES)
                or Record.__dictoffset__ != 0 or Record.__weakrefoffset__ != 0
                or Record.__basicsize__ != object.__basicsize__ + 8 * sizeof(void *)):
            return False
        offs = [kl_member_offset(Record.__dict__[name]) for name in _SLOT_NAMES]
    except Exception:
        return False
    if len(set(offs)) != 8 or any(o < object.__basicsize__ or o >= Record.__basicsize__
                                  for o in offs):
        return False
    # __init__ must store its arguments as they are (and crc=None), as the slot writes do
    args = (2**65 + 1, 2**65 + 2, bytes(3), bytes(4), [("h", None)], 2**65 + 3, 2**65 + 4)
    try:
        probe = Record(*args)
        if any(getattr(probe, name) is not arg for name, arg in zip(_SLOT_NAMES, args)):
            return False
        if probe.crc is not None:
            return False
    except Exception:
        return False
    (_off_offset, _off_timestamp, _off_key, _off_value, _off_headers, _off_sequence,
     _off_attributes, _off_crc) = offs
    _fast_record = True
    return True


_probe_record_layout()


def fast_record_construction():
    """Whether records are built slot by slot (True) or through Record(...) (False)."""
    return bool(_fast_record)


def _set_slot_writes(bint enable):
    """Tests: force Record(...) calls (False), or probe again for slot writes (True)."""
    global _fast_record
    if enable:
        return _probe_record_layout()
    _fast_record = False
    return False


def set_untracked_records(bint enable):
    """On by default: hand out records (and their headers lists) untracked by the cyclic GC
    (they hold only bytes, None, ints and lists of (str, bytes) tuples, so they cannot be
    part of a cycle unless a caller builds one). A batch keeps hundreds of records alive at once, so the GC keeps collecting and
    promoting them, which costs about as much as decoding them (see bench/bench_codec.py).
    Untracked, a reference cycle a caller builds through a record (say
    `r.headers.append(r)`) is never collected: a leak, never a crash. Returns the old setting.
    """
    global _untrack_records
    old = _untrack_records
    _untrack_records = enable
    return bool(old)


# --- varints -----------------------------------------------------------------------------

cdef inline int _varint(const unsigned char *p, int64_t end, int64_t *ppos, int32_t *out,
                        int oob_first) noexcept nogil:
    """read_varint: 5 bytes max, Java keeps the low 32 bits. `oob_first` is the error when the
    first byte is already past the end (the pure loop indexes that byte itself: IndexError)."""
    cdef int64_t pos = ppos[0]
    cdef uint32_t b, u
    cdef int shift
    if pos >= end:
        return oob_first
    b = p[pos]
    pos += 1
    if b < 0x80:
        ppos[0] = pos
        out[0] = <int32_t>((b >> 1) ^ (<uint32_t>0 - (b & 1)))
        return 0
    u = b & 0x7F
    shift = 7
    while shift < 35:
        if pos >= end:
            ppos[0] = pos
            return E_VARINT_PAST
        b = p[pos]
        pos += 1
        u |= (b & 0x7F) << shift  # bits past 32 drop out of the uint32, as `u &= 0xFFFFFFFF`
        if b < 0x80:
            ppos[0] = pos
            out[0] = <int32_t>((u >> 1) ^ (<uint32_t>0 - (u & 1)))
            return 0
        shift += 7
    ppos[0] = pos
    return E_VARINT_LONG


cdef inline int _varlong(const unsigned char *p, int64_t end, int64_t *ppos,
                         int64_t *out) noexcept nogil:
    """read_varlong: 10 bytes max, 64 bits kept."""
    cdef int64_t pos = ppos[0]
    cdef uint64_t b, u = 0
    cdef int shift = 0
    while shift < 70:
        if pos >= end:
            ppos[0] = pos
            return E_VARINT_PAST
        b = p[pos]
        pos += 1
        u |= (b & 0x7F) << shift
        if b < 0x80:
            ppos[0] = pos
            out[0] = <int64_t>((u >> 1) ^ (<uint64_t>0 - (u & 1)))
            return 0
        shift += 7
    ppos[0] = pos
    return E_VARLONG_LONG


cdef inline bint _add_overflows(int64_t a, int64_t b) noexcept nogil:
    return (b > 0 and a > I64_MAX - b) or (b < 0 and a < I64_MIN - b)


_OFFSET_OVERFLOW = "record offset does not fit a long"
_TIMESTAMP_OVERFLOW = "record timestamp does not fit a long"


# --- one record's layout -------------------------------------------------------------------
# _parse_record checks a record against every rule of the pure decoder, in its order, and
# notes where its parts are; the two consumers below (Record objects, Arrow columns) then
# read those parts without checking again.

cdef struct Rec:
    long attributes
    int64_t ts_delta
    int32_t offset_delta
    int64_t kpos
    int32_t klen      # -1: null key
    int64_t vpos
    int32_t vlen      # -1: null value
    int64_t hpos      # the first header, just past the header count
    int32_t hcount


cdef inline int _fail(Err *err, int code, int64_t pos, int64_t value) noexcept:
    err.code = code
    err.pos = pos
    err.value = value
    return code


cdef inline int _overflows(int64_t base_offset, int64_t base_timestamp, bint create_time,
                           Rec *r, int64_t start, Err *err) noexcept:
    """The pure decoder's range checks of a parsed record's offset and CreateTime."""
    if _add_overflows(base_offset, r.offset_delta):
        return _fail(err, E_OFFSET_OVERFLOW, start, 0)
    if create_time and _add_overflows(base_timestamp, r.ts_delta):
        return _fail(err, E_TIMESTAMP_OVERFLOW, start, 0)
    return 0


cdef inline bint _utf8_ok(const unsigned char *s, int32_t n):
    """Strict UTF-8, as the pure decoder's str(..., "utf-8"); ASCII needs no decoder."""
    cdef int32_t i
    for i in range(n):
        if s[i] >= 0x80:
            try:
                PyUnicode_DecodeUTF8(<const char *>s, n, NULL)
            except UnicodeDecodeError:
                return False
            return True
    return True


cdef int _check_headers(const unsigned char *p, int64_t end, int64_t *ppos, int64_t rec_end,
                        Rec *r, Err *err) except -1:
    """_decode_headers' checks, building nothing."""
    cdef int64_t pos = ppos[0]
    cdef int32_t n, klen, vlen
    cdef int rc
    cdef Py_ssize_t j
    rc = _varint(p, end, &pos, &n, E_VARINT_PAST)
    if rc:
        return _fail(err, rc, pos, 0)
    if n < 0 or n > rec_end - pos:
        return _fail(err, E_HEADER_COUNT, pos, n)
    r.hpos = pos
    r.hcount = n
    for j in range(n):
        rc = _varint(p, end, &pos, &klen, E_VARINT_PAST)
        if rc:
            return _fail(err, rc, pos, 0)
        if klen < 0:
            return _fail(err, E_HEADER_KEY_NULL, pos, 0)
        pos += klen
        # the pure slice is clamped, the value length read right after it then fails
        rc = _varint(p, end, &pos, &vlen, E_VARINT_PAST)
        if rc:
            return _fail(err, rc, pos, 0)
        if vlen >= 0:
            pos += vlen
        if pos > rec_end:
            return _fail(err, E_HEADER_PAST, pos, 0)
        # a key that is not UTF-8 is no error: Kafka reads it as a Java String (U+FFFD for
        # malformed parts, DefaultRecord.readHeaders), and consumers get the record
    ppos[0] = pos
    return 0


cdef inline int _nullable_bytes(const unsigned char *p, int64_t end, int64_t *ppos,
                                int32_t *length, int64_t *at, Err *err) noexcept:
    """A record's key or value: a varint length (-1: null), then that many bytes, which must
    leave at least the next field's first byte before `end`. 0 and ppos past them (`at`
    where they start), or the error code."""
    cdef int64_t pos = ppos[0]
    cdef int rc = _varint(p, end, &pos, length, E_PREMATURE)
    if rc:
        return _fail(err, rc, pos, 0)
    if length[0] >= 0:
        if length[0] >= end - pos:
            return _fail(err, E_PREMATURE, pos + length[0], 0)
        at[0] = pos
        pos += length[0]
    ppos[0] = pos
    return 0


cdef int _parse_record(const unsigned char *p, int64_t end, int64_t *ppos, Rec *r,
                       Err *err) except -1:
    """One record of the section at ppos: 0 and ppos moved past it, or the error code."""
    cdef int64_t pos = ppos[0]
    cdef int64_t rec_end
    cdef int32_t length
    cdef int rc
    rc = _varint(p, end, &pos, &length, E_PREMATURE)
    if rc:
        return _fail(err, rc, pos, 0)
    rec_end = pos + length
    if length < 0 or rec_end > end:
        return _fail(err, E_REC_LENGTH, pos, length)
    if pos >= end:
        return _fail(err, E_PREMATURE, pos, 0)
    r.attributes = p[pos]
    pos += 1
    rc = _varlong(p, end, &pos, &r.ts_delta)
    if rc:
        return _fail(err, rc, pos, 0)
    rc = _varint(p, end, &pos, &r.offset_delta, E_PREMATURE)
    if rc:
        return _fail(err, rc, pos, 0)
    rc = _nullable_bytes(p, end, &pos, &r.klen, &r.kpos, err)  # the key
    if rc:
        return rc
    rc = _nullable_bytes(p, end, &pos, &r.vlen, &r.vpos, err)  # the value
    if rc:
        return rc
    if pos >= end:
        return _fail(err, E_PREMATURE, pos, 0)
    if p[pos] == 0:
        pos += 1
        r.hpos = pos
        r.hcount = 0
    else:
        rc = _check_headers(p, end, &pos, rec_end, r, err)
        if rc:
            return rc
    if pos != rec_end:
        return _fail(err, E_STRUCTURE, pos, 0)
    ppos[0] = pos
    return 0


cdef inline int64_t _sequence(int64_t base_sequence, int32_t delta) noexcept nogil:
    """increment_sequence: -1 stays -1, and it wraps at Integer.MAX_VALUE."""
    if base_sequence < 0:
        return -1
    if base_sequence > INT32_MAX_ - delta:
        return (base_sequence - INT32_MAX_ - 1) + delta
    return base_sequence + delta


# --- records as objects ----------------------------------------------------------------------

cdef list _header_list(const unsigned char *p, int64_t end, Rec *r):
    """The headers _check_headers accepted, as [(str, bytes | None)]."""
    cdef int64_t pos = r.hpos
    cdef int32_t klen, vlen
    cdef Py_ssize_t j
    cdef list hs = PyList_New(r.hcount)
    cdef object hkey, hval
    cdef tuple pair
    for j in range(r.hcount):
        _varint(p, end, &pos, &klen, E_PREMATURE)
        hkey = PyUnicode_DecodeUTF8(<const char *>p + pos, klen, _JAVA)  # as Kafka
        pos += klen
        _varint(p, end, &pos, &vlen, E_PREMATURE)
        if vlen >= 0:
            hval = PyBytes_FromStringAndSize(<const char *>p + pos, vlen)
            pos += vlen
        else:
            hval = None
        pair = PyTuple_New(2)
        Py_INCREF(hkey)
        PyTuple_SET_ITEM(pair, 0, hkey)
        Py_INCREF(hval)
        PyTuple_SET_ITEM(pair, 1, hval)
        # (str, bytes | None) cannot be part of a cycle: CPython untracks such tuples itself
        # at their first collection, we do it now, before they cost the GC anything.
        PyObject_GC_UnTrack(pair)
        Py_INCREF(pair)
        PyList_SET_ITEM(hs, j, pair)
    return hs


cdef class RecordIter:
    """The records of a records section, built one at a time (iter_records), or all at once
    into a list (_decode): the same code builds them either way."""
    cdef bytes data  # keeps `p` valid
    cdef const unsigned char *p
    cdef int64_t end, pos
    cdef Py_ssize_t count, i
    cdef int64_t base_offset, base_timestamp, base_sequence
    cdef object log_append_time
    cdef bint create_time, fast, untrack, done
    cdef Err err

    cdef object _next(self):
        """The next record, or None with self.err set (a malformed record)."""
        cdef Rec r
        if _parse_checked(self, &self.pos, &r):
            return None
        self.i += 1
        return _build(self, &r)

    cdef bint _trailing(self):
        """After the last record: True (and self.err set) if bytes remain."""
        if self.pos != self.end:
            _fail(&self.err, E_TRAILING, self.pos, self.end - self.pos)
            return True
        return False

    def __iter__(self):
        return self

    def __next__(self):
        # as the pure generator: records up to a malformed one, then its CorruptBatch, then
        # nothing more
        if self.done:
            raise StopIteration
        if self.i >= self.count:
            self.done = True
            if self._trailing():
                _raise(&self.err)
            raise StopIteration
        rec = self._next()
        if rec is None:
            self.done = True
            _raise(&self.err)
        return rec


cdef object _MINUS_ONE = -1


cdef inline object _build(RecordIter it, Rec *r):
    """The record `r` (parsed and checked by _parse_record) as a Record object."""
    cdef const unsigned char *p = it.p
    cdef object key, value, headers, offset_obj, ts_obj, seq_obj, rec
    if r.klen >= 0:
        key = PyBytes_FromStringAndSize(<const char *>p + r.kpos, r.klen)
    else:
        key = None
    if r.vlen >= 0:
        value = PyBytes_FromStringAndSize(<const char *>p + r.vpos, r.vlen)
    else:
        value = None
    headers = PyList_New(0) if r.hcount == 0 else _header_list(p, it.end, r)

    seq_obj = _MINUS_ONE if it.base_sequence < 0 else \
        PyLong_FromLongLong(_sequence(it.base_sequence, r.offset_delta))
    offset_obj = PyLong_FromLongLong(it.base_offset + r.offset_delta)  # in range: checked
    if it.create_time:
        ts_obj = PyLong_FromLongLong(it.base_timestamp + r.ts_delta)
    else:
        ts_obj = it.log_append_time

    if it.fast:
        rec = kl_alloc(_Record)
        kl_set_slot(rec, _off_offset, offset_obj)
        kl_set_slot(rec, _off_timestamp, ts_obj)
        kl_set_slot(rec, _off_key, key)
        kl_set_slot(rec, _off_value, value)
        kl_set_slot(rec, _off_headers, headers)
        kl_set_slot(rec, _off_sequence, seq_obj)
        kl_set_slot(rec, _off_attributes, PyLong_FromLong(r.attributes))
        kl_set_slot(rec, _off_crc, None)
        if it.untrack:
            PyObject_GC_UnTrack(rec)
            PyObject_GC_UnTrack(headers)
    else:
        rec = _Record(offset_obj, ts_obj, key, value, headers, seq_obj,
                      PyLong_FromLong(r.attributes))
    return rec


cdef inline int _parse_checked(RecordIter it, int64_t *ppos, Rec *r) except -1:
    """_parse_record, then the pure decoder's checks that the record's offset and CreateTime
    fit a long: 0, or the error code with it.err set."""
    cdef int64_t start = ppos[0]
    if _parse_record(it.p, it.end, ppos, r, &it.err):
        return 1
    return _overflows(it.base_offset, it.base_timestamp, it.create_time, r, start, &it.err)


cdef RecordIter _records_of(data, count, base_offset, base_timestamp, base_sequence,
                            log_append_time):
    """A RecordIter over the section, or None when an argument is outside the fast path
    (`data` not exactly bytes, an argument not exactly int, or an int past 64 bits)."""
    cdef RecordIter it
    if (type(data) is not bytes or type(count) is not int or type(base_offset) is not int
            or type(base_timestamp) is not int or type(base_sequence) is not int
            or (log_append_time is not None and type(log_append_time) is not int)):
        return None
    it = RecordIter.__new__(RecordIter)
    try:
        it.count = count
        it.base_offset = base_offset
        it.base_timestamp = base_timestamp
        it.base_sequence = base_sequence
    except OverflowError:
        return None
    it.data = <bytes>data
    it.p = <const unsigned char *>PyBytes_AS_STRING(it.data)
    it.end = PyBytes_GET_SIZE(it.data)
    it.pos = 0
    it.i = 0
    it.log_append_time = log_append_time
    it.create_time = log_append_time is None
    it.fast = _fast_record
    it.untrack = _untrack_records
    it.done = False
    it.err.code = 0
    it.err.pos = 0
    it.err.value = 0
    return it


cdef object _decode(RecordIter it):
    """Every record in a list, or None with it.err set."""
    cdef Py_ssize_t i, n_alloc
    cdef list out
    cdef object rec
    cdef int64_t pos = 0
    cdef Rec r
    # Every decoded record takes at least one byte, so at most `end` can succeed: a larger
    # count is bound to fail, and never needs more slots than that.
    n_alloc = it.count if it.count <= it.end else <Py_ssize_t>it.end
    if n_alloc < 0:
        n_alloc = 0
    out = PyList_New(n_alloc)
    for i in range(it.count):  # RecordIter._next, with the position kept in a local
        if _parse_checked(it, &pos, &r):
            it.pos = pos
            return None
        rec = _build(it, &r)
        if i >= n_alloc:  # unreachable (see n_alloc), kept as a memory-safety guard
            raise AssertionError("record count bookkeeping")
        Py_INCREF(rec)
        PyList_SET_ITEM(out, i, rec)
    it.pos = pos
    it.i = it.count
    if it._trailing():
        return None
    return out


cdef _raise(Err *e):
    cdef int code = e.code
    if code == E_PREMATURE:
        msg = "premature end of the records section"
    elif code == E_VARINT_PAST:
        msg = "varint runs past the end of the data"
    elif code == E_VARINT_LONG:
        msg = "varint longer than 5 bytes"
    elif code == E_VARLONG_LONG:
        msg = "varint longer than 10 bytes"
    elif code == E_REC_LENGTH:
        msg = f"record length {e.value} runs past the records section"
    elif code == E_STRUCTURE:
        msg = "record structure does not match its length field"
    elif code == E_TRAILING:
        msg = f"{e.value} bytes remain after the last record"
    elif code == E_HEADER_COUNT:
        msg = f"invalid header count {e.value}"
    elif code == E_HEADER_KEY_NULL:
        msg = "header key is null"
    elif code == E_HEADER_PAST:
        msg = "record header runs past the record"
    elif code == E_OFFSET_OVERFLOW:
        msg = _OFFSET_OVERFLOW
    elif code == E_TIMESTAMP_OVERFLOW:
        msg = _TIMESTAMP_OVERFLOW
    else:
        msg = f"records section does not decode (error {code})"
    raise CorruptBatch(msg, pos=e.pos)


cdef int kl_records_clean(const unsigned char *p, int64_t end, int64_t count,
                          int64_t base_offset, int64_t base_timestamp, bint create_time,
                          int64_t *first, int64_t *last) except -1:
    """1 when check_records would accept the section and the record offsets strictly increase
    (batch_rules.record_faults finds no decode or order fault), with the first and last record
    offsets; else 0. The deep verify fast path (fastscan.scan_clean) calls it per batch."""
    cdef Err err
    cdef Rec r
    cdef int64_t pos = 0, start, off, prev = 0
    cdef int64_t i
    for i in range(count):
        start = pos
        if _parse_record(p, end, &pos, &r, &err):
            return 0
        if _overflows(base_offset, base_timestamp, create_time, &r, start, &err):
            return 0
        off = base_offset + r.offset_delta
        if i == 0:
            first[0] = off
        elif off <= prev:
            return 0
        prev = off
    if pos != end:
        return 0
    last[0] = prev
    return 1


def decode_records(data, count, base_offset, base_timestamp, base_sequence, log_append_time):
    """Decode `count` records; every structural rule of DefaultRecord.readFrom is enforced.

    Compiled version of batch_v2.decode_records_pure: same results, same CorruptBatch.
    """
    cdef RecordIter it = _records_of(data, count, base_offset, base_timestamp, base_sequence,
                                     log_append_time)
    if it is None:
        from kafkalog_cli.codec.batch_v2 import decode_records_pure
        return decode_records_pure(data, count, base_offset, base_timestamp, base_sequence,
                                   log_append_time)
    result = _decode(it)
    if it.err.code:
        _raise(&it.err)
    return result


def check_records(data, count, base_offset, base_timestamp, base_sequence, log_append_time):
    """Raise the CorruptBatch decode_records would raise, building no record (one parse)."""
    cdef RecordIter it = _records_of(data, count, base_offset, base_timestamp, base_sequence,
                                     log_append_time)
    cdef Rec r
    cdef Py_ssize_t i
    if it is None:
        from kafkalog_cli.codec.batch_v2 import check_records_pure
        return check_records_pure(data, count, base_offset, base_timestamp, base_sequence,
                                  log_append_time)
    for i in range(it.count):
        if _parse_checked(it, &it.pos, &r):
            _raise(&it.err)
    if it._trailing():
        _raise(&it.err)


def iter_records(data, count, base_offset, base_timestamp, base_sequence, log_append_time):
    """Compiled version of batch_v2.iter_records_pure: the same records one at a time, and
    the same CorruptBatch when the decoding reaches a malformed record."""
    cdef RecordIter it = _records_of(data, count, base_offset, base_timestamp, base_sequence,
                                     log_append_time)
    if it is None:
        from kafkalog_cli.codec.batch_v2 import iter_records_pure
        return iter_records_pure(data, count, base_offset, base_timestamp, base_sequence,
                                 log_append_time)
    return it


# -- visible UTF-8 ------------------------------------------------------------------------
# bytes.decode("utf-8", "backslashreplace") in one C pass: CPython's decoder takes a slow
# per-error callback path for that handler, which dominates dumps of binary payloads.

cdef const char* _HEX = b"0123456789abcdef"


cdef inline Py_ssize_t _valid_len(const unsigned char* p, Py_ssize_t i, Py_ssize_t n):
    """Length of the valid UTF-8 sequence starting at p[i], or 0 (CPython's ranges)."""
    cdef unsigned char c = p[i]
    cdef unsigned char lo = 0x80, hi = 0xBF
    cdef Py_ssize_t need
    if c < 0x80:
        return 1
    if 0xC2 <= c <= 0xDF:
        need = 1
    elif 0xE0 <= c <= 0xEF:
        need = 2
        if c == 0xE0:
            lo = 0xA0
        elif c == 0xED:
            hi = 0x9F
    elif 0xF0 <= c <= 0xF4:
        need = 3
        if c == 0xF0:
            lo = 0x90
        elif c == 0xF4:
            hi = 0x8F
    else:
        return 0
    if i + need >= n:
        return 0
    if not (lo <= p[i + 1] <= hi):
        return 0
    cdef Py_ssize_t k
    for k in range(2, need + 1):
        if not (0x80 <= p[i + k] <= 0xBF):
            return 0
    return need + 1


def utf8_visible(data):
    """Decode UTF-8; bytes that are not part of a valid sequence become visible \\xNN."""
    if data is None:
        return None
    if type(data) is not bytes:
        data = bytes(data)
    cdef Py_ssize_t n = PyBytes_GET_SIZE(data)
    cdef const unsigned char* p = <const unsigned char*>PyBytes_AS_STRING(data)
    try:
        return PyUnicode_DecodeUTF8(<const char*>p, n, NULL)
    except UnicodeDecodeError:
        pass
    cdef Buf b
    b.p = NULL
    b.n = 0
    b.cap = 0
    try:
        _visible(&b, p, n)
        return PyUnicode_DecodeUTF8(b.p, b.n, NULL)
    finally:
        free(b.p)


# -- JSON Lines for dump ------------------------------------------------------------------
# `kafkalog dump --records --format jsonl` spends most of its time building one dict per
# record and serialising it. This writes the same bytes orjson would (same key order, no
# spaces, the same escapes) straight from the decoded records of a batch.

from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memcpy, memset
from cpython.unicode cimport PyUnicode_AsUTF8AndSize

cdef const char* _B64 = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


cdef struct Buf:
    char* p
    Py_ssize_t n
    Py_ssize_t cap


cdef int _grow(Buf* b, Py_ssize_t extra) except -1:
    cdef Py_ssize_t want = b.n + extra
    cdef char* q
    if want <= b.cap:
        return 0
    while b.cap < want:
        b.cap = b.cap * 2 if b.cap else 65536
    q = <char*>realloc(b.p, b.cap)
    if q == NULL:
        raise MemoryError()
    b.p = q
    return 0


# The record writers below build a chunk of lines in one buffer. A fresh buffer grown to a
# chunk's size (megabytes) cost a realloc copy of it at every doubling, per chunk: one is
# kept between calls instead, up to _KEEP bytes (memory stays bounded). A nested call (the
# records iterable running Python code that writes too) finds none kept and makes its own.
cdef Buf _kept
_kept.p = NULL
_kept.n = 0
_kept.cap = 0
cdef Py_ssize_t _KEEP = 16 << 20


cdef inline void _take(Buf* b) noexcept:
    b.p, b.cap, b.n = _kept.p, _kept.cap, 0
    _kept.p, _kept.cap = NULL, 0


cdef inline void _give(Buf* b) noexcept:
    if _kept.p == NULL and b.cap <= _KEEP:
        _kept.p, _kept.cap = b.p, b.cap
    else:
        free(b.p)
    b.p = NULL


cdef inline int _put(Buf* b, const char* s, Py_ssize_t n) except -1:
    _grow(b, n)
    memcpy(b.p + b.n, s, n)
    b.n += n
    return 0


cdef int _put_i64(Buf* b, int64_t x) except -1:
    """str(x), digits written backwards into a scratch buffer (no snprintf parsing)."""
    cdef char tmp[24]
    cdef int k = 24
    cdef uint64_t u = <uint64_t>x if x >= 0 else (~(<uint64_t>x)) + 1
    while True:
        k -= 1
        tmp[k] = 48 + <char>(u % 10)
        u //= 10
        if u == 0:
            break
    if x < 0:
        k -= 1
        tmp[k] = 45
    return _put(b, tmp + k, 24 - k)


cdef inline int _put_int(Buf* b, object v) except -1:
    return _put_i64(b, v)


# what _visible writes for a byte that is not part of a longer valid sequence: ASCII as it is
# (1 byte), any other as the four characters \\xNN; and which bytes may start one
cdef uint32_t _VIS4[256]
cdef unsigned char _VISN[256]
cdef unsigned char _LEAD[256]
for _k in range(256):
    _e = bytes([_k]) if _k < 0x80 else b"\\x%02x" % _k
    _VIS4[_k] = int.from_bytes(_e.ljust(4, b"\0"), "little")
    _VISN[_k] = len(_e)
    _LEAD[_k] = 1 if 0xC2 <= _k <= 0xF4 else 0


cdef inline Py_ssize_t _copy_sequence(char* o, const unsigned char* s, Py_ssize_t i,
                                      Py_ssize_t n) noexcept:
    """The valid UTF-8 sequence at s[i] copied to o: its length, or 0 (none: nothing copied)."""
    cdef Py_ssize_t L = _valid_len(s, i, n)
    if L:
        memcpy(o, s + i, L)
    return L


cdef extern from *:
    """
    #if defined(__SSE2__) && defined(__GNUC__)
    #include <emmintrin.h>
    #define KL_SSE2 1
    #endif
    /* Copy s's first run of bytes that a JSON string holds as they are (0x20-0x7f but for the
       quote 0x22 and the backslash 0x5c; a signed compare below 0x20 also catches 0x80 and
       up) to o; its length. 16 bytes a step where SSE2 is (every x86-64), each block stored
       whole before it is looked at (no memcpy call: a binary payload has runs of a byte or
       two), so o needs room for 16 bytes more than the run: _json_str reserves 6 an input
       byte, and a step only starts with 16 input bytes left. */
    static inline Py_ssize_t kl_copy_json_plain(char *o, const unsigned char *s,
                                                Py_ssize_t n) {
        Py_ssize_t i = 0;
    #ifdef KL_SSE2
        const __m128i sp = _mm_set1_epi8(0x20), qu = _mm_set1_epi8(0x22);
        const __m128i bs = _mm_set1_epi8(0x5c);
        for (; i + 16 <= n; i += 16) {
            __m128i v = _mm_loadu_si128((const __m128i *)(s + i));
            __m128i bad = _mm_or_si128(_mm_cmplt_epi8(v, sp),
                                       _mm_or_si128(_mm_cmpeq_epi8(v, qu), _mm_cmpeq_epi8(v, bs)));
            int m;
            _mm_storeu_si128((__m128i *)(o + i), v);
            m = _mm_movemask_epi8(bad);
            if (m) return i + __builtin_ctz((unsigned)m);
        }
    #endif
        for (; i < n; i++) {
            unsigned char c = s[i];
            if (c < 0x20 || c >= 0x80 || c == 0x22 || c == 0x5c) break;
            o[i] = (char)c;
        }
        return i;
    }
    /* 16 bytes at s copied to o when all are ASCII; else 0 (o's 16 bytes then undefined). */
    static inline int kl_copy_ascii16(char *o, const unsigned char *s) {
    #ifdef KL_SSE2
        __m128i v = _mm_loadu_si128((const __m128i *)s);
        _mm_storeu_si128((__m128i *)o, v);
        return !_mm_movemask_epi8(v);
    #else
        uint64_t a, b;
        memcpy(&a, s, 8);
        memcpy(&b, s + 8, 8);
        memcpy(o, s, 16);
        return !((a | b) & 0x8080808080808080ULL);
    #endif
    }
    """
    int kl_copy_ascii16(char* o, const unsigned char* s) noexcept nogil
    Py_ssize_t kl_copy_json_plain(char* o, const unsigned char* s, Py_ssize_t n) noexcept nogil


cdef int _visible(Buf* b, const unsigned char* s, Py_ssize_t n) except -1:
    """utf8_visible's text, as UTF-8: valid sequences as they are, any other byte as the
    four characters \\xNN."""
    cdef Py_ssize_t i = 0, L
    cdef unsigned char c
    cdef char* o
    _grow(b, n * 4)  # room for 4 bytes at every input byte: stores below may write 4 (or 16)
    o = b.p + b.n  # a local cursor: stores through b would reload b.p for every byte
    while i < n:
        if i + 16 <= n and kl_copy_ascii16(o, s + i):  # sixteen ASCII bytes at once
            o += 16
            i += 16
            continue
        c = s[i]
        if _LEAD[c]:  # binary data: the one branch most bytes do not take
            L = _copy_sequence(o, s, i, n)
            if L:
                o += L
                i += L
                continue
        memcpy(o, &_VIS4[c], 4)  # little-endian, as the table was built
        o += _VISN[c]
        i += 1
    b.n = o - b.p
    return 0


# what _json_str writes for one byte: printable ASCII as it is, '"' and '\\' and control
# characters as JSON escapes (orjson's), any byte of 0x80 and up as the visible escape \\xNN,
# itself escaped for JSON (\\\\xNN); little-endian, at most 6 bytes of the 8
cdef uint64_t _JSON8[256]
cdef unsigned char _JSONN[256]
_SHORT = {8: b"\\b", 9: b"\\t", 10: b"\\n", 12: b"\\f", 13: b"\\r", 34: b'\\"', 92: b"\\\\"}
for _k in range(256):
    if _k in _SHORT:
        _e = _SHORT[_k]
    elif _k < 0x20:
        _e = b"\\u%04x" % _k
    elif _k < 0x80:
        _e = bytes([_k])
    else:
        _e = b"\\\\x%02x" % _k
    _JSON8[_k] = int.from_bytes(_e.ljust(8, b"\0"), "little")
    _JSONN[_k] = len(_e)


cdef int _json_str(Buf* b, const unsigned char* s, Py_ssize_t n, bint visible) except -1:
    """A JSON string of UTF-8 text (visible: invalid bytes become the text \\xNN)."""
    cdef Py_ssize_t i = 0, L
    cdef unsigned char c
    cdef char* o
    _grow(b, n * 6 + 10)  # 6 bytes an input byte at most, and the 8 a table store writes
    o = b.p + b.n
    o[0] = 34
    o += 1
    while i < n:
        L = kl_copy_json_plain(o, s + i, n - i)  # plain bytes, while they last
        o += L
        i += L
        if i == n:
            break
        c = s[i]
        if visible:  # the same for every byte: the branch that costs is _LEAD's
            if _LEAD[c]:
                L = _copy_sequence(o, s, i, n)
                if L:
                    o += L
                    i += L
                    continue
        elif c >= 0x80:  # text already valid UTF-8 (a header key): as it is
            o[0] = <char>c
            o += 1
            i += 1
            continue
        memcpy(o, &_JSON8[c], 8)
        o += _JSONN[c]
        i += 1
    o[0] = 34
    b.n = o + 1 - b.p
    return 0


cdef int _hex_of(Buf* b, const unsigned char* s, Py_ssize_t n) except -1:
    """bytes.hex()"""
    cdef Py_ssize_t i
    _grow(b, 2 * n)
    for i in range(n):
        b.p[b.n] = _HEX[s[i] >> 4]
        b.p[b.n + 1] = _HEX[s[i] & 15]
        b.n += 2
    return 0


cdef int _b64_of(Buf* b, const unsigned char* s, Py_ssize_t n) except -1:
    """base64.b64encode"""
    cdef Py_ssize_t i = 0
    cdef unsigned int t
    _grow(b, 4 * (n // 3 + 1))
    while i + 3 <= n:
        t = (s[i] << 16) | (s[i + 1] << 8) | s[i + 2]
        b.p[b.n] = _B64[(t >> 18) & 63]
        b.p[b.n + 1] = _B64[(t >> 12) & 63]
        b.p[b.n + 2] = _B64[(t >> 6) & 63]
        b.p[b.n + 3] = _B64[t & 63]
        b.n += 4
        i += 3
    if n - i == 1:
        t = s[i] << 16
        b.p[b.n] = _B64[(t >> 18) & 63]
        b.p[b.n + 1] = _B64[(t >> 12) & 63]
        b.p[b.n + 2] = 61
        b.p[b.n + 3] = 61
        b.n += 4
    elif n - i == 2:
        t = (s[i] << 16) | (s[i + 1] << 8)
        b.p[b.n] = _B64[(t >> 18) & 63]
        b.p[b.n + 1] = _B64[(t >> 12) & 63]
        b.p[b.n + 2] = _B64[(t >> 6) & 63]
        b.p[b.n + 3] = 61
        b.n += 4
    return 0


cdef int _payload(Buf* b, object v, int mode) except -1:
    """null, or the bytes as utf8-visible (0), base64 (1) or hex (2) JSON strings."""
    if v is None:
        return _put(b, b"null", 4)
    cdef const unsigned char* s = <const unsigned char*>PyBytes_AS_STRING(v)
    cdef Py_ssize_t n = PyBytes_GET_SIZE(v)
    if mode == 0:
        return _json_str(b, s, n, True)
    _put(b, b'"', 1)
    if mode == 2:
        _hex_of(b, s, n)
    else:
        _b64_of(b, s, n)
    return _put(b, b'"', 1)


def records_jsonl(records, bytes prefix, bytes timestamp_type, int mode):
    """JSON Lines for v2 records (an iterable: a batch's, or a slice of them): the bytes
    orjson gives for dump's record rows, b"" for no record.

    `prefix` is the serialised start of every row up to the offset value
    (`{"kind":"record","topic":…,"partition":N,"offset":`); `timestamp_type` the
    serialised type name.
    """
    cdef Buf b
    cdef Py_ssize_t klen
    cdef const char* ks
    _take(&b)
    try:
        for r in records:
            _put(&b, PyBytes_AS_STRING(prefix), PyBytes_GET_SIZE(prefix))
            _put_int(&b, r.offset)
            _put(&b, b',"timestamp":', 13)
            _put_int(&b, r.timestamp)
            _put(&b, b',"timestampType":', 17)
            _put(&b, PyBytes_AS_STRING(timestamp_type), PyBytes_GET_SIZE(timestamp_type))
            _put(&b, b',"key":', 7)
            _payload(&b, r.key, mode)
            _put(&b, b',"value":', 9)
            _payload(&b, r.value, mode)
            _put(&b, b',"headers":[', 12)
            first = True
            for hk, hv in r.headers:
                if not first:
                    _put(&b, b",", 1)
                first = False
                _put(&b, b'{"key":', 7)
                ks = PyUnicode_AsUTF8AndSize(hk, &klen)
                _json_str(&b, <const unsigned char*>ks, klen, False)
                _put(&b, b',"value":', 9)
                _payload(&b, hv, mode)
                _put(&b, b"}", 1)
            _put(&b, b'],"sequence":', 13)
            _put_int(&b, r.sequence)
            _put(&b, b"}\n", 2)
        return PyBytes_FromStringAndSize(b.p, b.n)
    finally:
        _give(&b)


# -- kafka-dump-log text for dump --------------------------------------------------------------
# `kafkalog dump --records` in text: the record lines of commands/dump.py's _record_text, for
# v2 data records (the Python formatter keeps control records, legacy messages and --decode).

cdef int _text_payload(Buf* b, const char* label, Py_ssize_t label_n,
                       const unsigned char* s, Py_ssize_t n, int mode) except -1:
    _put(b, label, label_n)
    if mode == 0:
        return _visible(b, s, n)
    if mode == 2:
        return _hex_of(b, s, n)
    return _b64_of(b, s, n)


cdef struct Line:  # what a record's text line shows, from a Record or from the raw section
    int64_t offset
    int64_t timestamp
    int64_t sequence
    const unsigned char* key
    Py_ssize_t klen  # -1: null
    const unsigned char* value
    Py_ssize_t vlen  # -1: null


cdef int _text_head(Buf* b, Line* r, const char* tt, Py_ssize_t ttn) except -1:
    """A line up to its header keys: `| offset: … headerKeys: [`."""
    _put(b, b"| offset: ", 10)
    _put_i64(b, r.offset)
    _put(b, b" ", 1)
    _put(b, tt, ttn)
    _put(b, b": ", 2)
    _put_i64(b, r.timestamp)
    _put(b, b" keySize: ", 10)
    _put_i64(b, r.klen)
    _put(b, b" valueSize: ", 12)
    _put_i64(b, r.vlen)
    _put(b, b" sequence: ", 11)
    _put_i64(b, r.sequence)
    return _put(b, b" headerKeys: [", 14)


cdef int _text_tail(Buf* b, Line* r, int mode, bint print_data) except -1:
    """A line from the end of its header keys."""
    _put(b, b"]", 1)
    if print_data:
        if r.klen >= 0:
            _text_payload(b, b" key: ", 6, r.key, r.klen, mode)
        if r.vlen >= 0:
            _text_payload(b, b" payload: ", 10, r.value, r.vlen, mode)
    return _put(b, b"\n", 1)


cdef inline void _bytes_field(object v, const unsigned char** s, Py_ssize_t* n):
    if v is None:
        n[0] = -1
    else:
        s[0] = <const unsigned char*>PyBytes_AS_STRING(v)
        n[0] = PyBytes_GET_SIZE(v)


def records_text(records, bytes timestamp_type, int mode, bint print_data):
    """kafka-dump-log's lines for v2 data records (an iterable: a batch's, or a slice of
    them), UTF-8, one per record: the bytes TextRenderer writes for dump's record rows, b""
    for no record. `timestamp_type` is the type's name; `mode` the payload encoding as in
    records_jsonl; `print_data` adds keys and values."""
    cdef Buf b
    cdef Line line
    cdef Py_ssize_t klen
    cdef const char* ks
    cdef const char* tt = PyBytes_AS_STRING(timestamp_type)
    cdef Py_ssize_t ttn = PyBytes_GET_SIZE(timestamp_type)
    _take(&b)
    try:
        for r in records:
            key = r.key  # held: `line` points into them
            value = r.value
            line.offset = r.offset
            line.timestamp = r.timestamp
            line.sequence = r.sequence
            _bytes_field(key, &line.key, &line.klen)
            _bytes_field(value, &line.value, &line.vlen)
            _text_head(&b, &line, tt, ttn)
            first = True
            for hk, _ in r.headers:
                if not first:
                    _put(&b, b",", 1)
                first = False
                ks = PyUnicode_AsUTF8AndSize(hk, &klen)
                _put(&b, ks, klen)
            _text_tail(&b, &line, mode, print_data)
        return PyBytes_FromStringAndSize(b.p, b.n)
    finally:
        _give(&b)


cdef int _raw_header_keys(Buf* b, const unsigned char* p, int64_t end, Rec* r) except -1:
    """The header keys of a record _parse_record accepted, comma-separated, straight from
    the section: 0, or 1 (nothing sure written) for a key that is not strict UTF-8, which
    the object path shows as Java decodes it."""
    cdef int64_t pos = r.hpos
    cdef int32_t klen, vlen
    cdef Py_ssize_t j
    for j in range(r.hcount):
        _varint(p, end, &pos, &klen, E_PREMATURE)
        if not _utf8_ok(p + pos, klen):
            return 1
        if j:
            _put(b, b",", 1)
        _put(b, <const char*>p + pos, klen)
        pos += klen
        _varint(p, end, &pos, &vlen, E_PREMATURE)
        if vlen > 0:
            pos += vlen
    return 0


def section_text(data, count, base_offset, base_timestamp, base_sequence, log_append_time,
                 bytes timestamp_type, int mode, bint print_data):
    """records_text(decode_records(data, …), …) in one pass that builds no object per
    record: the same bytes, or None where decode_records would raise (or hand the section
    to the pure decoder) or a header key is not UTF-8. The caller then takes that path,
    which says why; nothing is written before the whole section has parsed."""
    cdef RecordIter it = _records_of(data, count, base_offset, base_timestamp, base_sequence,
                                     log_append_time)
    cdef Buf b
    cdef Line line
    cdef Rec r
    cdef int64_t pos = 0
    cdef Py_ssize_t i
    cdef const char* tt = PyBytes_AS_STRING(timestamp_type)
    cdef Py_ssize_t ttn = PyBytes_GET_SIZE(timestamp_type)
    if it is None:
        return None
    if not it.create_time:
        try:
            line.timestamp = it.log_append_time  # an int (_records_of), maybe past 64 bits
        except OverflowError:
            return None
    _take(&b)
    try:
        for i in range(it.count):
            if _parse_checked(it, &pos, &r):
                return None
            line.offset = it.base_offset + r.offset_delta  # in range: checked
            if it.create_time:
                line.timestamp = it.base_timestamp + r.ts_delta
            line.sequence = -1 if it.base_sequence < 0 else \
                _sequence(it.base_sequence, r.offset_delta)
            # any negative length is a null (DefaultRecord.readFrom), shown as -1
            line.klen = r.klen if r.klen >= 0 else -1
            line.key = it.p + r.kpos if r.klen >= 0 else NULL
            line.vlen = r.vlen if r.vlen >= 0 else -1
            line.value = it.p + r.vpos if r.vlen >= 0 else NULL
            _text_head(&b, &line, tt, ttn)
            if _raw_header_keys(&b, it.p, it.end, &r):
                return None
            _text_tail(&b, &line, mode, print_data)
        if pos != it.end:
            return None
        return PyBytes_FromStringAndSize(b.p, b.n)
    finally:
        _give(&b)


# -- records as Arrow columns ---------------------------------------------------------------
# The Spark data source's hot loop: v2 records go from the records section straight into
# Arrow buffers, no Python object per record. kafkalog_cli/spark/rows.py assembles the
# arrays (this module does not import pyarrow) and keeps the pure-Python twin it is tested
# against.

cdef enum:  # the buffers of a RecordColumns, by index
    C_OFFSET, C_TS, C_TS_VALID, C_KEY_VALID, C_KEY_OFFS, C_KEY_DATA, C_VAL_VALID, C_VAL_OFFS,
    C_VAL_DATA, C_SEQ, C_TSTYPE, C_EPOCH, C_EPOCH_VALID, C_PID, C_PEPOCH, C_TXN, C_BASE, C_POS,
    C_H_OFFS, C_HK_OFFS, C_HK_DATA, C_HV_VALID, C_HV_OFFS, C_HV_DATA, C_COUNT

# name of each buffer in take()'s result; valid(ity) buffers hold one byte per value here and
# leave as Arrow bitmaps (None when nothing is null)
_COLUMN_BUFFERS = ("offset", "timestamp", "timestamp_valid", "key_valid", "key_offsets",
                   "key_data", "value_valid", "value_offsets", "value_data", "sequence",
                   "timestampType", "leaderEpoch", "leaderEpoch_valid", "producerId",
                   "producerEpoch", "isTransactional", "batchBaseOffset", "position",
                   "headers_offsets", "hkey_offsets", "hkey_data", "hvalue_valid",
                   "hvalue_offsets", "hvalue_data")
_BITMAPS = frozenset({"timestamp_valid", "key_valid", "value_valid", "leaderEpoch_valid",
                      "hvalue_valid", "isTransactional"})

cdef int64_t _US_LIMIT = 9223372036854775  # |ms| beyond this has no microsecond timestamp
cdef int64_t _BINARY_LIMIT = 2147483647  # Arrow binary: int32 offsets


cdef inline int _put8(Buf* b, int64_t v) except -1:
    return _put(b, <const char*>&v, 8)


cdef inline int _put4(Buf* b, int32_t v) except -1:
    return _put(b, <const char*>&v, 4)


cdef inline int _put1(Buf* b, unsigned char v) except -1:
    return _put(b, <const char*>&v, 1)


cdef int _put_offset(Buf* offs, Buf* data) except -1:
    """Close one binary value: its end offset (Arrow binary has int32 offsets)."""
    if data.n > _BINARY_LIMIT:
        raise CorruptBatch("records inflate past what one Arrow batch can hold")
    return _put4(offs, <int32_t>data.n)


cdef int _put_binary(Buf* valid, Buf* offs, Buf* data, const char* s, int64_t n) except -1:
    """One binary value (n < 0: null)."""
    if n >= 0:
        _put(data, s, n)
    _put1(valid, n >= 0)
    return _put_offset(offs, data)


cdef bytes _bitmap(Buf* b):
    """One byte per value (0 or 1) as an Arrow bitmap, or None when every byte is 1."""
    cdef Py_ssize_t i, n = b.n
    cdef bytes out
    cdef unsigned char* q
    cdef const unsigned char* s = <const unsigned char*>b.p
    for i in range(n):
        if not s[i]:
            break
    else:
        return None
    out = PyBytes_FromStringAndSize(NULL, (n + 7) // 8)
    q = <unsigned char*>PyBytes_AS_STRING(out)
    memset(q, 0, (n + 7) // 8)
    for i in range(n):
        if s[i]:
            q[i >> 3] |= <unsigned char>(1 << (i & 7))
    return out


cdef class RecordColumns:
    """Rows of the data source's records schema, gathered column by column.

    add_v2 takes a v2 records section (inflated) with its batch's header fields; add_records
    takes decoded Record objects (legacy messages). A batch goes in whole or not at all: a
    malformed record raises the CorruptBatch decode_records would raise and leaves the columns
    as they were. take() hands the buffers over and starts afresh.
    """
    cdef Buf b[C_COUNT]
    cdef readonly Py_ssize_t rows
    cdef Py_ssize_t nheaders

    def __cinit__(self):
        cdef int i
        for i in range(C_COUNT):
            self.b[i].p = NULL
            self.b[i].n = 0
            self.b[i].cap = 0
        self._start()

    def __dealloc__(self):
        cdef int i
        for i in range(C_COUNT):
            free(self.b[i].p)
            self.b[i].p = NULL

    cdef int _start(self) except -1:
        cdef int i
        for i in range(C_COUNT):
            self.b[i].n = 0
        self.rows = 0
        self.nheaders = 0
        for i in (C_KEY_OFFS, C_VAL_OFFS, C_H_OFFS, C_HK_OFFS, C_HV_OFFS):
            _put4(&self.b[i], 0)
        return 0

    @property
    def data_bytes(self):
        """Payload bytes held (keys, values, header keys and values)."""
        return (self.b[C_KEY_DATA].n + self.b[C_VAL_DATA].n + self.b[C_HK_DATA].n
                + self.b[C_HV_DATA].n)

    cdef int _batch_fields(self, int32_t tstype, int32_t epoch, int64_t pid, int32_t pepoch,
                           bint txn, int64_t base, int64_t position) except -1:
        """The batch's own values, repeated on each of its rows."""
        _put4(&self.b[C_TSTYPE], tstype)
        _put4(&self.b[C_EPOCH], epoch if epoch >= 0 else 0)
        _put1(&self.b[C_EPOCH_VALID], epoch >= 0)
        _put8(&self.b[C_PID], pid)
        _put4(&self.b[C_PEPOCH], pepoch)
        _put1(&self.b[C_TXN], txn)
        _put8(&self.b[C_BASE], base)
        _put8(&self.b[C_POS], position)
        return 0

    cdef int _timestamp(self, int64_t ms, bint valid) except -1:
        """Kafka's epoch ms as Spark's µs (null when it has no µs value: Long overflow)."""
        valid = valid and -_US_LIMIT <= ms <= _US_LIMIT
        _put8(&self.b[C_TS], ms * 1000 if valid else 0)
        return _put1(&self.b[C_TS_VALID], valid)

    cdef int _header(self, const char* k, int64_t klen, const char* v, int64_t vlen) except -1:
        cdef bytes fixed
        if _utf8_ok(<const unsigned char*>k, <int32_t>klen):
            _put(&self.b[C_HK_DATA], k, klen)
        else:  # an Arrow string is UTF-8: the key as Kafka reads it (U+FFFD), as the rows do
            fixed = PyUnicode_DecodeUTF8(k, klen, _JAVA).encode("utf-8")
            _put(&self.b[C_HK_DATA], PyBytes_AS_STRING(fixed), PyBytes_GET_SIZE(fixed))
        _put_offset(&self.b[C_HK_OFFS], &self.b[C_HK_DATA])
        _put_binary(&self.b[C_HV_VALID], &self.b[C_HV_OFFS], &self.b[C_HV_DATA], v, vlen)
        self.nheaders += 1
        return 0

    cdef int _end_row(self) except -1:
        if self.nheaders > _BINARY_LIMIT:
            raise CorruptBatch("records inflate past what one Arrow batch can hold")
        _put4(&self.b[C_H_OFFS], <int32_t>self.nheaders)
        self.rows += 1
        return 0

    cdef void _rollback(self, Py_ssize_t* marks, Py_ssize_t rows, Py_ssize_t nheaders):
        cdef int i
        for i in range(C_COUNT):
            self.b[i].n = marks[i]
        self.rows = rows
        self.nheaders = nheaders

    def add_v2(self, bytes data, Py_ssize_t count, int64_t base_offset, int64_t base_timestamp,
               int64_t base_sequence, object log_append_time, object lo, object until,
               int32_t timestamp_type, int32_t leader_epoch, int64_t producer_id,
               int32_t producer_epoch, bint transactional, int64_t position):
        """Decode `count` records (RecordBatch.records() rules) and keep those with
        lo <= offset < until (None: unbounded). Returns how many were kept."""
        cdef const unsigned char *p = <const unsigned char *>PyBytes_AS_STRING(data)
        cdef int64_t end = PyBytes_GET_SIZE(data)
        cdef int64_t pos = 0, hpos, kpos, offset, start
        cdef int64_t c_lo = I64_MIN if lo is None else lo
        cdef int64_t c_until = I64_MAX if until is None else until
        cdef bint bounded = until is not None
        cdef bint lat = log_append_time is not None
        cdef int64_t lat_ms = log_append_time if lat else 0
        cdef Rec r
        cdef Err err
        cdef Py_ssize_t i, j, marks[C_COUNT]
        cdef Py_ssize_t rows0 = self.rows, nheaders0 = self.nheaders
        cdef int32_t klen, vlen
        if count <= 0:  # RecordBatch.records() checks the count before decoding
            return 0
        for i in range(C_COUNT):
            marks[i] = self.b[i].n
        err.code = 0
        err.pos = 0
        err.value = 0
        try:
            for i in range(count):
                start = pos
                if _parse_record(p, end, &pos, &r, &err) or \
                        _overflows(base_offset, base_timestamp, not lat, &r, start, &err):
                    break  # RecordBatch.records() fails the batch, whatever the bounds
                offset = base_offset + r.offset_delta
                if offset < c_lo or (bounded and offset >= c_until):
                    continue
                _put8(&self.b[C_OFFSET], offset)
                if lat:
                    self._timestamp(lat_ms, True)
                else:
                    self._timestamp(base_timestamp + r.ts_delta, True)
                _put_binary(&self.b[C_KEY_VALID], &self.b[C_KEY_OFFS], &self.b[C_KEY_DATA],
                            <const char*>p + r.kpos, r.klen)
                _put_binary(&self.b[C_VAL_VALID], &self.b[C_VAL_OFFS], &self.b[C_VAL_DATA],
                            <const char*>p + r.vpos, r.vlen)
                _put4(&self.b[C_SEQ], <int32_t>_sequence(base_sequence, r.offset_delta))
                hpos = r.hpos
                for j in range(r.hcount):  # checked by _parse_record
                    _varint(p, end, &hpos, &klen, E_PREMATURE)
                    kpos = hpos
                    hpos += klen
                    _varint(p, end, &hpos, &vlen, E_PREMATURE)
                    self._header(<const char*>p + kpos, klen, <const char*>p + hpos, vlen)
                    if vlen > 0:
                        hpos += vlen
                self._batch_fields(timestamp_type, leader_epoch, producer_id, producer_epoch,
                                   transactional, base_offset, position)
                self._end_row()
            else:
                if pos != end:
                    _fail(&err, E_TRAILING, pos, end - pos)
            if err.code:
                _raise(&err)
        except BaseException:
            self._rollback(marks, rows0, nheaders0)
            raise
        return self.rows - rows0

    def add_records(self, list records, object lo, object until, int32_t timestamp_type,
                    int32_t leader_epoch, int64_t producer_id, int32_t producer_epoch,
                    bint transactional, int64_t base_offset, int64_t position):
        """Decoded records (legacy messages, or anything add_v2 does not take), same rules."""
        cdef Py_ssize_t i, marks[C_COUNT]
        cdef Py_ssize_t rows0 = self.rows, nheaders0 = self.nheaders
        cdef int64_t offset
        cdef bytes k, v
        for i in range(C_COUNT):
            marks[i] = self.b[i].n
        try:
            for r in records:
                offset = r.offset
                if (lo is not None and offset < lo) or (until is not None and offset >= until):
                    continue
                _put8(&self.b[C_OFFSET], offset)
                ms_obj = r.timestamp
                if -_US_LIMIT <= ms_obj <= _US_LIMIT:
                    self._timestamp(ms_obj, True)
                else:
                    self._timestamp(0, False)
                k = r.key
                v = r.value
                _put_binary(&self.b[C_KEY_VALID], &self.b[C_KEY_OFFS], &self.b[C_KEY_DATA],
                            NULL if k is None else PyBytes_AS_STRING(k),
                            -1 if k is None else PyBytes_GET_SIZE(k))
                _put_binary(&self.b[C_VAL_VALID], &self.b[C_VAL_OFFS], &self.b[C_VAL_DATA],
                            NULL if v is None else PyBytes_AS_STRING(v),
                            -1 if v is None else PyBytes_GET_SIZE(v))
                _put4(&self.b[C_SEQ], r.sequence)
                for hk, hv in r.headers:
                    kb = (<str>hk).encode("utf-8")
                    v = hv
                    self._header(PyBytes_AS_STRING(kb), PyBytes_GET_SIZE(kb),
                                 NULL if v is None else PyBytes_AS_STRING(v),
                                 -1 if v is None else PyBytes_GET_SIZE(v))
                self._batch_fields(timestamp_type, leader_epoch, producer_id, producer_epoch,
                                   transactional, base_offset, position)
                self._end_row()
        except OverflowError:  # an offset past a long
            self._rollback(marks, rows0, nheaders0)
            raise CorruptBatch(_OFFSET_OVERFLOW) from None
        except BaseException:
            self._rollback(marks, rows0, nheaders0)
            raise
        return self.rows - rows0

    def take(self):
        """{buffer name: bytes (bitmaps: bytes or None)} and the row and header counts; the
        columns start empty again."""
        cdef int i
        out = {}
        for i in range(C_COUNT):
            name = _COLUMN_BUFFERS[i]
            if name in _BITMAPS:
                out[name] = _bitmap(&self.b[i])
            else:
                out[name] = PyBytes_FromStringAndSize(self.b[i].p, self.b[i].n)
        if out["isTransactional"] is None:  # a boolean column's data is the bitmap itself
            out["isTransactional"] = _bitmap_all_set(self.rows)
        rows, headers = self.rows, self.nheaders
        self._start()
        return out, rows, headers


cdef bytes _bitmap_all_set(Py_ssize_t n):
    cdef bytes out = PyBytes_FromStringAndSize(NULL, (n + 7) // 8)
    memset(PyBytes_AS_STRING(out), 0xFF, (n + 7) // 8)
    return out
