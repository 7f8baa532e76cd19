/* SIMD128 helpers shared by the float32 kernels (pooling, softmax, norms): sums and maxima
 * of contiguous runs, and exp over f32x4. */
#ifndef EMBER_VEC_H
#define EMBER_VEC_H

#include <stdint.h>
#include <wasm_simd128.h>

static inline float vec_hsum(v128_t v) {
    return (wasm_f32x4_extract_lane(v, 0) + wasm_f32x4_extract_lane(v, 1)) +
           (wasm_f32x4_extract_lane(v, 2) + wasm_f32x4_extract_lane(v, 3));
}

/* x[0] + ... + x[n-1], in eight partial sums (more accurate than one running sum, too) */
static inline float vec_sum(const float *x, int32_t n) {
    v128_t a = wasm_f32x4_splat(0.0f), b = a;
    int32_t i = 0;
    for (; i + 8 <= n; i += 8) {
        a = wasm_f32x4_add(a, wasm_v128_load(x + i));
        b = wasm_f32x4_add(b, wasm_v128_load(x + i + 4));
    }
    float s = vec_hsum(wasm_f32x4_add(a, b));
    for (; i < n; i++) s += x[i];
    return s;
}

/* max(x[0..n)) with NaN propagating (f32x4.max does); -inf for n == 0 */
static inline float vec_max(const float *x, int32_t n) {
    v128_t a = wasm_f32x4_splat(-__builtin_inff());
    int32_t i = 0;
    for (; i + 4 <= n; i += 4) a = wasm_f32x4_max(a, wasm_v128_load(x + i));
    float lanes[4], m = -__builtin_inff();
    wasm_v128_store(lanes, a);
    for (int l = 0; l < 4; l++)
        if (lanes[l] > m || lanes[l] != lanes[l]) m = lanes[l];
    for (; i < n; i++)
        if (x[i] > m || x[i] != x[i]) m = x[i];
    return m;
}

/* exp(x) lanewise, about 1 ulp (Cephes expf: x = n ln2 + r, a degree-5 polynomial in r, times
 * 2^n by exponent arithmetic); 0 below ln(2^-126) (subnormal results flush to 0), inf above
 * 88.7, NaN stays NaN */
static inline v128_t vec_exp(v128_t x) {
    const v128_t hi = wasm_f32x4_splat(88.7228391f), lo = wasm_f32x4_splat(-87.3365448f);
    const v128_t big = wasm_f32x4_gt(x, hi), tiny = wasm_f32x4_lt(x, lo);
    v128_t c = wasm_f32x4_min(wasm_f32x4_max(x, lo), hi);
    v128_t n = wasm_f32x4_nearest(wasm_f32x4_mul(c, wasm_f32x4_splat(1.44269504088896341f)));
    v128_t r = wasm_f32x4_sub(c, wasm_f32x4_mul(n, wasm_f32x4_splat(0.693359375f)));
    r = wasm_f32x4_sub(r, wasm_f32x4_mul(n, wasm_f32x4_splat(-2.12194440e-4f)));
    v128_t p = wasm_f32x4_splat(1.9875691500e-4f);
    p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(1.3981999507e-3f));
    p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(8.3334519073e-3f));
    p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(4.1665795894e-2f));
    p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(1.6666665459e-1f));
    p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(5.0000001201e-1f));
    const v128_t r1 = wasm_f32x4_add(r, wasm_f32x4_splat(1.0f));
    p = wasm_f32x4_add(wasm_f32x4_mul(wasm_f32x4_mul(p, r), r), r1);
    /* 2^n: n in [-126, 128]; split in two factors so that n = 128 doesn't overflow the
     * exponent field */
    v128_t ni = wasm_i32x4_trunc_sat_f32x4(n);
    v128_t h = wasm_i32x4_shr(ni, 1);
    v128_t e1 = wasm_i32x4_shl(wasm_i32x4_add(h, wasm_i32x4_splat(127)), 23);
    v128_t e2 = wasm_i32x4_shl(wasm_i32x4_add(wasm_i32x4_sub(ni, h), wasm_i32x4_splat(127)), 23);
    v128_t y = wasm_f32x4_mul(wasm_f32x4_mul(p, e1), e2);
    y = wasm_v128_bitselect(wasm_f32x4_splat(__builtin_inff()), y, big);
    return wasm_v128_andnot(y, tiny);
}

#endif
