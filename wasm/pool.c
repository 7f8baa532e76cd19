/* Pooling over 1-D and 2-D inputs (1-D as height 1), float32 and float64, one plane per
 * (sample, channel): max (padding counts as -inf, NaN propagates) and its gradient (each
 * window's gradient goes to its first maximum, as in PyTorch), average (PyTorch's divisor
 * rules) and adaptive average (windows [floor(i*size/out), ceil((i+1)*size/out)); a global
 * pool of float32 is a SIMD sum per plane).
 *
 * Geometry (metadata words, pl_geom's order): planes (N*C), H, W, OH, OW, KH, KW, stride,
 * padding before and dilation per dim. */
#include <string.h>
#include "ember.h"
#include "vec.h"

typedef struct {
    int32_t planes, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw;
} pl_geom;

static pl_geom pl_read_geom(void) {
    pl_geom g;
    memcpy(&g, em_meta_words(), sizeof g);
    return g;
}

/* the max of one window, skipping taps in the padding (LOW: -inf, or the integer type's
 * lowest); NaN propagates */
#define MAX_AT(T, LOW)                                                                     \
    static inline T pl_max_at_##T(const pl_geom *g, const T *x, int32_t oy, int32_t ox) {  \
        T m = (T)(LOW);                                                                    \
        for (int32_t a = 0; a < g->kh; a++) {                                              \
            const int32_t yy = oy * g->sh - g->ph + a * g->dh;                             \
            if ((uint32_t)yy >= (uint32_t)g->h) continue;                                  \
            for (int32_t b = 0; b < g->kw; b++) {                                          \
                const int32_t xx = ox * g->sw - g->pw + b * g->dw;                         \
                if ((uint32_t)xx >= (uint32_t)g->w) continue;                              \
                const T v = x[yy * g->w + xx];                                             \
                if (v > m || v != v) m = v;                                                \
            }                                                                              \
        }                                                                                  \
        return m;                                                                          \
    }

#define MAX_POOL(T)                                                                        \
    static void pl_max_##T(const pl_geom *g, const T *x, T *y) {                           \
        for (int32_t p = 0; p < g->planes; p++, x += g->h * g->w)                          \
            for (int32_t oy = 0; oy < g->oh; oy++)                                         \
                for (int32_t ox = 0; ox < g->ow; ox++) *y++ = pl_max_at_##T(g, x, oy, ox); \
    }

MAX_AT(float, -__builtin_inf())
MAX_AT(double, -__builtin_inf())
MAX_AT(uint8_t, 0)
MAX_AT(int8_t, -128)

/* int8 / uint8 codes (between ember.quantize's layers) in 2x2 windows at stride 2 without
 * padding: eight outputs from two rows of sixteen bytes (the max of the rows, then of even
 * and odd bytes); windows past the SIMD steps take the scalar path */
#define MAX_2X2_CODES(T, MAX)                                                              \
    static void pl_max_2x2_##T(const pl_geom *g, const T *x, T *y) {                       \
        for (int32_t p = 0; p < g->planes; p++, x += g->h * g->w)                          \
            for (int32_t oy = 0; oy < g->oh; oy++, y += g->ow) {                           \
                int32_t ox = 0;                                                            \
                if (2 * oy + 1 < g->h) {                                                   \
                    const T *r0 = x + 2 * oy * g->w, *r1 = r0 + g->w;                      \
                    for (; 2 * ox + 16 <= g->w && ox + 8 <= g->ow; ox += 8) {              \
                        const v128_t m = MAX(wasm_v128_load(r0 + 2 * ox),                  \
                                             wasm_v128_load(r1 + 2 * ox));                 \
                        const v128_t e = wasm_i8x16_shuffle(m, m, 0, 2, 4, 6, 8, 10, 12, 14, \
                                                            0, 2, 4, 6, 8, 10, 12, 14);    \
                        const v128_t o = wasm_i8x16_shuffle(m, m, 1, 3, 5, 7, 9, 11, 13, 15, \
                                                            1, 3, 5, 7, 9, 11, 13, 15);    \
                        wasm_v128_store64_lane(y + ox, MAX(e, o), 0);                      \
                    }                                                                      \
                }                                                                          \
                for (; ox < g->ow; ox++) y[ox] = pl_max_at_##T(g, x, oy, ox);              \
            }                                                                              \
    }

MAX_2X2_CODES(uint8_t, wasm_u8x16_max)
MAX_2X2_CODES(int8_t, wasm_i8x16_max)

/* float32 2x2 windows at stride 2 without padding (the usual downsampling): four outputs
 * from two rows of eight with f32x4.max (NaN-propagating, like the scalar path), then the
 * max of even and odd lanes; windows past the SIMD steps take the scalar path */
static void pl_max_2x2_float(const pl_geom *g, const float *x, float *y) {
    for (int32_t p = 0; p < g->planes; p++, x += g->h * g->w)
        for (int32_t oy = 0; oy < g->oh; oy++, y += g->ow) {
            int32_t ox = 0;
            if (2 * oy + 1 < g->h) {
                const float *r0 = x + 2 * oy * g->w, *r1 = r0 + g->w;
                for (; 2 * ox + 8 <= g->w && ox + 4 <= g->ow; ox += 4) {
                    const v128_t lo = wasm_f32x4_max(wasm_v128_load(r0 + 2 * ox),
                                                     wasm_v128_load(r1 + 2 * ox));
                    const v128_t hi = wasm_f32x4_max(wasm_v128_load(r0 + 2 * ox + 4),
                                                     wasm_v128_load(r1 + 2 * ox + 4));
                    wasm_v128_store(y + ox, wasm_f32x4_max(wasm_i32x4_shuffle(lo, hi, 0, 2, 4, 6),
                                                           wasm_i32x4_shuffle(lo, hi, 1, 3, 5, 7)));
                }
            }
            for (; ox < g->ow; ox++) y[ox] = pl_max_at_float(g, x, oy, ox);
        }
}

/* gx += grad at each window's first element equal to its maximum (none when it is NaN) */
#define MAX_POOL_GRAD(T)                                                                   \
    static void pl_max_grad_##T(const pl_geom *g, const T *x, const T *out, const T *grad, \
                                T *gx) {                                                   \
        memset(gx, 0, (size_t)g->planes * g->h * g->w * sizeof(T));                        \
        for (int32_t p = 0; p < g->planes; p++, x += g->h * g->w, gx += g->h * g->w)       \
            for (int32_t oy = 0; oy < g->oh; oy++)                                         \
                for (int32_t ox = 0; ox < g->ow; ox++, out++, grad++) {                    \
                    for (int32_t a = 0; a < g->kh; a++) {                                  \
                        const int32_t yy = oy * g->sh - g->ph + a * g->dh;                 \
                        if ((uint32_t)yy >= (uint32_t)g->h) continue;                      \
                        for (int32_t b = 0; b < g->kw; b++) {                              \
                            const int32_t xx = ox * g->sw - g->pw + b * g->dw;             \
                            if ((uint32_t)xx < (uint32_t)g->w && x[yy * g->w + xx] == *out) { \
                                gx[yy * g->w + xx] += *grad;                               \
                                goto next_##T;                                             \
                            }                                                              \
                        }                                                                  \
                    }                                                                      \
                next_##T:;                                                                 \
                }                                                                          \
    }

/* PyTorch's divisor along one dim (ember.contract.windows.avg_pool_divisors) */
static inline int32_t pl_count(int32_t o, int32_t stride, int32_t pad, int32_t k, int32_t size,
                               int include_pad) {
    const int32_t start = o * stride - pad;
    int32_t end = start + k < size + pad ? start + k : size + pad;
    if (include_pad) return end - start;
    return (end < size ? end : size) - (start > 0 ? start : 0);
}

#define AVG_POOL(T)                                                                        \
    static void pl_avg_##T(const pl_geom *g, const T *x, T *y, int include_pad,            \
                           int32_t divisor) {                                              \
        for (int32_t p = 0; p < g->planes; p++, x += g->h * g->w)                          \
            for (int32_t oy = 0; oy < g->oh; oy++) {                                       \
                const int32_t cy = pl_count(oy, g->sh, g->ph, g->kh, g->h, include_pad);   \
                for (int32_t ox = 0; ox < g->ow; ox++) {                                   \
                    T s = 0;                                                               \
                    for (int32_t a = 0; a < g->kh; a++) {                                  \
                        const int32_t yy = oy * g->sh - g->ph + a;                         \
                        if ((uint32_t)yy >= (uint32_t)g->h) continue;                      \
                        for (int32_t b = 0; b < g->kw; b++) {                              \
                            const int32_t xx = ox * g->sw - g->pw + b;                     \
                            if ((uint32_t)xx < (uint32_t)g->w) s += x[yy * g->w + xx];     \
                        }                                                                  \
                    }                                                                      \
                    const int32_t d = divisor ? divisor                                    \
                        : cy * pl_count(ox, g->sw, g->pw, g->kw, g->w, include_pad);       \
                    *y++ = s / (T)d;                                                       \
                }                                                                          \
            }                                                                              \
    }

/* the sum of rows [y0, y1) x cols [x0, x1) of a plane (float32 rows summed with SIMD) */
static inline float pl_box_float(const float *x, int32_t w, int32_t y0, int32_t y1, int32_t x0,
                                 int32_t x1) {
    if (x0 == 0 && x1 == w) return vec_sum(x + y0 * w, (y1 - y0) * w); /* whole rows */
    float s = 0;
    for (int32_t r = y0; r < y1; r++) s += vec_sum(x + r * w + x0, x1 - x0);
    return s;
}

static inline double pl_box_double(const double *x, int32_t w, int32_t y0, int32_t y1,
                                   int32_t x0, int32_t x1) {
    double s = 0;
    for (int32_t r = y0; r < y1; r++)
        for (int32_t c = x0; c < x1; c++) s += x[r * w + c];
    return s;
}

#define ADAPTIVE_AVG(T)                                                                    \
    static void pl_adaptive_##T(const pl_geom *g, const T *x, T *y) {                      \
        for (int32_t p = 0; p < g->planes; p++, x += g->h * g->w)                          \
            for (int32_t oy = 0; oy < g->oh; oy++) {                                       \
                const int32_t y0 = oy * g->h / g->oh;                                      \
                const int32_t y1 = ((oy + 1) * g->h + g->oh - 1) / g->oh;                  \
                for (int32_t ox = 0; ox < g->ow; ox++) {                                   \
                    const int32_t x0 = ox * g->w / g->ow;                                  \
                    const int32_t x1 = ((ox + 1) * g->w + g->ow - 1) / g->ow;              \
                    *y++ = pl_box_##T(x, g->w, y0, y1, x0, x1) / (T)((y1 - y0) * (x1 - x0)); \
                }                                                                          \
            }                                                                              \
    }

MAX_POOL(float)
MAX_POOL(double)
MAX_POOL(uint8_t)
MAX_POOL(int8_t)
MAX_POOL_GRAD(float)
MAX_POOL_GRAD(double)
AVG_POOL(float)
AVG_POOL(double)
ADAPTIVE_AVG(float)
ADAPTIVE_AVG(double)

int32_t EXPORT(em_max_pool)(int32_t dtype, const void *x, void *y) {
    const pl_geom g = pl_read_geom();
    const int two = g.kh == 2 && g.kw == 2 && g.sh == 2 && g.sw == 2 && g.ph == 0 &&
                    g.pw == 0 && g.dh == 1 && g.dw == 1;
    if (dtype == DT_F32 && two) pl_max_2x2_float(&g, x, y);
    else if (dtype == DT_F32) pl_max_float(&g, x, y);
    else if (dtype == DT_F64) pl_max_double(&g, x, y);
    else if (dtype == DT_U8 && two) pl_max_2x2_uint8_t(&g, x, y);
    else if (dtype == DT_U8) pl_max_uint8_t(&g, x, y);
    else if (dtype == DT_I8 && two) pl_max_2x2_int8_t(&g, x, y);
    else if (dtype == DT_I8) pl_max_int8_t(&g, x, y);
    else return 1;
    return 0;
}

int32_t EXPORT(em_max_pool_grad)(int32_t dtype, const void *x, const void *out,
                                 const void *grad, void *gx) {
    const pl_geom g = pl_read_geom();
    if (dtype == DT_F32) pl_max_grad_float(&g, x, out, grad, gx);
    else if (dtype == DT_F64) pl_max_grad_double(&g, x, out, grad, gx);
    else return 1;
    return 0;
}

/* divisor: divisor_override, or 0 for PyTorch's rule (count_include_pad: include_pad) */
int32_t EXPORT(em_avg_pool)(int32_t dtype, const void *x, void *y, int32_t include_pad,
                            int32_t divisor) {
    const pl_geom g = pl_read_geom();
    if (dtype == DT_F32) pl_avg_float(&g, x, y, include_pad, divisor);
    else if (dtype == DT_F64) pl_avg_double(&g, x, y, include_pad, divisor);
    else return 1;
    return 0;
}

/* the geometry's kernel, stride, padding and dilation are unused */
int32_t EXPORT(em_adaptive_avg_pool)(int32_t dtype, const void *x, void *y) {
    const pl_geom g = pl_read_geom();
    if (dtype == DT_F32) pl_adaptive_float(&g, x, y);
    else if (dtype == DT_F64) pl_adaptive_double(&g, x, y);
    else return 1;
    return 0;
}
