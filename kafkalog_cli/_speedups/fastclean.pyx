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

from cpython.bytearray cimport PyByteArray_AS_STRING
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcmp, memcpy, memmove, memset

from kafkalog_cli._speedups.fastcodec cimport kl_records_clean
from kafkalog_cli.storage.maintenance.offset_map import FullError

cdef extern from *:
    """
    #include <math.h>
    #include <string.h>
    #include <stdint.h>

    /* MD5 (RFC 1321). K[i] = floor(2^32 * |sin(i + 1)|), as the RFC defines the table. */
    static uint32_t kl_md5_k[64];
    static void kl_md5_init(void) {
        int i;
        for (i = 0; i < 64; i++) kl_md5_k[i] = (uint32_t)floor(fabs(sin(i + 1.0)) * 4294967296.0);
    }
    #define KL_ROTL(x, c) (((x) << (c)) | ((x) >> (32 - (c))))

    /* one step: a = b + ((a + f(b, c, d) + m[g] + K[i]) <<< s), the four rounds unrolled */
    #define KL_STEP(f, a, b, c, d, g, i, s) \
        a += f(b, c, d) + m[g] + kl_md5_k[i]; a = b + KL_ROTL(a, s)
    #define KL_FF(x, y, z) ((z) ^ ((x) & ((y) ^ (z))))
    #define KL_GG(x, y, z) ((y) ^ ((z) & ((x) ^ (y))))
    #define KL_HH(x, y, z) ((x) ^ (y) ^ (z))
    #define KL_II(x, y, z) ((y) ^ ((x) | ~(z)))
    #define KL_F(a, b, c, d, g, i, s) KL_STEP(KL_FF, a, b, c, d, g, i, s)
    #define KL_G(a, b, c, d, g, i, s) KL_STEP(KL_GG, a, b, c, d, g, i, s)
    #define KL_H(a, b, c, d, g, i, s) KL_STEP(KL_HH, a, b, c, d, g, i, s)
    #define KL_I(a, b, c, d, g, i, s) KL_STEP(KL_II, a, b, c, d, g, i, s)

    static inline uint32_t kl_le32(const unsigned char *b) {
        return (uint32_t)b[0] | ((uint32_t)b[1] << 8) | ((uint32_t)b[2] << 16) |
               ((uint32_t)b[3] << 24);
    }
    #define KL_MD5_STEPS \
    KL_F(a, b, c, d, 0, 0, 7); KL_F(d, a, b, c, 1, 1, 12); KL_F(c, d, a, b, 2, 2, 17); \
    KL_F(b, c, d, a, 3, 3, 22); KL_F(a, b, c, d, 4, 4, 7); KL_F(d, a, b, c, 5, 5, 12); \
    KL_F(c, d, a, b, 6, 6, 17); KL_F(b, c, d, a, 7, 7, 22); KL_F(a, b, c, d, 8, 8, 7); \
    KL_F(d, a, b, c, 9, 9, 12); KL_F(c, d, a, b, 10, 10, 17); KL_F(b, c, d, a, 11, 11, 22); \
    KL_F(a, b, c, d, 12, 12, 7); KL_F(d, a, b, c, 13, 13, 12); KL_F(c, d, a, b, 14, 14, 17); \
    KL_F(b, c, d, a, 15, 15, 22); KL_G(a, b, c, d, 1, 16, 5); KL_G(d, a, b, c, 6, 17, 9); \
    KL_G(c, d, a, b, 11, 18, 14); KL_G(b, c, d, a, 0, 19, 20); KL_G(a, b, c, d, 5, 20, 5); \
    KL_G(d, a, b, c, 10, 21, 9); KL_G(c, d, a, b, 15, 22, 14); KL_G(b, c, d, a, 4, 23, 20); \
    KL_G(a, b, c, d, 9, 24, 5); KL_G(d, a, b, c, 14, 25, 9); KL_G(c, d, a, b, 3, 26, 14); \
    KL_G(b, c, d, a, 8, 27, 20); KL_G(a, b, c, d, 13, 28, 5); KL_G(d, a, b, c, 2, 29, 9); \
    KL_G(c, d, a, b, 7, 30, 14); KL_G(b, c, d, a, 12, 31, 20); KL_H(a, b, c, d, 5, 32, 4); \
    KL_H(d, a, b, c, 8, 33, 11); KL_H(c, d, a, b, 11, 34, 16); KL_H(b, c, d, a, 14, 35, 23); \
    KL_H(a, b, c, d, 1, 36, 4); KL_H(d, a, b, c, 4, 37, 11); KL_H(c, d, a, b, 7, 38, 16); \
    KL_H(b, c, d, a, 10, 39, 23); KL_H(a, b, c, d, 13, 40, 4); KL_H(d, a, b, c, 0, 41, 11); \
    KL_H(c, d, a, b, 3, 42, 16); KL_H(b, c, d, a, 6, 43, 23); KL_H(a, b, c, d, 9, 44, 4); \
    KL_H(d, a, b, c, 12, 45, 11); KL_H(c, d, a, b, 15, 46, 16); KL_H(b, c, d, a, 2, 47, 23); \
    KL_I(a, b, c, d, 0, 48, 6); KL_I(d, a, b, c, 7, 49, 10); KL_I(c, d, a, b, 14, 50, 15); \
    KL_I(b, c, d, a, 5, 51, 21); KL_I(a, b, c, d, 12, 52, 6); KL_I(d, a, b, c, 3, 53, 10); \
    KL_I(c, d, a, b, 10, 54, 15); KL_I(b, c, d, a, 1, 55, 21); KL_I(a, b, c, d, 8, 56, 6); \
    KL_I(d, a, b, c, 15, 57, 10); KL_I(c, d, a, b, 6, 58, 15); KL_I(b, c, d, a, 13, 59, 21); \
    KL_I(a, b, c, d, 4, 60, 6); KL_I(d, a, b, c, 11, 61, 10); KL_I(c, d, a, b, 2, 62, 15); \
    KL_I(b, c, d, a, 9, 63, 21);

    static void kl_md5_block(uint32_t st[4], const unsigned char *blk) {
        uint32_t m[16], a = st[0], b = st[1], c = st[2], d = st[3];
        int i;
        for (i = 0; i < 16; i++) m[i] = kl_le32(blk + 4 * i);
        KL_MD5_STEPS
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

    /* MD5 of n keys p[kpos[i]:kpos[i] + klen[i]] into out[16 * i]. Keys of one block (under
       56 bytes, the usual) go eight at a time through vector lanes (GCC/Clang vector
       extensions: SSE2 or better, whatever the target has): MD5 is a chain of dependent
       steps, so one key at a time leaves the ALUs idle. */
    #if defined(__GNUC__) || defined(__clang__)
    typedef uint32_t kl_v8 __attribute__((vector_size(32)));
    static void kl_md5_x8(const unsigned char *p, const int64_t *kpos, const int32_t *klen,
                          const int64_t *idx, int k, unsigned char *out) {
        unsigned char blk[8][64];
        kl_v8 m[16], a, b, c, d;
        int lane, w, i;
        for (lane = 0; lane < 8; lane++) {
            int32_t n = lane < k ? klen[idx[lane]] : 0;
            uint64_t bits = (uint64_t)n << 3;
            memset(blk[lane], 0, 64);
            if (n) memcpy(blk[lane], p + kpos[idx[lane]], n);
            blk[lane][n] = 0x80;
            for (i = 0; i < 8; i++) blk[lane][56 + i] = (unsigned char)(bits >> (8 * i));
        }
        for (w = 0; w < 16; w++)
            for (lane = 0; lane < 8; lane++) m[w][lane] = kl_le32(blk[lane] + 4 * w);
        a = (kl_v8){0} + 0x67452301u;
        b = (kl_v8){0} + 0xefcdab89u;
        c = (kl_v8){0} + 0x98badcfeu;
        d = (kl_v8){0} + 0x10325476u;
        KL_MD5_STEPS
        a += 0x67452301u; b += 0xefcdab89u; c += 0x98badcfeu; d += 0x10325476u;
        for (lane = 0; lane < k; lane++) {
            unsigned char *o = out + 16 * idx[lane];
            uint32_t v[4] = {a[lane], b[lane], c[lane], d[lane]};
            for (i = 0; i < 4; i++) {
                o[4 * i] = (unsigned char)v[i];
                o[4 * i + 1] = (unsigned char)(v[i] >> 8);
                o[4 * i + 2] = (unsigned char)(v[i] >> 16);
                o[4 * i + 3] = (unsigned char)(v[i] >> 24);
            }
        }
    }
    #define KL_LANES 8
    #else
    #define KL_LANES 0
    #endif

    static void kl_md5_many(const unsigned char *p, const int64_t *kpos, const int32_t *klen,
                            int64_t n, unsigned char *out) {
        int64_t i;
    #if KL_LANES
        int64_t idx[KL_LANES];
        int k = 0;
        for (i = 0; i < n; i++) {
            if (klen[i] < 56) {
                idx[k++] = i;
                if (k == KL_LANES) { kl_md5_x8(p, kpos, klen, idx, k, out); k = 0; }
            } else {
                kl_md5(p + kpos[i], (size_t)klen[i], out + 16 * i);
            }
        }
        if (k) kl_md5_x8(p, kpos, klen, idx, k, out);
    #else
        for (i = 0; i < n; i++) kl_md5(p + kpos[i], (size_t)klen[i], out + 16 * i);
    #endif
    }

    /* The table: anonymous pages (zero, mapped on first touch), 2 MiB-aligned and with
       transparent huge pages asked for where the kernel has them: a random probe per key
       into tens of MiB otherwise misses the TLB as well as the caches. */
    #define KL_HUGE ((size_t)2 << 20)
    #ifdef _WIN32
    #include <stdlib.h>
    static unsigned char *kl_table_alloc(size_t n, void **base, size_t *len) {
        *base = calloc(n ? n : 1, 1);
        *len = n;
        return (unsigned char *)*base;
    }
    static void kl_table_free(void *base, size_t len) { (void)len; free(base); }
    #else
    #include <sys/mman.h>
    static unsigned char *kl_table_alloc(size_t n, void **base, size_t *len) {
        size_t total = n + KL_HUGE;
        unsigned char *p = (unsigned char *)mmap(NULL, total, PROT_READ | PROT_WRITE,
                                                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        uintptr_t a;
        if (p == (unsigned char *)MAP_FAILED) return NULL;
        *base = p;
        *len = total;
        a = ((uintptr_t)p + KL_HUGE - 1) & ~(uintptr_t)(KL_HUGE - 1);
    #ifdef MADV_HUGEPAGE
        if (n >= KL_HUGE) madvise((void *)a, n & ~(KL_HUGE - 1), MADV_HUGEPAGE);
    #endif
        return (unsigned char *)a;
    }
    static void kl_table_free(void *base, size_t len) { if (base) munmap(base, len); }
    #endif

    static inline void kl_prefetch(const void *p) { __builtin_prefetch(p, 1, 3); }
    static inline int kl_sub_overflows(int64_t a, int64_t b, int64_t *out) {
        return __builtin_sub_overflow(a, b, out);
    }
    """
    void kl_md5_init() noexcept nogil
    void kl_md5(const unsigned char *p, size_t n, unsigned char *out) noexcept nogil
    void kl_md5_many(const unsigned char *p, const int64_t *kpos, const int32_t *klen,
                     int64_t n, unsigned char *out) noexcept nogil
    void kl_prefetch(const void *p) noexcept nogil
    unsigned char *kl_table_alloc(size_t n, void **base, size_t *length) noexcept nogil
    void kl_table_free(void *base, size_t length) noexcept nogil
    bint kl_sub_overflows(int64_t a, int64_t b, int64_t *out) noexcept nogil

kl_md5_init()


# RFC 1321's test suite (its appendix A.5): one- and two-block messages
_RFC1321 = (
    (b"", "d41d8cd98f00b204e9800998ecf8427e"),
    (b"a", "0cc175b9c0f1b6a831c399e269772661"),
    (b"abc", "900150983cd24fb0d6963f7d28e17f72"),
    (b"message digest", "f96b697d7cb7938d525a2f31aaf161d0"),
    (b"abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"),
    (b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
     "d174ab98d277d9f5a5611c2c9f419d9f"),
    (b"1234567890" * 8, "57edf4a22be3c955ac49da2e2107b67a"),
)


cdef _self_check():
    """The MD5 here, at import: the scalar one against RFC 1321's digests, the lanes against
    the scalar one on keys of 0-69 bytes. A difference (a libm whose sin() rounds otherwise, a
    compiler fault) makes the import fail and the pure map run. No hashlib: loading OpenSSL
    was ~6 ms of every compaction's start-up."""
    cdef bytes keys = b"".join(bytes([i]) * i for i in range(70))
    cdef int64_t kpos[70]
    cdef int32_t klen[70]
    cdef unsigned char out[70 * 16]
    cdef int64_t i, at = 0
    for msg, digest in _RFC1321:
        if md5(msg).hex() != digest:
            raise ImportError("fastclean: MD5 self-check failed; the pure cleaner runs")
    for i in range(70):
        kpos[i] = at
        klen[i] = <int32_t>i
        at += i
    kl_md5_many(<const unsigned char *>PyBytes_AS_STRING(keys), kpos, klen, 70, out)
    for i in range(70):
        if PyBytes_FromStringAndSize(<const char *>out + 16 * i, 16) != md5(bytes([i]) * i):
            raise ImportError("fastclean: MD5 self-check failed; the pure cleaner runs")


DEF ENTRY = 24
DEF HASH = 16
cdef int64_t INT_MIN32 = -2147483648
# per batch, the keys are hashed first, then probed, each key's first PROBES_AHEAD slots
# prefetched PREFETCH_DISTANCE keys ahead: the table is far bigger than the caches, and a
# miss costs more than an MD5
DEF AHEAD = 1024
DEF PROBES_AHEAD = 2
DEF PREFETCH_DISTANCE = 24
DEF NO_SLOT_ = 0xFFFFFFFF
NO_SLOT = NO_SLOT_

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


_self_check()


# --- varints of a section kl_records_clean has accepted (no bounds to check) --------------

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


cdef inline int32_t _vi(const unsigned char *p, int64_t *ppos) noexcept nogil:
    # a zigzag varint32 read as a varint64 is the same value
    return <int32_t>_vl(p, ppos)


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


cdef inline void _prefetch_probes(const unsigned char *buf, const unsigned char *h,
                                  uint32_t slots) noexcept nogil:
    # the first probes of a key: once the table fills, the second is often needed too
    cdef int64_t a
    for a in range(PROBES_AHEAD):
        kl_prefetch(buf + <int64_t>_slot(h, a, slots) * ENTRY)


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
    cdef void *mapped
    cdef size_t mapped_len
    cdef readonly int64_t slots, max_entries
    cdef public int64_t size, latest_offset

    def __cinit__(self, memory, load_factor=0.9):
        self.buf = NULL
        self.mapped = NULL
        self.mapped_len = 0

    def __init__(self, memory, load_factor=0.9):
        cdef int64_t slots = memory // ENTRY
        if slots * load_factor <= 1:
            raise ValueError("the dedupe buffer holds fewer than 2 entries")
        if slots > 0x7FFFFFFF:
            raise ValueError("the dedupe buffer holds more than 2**31 - 1 entries")
        self.slots = slots
        self.max_entries = int(slots * load_factor)
        self.buf = kl_table_alloc(slots * ENTRY, &self.mapped, &self.mapped_len)
        if self.buf == NULL:
            raise MemoryError()
        self.size = 0
        self.latest_offset = -1

    def __dealloc__(self):
        kl_table_free(self.mapped, self.mapped_len)

    cdef inline uint32_t _put(self, const unsigned char *h, int64_t offset) noexcept nogil:
        """put() after the size check and the hash: insert or overwrite; the slot it took
        (a hash never moves: the table has no deletes)."""
        cdef int64_t attempt = 0
        cdef unsigned char *e
        cdef uint32_t slots = <uint32_t>self.slots, slot
        while True:
            slot = _slot(h, attempt, slots)
            e = self.buf + <int64_t>slot * ENTRY
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
        return slot

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
                int64_t base_timestamp, bint create_time, int64_t start, bytearray memo=None):
    """build_offset_map's loop over one batch's records: every keyed record at or past
    `start` is put, in order. MAPPED; FULL when a record found the map full (the records
    before it are in, latest_offset is the last put); NOT_SURE (nothing put) when the
    section is not clean: run the pure loop.

    `memo` (4 * count bytes) gets, per record, the slot its key's hash is in (NO_SLOT for a
    record not put): filter_section then reads the key's latest offset there, with no
    second MD5 and no probing."""
    cdef const unsigned char *p = <const unsigned char *>PyBytes_AS_STRING(data)
    cdef uint32_t *slot_of = NULL
    cdef int64_t *index_of
    cdef int64_t pos = 0, i, j, n, off
    cdef uint32_t slot
    cdef Rec r
    cdef unsigned char *hashes
    cdef int64_t *offsets
    cdef int64_t *kpos
    cdef int32_t *klen
    cdef uint32_t slots = <uint32_t>m.slots
    if count <= 0:
        return MAPPED
    if memo is not None:  # "no slot" for every record, whatever follows
        if len(memo) != 4 * count:
            raise ValueError("memo: 4 bytes a record")
        slot_of = <uint32_t *>PyByteArray_AS_STRING(memo)
        memset(slot_of, 0xFF, 4 * count)
    if not _clean(data, count, base_offset, base_timestamp, create_time):
        return NOT_SURE
    hashes = <unsigned char *>malloc(AHEAD * (HASH + 28))
    if hashes == NULL:
        raise MemoryError()
    offsets = <int64_t *>(hashes + AHEAD * HASH)
    index_of = offsets + AHEAD
    kpos = index_of + AHEAD
    klen = <int32_t *>(kpos + AHEAD)
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
                kpos[n] = r.kpos
                klen[n] = r.klen
                offsets[n] = off
                index_of[n] = i - 1
                n += 1
            kl_md5_many(p, kpos, klen, n, hashes)
            # a steady number of misses in flight (all of a batch's at once: most waited)
            for j in range(n if n < PREFETCH_DISTANCE else PREFETCH_DISTANCE):
                _prefetch_probes(m.buf, hashes + j * HASH, slots)
            for j in range(n):
                if j + PREFETCH_DISTANCE < n:
                    _prefetch_probes(m.buf, hashes + (j + PREFETCH_DISTANCE) * HASH, slots)
                if m.size >= m.max_entries:
                    return FULL
                slot = m._put(hashes + j * HASH, offsets[j])
                if slot_of != NULL:
                    slot_of[index_of[j]] = slot
    finally:
        free(hashes)
    return MAPPED


def filter_section(OffsetMap m, bytes data, int64_t count, int64_t base_offset,
                   int64_t base_timestamp, log_append_time, bint drop_tombstones,
                   horizon, int64_t new_horizon, bytearray memo=None):
    """_filter_batch's record loop for a v2 data batch that is not discarded.

    `drop_tombstones`: the batch's delete horizon has passed. `horizon`: the batch's delete
    horizon or None; `new_horizon`: the one a batch gets when a tombstone stays and it has
    none. Returns None (not clean: run the pure loop), or (kept, has_tombstone, body,
    base_timestamp, max_timestamp) where body is None when every record stays (the caller
    copies the batch or rebuilds it for its horizon), else the re-encoded records section
    (uncompressed) of the kept records with the base and max timestamps its header needs.
    `memo`: what map_section noted for this batch, if it did."""
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
    cdef int64_t *kpos
    cdef int32_t *klen
    cdef unsigned char *out
    cdef int64_t kept = 0
    cdef uint32_t slots = <uint32_t>m.slots
    cdef const uint32_t *slot_of = NULL
    if count <= 0:
        return None
    if memo is not None:
        if len(memo) != 4 * count:
            raise ValueError("memo: 4 bytes a record")
        slot_of = <const uint32_t *>PyByteArray_AS_STRING(memo)
    if not _clean(data, count, base_offset, base_timestamp, create_time):
        return None
    recs = <Rec *>malloc(count * sizeof(Rec) + AHEAD * (HASH + 12) + count)
    if recs == NULL:
        raise MemoryError()
    kpos = <int64_t *>(recs + count)
    klen = <int32_t *>(kpos + AHEAD)
    hashes = <unsigned char *>(klen + AHEAD)
    kept_flag = hashes + AHEAD * HASH
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
                    if slot_of != NULL and slot_of[j] != NO_SLOT_:
                        kl_prefetch(m.buf + <int64_t>slot_of[j] * ENTRY + HASH)
                    else:
                        kpos[n] = recs[j].kpos
                        klen[n] = recs[j].klen
                        n += 1
                j += 1
            kl_md5_many(p, kpos, klen, n, hashes)
            for k in range(n):
                _prefetch_probes(m.buf, hashes + k * HASH, slots)
            k = 0
            while i < j:
                off = base_offset + recs[i].offset_delta
                keep = True
                if off <= latest:
                    if recs[i].klen < 0:
                        keep = False
                    elif slot_of != NULL and slot_of[i] != NO_SLOT_:
                        found = _load_offset(m.buf + <int64_t>slot_of[i] * ENTRY)
                    else:
                        found = m._get(hashes + k * HASH)
                        k += 1
                    if recs[i].klen >= 0:
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
