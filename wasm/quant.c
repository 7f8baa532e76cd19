/* Quantized Linear and convolution (ember.contract.quantized): the float input is quantized
 * to int8 codes here (x / in_scale rounded half away from zero, clamped to +-127), multiplied
 * by int8 weights with int32 sums, and rescaled to float32 with the bias in the same call.
 *
 * - em_qlinear: the codes through em_gemm_i8_i32 (matmul.c; the weight is (N, K) as stored);
 * - em_qconv: im2col of the codes (int8: a quarter of the float columns' bytes) then the
 *   same GEMM per group, W (C_out/g, K) times patches (positions, K), written in place;
 *   depthwise (groups == C == C_out) runs a direct SIMD kernel on a zero-padded plane,
 *   8 outputs per step with i16 x i16 -> i32 multiply-adds.
 * Geometry: the 16 words of conv.c's cv_geom, in the same order. */
#include <stdlib.h>
#include <string.h>
#include <wasm_simd128.h>
#include "ember.h"

int32_t em_gemm_i8_i32(const int8_t *a, const int8_t *bt, int32_t *c, int32_t m, int32_t n,
                       int32_t k);

typedef struct {
    int32_t n, c, h, w, c_out, kh, kw, sh, sw, ph, pw, dh, dw, groups, oh, ow;
} qt_geom;

/* scratch buffers, grown on demand and kept (the module is single-threaded) */
typedef struct {
    void *p;
    size_t cap;
} qt_buf;
static qt_buf qt_codes, qt_cols, qt_acc, qt_scales;

static void *qt_grow(qt_buf *b, size_t bytes) {
    if (bytes > b->cap) {
        free(b->p);
        b->p = aligned_alloc(16, (bytes + 15) & ~(size_t)15);
        b->cap = b->p ? bytes : 0;
    }
    return b->p;
}

static inline int8_t qt_code(float x, float s) {
    float v = x / s, a = __builtin_floorf(__builtin_fabsf(v) + 0.5f);
    int32_t q = a < 127.0f ? (int32_t)a : 127; /* NaN gives 127, as the SIMD path does */
    return (int8_t)(v < 0 ? -q : q);
}

/* codes of n floats: 16 per step (divide, round, clamp, narrow to int8) */
static void qt_quantize(const float *x, int8_t *q, size_t n, float s) {
    const v128_t vs = wasm_f32x4_splat(s), half = wasm_f32x4_splat(0.5f),
                 top = wasm_f32x4_splat(127.0f), zero = wasm_f32x4_splat(0.0f);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        v128_t part[4];
        for (int j = 0; j < 4; j++) {
            v128_t v = wasm_f32x4_div(wasm_v128_load(x + i + 4 * j), vs);
            v128_t a = wasm_f32x4_floor(wasm_f32x4_add(wasm_f32x4_abs(v), half));
            v128_t r = wasm_i32x4_trunc_sat_f32x4(wasm_f32x4_pmin(top, a)); /* NaN -> 127 */
            v128_t neg = wasm_f32x4_lt(v, zero);
            part[j] = wasm_i32x4_sub(wasm_v128_xor(r, neg), neg);
        }
        v128_t lo = wasm_i16x8_narrow_i32x4(part[0], part[1]);
        v128_t hi = wasm_i16x8_narrow_i32x4(part[2], part[3]);
        wasm_v128_store(q + i, wasm_i8x16_narrow_i16x8(lo, hi));
    }
    for (; i < n; i++) q[i] = qt_code(x[i], s);
}

/* y[r, j] = acc[r, j] * scale[j] + bias[j] (rows of n) */
static void qt_rescale_rows(const int32_t *acc, float *y, int32_t rows, int32_t n,
                            const float *scale, const float *bias) {
    for (int32_t r = 0; r < rows; r++) {
        const int32_t *a = acc + (size_t)r * n;
        float *o = y + (size_t)r * n;
        int32_t j = 0;
        for (; j + 4 <= n; j += 4) {
            v128_t v = wasm_f32x4_mul(wasm_f32x4_convert_i32x4(wasm_v128_load(a + j)),
                                      wasm_v128_load(scale + j));
            if (bias) v = wasm_f32x4_add(v, wasm_v128_load(bias + j));
            wasm_v128_store(o + j, v);
        }
        for (; j < n; j++) o[j] = (float)a[j] * scale[j] + (bias ? bias[j] : 0.0f);
    }
}

/* y[j, p] = acc[j, p] * scale[j] + bias[j] (channels of `pos` positions) */
static void qt_rescale_planes(const int32_t *acc, float *y, int32_t channels, int32_t pos,
                              const float *scale, const float *bias) {
    for (int32_t j = 0; j < channels; j++) {
        const int32_t *a = acc + (size_t)j * pos;
        float *o = y + (size_t)j * pos;
        const float s = scale[j], b = bias ? bias[j] : 0.0f;
        const v128_t vs = wasm_f32x4_splat(s), vb = wasm_f32x4_splat(b);
        int32_t p = 0;
        for (; p + 4 <= pos; p += 4) {
            v128_t v = wasm_f32x4_mul(wasm_f32x4_convert_i32x4(wasm_v128_load(a + p)), vs);
            wasm_v128_store(o + p, bias ? wasm_f32x4_add(v, vb) : v);
        }
        for (; p < pos; p++) o[p] = bias ? (float)a[p] * s + b : (float)a[p] * s;
    }
}

static float *qt_out_scales(const float *w_scale, float s, int32_t n) {
    float *sc = qt_grow(&qt_scales, (size_t)n * sizeof(float));
    if (sc)
        for (int32_t j = 0; j < n; j++) sc[j] = s * w_scale[j];
    return sc;
}

/* ================================================================ Linear */
/* y (m, n) = codes(x (m, k)) @ w^T * (in_scale * w_scale) + bias; w (n, k) int8 */
int32_t EXPORT(em_qlinear)(const float *x, const int8_t *w, const float *w_scale,
                           const float *bias, const float *in_scale, float *y, int32_t m,
                           int32_t k, int32_t n) {
    int8_t *q = qt_grow(&qt_codes, (size_t)m * k);
    int32_t *acc = qt_grow(&qt_acc, (size_t)m * n * sizeof(int32_t));
    float *sc = qt_out_scales(w_scale, *in_scale, n);
    if (!q || !acc || !sc) return 2;
    qt_quantize(x, q, (size_t)m * k, *in_scale);
    em_gemm_i8_i32(q, w, acc, m, n, k);
    qt_rescale_rows(acc, y, m, n, sc, bias);
    return 0;
}

/* ================================================================ convolution */
/* patches (positions, C/g * KH * KW) of one group's codes, zeros outside the image */
static void qt_im2col(const qt_geom *g, const int8_t *x, int32_t cg, int8_t *cols) {
    const int32_t kg = cg * g->kh * g->kw;
    for (int32_t oy = 0; oy < g->oh; oy++)
        for (int32_t ox = 0; ox < g->ow; ox++) {
            int8_t *row = cols + ((size_t)oy * g->ow + ox) * kg;
            for (int32_t ci = 0; ci < cg; ci++) {
                const int8_t *plane = x + (size_t)ci * g->h * g->w;
                for (int32_t ky = 0; ky < g->kh; ky++) {
                    const int32_t iy = oy * g->sh - g->ph + ky * g->dh;
                    for (int32_t kx = 0; kx < g->kw; kx++) {
                        const int32_t ix = ox * g->sw - g->pw + kx * g->dw;
                        *row++ = iy >= 0 && iy < g->h && ix >= 0 && ix < g->w
                                     ? plane[(size_t)iy * g->w + ix] : 0;
                    }
                }
            }
        }
}

/* 1x1 stride-1 unpadded: the patches are the codes transposed (positions, C/g) */
static void qt_transpose(const int8_t *x, int32_t cg, int32_t pos, int8_t *cols) {
    for (int32_t ci = 0; ci < cg; ci++) {
        const int8_t *plane = x + (size_t)ci * pos;
        for (int32_t p = 0; p < pos; p++) cols[(size_t)p * cg + ci] = plane[p];
    }
}

/* one depthwise plane: acc (OH, OW) from a zero-padded plane xp of row pitch wp */
static void qt_depthwise_plane(const qt_geom *g, const int8_t *xp, int32_t wp,
                               const int8_t *w, int32_t *acc) {
    const int32_t taps = g->kh * g->kw;
    for (int32_t oy = 0; oy < g->oh; oy++) {
        int32_t *arow = acc + (size_t)oy * g->ow;
        int32_t ox = 0;
        if (g->sw <= 2)
            for (; ox + 8 <= g->ow; ox += 8) {
                v128_t lo = wasm_i32x4_splat(0), hi = lo;
                for (int32_t t = 0; t < taps; t++) {
                    const int32_t ky = t / g->kw, kx = t % g->kw;
                    const int8_t *src = xp + (size_t)(oy * g->sh + ky * g->dh) * wp +
                                        ox * g->sw + kx * g->dw;
                    v128_t v;
                    if (g->sw == 1) {
                        v = wasm_i16x8_load8x8(src);
                    } else { /* even bytes of 16 */
                        v128_t b = wasm_v128_load(src);
                        v = wasm_i16x8_extend_low_i8x16(wasm_i8x16_shuffle(
                            b, b, 0, 2, 4, 6, 8, 10, 12, 14, 0, 2, 4, 6, 8, 10, 12, 14));
                    }
                    const v128_t wt = wasm_i16x8_splat(w[t]);
                    lo = wasm_i32x4_add(lo, wasm_i32x4_extmul_low_i16x8(v, wt));
                    hi = wasm_i32x4_add(hi, wasm_i32x4_extmul_high_i16x8(v, wt));
                }
                wasm_v128_store(arow + ox, lo);
                wasm_v128_store(arow + ox + 4, hi);
            }
        for (; ox < g->ow; ox++) {
            int32_t s = 0;
            for (int32_t t = 0; t < taps; t++) {
                const int32_t ky = t / g->kw, kx = t % g->kw;
                s += w[t] * xp[(size_t)(oy * g->sh + ky * g->dh) * wp + ox * g->sw + kx * g->dw];
            }
            arow[ox] = s;
        }
    }
}

static int qt_depthwise(const qt_geom *g, const int8_t *q, const int8_t *w, const float *sc,
                        const float *bias, float *y) {
    const int32_t pos = g->oh * g->ow, taps = g->kh * g->kw;
    /* the padded plane covers every window, plus 16 bytes a SIMD load may read past */
    const int32_t hp = (g->oh - 1) * g->sh + (g->kh - 1) * g->dh + 1;
    const int32_t wp = (g->ow - 1) * g->sw + (g->kw - 1) * g->dw + 1 + 16;
    int8_t *xp = qt_grow(&qt_cols, (size_t)hp * wp + 16);
    int32_t *acc = qt_grow(&qt_acc, (size_t)pos * sizeof(int32_t));
    if (!xp || !acc) return 2;
    for (int32_t s = 0; s < g->n; s++)
        for (int32_t c = 0; c < g->c; c++) {
            const int8_t *plane = q + ((size_t)s * g->c + c) * g->h * g->w;
            memset(xp, 0, (size_t)hp * wp + 16);
            for (int32_t iy = 0; iy < g->h; iy++) {
                const int32_t py = iy + g->ph;
                if (py < 0 || py >= hp) continue;
                const int32_t x0 = g->pw < 0 ? -g->pw : 0;
                int32_t len = g->w - x0;
                if (len > wp - 16 - (x0 + g->pw)) len = wp - 16 - (x0 + g->pw);
                if (len > 0) memcpy(xp + (size_t)py * wp + x0 + g->pw, plane + (size_t)iy * g->w + x0, len);
            }
            qt_depthwise_plane(g, xp, wp, w + (size_t)c * taps, acc);
            qt_rescale_planes(acc, y + ((size_t)s * g->c + c) * pos, 1, pos, sc + c,
                              bias ? bias + c : NULL);
        }
    return 0;
}

/* y = codes(x) (*) w * (in_scale * w_scale) + bias: x (N, C, H, W) f32, w (C_out, C/groups,
 * KH, KW) int8, y (N, C_out, OH, OW) f32 */
int32_t EXPORT(em_qconv)(const float *x, const int8_t *w, const float *w_scale,
                         const float *bias, const float *in_scale, float *y) {
    qt_geom g;
    memcpy(&g, em_meta_words(), sizeof g);
    const int32_t cg = g.c / g.groups, og = g.c_out / g.groups, taps = g.kh * g.kw;
    const int32_t kg = cg * taps, pos = g.oh * g.ow;
    const size_t nx = (size_t)g.n * g.c * g.h * g.w;
    int8_t *q = qt_grow(&qt_codes, nx);
    float *sc = qt_out_scales(w_scale, *in_scale, g.c_out);
    if (!q || !sc) return 2;
    qt_quantize(x, q, nx, *in_scale);
    if (g.groups == g.c && g.c_out == g.c) return qt_depthwise(&g, q, w, sc, bias, y);
    const int pointwise = taps == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0 &&
                          g.oh == g.h && g.ow == g.w;
    int8_t *cols = qt_grow(&qt_cols, (size_t)pos * kg);
    int32_t *acc = qt_grow(&qt_acc, (size_t)og * pos * sizeof(int32_t));
    if (!cols || !acc) return 2;
    for (int32_t s = 0; s < g.n; s++)
        for (int32_t gi = 0; gi < g.groups; gi++) {
            const int8_t *xs = q + ((size_t)s * g.c + (size_t)gi * cg) * g.h * g.w;
            if (pointwise) qt_transpose(xs, cg, pos, cols);
            else qt_im2col(&g, xs, cg, cols);
            em_gemm_i8_i32(w + (size_t)gi * og * kg, cols, acc, og, pos, kg);
            qt_rescale_planes(acc, y + ((size_t)s * g.c_out + (size_t)gi * og) * pos, og, pos,
                              sc + (size_t)gi * og, bias ? bias + (size_t)gi * og : NULL);
        }
    return 0;
}
