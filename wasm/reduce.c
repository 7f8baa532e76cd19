/* Reductions and scans. A tensor reaches these kernels contiguous and seen as (outer, r,
 * inner): `r` is the reduced (or scanned) extent, `inner` the elements after it, so the
 * output is (outer, inner) for a reduction and (outer, r, inner) for a scan.
 * Results follow numpy: NaN propagates through max/min, argmax/argmin give the first maximum
 * (a NaN counts as the maximum), integers wrap around. Op codes are positions in the name
 * list em_reduce_names() exports. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <wasm_simd128.h>
#include "ember.h"
#include "vec.h"

#define RD_NAME_STR(n) #n ","
#define RD_NAME_ENUM(n) RD_##n,
#define REDUCE_OPS(X) X(sum) X(prod) X(max) X(min) X(mean) X(logsumexp) X(any) X(all)
enum { REDUCE_OPS(RD_NAME_ENUM) RD_COUNT };
static const char reduce_names[] = REDUCE_OPS(RD_NAME_STR);
const char *EXPORT(em_reduce_names)(void) { return reduce_names; }

#define RD_NAN_MAX(x, y) (((x) > (y) || (x) != (x)) ? (x) : (y))
#define RD_NAN_MIN(x, y) (((x) < (y) || (x) != (x)) ? (x) : (y))
#define RD_MAX(x, y) ((x) > (y) ? (x) : (y))
#define RD_MIN(x, y) ((x) < (y) ? (x) : (y))

/* sums over a contiguous row in float64, of the values (sum) or of their squared deviations
 * from m (sqdev, for var): 8 partial sums (SIMD for float32), at least as accurate as
 * numpy's pairwise float32 sum, at the speed of the loads */
static inline v128_t rd_lane_sum(v128_t v, v128_t m) { (void)m; return v; }
static inline v128_t rd_lane_sqdev(v128_t v, v128_t m) {
    v128_t d = wasm_f64x2_sub(v, m);
    return wasm_f64x2_mul(d, d);
}
#define RD_ROW_F32(NAME, LANE, TAIL)                                                       \
    static double NAME(const float *x, int32_t n, double mean) {                           \
        v128_t a0 = wasm_f64x2_splat(0), a1 = a0, a2 = a0, a3 = a0;                        \
        const v128_t m = wasm_f64x2_splat(mean);                                           \
        int32_t k = 0;                                                                     \
        for (; k + 8 <= n; k += 8) {                                                       \
            v128_t u = wasm_v128_load(x + k), v = wasm_v128_load(x + k + 4);               \
            v128_t uh = wasm_i64x2_shuffle(u, u, 1, 0), vh = wasm_i64x2_shuffle(v, v, 1, 0); \
            a0 = wasm_f64x2_add(a0, LANE(wasm_f64x2_promote_low_f32x4(u), m));             \
            a1 = wasm_f64x2_add(a1, LANE(wasm_f64x2_promote_low_f32x4(uh), m));            \
            a2 = wasm_f64x2_add(a2, LANE(wasm_f64x2_promote_low_f32x4(v), m));             \
            a3 = wasm_f64x2_add(a3, LANE(wasm_f64x2_promote_low_f32x4(vh), m));            \
        }                                                                                  \
        v128_t s = wasm_f64x2_add(wasm_f64x2_add(a0, a1), wasm_f64x2_add(a2, a3));         \
        double acc = wasm_f64x2_extract_lane(s, 0) + wasm_f64x2_extract_lane(s, 1);        \
        for (; k < n; k++) { double v = x[k]; acc += TAIL; }                               \
        return acc;                                                                        \
    }
#define RD_ROW_F64(NAME, TAIL)                                                             \
    static double NAME(const double *x, int32_t n, double mean) {                          \
        double a[4] = {0, 0, 0, 0};                                                        \
        int32_t k = 0;                                                                     \
        for (; k + 4 <= n; k += 4)                                                         \
            for (int l = 0; l < 4; l++) { double v = x[k + l]; a[l] += TAIL; }            \
        for (; k < n; k++) { double v = x[k]; a[0] += TAIL; }                              \
        return (a[0] + a[1]) + (a[2] + a[3]);                                              \
    }
RD_ROW_F32(rd_sum_f32, rd_lane_sum, v)
RD_ROW_F32(rd_sqdev_f32, rd_lane_sqdev, (v - mean) * (v - mean))
RD_ROW_F64(rd_sum_f64, v)
RD_ROW_F64(rd_sqdev_f64, (v - mean) * (v - mean))

/* sum of exp(x[k] - m) over a contiguous row, in float64 (float32: vec.h's SIMD exp) */
static double rd_expsum_f32(const float *x, int32_t n, float m) {
    const v128_t mv = wasm_f32x4_splat(m);
    v128_t a0 = wasm_f64x2_splat(0), a1 = a0;
    int32_t k = 0;
    for (; k + 4 <= n; k += 4) {
        v128_t e = vec_exp(wasm_f32x4_sub(wasm_v128_load(x + k), mv));
        a0 = wasm_f64x2_add(a0, wasm_f64x2_promote_low_f32x4(e));
        a1 = wasm_f64x2_add(a1, wasm_f64x2_promote_low_f32x4(wasm_i64x2_shuffle(e, e, 1, 0)));
    }
    v128_t s = wasm_f64x2_add(a0, a1);
    double acc = wasm_f64x2_extract_lane(s, 0) + wasm_f64x2_extract_lane(s, 1);
    for (; k < n; k++) acc += expf(x[k] - m);
    return acc;
}

static double rd_expsum_f64(const double *x, int32_t n, double m) {
    double acc = 0;
    for (int32_t k = 0; k < n; k++) acc += exp(x[k] - m);
    return acc;
}

/* max (is_min: min) of a contiguous row, n > 0, NaN propagating: f32x4.max/min propagate
 * NaN, so does the scalar tail */
static float rd_extreme_f32(const float *x, int32_t n, int is_min) {
    int32_t k = 0;
    float m = x[0];
    if (n >= 8) {
        v128_t a = wasm_v128_load(x), b = wasm_v128_load(x + 4);
        for (k = 8; k + 8 <= n; k += 8) {
            v128_t u = wasm_v128_load(x + k), v = wasm_v128_load(x + k + 4);
            a = is_min ? wasm_f32x4_min(a, u) : wasm_f32x4_max(a, u);
            b = is_min ? wasm_f32x4_min(b, v) : wasm_f32x4_max(b, v);
        }
        a = is_min ? wasm_f32x4_min(a, b) : wasm_f32x4_max(a, b);
        float lanes[4];
        wasm_v128_store(lanes, a);
        m = lanes[0];
        for (int l = 1; l < 4; l++) m = is_min ? RD_NAN_MIN(m, lanes[l]) : RD_NAN_MAX(m, lanes[l]);
    }
    for (; k < n; k++) m = is_min ? RD_NAN_MIN(m, x[k]) : RD_NAN_MAX(m, x[k]);
    return m;
}

static double rd_extreme_f64(const double *x, int32_t n, int is_min) {
    double m = x[0];
    for (int32_t k = 1; k < n; k++) m = is_min ? RD_NAN_MIN(m, x[k]) : RD_NAN_MAX(m, x[k]);
    return m;
}

/* out[o, i] = x[o, 0, i] STEP x[o, 1, i] ... (IDENT when r == 0): whole rows at a time when
 * inner > 1, so the combine vectorises over i */
#define RD_FOLD(T, IDENT, STEP)                                                            \
    for (int64_t o = 0; o < outer; o++) {                                                  \
        const T *xo = x + o * r * inner; T *oo = out + o * inner;                          \
        if (r == 0) { for (int32_t i = 0; i < inner; i++) oo[i] = (T)(IDENT); continue; }  \
        if (inner == 1) {                                                                  \
            T acc = xo[0];                                                                 \
            for (int32_t j = 1; j < r; j++) { T y = xo[j]; acc = (T)(STEP(acc, y)); }      \
            oo[0] = acc;                                                                   \
            continue;                                                                      \
        }                                                                                  \
        memcpy(oo, xo, (size_t)inner * sizeof(T));                                         \
        for (int32_t j = 1; j < r; j++) {                                                  \
            const T *xj = xo + (int64_t)j * inner;                                         \
            for (int32_t i = 0; i < inner; i++) { T acc = oo[i], y = xj[i];                \
                                                  oo[i] = (T)(STEP(acc, y)); }             \
        }                                                                                  \
    }

#define RD_ADD(a, b) ((a) + (b))
#define RD_MUL(a, b) ((a) * (b))

/* per-block statistics of a float (r, inner) block, row by row so the loops run over inner
 * (contiguous) whatever the reduced dim: logsumexp shifted by the finite max, as numpy-based
 * code does; var with `dof` degrees of freedom. Both accumulate in float64 in `acc` (inner
 * doubles; var: 2 * inner). */
#define RD_FLOAT_LANES(T, F)                                                               \
    static void rd_logsumexp_##T(const T *x, T *out, int32_t r, int32_t inner, double *acc) { \
        if (inner == 1) { /* one contiguous lane: accumulate in registers */              \
            T m = -(T)INFINITY;                                                            \
            for (int32_t j = 0; j < r; j++) m = RD_NAN_MAX(m, x[j]);                       \
            if (!isfinite(m)) m = 0;                                                       \
            out[0] = F(log)((T)rd_expsum_##T(x, r, m)) + m;                                \
            return;                                                                        \
        }                                                                                  \
        for (int32_t i = 0; i < inner; i++) { out[i] = -(T)INFINITY; acc[i] = 0; }         \
        for (int32_t j = 0; j < r; j++) {                                                  \
            const T *xj = x + (int64_t)j * inner;                                          \
            for (int32_t i = 0; i < inner; i++) out[i] = RD_NAN_MAX(out[i], xj[i]);        \
        }                                                                                  \
        for (int32_t i = 0; i < inner; i++) if (!isfinite(out[i])) out[i] = 0;             \
        for (int32_t j = 0; j < r; j++) {                                                  \
            const T *xj = x + (int64_t)j * inner;                                          \
            for (int32_t i = 0; i < inner; i++) acc[i] += F(exp)(xj[i] - out[i]);          \
        }                                                                                  \
        for (int32_t i = 0; i < inner; i++) out[i] = F(log)((T)acc[i]) + out[i];          \
    }                                                                                      \
    static void rd_var_##T(const T *x, T *out, int32_t r, int32_t inner, double dof,       \
                           double *acc) {                                                  \
        if (inner == 1) { /* one contiguous lane: SIMD row sums */                        \
            double mean = rd_sum_##T(x, r, 0) / r;                                         \
            out[0] = (T)(rd_sqdev_##T(x, r, mean) / dof);                                  \
            return;                                                                        \
        }                                                                                  \
        double *mean = acc, *sq = acc + inner;                                             \
        for (int32_t i = 0; i < inner; i++) mean[i] = sq[i] = 0;                           \
        for (int32_t j = 0; j < r; j++) {                                                  \
            const T *xj = x + (int64_t)j * inner;                                          \
            for (int32_t i = 0; i < inner; i++) mean[i] += xj[i];                          \
        }                                                                                  \
        for (int32_t i = 0; i < inner; i++) mean[i] /= r;                                  \
        for (int32_t j = 0; j < r; j++) {                                                  \
            const T *xj = x + (int64_t)j * inner;                                          \
            for (int32_t i = 0; i < inner; i++) {                                          \
                double d = xj[i] - mean[i];                                                \
                sq[i] += d * d;                                                            \
            }                                                                              \
        }                                                                                  \
        for (int32_t i = 0; i < inner; i++) out[i] = (T)(sq[i] / dof);                     \
    }                                                                                      \
    static int rd_float_##T(int op, const T *x, T *out, int32_t outer, int32_t r,          \
                            int32_t inner) {                                               \
        switch (op) {                                                                      \
        case RD_sum: case RD_mean:                                                         \
            if (inner == 1)                                                                \
                for (int64_t o = 0; o < outer; o++) out[o] = (T)rd_sum_##T(x + o * r, r, 0); \
            else { RD_FOLD(T, 0, RD_ADD) }                                                 \
            if (op == RD_mean)                                                             \
                for (int64_t k = 0; k < outer * inner; k++) out[k] /= (T)r;                \
            return 0;                                                                      \
        case RD_prod: RD_FOLD(T, 1, RD_MUL) return 0;                                      \
        case RD_max: case RD_min:                                                          \
            if (inner == 1 && r > 0)                                                       \
                for (int64_t o = 0; o < outer; o++)                                        \
                    out[o] = rd_extreme_##T(x + o * r, r, op == RD_min);                   \
            else if (op == RD_max) { RD_FOLD(T, -INFINITY, RD_NAN_MAX) }                   \
            else { RD_FOLD(T, INFINITY, RD_NAN_MIN) }                                      \
            return 0;                                                                      \
        case RD_logsumexp: {                                                               \
            double *acc = malloc((size_t)inner * sizeof(double));                          \
            if (!acc) return 2;                                                            \
            for (int64_t o = 0; o < outer; o++)                                            \
                rd_logsumexp_##T(x + o * r * inner, out + o * inner, r, inner, acc);       \
            free(acc);                                                                     \
            return 0;                                                                      \
        }                                                                                  \
        default: return 1;                                                                 \
        }                                                                                  \
    }
#define rd_sum_float rd_sum_f32
#define rd_sum_double rd_sum_f64
#define rd_sqdev_float rd_sqdev_f32
#define rd_sqdev_double rd_sqdev_f64
#define rd_expsum_float rd_expsum_f32
#define rd_extreme_float rd_extreme_f32
#define rd_extreme_double rd_extreme_f64
#define rd_expsum_double rd_expsum_f64
#define RD_F32(name) name##f
#define RD_F64(name) name
RD_FLOAT_LANES(float, RD_F32)
RD_FLOAT_LANES(double, RD_F64)

/* integers: sums and products in the unsigned type of the width (wraps without UB); bool
 * (0/1 bytes): any and all */
#define RD_UADD32(a, b) ((uint32_t)(a) + (uint32_t)(b))
#define RD_UMUL32(a, b) ((uint32_t)(a) * (uint32_t)(b))
#define RD_UADD64(a, b) ((uint64_t)(a) + (uint64_t)(b))
#define RD_UMUL64(a, b) ((uint64_t)(a) * (uint64_t)(b))
#define RD_INT(T, UADD, UMUL)                                                              \
    static int rd_int_##T(int op, const T *x, T *out, int32_t outer, int32_t r,            \
                          int32_t inner) {                                                 \
        switch (op) {                                                                      \
        case RD_sum: RD_FOLD(T, 0, UADD) return 0;                                         \
        case RD_prod: RD_FOLD(T, 1, UMUL) return 0;                                        \
        case RD_max: case RD_any: RD_FOLD(T, 0, RD_MAX) return 0;                          \
        case RD_min: RD_FOLD(T, 0, RD_MIN) return 0;                                       \
        case RD_all: RD_FOLD(T, 1, RD_MIN) return 0;                                       \
        default: return 1;                                                                 \
        }                                                                                  \
    }
RD_INT(uint8_t, RD_UADD32, RD_UMUL32)
RD_INT(int8_t, RD_UADD32, RD_UMUL32)
RD_INT(int32_t, RD_UADD32, RD_UMUL32)
RD_INT(int64_t, RD_UADD64, RD_UMUL64)

/* out (outer, inner) = OP over r of x (outer, r, inner), both contiguous; 1 for an op the
 * dtype lacks, 2 when logsumexp's scratch can't be had */
int32_t EXPORT(em_reduce)(int32_t op, int32_t dtype, const void *x, void *out, int32_t outer,
                          int32_t r, int32_t inner) {
    switch (dtype) {
    case DT_BOOL: return op == RD_any || op == RD_all || op == RD_max || op == RD_min
                             ? rd_int_uint8_t(op, x, out, outer, r, inner) : 1;
    case DT_U8: return rd_int_uint8_t(op, x, out, outer, r, inner);
    case DT_I8: return rd_int_int8_t(op, x, out, outer, r, inner);
    case DT_I32: return rd_int_int32_t(op, x, out, outer, r, inner);
    case DT_I64: return rd_int_int64_t(op, x, out, outer, r, inner);
    case DT_F32: return rd_float_float(op, x, out, outer, r, inner);
    case DT_F64: return rd_float_double(op, x, out, outer, r, inner);
    default: return 1;
    }
}

/* out (outer, inner) = the variance over r with `dof` degrees of freedom (r - correction,
 * clamped at 0 by Python: 0 gives inf or NaN, as numpy); 2 when the scratch can't be had */
int32_t EXPORT(em_var)(int32_t dtype, const void *x, void *out, int32_t outer, int32_t r,
                       int32_t inner, double dof) {
    if (dtype != DT_F32 && dtype != DT_F64) return 1;
    double *acc = malloc((size_t)inner * 2 * sizeof(double));
    if (!acc) return 2;
    for (int64_t o = 0; o < outer; o++) {
        if (dtype == DT_F32)
            rd_var_float((const float *)x + o * r * inner, (float *)out + o * inner, r, inner,
                         dof, acc);
        else
            rd_var_double((const double *)x + o * r * inner, (double *)out + o * inner, r,
                          inner, dof, acc);
    }
    free(acc);
    return 0;
}

/* ================================================================== arg-reductions */
/* int64 out (outer, inner) = the first index along r of the max (is_min: min); for floats a
 * NaN is the extreme (its first index wins), as numpy */
#define RD_ARG(T, IS_FLOAT)                                                                \
    static int rd_arg_##T(int is_min, const T *x, int64_t *out, int32_t outer, int32_t r,  \
                          int32_t inner) {                                                 \
        if (inner == 1) {                                                                  \
            for (int64_t o = 0; o < outer; o++) {                                          \
                const T *lane = x + o * r;                                                 \
                T best = lane[0];                                                          \
                int32_t at = 0;                                                            \
                if (!(IS_FLOAT && best != best))                                           \
                    for (int32_t j = 1; j < r; j++) {                                      \
                        T v = lane[j];                                                     \
                        if (IS_FLOAT && v != v) { at = j; break; }                         \
                        if (is_min ? v < best : v > best) { best = v; at = j; }            \
                    }                                                                      \
                out[o] = at;                                                               \
            }                                                                              \
            return 0;                                                                      \
        }                                                                                  \
        /* inner > 1: row by row, the best values so far in `best` (a NaN is never        \
         * replaced, and replaces any number) */                                           \
        T *best = malloc((size_t)inner * sizeof(T));                                       \
        if (!best) return 2;                                                               \
        for (int64_t o = 0; o < outer; o++) {                                              \
            const T *xo = x + o * r * inner;                                               \
            int64_t *oo = out + o * inner;                                                 \
            memcpy(best, xo, (size_t)inner * sizeof(T));                                   \
            for (int32_t i = 0; i < inner; i++) oo[i] = 0;                                 \
            for (int32_t j = 1; j < r; j++) {                                              \
                const T *xj = xo + (int64_t)j * inner;                                     \
                for (int32_t i = 0; i < inner; i++) {                                      \
                    T v = xj[i], c = best[i];                                              \
                    int better = is_min ? v < c : v > c;                                   \
                    if (IS_FLOAT) better = c == c && (v != v || better);                   \
                    if (better) { best[i] = v; oo[i] = j; }                                \
                }                                                                          \
            }                                                                              \
        }                                                                                  \
        free(best);                                                                        \
        return 0;                                                                          \
    }
RD_ARG(uint8_t, 0)
RD_ARG(int8_t, 0)
RD_ARG(int32_t, 0)
RD_ARG(int64_t, 0)
RD_ARG(float, 1)
RD_ARG(double, 1)

/* r > 0 (Python raises on an empty dim); 2 when the scratch can't be had */
int32_t EXPORT(em_argreduce)(int32_t is_min, int32_t dtype, const void *x, int64_t *out,
                             int32_t outer, int32_t r, int32_t inner) {
    switch (dtype) {
    case DT_BOOL: case DT_U8: return rd_arg_uint8_t(is_min, x, out, outer, r, inner);
    case DT_I8: return rd_arg_int8_t(is_min, x, out, outer, r, inner);
    case DT_I32: return rd_arg_int32_t(is_min, x, out, outer, r, inner);
    case DT_I64: return rd_arg_int64_t(is_min, x, out, outer, r, inner);
    case DT_F32: return rd_arg_float(is_min, x, out, outer, r, inner);
    case DT_F64: return rd_arg_double(is_min, x, out, outer, r, inner);
    default: return 1;
    }
}

/* ================================================================== scans */
/* out (outer, r, inner) = running sum (is_prod: product) along r, row by row so the combine
 * vectorises over inner; sequential in the dtype like numpy's cumsum/cumprod */
#define RD_SCAN(T, ADD, MUL)                                                               \
    static void rd_scan_##T(int is_prod, const T *x, T *out, int32_t outer, int32_t r,     \
                            int32_t inner) {                                               \
        for (int64_t o = 0; o < outer; o++) {                                              \
            const T *xo = x + o * r * inner; T *oo = out + o * r * inner;                  \
            if (r) memcpy(oo, xo, (size_t)inner * sizeof(T));                              \
            for (int32_t j = 1; j < r; j++) {                                              \
                const T *xj = xo + (int64_t)j * inner;                                     \
                T *prev = oo + (int64_t)(j - 1) * inner, *cur = prev + inner;              \
                if (is_prod) for (int32_t i = 0; i < inner; i++) cur[i] = (T)MUL(prev[i], xj[i]); \
                else for (int32_t i = 0; i < inner; i++) cur[i] = (T)ADD(prev[i], xj[i]);  \
            }                                                                              \
        }                                                                                  \
    }
RD_SCAN(uint8_t, RD_UADD32, RD_UMUL32)
RD_SCAN(int8_t, RD_UADD32, RD_UMUL32)
RD_SCAN(int32_t, RD_UADD32, RD_UMUL32)
RD_SCAN(int64_t, RD_UADD64, RD_UMUL64)
RD_SCAN(float, RD_ADD, RD_MUL)
RD_SCAN(double, RD_ADD, RD_MUL)

int32_t EXPORT(em_scan)(int32_t is_prod, int32_t dtype, const void *x, void *out,
                        int32_t outer, int32_t r, int32_t inner) {
    switch (dtype) {
    case DT_U8: rd_scan_uint8_t(is_prod, x, out, outer, r, inner); return 0;
    case DT_I8: rd_scan_int8_t(is_prod, x, out, outer, r, inner); return 0;
    case DT_I32: rd_scan_int32_t(is_prod, x, out, outer, r, inner); return 0;
    case DT_I64: rd_scan_int64_t(is_prod, x, out, outer, r, inner); return 0;
    case DT_F32: rd_scan_float(is_prod, x, out, outer, r, inner); return 0;
    case DT_F64: rd_scan_double(is_prod, x, out, outer, r, inner); return 0;
    default: return 1;
    }
}
