/* Uniform random numbers from Ember's counter-based Philox4x32-10 stream, with the exact bits
 * of ember.random.philox_uniform: number i of a draw is word i % 4 of
 * philox(counter = offset + i / 4, key = seed), its top 24 bits scaled by 2^-24. */
#include <stdint.h>
#include "ember.h"

static void rng_philox(uint64_t counter, uint64_t seed, uint32_t out[4]) {
    uint32_t c0 = (uint32_t)counter, c1 = (uint32_t)(counter >> 32), c2 = 0, c3 = 0;
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int round = 0; round < 10; round++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)p1;
        c3 = (uint32_t)p0;
        c0 = n0;
        c2 = n2;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    out[0] = c0; out[1] = c1; out[2] = c2; out[3] = c3;
}

/* n numbers in [0, 1) as float32 or float64 at out; the seed and the offset are two uint64
 * in the metadata scratch (words: seed low, seed high, offset low, offset high) */
int32_t EXPORT(em_random_uniform)(int32_t dtype, void *out, int32_t n) {
    const uint32_t *m = (const uint32_t *)em_meta_words();
    uint64_t seed = m[0] | (uint64_t)m[1] << 32, offset = m[2] | (uint64_t)m[3] << 32;
    if (dtype != DT_F32 && dtype != DT_F64) return 1;
    const double scale = 1.0 / (1 << 24);
    uint32_t words[4];
    for (int32_t i = 0; i < n; i++) {
        if (i % 4 == 0) rng_philox(offset + (uint64_t)(i / 4), seed, words);
        double v = (words[i % 4] >> 8) * scale;
        if (dtype == DT_F32) ((float *)out)[i] = (float)v;
        else ((double *)out)[i] = v;
    }
    return 0;
}
