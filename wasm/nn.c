/* Normalisations along a dim, one pass per row of work and one call per op: softmax and
 * log_softmax (shifted by the row's max, so they can't overflow; NaN propagates), layer norm
 * (biased variance of the centred row) and inference-form batch norm, in float32 (SIMD: the
 * sums, maxima and exps of vec.h) and float64. Inputs are contiguous. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ember.h"
#include "vec.h"

/* y[i] = exp(x[i] - m[i * mstep]): one shift (mstep 0) or one per column (mstep 1) */
static void nn_exp_row_float(const float *x, const float *m, int mstep, float *y, int32_t n) {
    int32_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const v128_t mv = mstep ? wasm_v128_load(m + i) : wasm_v128_load32_splat(m);
        wasm_v128_store(y + i, vec_exp(wasm_f32x4_sub(wasm_v128_load(x + i), mv)));
    }
    for (; i < n; i++) y[i] = expf(x[i] - m[i * mstep]);
}

static void nn_exp_row_double(const double *x, const double *m, int mstep, double *y,
                              int32_t n) {
    for (int32_t i = 0; i < n; i++) y[i] = exp(x[i] - m[i * mstep]);
}

static inline double nn_max_double(const double *x, int32_t n) {
    double m = -INFINITY;
    for (int32_t i = 0; i < n; i++)
        if (x[i] > m || x[i] != x[i]) m = x[i];
    return m;
}

static inline double nn_sum_double(const double *x, int32_t n) {
    double s = 0;
    for (int32_t i = 0; i < n; i++) s += x[i];
    return s;
}

#define vec_max_float vec_max
#define vec_sum_float vec_sum
#define vec_max_double nn_max_double
#define vec_sum_double nn_sum_double

/* x viewed as (outer, len, inner), the softmax along len; scratch: 2 * inner elements */
#define SOFTMAX(T, LOG)                                                                    \
    static void nn_softmax_##T(const T *x, T *y, int32_t outer, int32_t len, int32_t inner, \
                               int log_out, T *scratch) {                                  \
        const size_t block = (size_t)len * inner;                                          \
        for (int32_t o = 0; o < outer; o++, x += block, y += block) {                      \
            if (inner == 1) {                                                              \
                const T m = vec_max_##T(x, len);                                           \
                nn_exp_row_##T(x, &m, 0, y, len);                                          \
                const T s = vec_sum_##T(y, len);                                           \
                if (log_out) {                                                             \
                    const T ls = LOG(s);                                                   \
                    for (int32_t l = 0; l < len; l++) y[l] = (x[l] - m) - ls;              \
                } else {                                                                   \
                    for (int32_t l = 0; l < len; l++) y[l] /= s;                           \
                }                                                                          \
                continue;                                                                  \
            }                                                                              \
            T *m = scratch, *s = scratch + inner;                                          \
            for (int32_t j = 0; j < inner; j++) m[j] = (T)-INFINITY, s[j] = 0;             \
            for (int32_t l = 0; l < len; l++)                                              \
                for (int32_t j = 0; j < inner; j++) {                                      \
                    const T v = x[l * inner + j];                                          \
                    if (v > m[j] || v != v) m[j] = v;                                      \
                }                                                                          \
            for (int32_t l = 0; l < len; l++) {                                            \
                T *yr = y + (size_t)l * inner;                                             \
                nn_exp_row_##T(x + (size_t)l * inner, m, 1, yr, inner);                    \
                for (int32_t j = 0; j < inner; j++) s[j] += yr[j];                         \
            }                                                                              \
            if (log_out) {                                                                 \
                for (int32_t j = 0; j < inner; j++) s[j] = LOG(s[j]);                      \
                for (int32_t l = 0; l < len; l++)                                          \
                    for (int32_t j = 0; j < inner; j++)                                    \
                        y[l * inner + j] = (x[l * inner + j] - m[j]) - s[j];               \
            } else {                                                                       \
                for (int32_t l = 0; l < len; l++)                                          \
                    for (int32_t j = 0; j < inner; j++) y[l * inner + j] /= s[j];          \
            }                                                                              \
        }                                                                                  \
    }

SOFTMAX(float, logf)
SOFTMAX(double, log)

static void *nn_buf;
static size_t nn_cap;

int32_t EXPORT(em_softmax)(int32_t dtype, const void *x, void *y, int32_t outer, int32_t len,
                           int32_t inner, int32_t log_out) {
    const size_t bytes = 2 * (size_t)inner * (dtype == DT_F32 ? 4 : 8);
    if (bytes > nn_cap) {
        free(nn_buf);
        nn_buf = malloc(bytes);
        nn_cap = nn_buf ? bytes : 0;
        if (!nn_buf) return 2;
    }
    if (dtype == DT_F32) nn_softmax_float(x, y, outer, len, inner, log_out, nn_buf);
    else if (dtype == DT_F64) nn_softmax_double(x, y, outer, len, inner, log_out, nn_buf);
    else return 1;
    return 0;
}

/* rows of d elements: y = (x - mean) / sqrt(var + eps) (* w) (+ b), w and b of d or NULL */
#define LAYER_NORM(T, SQRT)                                                                \
    static void nn_layer_norm_##T(const T *x, const T *w, const T *b, T *y, int32_t rows,  \
                                  int32_t d, T eps) {                                      \
        for (int32_t r = 0; r < rows; r++, x += d, y += d) {                               \
            const T mean = vec_sum_##T(x, d) / (T)d;                                       \
            for (int32_t i = 0; i < d; i++) y[i] = x[i] - mean;                            \
            T ss = 0;                                                                      \
            LN_SQUARES_##T(y, d, ss);                                                      \
            const T inv = (T)1 / SQRT(ss / (T)d + eps);                                    \
            for (int32_t i = 0; i < d; i++) y[i] *= inv;                                   \
            if (w) for (int32_t i = 0; i < d; i++) y[i] *= w[i];                           \
            if (b) for (int32_t i = 0; i < d; i++) y[i] += b[i];                           \
        }                                                                                  \
    }

/* the sum of squares of the centred row (float32: four lanes, two accumulators) */
#define LN_SQUARES_float(y, d, ss)                                                         \
    do {                                                                                   \
        v128_t a0 = wasm_f32x4_splat(0.0f), a1 = a0;                                       \
        int32_t i = 0;                                                                     \
        for (; i + 8 <= d; i += 8) {                                                       \
            const v128_t u = wasm_v128_load(y + i), v = wasm_v128_load(y + i + 4);         \
            a0 = wasm_f32x4_add(a0, wasm_f32x4_mul(u, u));                                 \
            a1 = wasm_f32x4_add(a1, wasm_f32x4_mul(v, v));                                 \
        }                                                                                  \
        ss = vec_hsum(wasm_f32x4_add(a0, a1));                                             \
        for (; i < d; i++) ss += y[i] * y[i];                                              \
    } while (0)
#define LN_SQUARES_double(y, d, ss) \
    for (int32_t i = 0; i < d; i++) ss += y[i] * y[i]

LAYER_NORM(float, sqrtf)
LAYER_NORM(double, sqrt)

int32_t EXPORT(em_layer_norm)(int32_t dtype, const void *x, const void *w, const void *b,
                              void *y, int32_t rows, int32_t d, double eps) {
    if (dtype == DT_F32) nn_layer_norm_float(x, w, b, y, rows, d, (float)eps);
    else if (dtype == DT_F64) nn_layer_norm_double(x, w, b, y, rows, d, eps);
    else return 1;
    return 0;
}

/* x (n, c, s): y = (x - mean[c]) / sqrt(var[c] + eps) (* w[c]) (+ b[c]) */
#define BATCH_NORM(T, SQRT)                                                                \
    static void nn_batch_norm_##T(const T *x, const T *mean, const T *var, const T *w,     \
                                  const T *b, T *y, int32_t n, int32_t c, int32_t s, T eps) { \
        for (int32_t p = 0; p < n * c; p++, x += s, y += s) {                              \
            const int32_t ch = p % c;                                                      \
            const T m = mean[ch], inv = (T)1 / SQRT(var[ch] + eps);                        \
            const T wc = w ? w[ch] : (T)1, bc = b ? b[ch] : (T)0;                          \
            for (int32_t i = 0; i < s; i++) y[i] = ((x[i] - m) * inv) * wc + bc;           \
        }                                                                                  \
    }

BATCH_NORM(float, sqrtf)
BATCH_NORM(double, sqrt)

int32_t EXPORT(em_batch_norm)(int32_t dtype, const void *x, const void *mean, const void *var,
                              const void *w, const void *b, void *y, int32_t n, int32_t c,
                              int32_t s, double eps) {
    if (dtype == DT_F32) nn_batch_norm_float(x, mean, var, w, b, y, n, c, s, (float)eps);
    else if (dtype == DT_F64) nn_batch_norm_double(x, mean, var, w, b, y, n, c, s, eps);
    else return 1;
    return 0;
}
