/* The host's own two-core floor for the -j figures: a compute loop with no I/O, no system
 * calls and no memory shared between processes. Each iteration steps four independent PRNG
 * chains, looks one of them up in a 128 KiB table (within a core's L2, as an interpreter's
 * hot data is) and branches on another, so it keeps a core's ports, branch predictor and
 * caches busy much as decoding does, without depending on kafkalog or Python. Two copies
 * started together take as long as one alone when the two CPUs are truly independent; on a
 * VM whose vCPUs share physical cores, or a busy host, each runs slower while the other is
 * busy, and no -j 2 run can do better than that.
 *
 *   cpu_loop [ITERATIONS]   (default 400 M) prints the loop's seconds and a checksum.
 * Build: gcc -O2 -o bench/out/cpu_loop bench/peers/cpu_loop.c */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define TABLE (1 << 15) /* uint32 entries: 128 KiB */

int main(int argc, char **argv) {
    uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 400000000ULL;
    uint32_t *t = malloc(TABLE * sizeof *t);
    if (t == NULL) return 2;
    for (uint32_t i = 0; i < TABLE; i++) t[i] = i * 2654435761u;
    uint64_t a = 1, b = 2, c = 3, d = 4, sum = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (uint64_t i = 0; i < n; i++) {
        a ^= a << 13; a ^= a >> 7; a ^= a << 17;
        b = b * 6364136223846793005ULL + 1442695040888963407ULL;
        c += (c >> 5) ^ i;
        d = d * 3 + (b >> 33);
        uint32_t v = t[(a ^ c) & (TABLE - 1)];
        if ((v ^ (uint32_t)b) & 0x10) sum += v; else sum ^= d;
        t[(d >> 7) & (TABLE - 1)] = (uint32_t)(v + sum);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("{\"seconds\": %.6f, \"checksum\": %llu}\n",
           (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9,
           (unsigned long long)(sum ^ a ^ c));
    free(t);
    return 0;
}
