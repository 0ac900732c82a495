/* The hardware floor for `verify --shallow`: CRC32C (Castagnoli) of whole files with the SSE4.2
 * crc32 instruction, three independent streams interleaved so the instruction's 3-cycle latency is
 * hidden (one crc32 per cycle), the streams joined by GF(2) shifts. Reads with read(2) into one
 * reused buffer, as a tool would; no per-batch work, so this is what a CRC-bound scan can reach.
 *
 *   crc32c_loop [--chunk BYTES] [--repeat N] FILE...
 * prints {"bytes": N, "seconds": S, "gb_per_s": G, "crc32c": [...per file...]}.
 * Build: gcc -O2 -msse4.2 -o bench/out/crc32c_loop bench/peers/crc32c_loop.c */
#define _GNU_SOURCE
#include <fcntl.h>
#include <nmmintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define POLY 0x82f63b78u /* CRC32C, reflected */

/* a*b modulo the polynomial, both as reflected 32-bit polynomials */
static uint32_t multmodp(uint32_t a, uint32_t b) {
    uint32_t m = 1u << 31, p = 0;
    for (;;) {
        if (a & m) {
            p ^= b;
            if ((a & (m - 1)) == 0) break;
        }
        m >>= 1;
        b = b & 1 ? (b >> 1) ^ POLY : b >> 1;
    }
    return p;
}

static uint32_t x2n_table[32]; /* x^(2^n) mod p */

static void init_table(void) {
    uint32_t p = 1u << 30; /* x^1 */
    x2n_table[0] = p;
    for (int n = 1; n < 32; n++) x2n_table[n] = p = multmodp(p, p);
}

/* x^(len*8) mod p: the shift that moves a CRC past len zero bytes */
static uint32_t shift_for(uint64_t len) {
    uint32_t p = 1u << 31; /* x^0 */
    unsigned k = 3;
    while (len) {
        if (len & 1) p = multmodp(x2n_table[k & 31], p);
        len >>= 1;
        k++;
    }
    return p;
}

/* raw (unconditioned) CRC state after `n` bytes, 8 bytes per crc32 instruction */
static uint64_t crc_run(uint64_t c, const unsigned char *p, size_t n) {
    while (n >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        c = _mm_crc32_u64(c, v);
        p += 8;
        n -= 8;
    }
    while (n--) c = _mm_crc32_u8((uint32_t)c, *p++);
    return c;
}

/* Three streams over thirds of buf; the state of stream i is shifted past the bytes that follow
 * it and xored in: crc(A||B) = shift(crc(A), |B|) ^ crc0(B) for raw states (crc0 starts at 0). */
static uint32_t crc_update3(uint32_t crc, const unsigned char *buf, size_t n, uint32_t third_shift,
                            size_t third) {
    if (n < 3 * 256 || n != 3 * third) return (uint32_t)crc_run(crc, buf, n);
    const unsigned char *a = buf, *b = buf + third, *c = buf + 2 * third;
    uint64_t ca = crc, cb = 0, cc = 0;
    for (size_t i = 0; i < third; i += 8) {
        uint64_t va, vb, vc;
        memcpy(&va, a + i, 8);
        memcpy(&vb, b + i, 8);
        memcpy(&vc, c + i, 8);
        ca = _mm_crc32_u64(ca, va);
        cb = _mm_crc32_u64(cb, vb);
        cc = _mm_crc32_u64(cc, vc);
    }
    uint32_t r = multmodp(third_shift, (uint32_t)ca) ^ (uint32_t)cb;
    return multmodp(third_shift, r) ^ (uint32_t)cc;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    size_t chunk = 3u << 20; /* 3 MiB: a multiple of 3*8 so full chunks split evenly */
    int repeat = 1, first = 1;
    while (first < argc && strncmp(argv[first], "--", 2) == 0) {
        if (!strcmp(argv[first], "--chunk") && first + 1 < argc) chunk = strtoull(argv[first + 1], 0, 10);
        else if (!strcmp(argv[first], "--repeat") && first + 1 < argc) repeat = atoi(argv[first + 1]);
        else { fprintf(stderr, "usage: crc32c_loop [--chunk BYTES] [--repeat N] FILE...\n"); return 2; }
        first += 2;
    }
    if (first >= argc || chunk < 24 || repeat < 1) {
        fprintf(stderr, "usage: crc32c_loop [--chunk BYTES] [--repeat N] FILE...\n");
        return 2;
    }
    chunk -= chunk % 24;
    init_table();
    size_t third = chunk / 3;
    uint32_t third_shift = shift_for(third);
    unsigned char *buf = aligned_alloc(4096, (chunk + 4095) & ~(size_t)4095);
    uint32_t *crcs = calloc(argc, sizeof *crcs);
    if (!buf || !crcs) { perror("alloc"); return 1; }
    uint64_t total = 0;
    double t0 = now();
    for (int r = 0; r < repeat; r++) {
        for (int f = first; f < argc; f++) {
            int fd = open(argv[f], O_RDONLY);
            if (fd < 0) { perror(argv[f]); return 1; }
            uint32_t crc = 0xffffffffu;
            for (;;) {
                size_t got = 0;
                while (got < chunk) { /* fill the chunk: short reads must not change the split */
                    ssize_t n = read(fd, buf + got, chunk - got);
                    if (n < 0) { perror(argv[f]); return 1; }
                    if (n == 0) break;
                    got += (size_t)n;
                }
                if (got == 0) break;
                crc = crc_update3(crc, buf, got, third_shift, third);
                total += got;
                if (got < chunk) break;
            }
            close(fd);
            crcs[f] = ~crc;
        }
    }
    double secs = now() - t0;
    printf("{\"bytes\": %llu, \"seconds\": %.6f, \"gb_per_s\": %.3f, \"crc32c\": [",
           (unsigned long long)total, secs, secs > 0 ? total / secs / 1e9 : 0.0);
    for (int f = first; f < argc; f++) printf("%s\"%08x\"", f > first ? ", " : "", crcs[f]);
    printf("]}\n");
    return 0;
}
