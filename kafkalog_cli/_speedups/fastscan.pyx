# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
# cython: cdivision=True, embedsignature=True
"""Compiled clean-segment fast path for `verify`, shallow and deep (see
storage/checks/check.py::check_log_file).

`scan_clean` streams one `.log` file through a few reused chunk buffers (memory stays flat
whatever the file size: a batch's CRC is computed piecewise across chunks, only a straddling
61-byte header is ever copied), checks every v2 batch's framing, header and CRC-32C, and walks
the offset-index and time-index entries exactly as `_OffsetIndexWalk` / `_TimeIndexWalk` do.
The whole pass runs without the GIL. Copying from the page cache (read) costs more than the
CRCs, so for files of more than two chunks a helper thread shares the reading: both threads
claim chunks in order, and the scanning thread never waits for a chunk nobody has started.

Deep, each batch's records section is also inflated (codec.compression, with the GIL) and
parsed in C by fastcodec's record parser (cimported: one parser for both modules), checking what
batch_rules.record_faults checks; a batch that straddles two chunks is read whole first.

It answers either None ("not sure") or, only when the pure `check_log_file` would add no
finding at all for this file, the values the pure pass produces (see `scan_clean`). Anything
out of the ordinary is "not sure": the caller then reruns the pure path, which reports it.
The rules below mirror check.py / scan.py / entry.py line by line; tests/storage/
test_fastscan.py compares both paths on fixtures, the corpus, generated and mutated segments.

CRC-32C: AVX-512 VPCLMULQDQ folding (256 bytes per step, constants x^n mod P computed at import)
when the CPU and OS support it, else the SSE4.2 crc32 instruction in three interleaved streams
(joined with PCLMULQDQ), else the `crc32c` package (called per buffer piece, which takes the
GIL each time).
"""

from cpython.buffer cimport PyBUF_READ
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.memoryview cimport PyMemoryView_FromMemory
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t

from kafkalog_cli._speedups.fastcodec cimport kl_records_clean

import os as _os


from kafkalog_cli.codec.compression import DEFAULT_MAX_DECOMPRESSED, decompress as _decompress
from kafkalog_cli.codec.layout import INT32_MAX as _INT32_MAX
from kafkalog_cli.errors import CorruptDataError
from kafkalog_cli.storage.disk.scan import DEFAULT_CHUNK, DEFAULT_MAX_ENTRY

cdef extern from *:
    """
    #include <stdint.h>
    #include <stdlib.h>
    #include <string.h>
    #include <errno.h>
    #include <fcntl.h>
    #include <unistd.h>
    #include <sys/types.h>
    #if defined(__linux__)
    #include <sys/mman.h>
    #endif

    static inline int64_t kl_be64(const unsigned char *p) {
        uint64_t v = 0;
        for (int i = 0; i < 8; i++) v = (v << 8) | p[i];
        return (int64_t)v;
    }
    static inline uint32_t kl_be32u(const unsigned char *p) {
        return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
    }
    static inline int32_t kl_be32s(const unsigned char *p) { return (int32_t)kl_be32u(p); }

    /* Read exactly n bytes at off unless the file ends first; -1 on error (errno set). */
    static int64_t kl_pread_full(int fd, unsigned char *buf, int64_t n, int64_t off) {
        int64_t got = 0;
        while (got < n) {
            ssize_t r = pread(fd, buf + got, (size_t)(n - got), (off_t)(off + got));
            if (r < 0) {
                if (errno == EINTR) continue;
                return -1;
            }
            if (r == 0) break;
            got += r;
        }
        return got;
    }

    static void kl_advise_sequential(int fd) {
    #if defined(POSIX_FADV_SEQUENTIAL)
        (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    #else
        (void)fd;
    #endif
    }

    /* ---- chunk reader ----
       Chunk k is the file bytes [k*chunk, min((k+1)*chunk, end)); it is read into a slot,
       after KL_HEADROOM bytes where the consumer copies a header that straddles from chunk
       k-1. Reading (the kernel's copy out of the page cache) costs more than the CRCs, so for
       files of more than two chunks a helper thread reads ahead (at most KL_LOOKAHEAD chunks
       past the consumer's). The consumer never depends on the helper: waiting for a chunk the
       helper is on, it reads the next unclaimed chunk itself, and after KL_STEAL_NS it reads
       the awaited chunk itself into a free slot (the helper's copy is then dropped), so a
       helper that gets no CPU costs at most that delay. Only the consumer touches Python. */
    #include <pthread.h>
    #include <signal.h>
    #include <time.h>
    #define KL_HEADROOM 4096
    #define KL_LOOKAHEAD 2
    #define KL_THREAD_SLOTS 5   /* current + KL_LOOKAHEAD + one being dropped + one to steal */
    #define KL_STEAL_NS 500000L
    #define KL_HUGE ((size_t)2 << 20)
    enum { KL_FREE = 0, KL_READING, KL_READY, KL_FAILED, KL_DROPPED, KL_IN_USE };
    typedef struct {
        int fd, nslots, threaded, stop, owns_mem;
        int64_t end, chunk, nchunks, stride;
        unsigned char *mem;
        int64_t next_claim;  /* the first chunk nobody has started */
        int64_t cur;         /* the chunk the consumer is on */
        int cur_slot, next_slot;
        int64_t slot_chunk[KL_THREAD_SLOTS];
        int slot_state[KL_THREAD_SLOTS];
        pthread_mutex_t mu;
        pthread_cond_t cv;
        pthread_t th;
    } kl_reader;

    static unsigned char *kl_alloc_buffer(size_t size) {
        void *p = NULL;
    #if defined(__linux__) && defined(MADV_HUGEPAGE)
        /* huge pages: the kernel's copy into the buffer is ~8% faster */
        if (size >= KL_HUGE) {
            if (posix_memalign(&p, KL_HUGE, size) != 0) return NULL;
            (void)madvise(p, (size + KL_HUGE - 1) & ~(KL_HUGE - 1), MADV_HUGEPAGE);
            return (unsigned char *)p;
        }
    #endif
        return (unsigned char *)malloc(size);
    }

    static unsigned char *kl_slot_data(kl_reader *R, int s) {
        return R->mem + s * R->stride + KL_HEADROOM;
    }
    static int kl_read_into(kl_reader *R, int64_t k, int s) {
        int64_t left = R->end - k * R->chunk;
        int64_t want = left < R->chunk ? left : R->chunk;
        return kl_pread_full(R->fd, kl_slot_data(R, s), want, k * R->chunk) == want ? 0 : -1;
    }
    static int kl_free_slot(kl_reader *R) {
        for (int s = 0; s < R->nslots; s++)
            if (R->slot_state[s] == KL_FREE) return s;
        return -1;
    }
    static int kl_slot_of(kl_reader *R, int64_t k, int state) {
        for (int s = 0; s < R->nslots; s++)
            if (R->slot_chunk[s] == k && R->slot_state[s] == state) return s;
        return -1;
    }
    /* Under the lock: claim chunk k into a free slot and read it (unlocked meanwhile); the slot
       ends READY/FAILED, or `done` if given (the consumer's own chunk). Returns the slot. */
    static int kl_claim_read(kl_reader *R, int64_t k, int s, int done, int *rc) {
        R->slot_chunk[s] = k;
        R->slot_state[s] = KL_READING;
        pthread_mutex_unlock(&R->mu);
        *rc = kl_read_into(R, k, s);
        pthread_mutex_lock(&R->mu);
        if (R->slot_state[s] == KL_DROPPED) R->slot_state[s] = KL_FREE;
        else R->slot_state[s] = done ? done : (*rc ? KL_FAILED : KL_READY);
        pthread_cond_broadcast(&R->cv);
        return s;
    }

    static void *kl_helper(void *arg) {
        kl_reader *R = (kl_reader *)arg;
        int s, rc;
        pthread_mutex_lock(&R->mu);
        while (!R->stop && R->next_claim < R->nchunks) {
            int64_t k = R->next_claim;
            if (k > R->cur + KL_LOOKAHEAD || (s = kl_free_slot(R)) < 0) {
                pthread_cond_wait(&R->cv, &R->mu);
                continue;
            }
            R->next_claim = k + 1;
            kl_claim_read(R, k, s, 0, &rc);
            if (rc) break;  /* the consumer fails on this chunk */
        }
        pthread_mutex_unlock(&R->mu);
        return NULL;
    }

    static int kl_use_thread(int64_t end, int64_t chunk, int threaded) {
        return threaded && (end + chunk - 1) / chunk > 2;
    }
    static int kl_slots(int64_t end, int64_t chunk, int threaded) {
        return kl_use_thread(end, chunk, threaded) ? KL_THREAD_SLOTS : (end > chunk ? 2 : 1);
    }
    /* Bytes of buffer a reader needs. */
    static int64_t kl_reader_need(int64_t end, int64_t chunk, int threaded) {
        return ((KL_HEADROOM + chunk + 4095) & ~(int64_t)4095) * kl_slots(end, chunk, threaded);
    }
    /* A reader over fd; it uses `mem` (at least kl_reader_need bytes) if given, else its own. */
    static kl_reader *kl_reader_open(int fd, int64_t end, int64_t chunk, int threaded,
                                     unsigned char *mem) {
        kl_reader *R = (kl_reader *)calloc(1, sizeof(kl_reader));
        if (!R) return NULL;
        R->fd = fd;
        R->end = end;
        R->chunk = chunk;
        R->nchunks = (end + chunk - 1) / chunk;
        R->threaded = kl_use_thread(end, chunk, threaded);
        R->nslots = kl_slots(end, chunk, threaded);
        R->stride = (KL_HEADROOM + chunk + 4095) & ~(int64_t)4095;
        R->cur = -1;
        R->cur_slot = R->next_slot = -1;
        for (int s = 0; s < KL_THREAD_SLOTS; s++) R->slot_chunk[s] = -1;
        R->mem = mem;
        if (!mem) {
            R->mem = kl_alloc_buffer((size_t)(R->stride * R->nslots));
            R->owns_mem = 1;
        }
        if (!R->mem) {
            free(R);
            return NULL;
        }
        if (R->threaded) {
            if (pthread_mutex_init(&R->mu, NULL) != 0) {
                R->threaded = 0;
            } else if (pthread_cond_init(&R->cv, NULL) != 0) {
                pthread_mutex_destroy(&R->mu);
                R->threaded = 0;
            } else {
                /* signals go to the Python thread, never to the helper */
                sigset_t all, old;
                int rc;
                sigfillset(&all);
                pthread_sigmask(SIG_BLOCK, &all, &old);
                rc = pthread_create(&R->th, NULL, kl_helper, R);
                pthread_sigmask(SIG_SETMASK, &old, NULL);
                if (rc != 0) {
                    pthread_cond_destroy(&R->cv);
                    pthread_mutex_destroy(&R->mu);
                    R->threaded = 0;  /* read everything here (it has the slots for it) */
                }
            }
        }
        return R;
    }

    static int kl_past(const struct timespec *t) {
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        return now.tv_sec > t->tv_sec || (now.tv_sec == t->tv_sec && now.tv_nsec >= t->tv_nsec);
    }

    /* Make chunk k = cur + 1 available at *data; 0, or -1 if it cannot be read whole. */
    static int kl_reader_get(kl_reader *R, int64_t k, unsigned char **data) {
        int s, h, rc = 0;
        struct timespec deadline;
        if (!R->threaded) {
            R->next_slot = (int)(k % R->nslots);
            *data = kl_slot_data(R, R->next_slot);
            return kl_read_into(R, k, R->next_slot);
        }
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_nsec += KL_STEAL_NS;
        if (deadline.tv_nsec >= 1000000000L) {
            deadline.tv_sec += 1;
            deadline.tv_nsec -= 1000000000L;
        }
        pthread_mutex_lock(&R->mu);
        for (;;) {
            if ((s = kl_slot_of(R, k, KL_READY)) >= 0 || (s = kl_slot_of(R, k, KL_FAILED)) >= 0) {
                rc = R->slot_state[s] == KL_FAILED ? -1 : 0;
                R->slot_state[s] = KL_IN_USE;
                break;
            }
            if (R->next_claim == k && (s = kl_free_slot(R)) >= 0) {  /* nobody started it */
                R->next_claim = k + 1;
                kl_claim_read(R, k, s, KL_IN_USE, &rc);
                break;
            }
            /* the helper is on chunk k: read ahead meanwhile... */
            if (R->next_claim > k && R->next_claim < R->nchunks &&
                    R->next_claim <= R->cur + KL_LOOKAHEAD && (s = kl_free_slot(R)) >= 0) {
                kl_claim_read(R, R->next_claim++, s, 0, &rc);
                continue;
            }
            /* ...or, once it is late, read chunk k here and drop the helper's copy */
            h = kl_slot_of(R, k, KL_READING);
            if (h >= 0 && kl_past(&deadline) && (s = kl_free_slot(R)) >= 0) {
                R->slot_state[h] = KL_DROPPED;
                kl_claim_read(R, k, s, KL_IN_USE, &rc);
                break;
            }
            if (kl_past(&deadline)) {  /* cannot happen (a slot is always free); never spin */
                deadline.tv_sec += 1;
            }
            pthread_cond_timedwait(&R->cv, &R->mu, &deadline);
        }
        pthread_mutex_unlock(&R->mu);
        R->next_slot = s;
        *data = kl_slot_data(R, s);
        return rc;
    }

    /* The consumer moved on to chunk k (after copying what it needed from the previous one). */
    static void kl_reader_advance(kl_reader *R, int64_t k) {
        if (!R->threaded) {
            R->cur = k;
            R->cur_slot = R->next_slot;
            return;
        }
        pthread_mutex_lock(&R->mu);
        if (R->cur_slot >= 0) R->slot_state[R->cur_slot] = KL_FREE;
        R->cur_slot = R->next_slot;
        R->cur = k;
        pthread_cond_broadcast(&R->cv);
        pthread_mutex_unlock(&R->mu);
    }

    static void kl_reader_close(kl_reader *R) {
        if (!R) return;
        if (R->threaded) {
            pthread_mutex_lock(&R->mu);
            R->stop = 1;
            pthread_cond_broadcast(&R->cv);
            pthread_mutex_unlock(&R->mu);
            pthread_join(R->th, NULL);  /* at most one pread of a chunk away */
            pthread_cond_destroy(&R->cv);
            pthread_mutex_destroy(&R->mu);
        }
        if (R->owns_mem) free(R->mem);
        free(R);
    }

    /* ---- CRC-32C (Castagnoli, reflected), raw state in and out (no pre/post inversion) ----
       Folding: a 128-bit lane L (bytes b0..b15, b0 first) stands for R(L) = R(lo)*x^64 + R(hi)
       in bit-reflected order; carry-less multiplication gives R(a (x) b) = x*R(a)*R(b). So
       moving a lane forward by D bytes is lo(x)k_lo ^ hi(x)k_hi with k_lo = x^(8D+64-33) mod P,
       k_hi = x^(8D-33) mod P (32-bit constants). Two crc32 instructions reduce the last lane:
       crc32(crc32(0, lo), hi) = R(L)*x^32 mod P, which is the CRC of the data folded into it. */
    static uint32_t kl_xnmodp(unsigned n) {
        uint32_t v = 0x80000000u;  /* x^0 */
        while (n--) v = (v >> 1) ^ ((v & 1) ? 0x82F63B78u : 0);
        return v;
    }

    #if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__)) && \\
        (defined(__clang__) || __GNUC__ >= 8)
    #define KL_X86_CRC 1
    #include <immintrin.h>
    static uint32_t kl_k[4][2];  /* fold by 16, 32, 48 bytes; by 64 bytes */
    static uint32_t kl_k256[2];  /* fold by 256 bytes */
    static int kl_avx512_ok = 0;

    #define KL_TGT __attribute__((target("sse4.2,pclmul,avx512f,avx512vl,avx512bw,vpclmulqdq")))
    #define KL_ZFOLD(z, k, d) \\
        _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(z, k, 0x00), \\
                                  _mm512_clmulepi64_epi128(z, k, 0x11), d, 0x96)
    static KL_TGT inline __m512i kl_kvec(const uint32_t *k) {
        return _mm512_broadcast_i32x4(_mm_set_epi32(0, (int)k[1], 0, (int)k[0]));
    }
    static KL_TGT uint32_t kl_crc_avx512(uint32_t c, const unsigned char *p, size_t n) {
        if (n >= 64) {
            const unsigned char *end = p + n;
            __m512i z, k64 = kl_kvec(kl_k[3]);
            __m512i init = _mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, (int)c);
            if (n >= 256) {
                __m512i z0 = _mm512_xor_si512(_mm512_loadu_si512(p), init);
                __m512i z1 = _mm512_loadu_si512(p + 64);
                __m512i z2 = _mm512_loadu_si512(p + 128);
                __m512i z3 = _mm512_loadu_si512(p + 192);
                __m512i k = kl_kvec(kl_k256);
                p += 256;
                while (end - p >= 256) {
                    z0 = KL_ZFOLD(z0, k, _mm512_loadu_si512(p));
                    z1 = KL_ZFOLD(z1, k, _mm512_loadu_si512(p + 64));
                    z2 = KL_ZFOLD(z2, k, _mm512_loadu_si512(p + 128));
                    z3 = KL_ZFOLD(z3, k, _mm512_loadu_si512(p + 192));
                    p += 256;
                }
                z1 = KL_ZFOLD(z0, k64, z1);
                z2 = KL_ZFOLD(z1, k64, z2);
                z = KL_ZFOLD(z2, k64, z3);
            } else {
                z = _mm512_xor_si512(_mm512_loadu_si512(p), init);
                p += 64;
            }
            while (end - p >= 64) {
                z = KL_ZFOLD(z, k64, _mm512_loadu_si512(p));
                p += 64;
            }
            /* lanes l0..l3 of z (l0 first): l0 moves 48 bytes, l1 32, l2 16, onto l3 */
            __m512i kk = _mm512_set_epi32(0, 0, 0, 0,
                                          0, (int)kl_k[0][1], 0, (int)kl_k[0][0],
                                          0, (int)kl_k[1][1], 0, (int)kl_k[1][0],
                                          0, (int)kl_k[2][1], 0, (int)kl_k[2][0]);
            __m512i f = _mm512_xor_si512(_mm512_clmulepi64_epi128(z, kk, 0x00),
                                         _mm512_clmulepi64_epi128(z, kk, 0x11));
            __m128i r = _mm_ternarylogic_epi64(_mm512_extracti32x4_epi32(z, 3),
                                               _mm512_extracti32x4_epi32(f, 0),
                                               _mm512_extracti32x4_epi32(f, 1), 0x96);
            r = _mm_xor_si128(r, _mm512_extracti32x4_epi32(f, 2));
            c = (uint32_t)_mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(r));
            c = (uint32_t)_mm_crc32_u64(c, (uint64_t)_mm_extract_epi64(r, 1));
            n = (size_t)(end - p);
        }
        while (n >= 8) {
            uint64_t v;
            memcpy(&v, p, 8);
            c = (uint32_t)_mm_crc32_u64(c, v);
            p += 8;
            n -= 8;
        }
        while (n--) c = _mm_crc32_u8(c, *p++);
        return c;
    }
    /* SSE4.2 tier: three crc32 streams over thirds of a block hide the instruction's latency
       (one per cycle instead of one per three), joined as crc(A|B) = crc(A)*x^(8|B|) ^ crc0(B).
       The shift is one carry-less multiply by k = x^(8D-33) mod P and one crc32 (see the
       folding note above: crc32_u64(0, clmul(c, k)) = c*k*x^33 mod P), cheap enough to
       interleave blocks down to 3 x 64 bytes, so small batches gain too. */
    #define KL_SSE_BLOCKS 4
    /* a batch's bytes are asked for at once before its CRC: the streams of a small batch
       (3 x 1024 bytes and less) end before the hardware prefetcher follows them, and the
       chunk was just copied by the reader thread on another core. Snappy's 3.5 KB batches:
       1.18x the CRC loop's time without, 0.86x with (measured side by side) */
    #define KL_PREFETCH 8192
    static const size_t kl_sse_len[KL_SSE_BLOCKS] = {4096, 1024, 256, 64};  /* per stream */
    static uint32_t kl_sse_k[KL_SSE_BLOCKS];
    static int kl_sse42_ok = 0;
    __attribute__((target("sse4.2,pclmul")))
    static inline uint32_t kl_shift(uint32_t c, uint32_t k) {
        __m128i m = _mm_clmulepi64_si128(_mm_cvtsi32_si128((int)c), _mm_cvtsi32_si128((int)k), 0);
        return (uint32_t)_mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(m));
    }
    __attribute__((target("sse4.2,pclmul")))
    static uint32_t kl_crc_sse42(uint32_t c, const unsigned char *p, size_t n) {
        for (size_t i = 0; i < n && i < KL_PREFETCH; i += 64)
            _mm_prefetch((const char *)p + i, _MM_HINT_T0);
        for (int t = 0; t < KL_SSE_BLOCKS; t++) {
            size_t len = kl_sse_len[t];
            uint32_t k = kl_sse_k[t];
            while (n >= 3 * len) {
                uint64_t ca = c, cb = 0, cc = 0, va, vb, vc;
                const unsigned char *a = p, *b = p + len, *d = p + 2 * len;
                for (size_t i = 0; i < len; i += 8) {
                    memcpy(&va, a + i, 8);
                    memcpy(&vb, b + i, 8);
                    memcpy(&vc, d + i, 8);
                    ca = _mm_crc32_u64(ca, va);
                    cb = _mm_crc32_u64(cb, vb);
                    cc = _mm_crc32_u64(cc, vc);
                }
                c = kl_shift(kl_shift((uint32_t)ca, k) ^ (uint32_t)cb, k) ^ (uint32_t)cc;
                p += 3 * len;
                n -= 3 * len;
            }
        }
        while (n >= 8) {
            uint64_t v;
            memcpy(&v, p, 8);
            c = (uint32_t)_mm_crc32_u64(c, v);
            p += 8;
            n -= 8;
        }
        while (n--) c = _mm_crc32_u8(c, *p++);
        return c;
    }
    static int kl_crc_setup(void) {
        static const unsigned d[4] = {16, 32, 48, 64};
        for (int t = 0; t < KL_SSE_BLOCKS; t++) kl_sse_k[t] = kl_xnmodp(8 * kl_sse_len[t] - 33);
        for (int i = 0; i < 4; i++) {
            kl_k[i][0] = kl_xnmodp(8 * d[i] + 64 - 33);
            kl_k[i][1] = kl_xnmodp(8 * d[i] - 33);
        }
        kl_k256[0] = kl_xnmodp(8 * 256 + 64 - 33);
        kl_k256[1] = kl_xnmodp(8 * 256 - 33);
        __builtin_cpu_init();
        kl_sse42_ok = __builtin_cpu_supports("sse4.2") && __builtin_cpu_supports("pclmul");
        /* libgcc / compiler-rt also check that the OS saves the ZMM state (XCR0) */
        kl_avx512_ok = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl")
            && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("vpclmulqdq")
            && __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.2");
        return kl_avx512_ok;
    }
    #else
    #define KL_X86_CRC 0
    static int kl_sse42_ok = 0;
    static int kl_crc_setup(void) { return 0; }
    static uint32_t kl_crc_avx512(uint32_t c, const unsigned char *p, size_t n) {
        (void)p; (void)n; return c;  /* never called: kl_crc_setup() said no */
    }
    static uint32_t kl_crc_sse42(uint32_t c, const unsigned char *p, size_t n) {
        (void)p; (void)n; return c;  /* never called: kl_sse42_ok is 0 */
    }
    #endif
    """
    int64_t kl_be64(const unsigned char *p) noexcept nogil
    uint32_t kl_be32u(const unsigned char *p) noexcept nogil
    int32_t kl_be32s(const unsigned char *p) noexcept nogil
    int64_t kl_pread_full(int fd, unsigned char *buf, int64_t n, int64_t off) noexcept nogil
    void kl_advise_sequential(int fd) noexcept nogil
    ctypedef struct kl_reader:
        pass
    int64_t kl_reader_need(int64_t end, int64_t chunk, int threaded) noexcept nogil
    unsigned char *kl_alloc_buffer(size_t size) noexcept nogil
    kl_reader *kl_reader_open(int fd, int64_t end, int64_t chunk, int threaded,
                              unsigned char *mem) noexcept nogil
    int kl_reader_get(kl_reader *R, int64_t k, unsigned char **data) noexcept nogil
    void kl_reader_advance(kl_reader *R, int64_t k) noexcept nogil
    void kl_reader_close(kl_reader *R) noexcept nogil
    uint32_t kl_xnmodp(unsigned n) noexcept nogil
    uint32_t kl_crc_avx512(uint32_t c, const unsigned char *p, size_t n) noexcept nogil
    int kl_crc_setup() noexcept nogil
    uint32_t kl_crc_sse42(uint32_t c, const unsigned char *p, size_t n) noexcept nogil
    int kl_sse42_ok

cdef extern from "Python.h":
    # leaves the handler's exception set; scan_clean re-raises it once back with the GIL
    int kl_check_signals "PyErr_CheckSignals" () noexcept

cdef extern from "<stdlib.h>" nogil:
    void *malloc(size_t n)
    void *realloc(void *p, size_t n)
    void free(void *p)

cdef extern from "<string.h>" nogil:
    void *memcpy(void *dst, const void *src, size_t n)

# -------------------------------------------------------------------------------------------

cdef enum:
    V2_HEADER_SIZE = 61
    KEEP_MAX = 1 << 20   # batches scan_rebuild hands back for the producer replay, at most
    PIDS_BITS = 13
    PIDS = 1 << PIDS_BITS  # producer slots of scan_rebuild's table (half of them used, at most)
    MIN_ENTRY_SIZE = 14  # layout.MIN_ENTRY_SIZE
    MIN_CHUNK = 4096

cdef enum Status:
    CLEAN = 0
    UNSURE = 1           # something the pure path may report: let it decide
    IO_ERROR = 2
    NO_MEMORY = 3
    INTERRUPTED = 4      # a signal handler raised (KeyboardInterrupt): re-raised by the caller

cdef enum Tier:
    TIER_PACKAGE = 0
    TIER_AVX512 = 1
    TIER_SSE42 = 2

cdef int64_t I32_MAX = _INT32_MAX
cdef int64_t SPAN = <int64_t>1 << 32
cdef int64_t BASE_LIMIT = <int64_t>1 << 62

cdef bint _avx512_available = kl_crc_setup() != 0
cdef bint _sse42_available = kl_sse42_ok != 0


cdef int _best_tier() noexcept:
    if _avx512_available:
        return TIER_AVX512
    return TIER_SSE42 if _sse42_available else TIER_PACKAGE


cdef int _tier = _best_tier()

# One buffer block kept between calls (the largest one needed so far: 20 MiB at the default
# chunk), so that scanning many segments does not fault fresh pages in for each. Taken and given
# back with the GIL held; a concurrent call gets a private block.
cdef unsigned char *_cache = NULL
cdef int64_t _cache_size = 0
cdef bint _cache_busy = False


cdef struct Pairs:
    # a growable array of (a, b) pairs (_push)
    int64_t *a
    int64_t *b
    Py_ssize_t n
    Py_ssize_t cap


cdef struct Scan:
    # input
    int fd
    int64_t end              # file size at open (EntryScanner: os.fstat)
    int64_t max_entry
    int64_t base
    bint has_prev
    int64_t prev_last
    bint has_oi
    Py_ssize_t oi_n
    int64_t *oi_off
    int64_t *oi_pos
    bint has_ti
    Py_ssize_t ti_n
    int64_t *ti_ts
    int64_t *ti_off
    int tier
    # the current chunk: file bytes [rbase, rend) are at data + (offset - rbase), and up to 60
    # bytes before rbase (a straddling header) in front of it
    kl_reader *reader
    int64_t chunk
    int64_t cur
    unsigned char *data
    int64_t rbase
    int64_t rend
    bint crc_failed
    # deep (records too): the straddling batch's copy, the records-section limit, and a
    # one-slot list where a BaseException from the deep check waits for scan_clean to raise
    bint deep
    int64_t max_decompressed
    unsigned char *scratch
    int64_t scratch_cap
    void *pending
    # output
    int64_t batches
    int64_t nbytes
    int64_t first_offset
    int64_t last_offset
    int64_t max_timestamp
    int64_t valid_end
    int64_t records
    uint32_t codecs          # bit c: a batch of codec c (attributes & 7)
    int64_t first_ts         # the first batch's max timestamp >= 0, -1 when none is
    Pairs ep                 # leader epochs: (epoch, start offset)
    # rebuild (scan_rebuild): LogSegment.recover's indexes, its splits where `cap` is given,
    # and the batches producer state is replayed from; the running values behind them
    bint rebuild
    int64_t interval
    int64_t max_entries
    bint has_cap
    int64_t cap_off
    int64_t cap_time
    Pairs oe                 # offset index: (relative offset, position)
    Pairs te                 # time index: (timestamp, relative offset)
    Pairs sp                 # splits: (base offset, position)
    Pairs kp                 # batches to replay: (position, size)
    int64_t r_last_index
    int64_t r_max
    int64_t r_max_off
    int64_t r_te_last
    int64_t pc_start
    int64_t pc_last
    int64_t pc_offsets
    int64_t pc_times
    int64_t pc_max
    int64_t pc_last_ts
    int64_t *pt_pid          # producer id -> (kp slot of its pending plain batch, run), PIDS slots
    int64_t *pt_slot
    int64_t *pt_run
    Py_ssize_t pt_n


cdef uint32_t _crc_package_gil(Scan *S, uint32_t c, const unsigned char *p, size_t n) noexcept:
    try:
        # imported here: the package costs ~35 ms of start-up and this tier is rarely used
        from crc32c import crc32c as pkg_crc32c
        mv = PyMemoryView_FromMemory(<char *>p, <Py_ssize_t>n, PyBUF_READ)
        return (<uint32_t>pkg_crc32c(mv, c ^ 0xFFFFFFFFu)) ^ 0xFFFFFFFFu
    except BaseException:
        S.crc_failed = True
        return 0


cdef uint32_t _crc_package(Scan *S, uint32_t c, const unsigned char *p, size_t n) noexcept nogil:
    """The crc32c package on a piece; `c` is the raw state (package values are inverted)."""
    cdef uint32_t r
    with gil:
        r = _crc_package_gil(S, c, p, n)
    return r


cdef inline uint32_t _crc(Scan *S, uint32_t c, const unsigned char *p, size_t n) noexcept nogil:
    if S.tier == TIER_AVX512:
        return kl_crc_avx512(c, p, n)
    if S.tier == TIER_SSE42:
        return kl_crc_sse42(c, p, n)
    return _crc_package(S, c, p, n)


cdef Status _fill(Scan *S, int64_t keep_from) noexcept nogil:
    """Move on to the next chunk; the bytes [keep_from, rend) (at most 60) go in front of it."""
    cdef int64_t keep = S.rend - keep_from
    cdef int64_t k = S.cur + 1
    cdef unsigned char *data
    cdef int sig
    with gil:
        sig = kl_check_signals()
    if sig < 0:
        return INTERRUPTED
    if kl_reader_get(S.reader, k, &data) != 0:
        return IO_ERROR  # a read error, or the file shrank: the pure path reports it
    if keep > 0:
        memcpy(data - keep, S.data + (keep_from - S.rbase), <size_t>keep)
    kl_reader_advance(S.reader, k)  # after the copy: the old chunk's slot may be refilled
    S.cur = k
    S.data = data
    S.rbase = k * S.chunk
    S.rend = S.rbase + (S.chunk if S.end - S.rbase > S.chunk else S.end - S.rbase)
    return CLEAN


cdef Status _push(Pairs *P, int64_t x, int64_t y) noexcept nogil:
    cdef Py_ssize_t cap
    cdef int64_t *a
    cdef int64_t *b
    if P.n == P.cap:
        cap = 16 if P.cap == 0 else P.cap * 2
        a = <int64_t *>realloc(P.a, <size_t>cap * sizeof(int64_t))
        if a == NULL:
            return NO_MEMORY
        P.a = a
        b = <int64_t *>realloc(P.b, <size_t>cap * sizeof(int64_t))
        if b == NULL:
            return NO_MEMORY
        P.b = b
        P.cap = cap
    P.a[P.n] = x
    P.b[P.n] = y
    P.n += 1
    return CLEAN


cdef void _free_pairs(Pairs *P) noexcept:
    free(P.a)
    free(P.b)
    P.a = P.b = NULL


cdef object _records_section(Scan *S, const unsigned char *b, int64_t total, int codec):
    """RecordBatch.records_section's bytes for a count > 0 batch (compressed: inflated), as a
    bytes object, or None where it would raise (records_faults then reports it)."""
    cdef object body = PyMemoryView_FromMemory(<char *>b + V2_HEADER_SIZE,
                                               <Py_ssize_t>(total - V2_HEADER_SIZE), PyBUF_READ)
    try:
        return _decompress(codec, body, max_size=S.max_decompressed)
    except CorruptDataError:  # what record_faults turns into a finding; anything else raises
        return None


cdef Status _deep_batch(Scan *S, const unsigned char *b, int64_t total, int64_t base_offset,
                        int64_t b_last) except *:
    """batch_rules.record_faults(b) of a CRC-checked v2 batch at b: CLEAN (and S.records
    counted) when it finds nothing, else UNSURE."""
    cdef int attributes = (b[21] << 8) | b[22]
    cdef int codec = attributes & 7
    cdef int32_t count = kl_be32s(b + 57)
    cdef int64_t first = 0, last = 0, n
    cdef const unsigned char *p
    cdef object section = None
    if count == 0:
        return CLEAN  # records_section: no records, whatever the bytes
    if count < 0 or codec > 4:
        return UNSURE
    if codec == 0:
        p = b + V2_HEADER_SIZE
        n = total - V2_HEADER_SIZE
    else:
        section = _records_section(S, b, total, codec)
        if section is None:
            return UNSURE
        p = <const unsigned char *>PyBytes_AS_STRING(section)
        n = PyBytes_GET_SIZE(section)
    if count > n:  # every record takes at least one byte
        return UNSURE
    if not kl_records_clean(p, n, count, base_offset, kl_be64(b + 27),
                            (attributes & 8) == 0, &first, &last):
        return UNSURE
    if first < base_offset or last > b_last:  # LOG_RECORD_OFFSET_RANGE
        return UNSURE
    if attributes & 0x20 and not _control_clean(S, b, total):  # LOG_CONTROL_INVALID
        return UNSURE
    S.records += count
    return CLEAN


cdef int _control_clean(Scan *S, const unsigned char *b, int64_t total) except -1:
    """Every record of a control batch parses as a control record (rare batches: the codec's
    own objects do it)."""
    from kafkalog_cli.codec.batch_v2 import RecordBatch
    from kafkalog_cli.codec.control import parse_control
    try:
        for r in RecordBatch(PyBytes_FromStringAndSize(<const char *>b, total)).records(
                S.max_decompressed):
            parse_control(r.key, r.value)
    except CorruptDataError:  # as record_faults; anything else raises there too
        return False
    return True


cdef Status _deep_batch_gil(Scan *S, const unsigned char *b, int64_t total, int64_t base_offset,
                            int64_t b_last) noexcept nogil:
    """_deep_batch from the nogil scan; an exception the pure pass would raise too (a signal
    handler's, MemoryError) waits in S.pending, stops the scan, and scan_clean raises it."""
    cdef Status st
    with gil:
        try:
            st = _deep_batch(S, b, total, base_offset, b_last)
        except BaseException as e:
            (<list>S.pending)[0] = e
            st = INTERRUPTED
    return st


cdef bint _scratch(Scan *S, int64_t n) noexcept nogil:
    """S.scratch holds at least n bytes (a straddling batch, for the deep check)."""
    cdef unsigned char *m
    if S.scratch_cap >= n:
        return True
    m = <unsigned char *>realloc(S.scratch, <size_t>n)
    if m == NULL:
        return False
    S.scratch = m
    S.scratch_cap = n
    return True


cdef Status _rebuild_batch(Scan *S, int64_t pos, int64_t total, unsigned char attr,
                           int64_t pid, int64_t base_offset, int64_t b_last,
                           int64_t max_ts) noexcept nogil:
    """rebuild.rebuild_segment's steps for one batch the scan accepted (its position is the
    valid bytes before it: the scan starts at 0 and stops at the first doubt)."""
    cdef Status st
    # -- _Pieces.starts_piece --
    if S.has_cap:
        if max_ts > S.pc_max:
            S.pc_max = max_ts
        if pos - S.pc_start - S.pc_last > S.interval:
            if S.pc_offsets >= S.cap_off or S.pc_times >= S.cap_time - 1:
                st = _push(&S.sp, base_offset, pos)
                if st != CLEAN:
                    return st
                S.pc_start, S.pc_last, S.pc_offsets, S.pc_times = pos, 0, 0, 0
                S.pc_max, S.pc_last_ts = max_ts, -1
            else:
                S.pc_offsets += 1
                if S.pc_max > S.pc_last_ts:
                    S.pc_times += 1
                    S.pc_last_ts = S.pc_max
                S.pc_last = pos - S.pc_start
    # -- the indexes --
    if max_ts > S.r_max:
        S.r_max, S.r_max_off = max_ts, b_last
    if pos - S.r_last_index > S.interval:
        if S.oe.n and b_last - S.base <= S.oe.a[S.oe.n - 1]:  # invalid-offset: the pure path
            return UNSURE
        if S.oe.n < S.max_entries:
            st = _push(&S.oe, b_last - S.base, pos)
            if st != CLEAN:
                return st
            if S.r_max > S.r_te_last:  # _TimeIndexBuilder.maybe_append
                st = _push(&S.te, S.r_max, S.r_max_off - S.base)
                if st != CLEAN:
                    return st
                S.r_te_last = S.r_max
        S.r_last_index = pos
    if pid >= 0:
        return _keep(S, pid, pos, total, (attr & 0x30) != 0)  # transactional or control
    return CLEAN


cdef Status _keep(Scan *S, int64_t pid, int64_t pos, int64_t total, bint special) noexcept nogil:
    """Note a batch of producer `pid` for the replay of ProducerState.append_batch. Every
    transactional or control batch is kept; of a producer's run of other batches (nothing
    else of its own between them) the first and the last: the ones between change nothing
    the last does not overwrite (its last batch and entry; the coordinator epoch and open
    transaction they carry over are the last one's too), and no other producer's batch
    reads them. The first keeps the producer's place in the state's dicts."""
    cdef uint64_t hsh
    cdef Py_ssize_t i, k
    cdef Status st
    if S.kp.n >= KEEP_MAX:
        return UNSURE  # the pure path, which streams
    if S.pt_pid == NULL:
        S.pt_pid = <int64_t *>malloc(PIDS * sizeof(int64_t))
        S.pt_slot = <int64_t *>malloc(PIDS * sizeof(int64_t))
        S.pt_run = <int64_t *>malloc(PIDS * sizeof(int64_t))
        if S.pt_pid == NULL or S.pt_slot == NULL or S.pt_run == NULL:
            return NO_MEMORY
        for k in range(PIDS):
            S.pt_pid[k] = -1
    hsh = <uint64_t>pid * <uint64_t>0x9E3779B97F4A7C15
    i = <Py_ssize_t>(hsh >> (64 - PIDS_BITS))
    while S.pt_pid[i] != pid and S.pt_pid[i] != -1:
        i = (i + 1) & (PIDS - 1)
    if S.pt_pid[i] == -1:
        if S.pt_n >= PIDS // 2:
            return UNSURE  # thousands of producers in one segment: the pure path
        S.pt_pid[i], S.pt_slot[i], S.pt_run[i] = pid, -1, 0
        S.pt_n += 1
    if special:
        S.pt_slot[i], S.pt_run[i] = -1, 0
        return _push(&S.kp, pos, total)
    if S.pt_slot[i] >= 0 and S.pt_run[i] >= 2:  # the run's last so far: this one now
        S.kp.a[S.pt_slot[i]], S.kp.b[S.pt_slot[i]] = pos, total
    else:
        st = _push(&S.kp, pos, total)
        if st != CLEAN:
            return st
        S.pt_slot[i] = S.kp.n - 1
    S.pt_run[i] += 1
    return CLEAN


cdef Status _scan(Scan *S) noexcept nogil:
    """The pass of check_log_file (shallow) over a segment, stopping at the first doubt."""
    cdef int64_t pos = 0, left, total, p, e, q
    cdef int64_t base_offset, b_last, max_ts, floor, pid
    cdef int32_t size, lod, ple
    cdef unsigned char attr
    cdef uint32_t stored, c
    cdef const unsigned char *h
    cdef const unsigned char *whole          # the whole batch, contiguous (deep only)
    cdef Status st
    cdef bint first = True
    cdef bint has_last = S.has_prev          # check_log_file's `last`
    cdef int64_t last = S.prev_last
    cdef bint has_pbl = False                # `prev_batch_last` (within this segment)
    cdef int64_t pbl = 0
    cdef int64_t running_max = -1
    cdef Py_ssize_t oi = 0, ti = 0
    cdef bint pending = False                # _OffsetIndexWalk.pending
    cdef int64_t pending_want = 0

    while True:
        # -- framing (EntryScanner._run, decode_entry) --
        left = S.end - pos
        if left == 0:
            break
        if left < V2_HEADER_SIZE:  # torn/garbage/zero tail, or an entry too short for v2
            return UNSURE
        if S.rend - pos < V2_HEADER_SIZE:
            st = _fill(S, pos)
            if st != CLEAN:
                return st
        h = S.data + (pos - S.rbase)
        size = kl_be32s(h + 8)
        if size < MIN_ENTRY_SIZE:
            return UNSURE
        total = <int64_t>size + 12
        if total > left or total > S.max_entry:
            return UNSURE
        if h[16] != 2 or total < V2_HEADER_SIZE:  # legacy entries are left to the pure path
            return UNSURE
        base_offset = kl_be64(h)
        ple = kl_be32s(h + 12)
        stored = kl_be32u(h + 17)
        lod = kl_be32s(h + 23)
        max_ts = kl_be64(h + 35)
        # read now: once the CRC has moved on to the next chunk, the reading thread may
        # refill the one `h` points into
        attr = h[22]  # attributes' low byte (header bytes 21-22)
        pid = kl_be64(h + 43)

        # -- offsets (check_log_file) --
        if lod < 0:  # LOG_BATCH_INVALID
            return UNSURE
        # beyond base +- 2^32 the last offset cannot be within [base, base + INT32_MAX]
        # (LOG_OFFSET_OVERFLOW); inside it the arithmetic below cannot overflow
        if base_offset < S.base - SPAN or base_offset > S.base + SPAN:
            return UNSURE
        b_last = base_offset + lod
        if has_last and base_offset <= last:  # LOG_OFFSET_ORDER
            return UNSURE
        if first and base_offset < S.base:  # SEGMENT_BASE_MISMATCH
            return UNSURE
        if b_last - S.base < 0 or b_last - S.base > I32_MAX:  # LOG_OFFSET_OVERFLOW
            return UNSURE

        # -- CRC-32C over [21, total), piecewise across refills --
        c = 0xFFFFFFFFu
        p = pos + 21
        e = pos + total
        whole = S.data + (pos - S.rbase)
        if S.deep and e > S.rend:  # the records need the batch in one piece: read it whole
            if not _scratch(S, total):
                return NO_MEMORY
            if kl_pread_full(S.fd, S.scratch, total, pos) != total:
                return IO_ERROR
            whole = S.scratch
            c = _crc(S, c, whole + 21, <size_t>(total - 21))
            while S.rend < e:  # on to the chunk where the next batch starts
                st = _fill(S, S.rend)
                if st != CLEAN:
                    return st
            p = e
        while p < e:
            q = e if e < S.rend else S.rend
            if q > p:
                c = _crc(S, c, S.data + (p - S.rbase), <size_t>(q - p))
                p = q
            if p == e:
                break
            st = _fill(S, S.rend)
            if st != CLEAN:
                return st
        if S.crc_failed:
            return UNSURE
        if (c ^ 0xFFFFFFFFu) != stored:  # LOG_CRC_MISMATCH
            return UNSURE
        if S.deep:  # batch_rules.record_faults
            st = _deep_batch_gil(S, whole, total, base_offset, b_last)
            if st != CLEAN:
                return st

        # -- what the pure pass records --
        S.batches += 1
        S.nbytes += total
        S.valid_end = e
        if first:
            S.first_offset = base_offset
            first = False
        S.codecs |= 1u << (attr & 7)
        if S.first_ts < 0 and max_ts >= 0:
            S.first_ts = max_ts
        last = b_last  # > the previous `last` (order checked above), so max() is b_last
        has_last = True
        if max_ts > running_max:
            running_max = max_ts
        if ple >= 0 and (S.ep.n == 0 or ple > S.ep.a[S.ep.n - 1]):
            st = _push(&S.ep, ple, base_offset)
            if st != CLEAN:
                return st
        if S.rebuild:
            st = _rebuild_batch(S, pos, total, attr, pid, base_offset, b_last, max_ts)
            if st != CLEAN:
                return st

        # -- _OffsetIndexWalk.batch(pos, prev_batch_last, b_last) --
        if S.has_oi:
            if pending:
                if pending_want <= b_last:
                    pending = False
                elif oi < S.oi_n and pos >= S.oi_pos[oi]:  # INDEX_OFFSET_MISMATCH
                    return UNSURE
            if oi < S.oi_n and S.oi_pos[oi] < pos:  # INDEX_NOT_BATCH_START
                return UNSURE
            if oi < S.oi_n and S.oi_pos[oi] == pos:
                if S.oi_off[oi] > b_last:
                    pending = True
                    pending_want = S.oi_off[oi]
                elif has_pbl and S.oi_off[oi] <= pbl:  # INDEX_OFFSET_MISMATCH
                    return UNSURE
                oi += 1

        # -- _TimeIndexWalk.batch(prev_batch_last, b_last, running_max) --
        if S.has_ti:
            floor = pbl if has_pbl else -1
            while ti < S.ti_n and S.ti_off[ti] <= b_last:
                if S.ti_off[ti] <= floor:  # TIMEINDEX_OFFSET_NOT_FOUND
                    return UNSURE
                if S.ti_ts[ti] != running_max:  # TIMEINDEX_MISMATCH
                    return UNSURE
                ti += 1

        pbl = b_last
        has_pbl = True
        pos = e

    S.last_offset = last
    S.max_timestamp = running_max
    # -- _OffsetIndexWalk.finish / _TimeIndexWalk.finish --
    if S.has_oi and (pending or oi < S.oi_n):  # INDEX_OFFSET_MISMATCH / INDEX_PAST_LOG_END
        return UNSURE
    if S.has_ti:
        if ti < S.ti_n:  # TIMEINDEX_OFFSET_NOT_FOUND
            return UNSURE
        if running_max >= 0 and (S.ti_ts[S.ti_n - 1] if S.ti_n else -1) < running_max:
            return UNSURE  # TIMEINDEX_NO_FINAL_ENTRY
    return CLEAN


cdef void memset_scan(Scan *S) noexcept:
    cdef char *p = <char *>S
    cdef size_t i
    for i in range(sizeof(Scan)):
        p[i] = 0
    S.fd = -1


cdef void _free_scan(Scan *S) noexcept:
    """What a scan allocated (memset_scan left every pointer NULL: free(NULL) is a no-op)."""
    free(S.scratch)
    free(S.oi_off)
    free(S.oi_pos)
    free(S.ti_ts)
    free(S.ti_off)
    _free_pairs(&S.ep)
    _free_pairs(&S.oe)
    _free_pairs(&S.te)
    _free_pairs(&S.sp)
    _free_pairs(&S.kp)
    free(S.pt_pid)
    free(S.pt_slot)
    free(S.pt_run)


cdef unsigned char *_take_cache(int64_t need) noexcept:
    """The cached block (grown to `need` if smaller), or NULL if another call holds it."""
    global _cache, _cache_size, _cache_busy
    if _cache_busy:
        return NULL
    if _cache_size < need:
        free(_cache)
        _cache_size = 0
        _cache = kl_alloc_buffer(<size_t>need)
        if _cache == NULL:
            return NULL
        _cache_size = need
    _cache_busy = True
    return _cache


cdef void _give_back_cache() noexcept:
    global _cache_busy
    _cache_busy = False


cdef int _reraise() except -1:
    """Propagate the exception a signal handler left set (see _fill)."""
    return -1


cdef bint _int64(object v, int64_t *out):
    """Store v in *out if it is an int that fits 64 bits."""
    if not isinstance(v, int):
        return False
    try:
        out[0] = v
    except OverflowError:
        return False
    return True


cdef Py_ssize_t MAX_PAIRS = 1 << 21  # 32 MiB of arrays; a larger index takes the pure path


cdef int _pairs(object entries, Py_ssize_t *n, int64_t **a, int64_t **b) except -1:
    """Copy a sized iterable of (int, int) (an index's entries) into two C arrays (freed by
    the caller). False if it holds something else, or more than MAX_PAIRS entries."""
    cdef Py_ssize_t i = 0, m
    m = len(entries)
    if m > MAX_PAIRS:
        return False
    a[0] = <int64_t *>malloc(<size_t>(m if m else 1) * sizeof(int64_t))
    b[0] = <int64_t *>malloc(<size_t>(m if m else 1) * sizeof(int64_t))
    if a[0] == NULL or b[0] == NULL:
        raise MemoryError
    for t in entries:
        if i >= m or not isinstance(t, tuple) or len(t) != 2:
            return False
        if not _int64(t[0], &a[0][i]) or not _int64(t[1], &b[0][i]):
            return False
        i += 1
    if i != m:
        return False
    n[0] = m
    return True


cdef bint _init_scan(Scan *S, object base, object max_entry):
    """`S` zeroed, with the values every scan starts from; False where `base` or
    `max_entry` is out of range (the caller answers None)."""
    memset_scan(S)
    S.tier = _tier
    S.max_timestamp = -1
    S.first_ts = -1
    return (_int64(base, &S.base) and -BASE_LIMIT < S.base < BASE_LIMIT
            and _int64(max_entry, &S.max_entry))


cdef Status _scan_file(Scan *S, object path, Py_ssize_t chunk, bint use_threads,
                       list pending) except *:
    """_scan over the file at `path` (opened, read through the chunk reader, closed): CLEAN,
    or UNSURE where it doubts or cannot open or stat the file (the pure path says why);
    raises MemoryError, and what a signal handler or the deep check raised."""
    cdef Status st = UNSURE
    cdef unsigned char *mem = NULL
    cdef bint took_cache = False
    try:
        S.fd = _os.open(path, _os.O_RDONLY | getattr(_os, "O_CLOEXEC", 0))
    except (OSError, TypeError, ValueError):
        return UNSURE
    try:
        try:
            S.end = _os.fstat(S.fd).st_size
        except OSError:
            return UNSURE
        if S.end > 0:
            S.chunk = chunk if chunk < S.end else S.end
            S.cur = -1
            kl_advise_sequential(S.fd)
            mem = _take_cache(kl_reader_need(S.end, S.chunk, use_threads))
            took_cache = mem != NULL
            S.reader = kl_reader_open(S.fd, S.end, S.chunk, use_threads, mem)
            if S.reader == NULL:
                raise MemoryError
        with nogil:
            st = _scan(S)
        if st == INTERRUPTED:
            if pending[0] is not None:  # raised in the deep check (it held the GIL)
                raise pending[0]
            _reraise()  # before any other Python call: the exception is still set
    finally:
        if S.reader != NULL:  # joins the helper thread, which reads from fd
            with nogil:
                kl_reader_close(S.reader)
            S.reader = NULL
        if took_cache:
            _give_back_cache()
        _os.close(S.fd)
    if st == NO_MEMORY:
        raise MemoryError
    return CLEAN if st == CLEAN else UNSURE


def scan_clean(path, base, prev_last=None, offset_entries=None, time_entries=None, *,
               Py_ssize_t chunk=DEFAULT_CHUNK, max_entry=DEFAULT_MAX_ENTRY, threads=None,
               bint deep=False, max_decompressed=DEFAULT_MAX_DECOMPRESSED, bint extra=False):
    """Check one `.log` file as `check_log_file(..., CheckOptions(shallow=not deep,
    max_decompressed=max_decompressed), ...)` does.

    `offset_entries` / `time_entries` are `OffsetIndex.entries` / `TimeIndex.entries` (None
    when there is no such index). Returns None unless the pure pass would add no finding;
    then a tuple (first_offset, last_offset, max_timestamp, valid_end, epochs, batches, bytes,
    records):
    the SegmentSummary fields (magics is {2} when batches > 0, else empty; damaged is False)
    and the Stats increments (records: 0 unless deep). I/O errors also give None (the pure path
    reports them). With `extra`, two more fields, what `info` shows: the batches' codecs as a
    bit mask (bit c: codec c) and the first batch's max timestamp that is >= 0 (-1: none).

    `deep` adds batch_rules.record_faults: every records section is inflated (through
    codec.compression, as the pure path) and parsed in C (fastcodec.kl_records_clean), a batch
    that straddles two chunks is read whole into a scratch buffer (at most max_entry bytes, as
    the pure scanner's). Control batches are checked with the codec's own objects.

    Files of more than two chunks are read with the help of one thread (it only reads: the
    two threads share the kernel's copying, the CRCs stay here); `threads=False` reads here
    only, and is the default when deep (decoding, not reading, is what a deep pass waits on). Memory: at most 5 chunk buffers (20 MiB at the default 4 MiB chunk), kept for the
    next call.
    """
    cdef Scan S
    cdef Py_ssize_t i
    cdef list pending = [None]
    cdef bint use_threads = (not deep) if threads is None else bool(threads)
    if not _init_scan(&S, base, max_entry):
        return None
    S.deep = deep
    S.pending = <void *>pending
    if deep and not _int64(max_decompressed, &S.max_decompressed):
        return None
    if chunk < MIN_CHUNK:
        chunk = MIN_CHUNK
    if prev_last is not None:
        if not _int64(prev_last, &S.prev_last):
            return None
        S.has_prev = True
    try:
        if offset_entries is not None:
            S.has_oi = True
            if not _pairs(offset_entries, &S.oi_n, &S.oi_off, &S.oi_pos):
                return None
            for i in range(1, S.oi_n):  # INDEX_ORDER
                if S.oi_off[i] <= S.oi_off[i - 1]:
                    return None
        if time_entries is not None:
            S.has_ti = True
            if not _pairs(time_entries, &S.ti_n, &S.ti_ts, &S.ti_off):
                return None
            for i in range(1, S.ti_n):  # TIMEINDEX_ORDER
                if S.ti_ts[i] <= S.ti_ts[i - 1] or S.ti_off[i] < S.ti_off[i - 1]:
                    return None
        if _scan_file(&S, path, chunk, use_threads, pending) != CLEAN:
            return None
        epochs = [(S.ep.a[i], S.ep.b[i]) for i in range(S.ep.n)]
        if S.batches == 0:
            got = (None, None, -1, 0, epochs, 0, 0, 0)
        else:
            got = (S.first_offset, S.last_offset, S.max_timestamp, S.valid_end, epochs,
                   S.batches, S.nbytes, S.records)
        return got + (S.codecs, S.first_ts) if extra else got
    finally:
        _free_scan(&S)


def scan_rebuild(path, base, int64_t interval, int64_t max_entries, cap_offsets=None,
                 cap_times=None, *, Py_ssize_t chunk=DEFAULT_CHUNK, max_entry=DEFAULT_MAX_ENTRY,
                 bint threads=False):
    """rebuild.rebuild_segment's pass over one `.log` file (no `rules`), for a segment the
    shallow check finds clean: None otherwise (the pure path then finds where it stops), or
    (offset_entries, time_entries, splits, valid_bytes, batches, last_offset, max_timestamp,
    offset_of_max_timestamp, replay): the Rebuilt fields (time_entries with the final
    entry; splits only where `cap_offsets` / `cap_times`, the IndexCapacity, are given) and
    the (position, size) of the batches to replay ProducerState.append_batch on, in the
    order to apply them (_keep says which). `threads`: read with the help of a thread, as
    scan_clean does; off by default, as -j's workers already keep every core busy (with it
    one process took 1.4 cores, and two scaled by that much less)."""
    cdef Scan S
    cdef Py_ssize_t i
    if not _init_scan(&S, base, max_entry):
        return None
    if chunk < MIN_CHUNK:
        chunk = MIN_CHUNK
    S.rebuild = True
    S.interval, S.max_entries = interval, max_entries
    if cap_offsets is not None or cap_times is not None:
        if not _int64(cap_offsets, &S.cap_off) or not _int64(cap_times, &S.cap_time):
            return None
        S.has_cap = True
    S.r_max, S.r_max_off, S.r_te_last = -1, S.base, -1
    S.pc_max = S.pc_last_ts = -1
    try:
        if _scan_file(&S, path, chunk, threads, [None]) != CLEAN:
            return None
        if S.r_max > S.r_te_last:  # the final maybe_append
            if _push(&S.te, S.r_max, S.r_max_off - S.base) != CLEAN:
                raise MemoryError
        return ([(S.oe.a[i], S.oe.b[i]) for i in range(S.oe.n)],
                [(S.te.a[i], S.te.b[i]) for i in range(S.te.n)],
                [(S.sp.a[i], S.sp.b[i]) for i in range(S.sp.n)],
                S.valid_end, S.batches, S.last_offset if S.batches else None,
                S.r_max, S.r_max_off,
                [(S.kp.a[i], S.kp.b[i]) for i in range(S.kp.n)])
    finally:
        _free_scan(&S)


def walk_cuts(int fd, int64_t pos, int64_t end, Py_ssize_t hops, int64_t piece_bytes,
              int64_t piece_records, int64_t min_piece, int64_t max_entry):
    """pieces._walk's hops in C, one pread of a v2 header each and no Python object per
    hop (a big dir has tens of thousands of batches): (cuts, hops spent), or None for a read
    error (the pure walk's OSError). The same framing as the pure walk's and _scan's."""
    cdef unsigned char h[V2_HEADER_SIZE]
    cdef list out = []
    cdef int64_t last = pos, records = 0, total, got
    cdef int32_t size, count
    cdef Py_ssize_t spent = 0
    while spent < hops and end - pos >= min_piece:  # the last piece takes the rest
        spent += 1
        with nogil:
            got = kl_pread_full(fd, h, V2_HEADER_SIZE, pos)
        if got < 0:
            return None
        if got < V2_HEADER_SIZE:
            break
        size = kl_be32s(h + 8)
        total = <int64_t>size + 12
        if size < MIN_ENTRY_SIZE or total > end - pos or total > max_entry:
            break
        if h[16] != 2 or total < V2_HEADER_SIZE:
            break
        count = kl_be32s(h + V2_HEADER_SIZE - 4)
        pos += total
        records += count if count > 0 else 0
        if (pos - last >= piece_bytes or records >= piece_records) and end - pos >= min_piece:
            out.append(pos)
            last = pos
            records = 0
    return out, spent


# -- introspection and test hooks -------------------------------------------------------------

def crc_tier():
    """'avx512' (VPCLMULQDQ folding), 'sse42' (three interleaved crc32 instruction streams,
    joined by PCLMULQDQ) or
    'package' (the crc32c package, per buffer piece)."""
    return {TIER_AVX512: "avx512", TIER_SSE42: "sse42"}.get(_tier, "package")


def avx512_available():
    return bool(_avx512_available)


def sse42_available():
    return bool(_sse42_available)


def _set_crc_tier(name):
    """Tests: force a tier ('avx512' / 'sse42' only where available, 'package', or 'auto')."""
    global _tier
    if name == "auto":
        _tier = _best_tier()
    elif name == "package":
        _tier = TIER_PACKAGE
    elif name == "avx512" and _avx512_available:
        _tier = TIER_AVX512
    elif name == "sse42" and _sse42_available:
        _tier = TIER_SSE42
    else:
        raise ValueError(f"CRC tier {name!r} is not available here")


def _crc32c(data, unsigned int value=0):
    """Tests: CRC-32C of a bytes-like object with the current tier, continuing from `value`
    (same meaning as crc32c.crc32c's second argument)."""
    cdef Scan S
    cdef const unsigned char[::1] view = memoryview(data).cast("B")
    cdef uint32_t c
    memset_scan(&S)
    S.tier = _tier
    c = _crc(&S, value ^ 0xFFFFFFFFu, &view[0] if view.shape[0] else NULL,
             <size_t>view.shape[0]) ^ 0xFFFFFFFFu
    if S.crc_failed:
        raise RuntimeError("crc32c package call failed")
    return c


cdef extern from "sys/prctl.h":
    int prctl(int option, unsigned long arg2, unsigned long arg3, unsigned long arg4,
              unsigned long arg5)


def die_with_parent(int sig):
    """Linux's PR_SET_PDEATHSIG: `sig` to this process when its parent ends (a -j worker,
    commands/workers.py); here to spare each worker importing ctypes for one call."""
    if prctl(1, <unsigned long>sig, 0, 0, 0) != 0:  # 1: PR_SET_PDEATHSIG
        raise OSError(_os.strerror(22))
