# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
# cython: cdivision=True, embedsignature=True
"""Compiled twin of the cleaner's hot loops: Kafka's SkimpyOffsetMap
(storage/maintenance/offset_map.py, the specification) and, per v2 batch, the offset-map pass
and the record filter of storage/maintenance/compaction.py.

The map is the same table, byte for byte: a slot is MD5(key) (16 bytes) + offset (int64 BE),
empty when all 24 bytes are zero, probed as SkimpyOffsetMap.positionOf does. MD5 is computed
here (RFC 1321, single block for keys under 56 bytes): hashlib's per-call object costs more
than the hash.

The batch functions take the inflated records section and first check it with fastcodec's
parser (kl_records_clean: the pure decoder's every rule, plus strictly increasing offsets);
when it is not clean they change nothing and answer "not sure", and the caller runs the pure
loop, which raises the same error the pure path always raised.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free, malloc
from libc.string cimport memcmp, memcpy, memmove

from kafkalog_cli._speedups.fastcodec cimport kl_records_clean
from kafkalog_cli.storage.maintenance.offset_map import FullError

cdef extern from *:
    """
    #include <math.h>
    #include <string.h>
    #include <stdint.h>

    /* MD5 (RFC 1321). K[i] = floor(2^32 * |sin(i + 1)|), as the RFC defines the table. */
    static uint32_t kl_md5_k[64];
    static const unsigned char kl_md5_s[4][4] = {{7, 12, 17, 22}, {5, 9, 14, 20},
                                                 {4, 11, 16, 23}, {6, 10, 15, 21}};
    static void kl_md5_init(void) {
        int i;
        for (i = 0; i < 64; i++) kl_md5_k[i] = (uint32_t)floor(fabs(sin(i + 1.0)) * 4294967296.0);
    }
    #define KL_ROTL(x, c) (((x) << (c)) | ((x) >> (32 - (c))))

    static void kl_md5_block(uint32_t st[4], const unsigned char *blk) {
        uint32_t m[16], a = st[0], b = st[1], c = st[2], d = st[3], f, t;
        int i, g;
        for (i = 0; i < 16; i++)
            m[i] = (uint32_t)blk[4 * i] | ((uint32_t)blk[4 * i + 1] << 8) |
                   ((uint32_t)blk[4 * i + 2] << 16) | ((uint32_t)blk[4 * i + 3] << 24);
        for (i = 0; i < 64; i++) {
            if (i < 16) { f = (b & c) | (~b & d); g = i; }
            else if (i < 32) { f = (d & b) | (~d & c); g = (5 * i + 1) & 15; }
            else if (i < 48) { f = b ^ c ^ d; g = (3 * i + 5) & 15; }
            else { f = c ^ (b | ~d); g = (7 * i) & 15; }
            f += a + kl_md5_k[i] + m[g];
            t = kl_md5_s[i >> 4][i & 3];
            a = d; d = c; c = b;
            b += KL_ROTL(f, t);
        }
        st[0] += a; st[1] += b; st[2] += c; st[3] += d;
    }

    static void kl_md5(const unsigned char *p, size_t n, unsigned char out[16]) {
        uint32_t st[4] = {0x67452301u, 0xefcdab89u, 0x98badcfeu, 0x10325476u};
        unsigned char tail[128];
        size_t full = n & ~(size_t)63, rest = n - full, tn;
        uint64_t bits = (uint64_t)n << 3;
        size_t i;
        for (i = 0; i < full; i += 64) kl_md5_block(st, p + i);
        memcpy(tail, p + full, rest);
        tail[rest] = 0x80;
        tn = rest < 56 ? 64 : 128;
        memset(tail + rest + 1, 0, tn - rest - 1);
        for (i = 0; i < 8; i++) tail[tn - 8 + i] = (unsigned char)(bits >> (8 * i));
        kl_md5_block(st, tail);
        if (tn == 128) kl_md5_block(st, tail + 64);
        for (i = 0; i < 4; i++) {
            out[4 * i] = (unsigned char)st[i];
            out[4 * i + 1] = (unsigned char)(st[i] >> 8);
            out[4 * i + 2] = (unsigned char)(st[i] >> 16);
            out[4 * i + 3] = (unsigned char)(st[i] >> 24);
        }
    }

    static inline void kl_prefetch(const void *p) { __builtin_prefetch(p, 1, 0); }
    static inline int kl_sub_overflows(int64_t a, int64_t b, int64_t *out) {
        return __builtin_sub_overflow(a, b, out);
    }
    """
    void kl_md5_init() noexcept nogil
    void kl_md5(const unsigned char *p, size_t n, unsigned char *out) noexcept nogil
    void kl_prefetch(const void *p) noexcept nogil
    bint kl_sub_overflows(int64_t a, int64_t b, int64_t *out) noexcept nogil

kl_md5_init()

DEF ENTRY = 24
DEF HASH = 16
cdef int64_t INT_MIN32 = -2147483648
# per batch, hashes are computed first and the first slot of each prefetched, then the
# probes run: the table is far bigger than the caches, so one miss per key is the cost
DEF AHEAD = 1024

# status of map_section
MAPPED = 0
FULL = 1
NOT_SURE = 2


def md5(key):
    """MD5 of `key` (bytes): hashlib.md5(key).digest(), for the tests."""
    cdef unsigned char out[16]
    cdef bytes k = bytes(key)
    kl_md5(<const unsigned char *>PyBytes_AS_STRING(k), PyBytes_GET_SIZE(k), out)
    return PyBytes_FromStringAndSize(<const char *>out, 16)


# --- varints of a section kl_records_clean has accepted (no bounds to check) --------------

cdef inline int32_t _vi(const unsigned char *p, int64_t *ppos) noexcept nogil:
    cdef int64_t pos = ppos[0]
    cdef uint32_t u = 0, b
    cdef int shift = 0
    while True:
        b = p[pos]
        pos += 1
        u |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
    ppos[0] = pos
    return <int32_t>((u >> 1) ^ (<uint32_t>0 - (u & 1)))


cdef inline int64_t _vl(const unsigned char *p, int64_t *ppos) noexcept nogil:
    cdef int64_t pos = ppos[0]
    cdef uint64_t u = 0, b
    cdef int shift = 0
    while True:
        b = p[pos]
        pos += 1
        u |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
    ppos[0] = pos
    return <int64_t>((u >> 1) ^ (<uint64_t>0 - (u & 1)))


cdef inline int64_t _put_uv(unsigned char *o, int64_t n, uint64_t u) noexcept nogil:
    while u >= 0x80:
        o[n] = <unsigned char>((u & 0x7F) | 0x80)
        n += 1
        u >>= 7
    o[n] = <unsigned char>u
    return n + 1


cdef inline int64_t _put_vi(unsigned char *o, int64_t n, int32_t v) noexcept nogil:
    return _put_uv(o, n, <uint32_t>((<uint32_t>v << 1) ^ <uint32_t>(v >> 31)))


cdef inline int64_t _put_vl(unsigned char *o, int64_t n, int64_t v) noexcept nogil:
    return _put_uv(o, n, (<uint64_t>v << 1) ^ <uint64_t>(v >> 63))


cdef struct Rec:
    int64_t start, end      # the whole record, its length varint included
    int64_t ts_delta
    int32_t offset_delta
    int64_t kpos
    int32_t klen            # < 0: null
    int64_t vpos
    int32_t vlen            # < 0: null
    int64_t hpos            # the header count varint


cdef inline void _walk(const unsigned char *p, int64_t *ppos, Rec *r) noexcept nogil:
    """One record of a checked section: where its parts are; ppos past it."""
    cdef int64_t pos = ppos[0]
    cdef int32_t length
    r.start = pos
    length = _vi(p, &pos)
    r.end = pos + length
    pos += 1  # attributes
    r.ts_delta = _vl(p, &pos)
    r.offset_delta = _vi(p, &pos)
    r.klen = _vi(p, &pos)
    r.kpos = pos
    if r.klen > 0:
        pos += r.klen
    r.vlen = _vi(p, &pos)
    r.vpos = pos
    if r.vlen > 0:
        pos += r.vlen
    r.hpos = pos
    ppos[0] = r.end


cdef inline uint32_t _slot(const unsigned char *h, int64_t attempt, uint32_t slots) noexcept nogil:
    """SkimpyOffsetMap.positionOf as a slot: the int at min(attempt, 12) of the hash, plus
    attempt - 12 past it (Java int arithmetic), Utils.abs, modulo the slots."""
    cdef int64_t i = attempt if attempt < 12 else 12
    cdef uint32_t u = ((<uint32_t>h[i] << 24) | (<uint32_t>h[i + 1] << 16) |
                       (<uint32_t>h[i + 2] << 8) | <uint32_t>h[i + 3])
    cdef int32_t probe
    if attempt > 12:
        u = u + <uint32_t>(attempt - 12)
    probe = <int32_t>u
    if probe == INT_MIN32:
        return 0
    if probe < 0:
        probe = -probe
    return <uint32_t>probe % slots


cdef inline bint _empty(const unsigned char *e) noexcept nogil:
    cdef uint64_t a, b, c
    memcpy(&a, e, 8)
    memcpy(&b, e + 8, 8)
    memcpy(&c, e + 16, 8)
    return (a | b | c) == 0


cdef inline void _store_offset(unsigned char *e, int64_t offset) noexcept nogil:
    cdef uint64_t u = <uint64_t>offset
    cdef int i
    for i in range(8):
        e[HASH + i] = <unsigned char>(u >> (56 - 8 * i))


cdef inline int64_t _load_offset(const unsigned char *e) noexcept nogil:
    cdef uint64_t u = 0
    cdef int i
    for i in range(8):
        u = (u << 8) | e[HASH + i]
    return <int64_t>u


cdef class OffsetMap:
    """offset_map.OffsetMap, compiled: same constructor, attributes, put/get and table."""

    cdef unsigned char *buf
    cdef readonly int64_t slots, max_entries
    cdef public int64_t size, latest_offset

    def __cinit__(self, memory, load_factor=0.9):
        self.buf = NULL

    def __init__(self, memory, load_factor=0.9):
        cdef int64_t slots = memory // ENTRY
        if slots * load_factor <= 1:
            raise ValueError("the dedupe buffer holds fewer than 2 entries")
        if slots > 0x7FFFFFFF:
            raise ValueError("the dedupe buffer holds more than 2**31 - 1 entries")
        self.slots = slots
        self.max_entries = int(slots * load_factor)
        # calloc: untouched pages stay unmapped, as bytearray's would
        self.buf = <unsigned char *>calloc(slots, ENTRY)
        if self.buf == NULL:
            raise MemoryError()
        self.size = 0
        self.latest_offset = -1

    def __dealloc__(self):
        free(self.buf)

    cdef inline void _put(self, const unsigned char *h, int64_t offset) noexcept nogil:
        """put() after the size check and the hash: insert or overwrite."""
        cdef int64_t attempt = 0
        cdef unsigned char *e
        cdef uint32_t slots = <uint32_t>self.slots
        while True:
            e = self.buf + <int64_t>_slot(h, attempt, slots) * ENTRY
            if memcmp(e, h, HASH) == 0:
                _store_offset(e, offset)
                break
            if _empty(e):
                memcpy(e, h, HASH)
                _store_offset(e, offset)
                self.size += 1
                break
            attempt += 1
        self.latest_offset = offset

    cdef inline int64_t _get(self, const unsigned char *h) noexcept nogil:
        cdef int64_t attempt = 0
        cdef int64_t limit = self.slots + 12  # SkimpyOffsetMap.get's maxAttempts
        cdef const unsigned char *e
        cdef uint32_t slots = <uint32_t>self.slots
        while attempt < limit:
            e = self.buf + <int64_t>_slot(h, attempt, slots) * ENTRY
            if memcmp(e, h, HASH) == 0:
                return _load_offset(e)
            if _empty(e):
                return -1
            attempt += 1
        return -1

    def put(self, key, int64_t offset):
        cdef unsigned char h[16]
        cdef bytes k
        if self.size >= self.max_entries:
            raise FullError
        k = bytes(key)
        kl_md5(<const unsigned char *>PyBytes_AS_STRING(k), PyBytes_GET_SIZE(k), h)
        self._put(h, offset)

    def get(self, key):
        cdef unsigned char h[16]
        cdef bytes k = bytes(key)
        kl_md5(<const unsigned char *>PyBytes_AS_STRING(k), PyBytes_GET_SIZE(k), h)
        return self._get(h)

    def table(self):
        """The whole slot array (the tests compare it with the pure map's)."""
        return PyBytes_FromStringAndSize(<const char *>self.buf, self.slots * ENTRY)


cdef int _clean(bytes data, int64_t count, int64_t base_offset, int64_t base_timestamp,
                bint create_time) except -1:
    cdef int64_t first, last
    return kl_records_clean(<const unsigned char *>PyBytes_AS_STRING(data),
                            PyBytes_GET_SIZE(data), count, base_offset, base_timestamp,
                            create_time, &first, &last)


def map_section(OffsetMap m, bytes data, int64_t count, int64_t base_offset,
                int64_t base_timestamp, bint create_time, int64_t start):
    """build_offset_map's loop over one batch's records: every keyed record at or past
    `start` is put, in order. MAPPED; FULL when a record found the map full (the records
    before it are in, latest_offset is the last put); NOT_SURE (nothing put) when the
    section is not clean: run the pure loop."""
    cdef const unsigned char *p = <const unsigned char *>PyBytes_AS_STRING(data)
    cdef int64_t pos = 0, i, j, n, off
    cdef Rec r
    cdef unsigned char *hashes
    cdef int64_t *offsets
    cdef uint32_t slots = <uint32_t>m.slots
    if count <= 0:
        return MAPPED
    if not _clean(data, count, base_offset, base_timestamp, create_time):
        return NOT_SURE
    hashes = <unsigned char *>malloc(AHEAD * (HASH + 8))
    if hashes == NULL:
        raise MemoryError()
    offsets = <int64_t *>(hashes + AHEAD * HASH)
    try:
        i = 0
        while i < count:
            n = 0
            while i < count and n < AHEAD:
                _walk(p, &pos, &r)
                i += 1
                off = base_offset + r.offset_delta
                if r.klen < 0 or off < start:
                    continue
                kl_md5(p + r.kpos, r.klen, hashes + n * HASH)
                kl_prefetch(m.buf + <int64_t>_slot(hashes + n * HASH, 0, slots) * ENTRY)
                offsets[n] = off
                n += 1
            for j in range(n):
                if m.size >= m.max_entries:
                    return FULL
                m._put(hashes + j * HASH, offsets[j])
    finally:
        free(hashes)
    return MAPPED


def filter_section(OffsetMap m, bytes data, int64_t count, int64_t base_offset,
                   int64_t base_timestamp, log_append_time, bint drop_tombstones,
                   horizon, int64_t new_horizon):
    """_filter_batch's record loop for a v2 data batch that is not discarded.

    `drop_tombstones`: the batch's delete horizon has passed. `horizon`: the batch's delete
    horizon or None; `new_horizon`: the one a batch gets when a tombstone stays and it has
    none. Returns None (not clean: run the pure loop), or (kept, has_tombstone, body,
    base_timestamp, max_timestamp) where body is None when every record stays (the caller
    copies the batch or rebuilds it for its horizon), else the re-encoded records section
    (uncompressed) of the kept records with the base and max timestamps its header needs."""
    cdef const unsigned char *p = <const unsigned char *>PyBytes_AS_STRING(data)
    cdef bint create_time = log_append_time is None
    cdef int64_t lat = 0 if create_time else <int64_t>log_append_time
    cdef int64_t pos = 0, i, j, n, k, off, ts, found, latest = m.latest_offset
    cdef int64_t base_ts, max_ts, delta, out_n, body_start, hpos, hn, hk
    cdef int32_t hcount, hklen, hvlen
    cdef bint has_tombstone = False, keep, first, has_horizon = horizon is not None
    cdef int64_t horizon_v = <int64_t>horizon if has_horizon else 0
    cdef Rec r
    cdef Rec *recs
    cdef unsigned char *hashes
    cdef unsigned char *kept_flag
    cdef unsigned char *out
    cdef int64_t kept = 0
    cdef uint32_t slots = <uint32_t>m.slots
    if count <= 0:
        return None
    if not _clean(data, count, base_offset, base_timestamp, create_time):
        return None
    recs = <Rec *>malloc(count * sizeof(Rec) + count + AHEAD * HASH)
    if recs == NULL:
        raise MemoryError()
    kept_flag = <unsigned char *>(recs + count)
    hashes = kept_flag + count
    out = NULL
    try:
        for i in range(count):
            _walk(p, &pos, &recs[i])
        i = 0
        while i < count:
            # hash (and prefetch) the records that need the map, then judge them in order
            n = 0
            j = i
            while j < count and n < AHEAD:
                off = base_offset + recs[j].offset_delta
                if off <= latest and recs[j].klen >= 0:
                    kl_md5(p + recs[j].kpos, recs[j].klen, hashes + n * HASH)
                    kl_prefetch(m.buf + <int64_t>_slot(hashes + n * HASH, 0, slots) * ENTRY)
                    n += 1
                j += 1
            k = 0
            while i < j:
                off = base_offset + recs[i].offset_delta
                keep = True
                if off <= latest:
                    if recs[i].klen < 0:
                        keep = False
                    else:
                        found = m._get(hashes + k * HASH)
                        k += 1
                        if off < found:
                            keep = False
                        elif recs[i].vlen < 0:
                            if drop_tombstones:
                                keep = False
                            else:
                                has_tombstone = True
                kept_flag[i] = keep
                kept += keep
                i += 1
        if kept == 0:
            return 0, False, b"", 0, 0
        if kept == count and not (has_tombstone and not has_horizon):
            return kept, has_tombstone, None, 0, 0
        # the timestamps: record ts is the LogAppendTime or base + delta; the new base is the
        # horizon, else the first kept record's
        base_ts = 0
        max_ts = 0
        first = True
        for i in range(count):
            if not kept_flag[i]:
                continue
            ts = base_timestamp + recs[i].ts_delta if create_time else lat
            if first:
                base_ts = ts
                max_ts = ts
                first = False
            elif ts > max_ts:
                max_ts = ts
        if has_horizon:
            base_ts = horizon_v
        elif has_tombstone:
            base_ts = new_horizon
        # each record re-encoded: at most 9 bytes more for its timestamp delta and 4 for its
        # length; canonical varints are never longer than the ones read
        out = <unsigned char *>malloc(PyBytes_GET_SIZE(data) + 13 * kept + 16)
        if out == NULL:
            raise MemoryError()
        out_n = 0
        for i in range(count):
            if not kept_flag[i]:
                continue
            r = recs[i]
            ts = base_timestamp + r.ts_delta if create_time else lat
            if kl_sub_overflows(ts, base_ts, &delta):
                return None  # the pure encoder decides what such a delta becomes
            # the body first, 5 bytes past the length's place; moved down after
            body_start = out_n + 5
            n = body_start
            out[n] = 0  # attributes: unused
            n += 1
            n = _put_vl(out, n, delta)
            n = _put_vi(out, n, r.offset_delta)
            if r.klen < 0:
                n = _put_vi(out, n, -1)
            else:
                n = _put_vi(out, n, r.klen)
                memcpy(out + n, p + r.kpos, r.klen)
                n += r.klen
            if r.vlen < 0:
                n = _put_vi(out, n, -1)
            else:
                n = _put_vi(out, n, r.vlen)
                memcpy(out + n, p + r.vpos, r.vlen)
                n += r.vlen
            hpos = r.hpos
            hcount = _vi(p, &hpos)
            n = _put_vi(out, n, hcount)
            for hk in range(hcount):
                hklen = _vi(p, &hpos)
                n = _put_vi(out, n, hklen)
                memcpy(out + n, p + hpos, hklen)
                n += hklen
                hpos += hklen
                hvlen = _vi(p, &hpos)
                if hvlen < 0:
                    n = _put_vi(out, n, -1)
                else:
                    n = _put_vi(out, n, hvlen)
                    memcpy(out + n, p + hpos, hvlen)
                    n += hvlen
                    hpos += hvlen
            hn = n - body_start
            out_n = _put_vi(out, out_n, <int32_t>hn)
            memmove(out + out_n, out + body_start, hn)
            out_n += hn
        body = PyBytes_FromStringAndSize(<const char *>out, out_n)
        return kept, has_tombstone, body, base_ts, (lat if not create_time else max_ts)
    finally:
        free(recs)
        free(out)
