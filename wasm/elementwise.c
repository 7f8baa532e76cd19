/* Elementwise kernels: binary ops with broadcasting (a strided N-d walk), unary ops, where and
 * cast, for every dtype, with numpy's results (IEEE floats; integers wrap around; integer
 * division by zero gives 0; comparisons give bool). Op codes are positions in the name lists
 * that em_binary_names()/em_unary_names() export; Python reads them at start-up. */
#include <math.h>
#include <string.h>
#include "ember.h"

#define NAME_STR(n) #n ","
#define NAME_ENUM(n) OP_##n,

/* ================================================================== binary */
#define BINARY_OPS(X) \
    X(add) X(sub) X(mul) X(div) X(pow) X(maximum) X(minimum) X(eq) X(ne) X(lt) X(le) X(gt) \
    X(ge) X(floor_divide) X(remainder) X(atan2) X(and) X(or) X(xor) X(shl) X(shr)
enum { BINARY_OPS(NAME_ENUM) OP_BINARY_COUNT };
static const char binary_names[] = BINARY_OPS(NAME_STR);
const char *EXPORT(em_binary_names)(void) { return binary_names; }

/* numpy's npy_divmod: floor division, and the remainder with the divisor's sign */
#define DIVMOD(T, FMOD, FLOOR, COPYSIGN)                                                    \
    static inline T floordiv_##T(T a, T b) {                                               \
        if (b == 0) return a / b;                                                          \
        T mod = FMOD(a, b), div = (a - mod) / b;                                           \
        if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1;                                  \
        if (div == 0) return COPYSIGN((T)0, a / b);                                        \
        T fl = FLOOR(div);                                                                 \
        return div - fl > (T)0.5 ? fl + 1 : fl;                                            \
    }                                                                                      \
    static inline T mod_##T(T a, T b) {                                                    \
        if (b == 0) return (T)NAN;                                                         \
        T mod = FMOD(a, b);                                                                \
        if (mod != 0) { if ((b < 0) != (mod < 0)) mod += b; }                              \
        else mod = COPYSIGN((T)0, b);                                                      \
        return mod;                                                                        \
    }
DIVMOD(float, fmodf, floorf, copysignf)
DIVMOD(double, fmod, floor, copysign)

#define NAN_MAX(x, y) (((x) > (y) || (x) != (x)) ? (x) : (y))
#define NAN_MIN(x, y) (((x) < (y) || (x) != (x)) ? (x) : (y))

/* one op over the walk: out[o + k] = EXPR(x = a[...], y = b[...]); unit and scalar strides
 * get loops of their own so that the vectoriser sees them */
#define MAP2(T, TO, EXPR)                                                                  \
    do {                                                                                   \
        const T *a = (const T *)pa; const T *b = (const T *)pb; TO *out = (TO *)po;        \
        EM_FOR_ROWS(w,                                                                     \
            const T *ra = a + i0; const T *rb = b + i1; TO *ro = out + o;                  \
            if (t0 == 1 && t1 == 1) {                                                      \
                for (int32_t k = 0; k < n; k++) { T x = ra[k], y = rb[k]; ro[k] = (TO)(EXPR); } \
            } else if (t0 == 1 && t1 == 0) {                                               \
                const T y = rb[0];                                                         \
                for (int32_t k = 0; k < n; k++) { T x = ra[k]; ro[k] = (TO)(EXPR); }       \
            } else if (t0 == 0 && t1 == 1) {                                               \
                const T x = ra[0];                                                         \
                for (int32_t k = 0; k < n; k++) { T y = rb[k]; ro[k] = (TO)(EXPR); }       \
            } else {                                                                       \
                for (int32_t k = 0; k < n; k++) {                                          \
                    T x = ra[(int64_t)k * t0], y = rb[(int64_t)k * t1];                    \
                    ro[k] = (TO)(EXPR);                                                    \
                }                                                                          \
            });                                                                            \
        return 0;                                                                          \
    } while (0)

#define FLOAT_BINARY(T, POW, ATAN2)                                                        \
    static int binary_##T(int op, const void *pa, const void *pb, void *po, em_walk w) {   \
        switch (op) {                                                                      \
        case OP_add: MAP2(T, T, x + y);                                                    \
        case OP_sub: MAP2(T, T, x - y);                                                    \
        case OP_mul: MAP2(T, T, x * y);                                                    \
        case OP_div: MAP2(T, T, x / y);                                                    \
        case OP_pow: MAP2(T, T, POW(x, y));                                                \
        case OP_maximum: MAP2(T, T, NAN_MAX(x, y));                                        \
        case OP_minimum: MAP2(T, T, NAN_MIN(x, y));                                        \
        case OP_eq: MAP2(T, uint8_t, x == y);                                              \
        case OP_ne: MAP2(T, uint8_t, x != y);                                              \
        case OP_lt: MAP2(T, uint8_t, x < y);                                               \
        case OP_le: MAP2(T, uint8_t, x <= y);                                              \
        case OP_gt: MAP2(T, uint8_t, x > y);                                               \
        case OP_ge: MAP2(T, uint8_t, x >= y);                                              \
        case OP_floor_divide: MAP2(T, T, floordiv_##T(x, y));                              \
        case OP_remainder: MAP2(T, T, mod_##T(x, y));                                      \
        case OP_atan2: MAP2(T, T, ATAN2(x, y));                                            \
        default: return 1;                                                                 \
        }                                                                                  \
    }
FLOAT_BINARY(float, powf, atan2f)
FLOAT_BINARY(double, pow, atan2)

/* integers: arithmetic in the unsigned type of the width wraps around without UB */
static inline int64_t ipow(int64_t base, int64_t e) {
    uint64_t r = 1, b = (uint64_t)base;
    while (e > 0) { if (e & 1) r *= b; b *= b; e >>= 1; }
    return (int64_t)r;
}
/* y == -1 is special-cased: INT_MIN / -1 traps in wasm (numpy wraps it to INT_MIN) */
#define MINUS_ONE(T, y) ((T)-1 < 0 && (y) == (T)-1)
#define IFLOORDIV(T, U, x, y) ((y) == 0 ? (T)0 : MINUS_ONE(T, y) ? (T)(0 - (U)(x)) :           \
    (T)((x) / (y) - (((x) % (y) != 0) && (((x) < 0) != ((y) < 0)))))
#define IMOD(T, x, y) ((y) == 0 || MINUS_ONE(T, y) ? (T)0 :                                    \
    (T)(((x) % (y) != 0 && (((x) % (y) < 0) != ((y) < 0))) ? (x) % (y) + (y) : (x) % (y)))

/* a shift count inside [0, width); outside it << gives 0 and >> the sign (numpy's results) */
#define SHIFT_OK(T, y) ((uint64_t)(int64_t)(y) < 8 * sizeof(T))
#define INT_BINARY(T, U)                                                                   \
    static int binary_##T(int op, const void *pa, const void *pb, void *po, em_walk w) {   \
        switch (op) {                                                                      \
        case OP_add: MAP2(T, T, (U)x + (U)y);                                              \
        case OP_sub: MAP2(T, T, (U)x - (U)y);                                              \
        case OP_mul: MAP2(T, T, (U)x * (U)y);                                              \
        case OP_floor_divide: MAP2(T, T, IFLOORDIV(T, U, x, y));                              \
        case OP_remainder: MAP2(T, T, IMOD(T, x, y));                                      \
        case OP_pow: MAP2(T, T, ipow(x, y));                                               \
        case OP_maximum: MAP2(T, T, x > y ? x : y);                                        \
        case OP_minimum: MAP2(T, T, x < y ? x : y);                                        \
        case OP_eq: MAP2(T, uint8_t, x == y);                                              \
        case OP_ne: MAP2(T, uint8_t, x != y);                                              \
        case OP_lt: MAP2(T, uint8_t, x < y);                                               \
        case OP_le: MAP2(T, uint8_t, x <= y);                                              \
        case OP_gt: MAP2(T, uint8_t, x > y);                                               \
        case OP_ge: MAP2(T, uint8_t, x >= y);                                              \
        case OP_and: MAP2(T, T, x & y);                                                    \
        case OP_or: MAP2(T, T, x | y);                                                     \
        case OP_xor: MAP2(T, T, x ^ y);                                                    \
        case OP_shl: MAP2(T, T, SHIFT_OK(T, y) ? (T)((U)x << y) : (T)0);                   \
        case OP_shr: MAP2(T, T, SHIFT_OK(T, y) ? (T)(x >> y) : (T)(x < 0 ? -1 : 0));       \
        default: return 1;                                                                 \
        }                                                                                  \
    }
typedef uint8_t u8; typedef int8_t i8; typedef int32_t i32; typedef int64_t i64;
INT_BINARY(u8, uint32_t)
INT_BINARY(i8, uint32_t)
INT_BINARY(i32, uint32_t)
INT_BINARY(i64, uint64_t)

/* bool: and/or/xor/eq/ne (and the orderings numpy defines on bools) */
static int binary_bool(int op, const void *pa, const void *pb, void *po, em_walk w) {
    switch (op) {
    case OP_and: case OP_mul: case OP_minimum: MAP2(uint8_t, uint8_t, x & y);
    case OP_or: case OP_add: case OP_maximum: MAP2(uint8_t, uint8_t, x | y);
    case OP_xor: case OP_ne: MAP2(uint8_t, uint8_t, x ^ y);
    case OP_eq: MAP2(uint8_t, uint8_t, x == y);
    case OP_lt: MAP2(uint8_t, uint8_t, x < y);
    case OP_le: MAP2(uint8_t, uint8_t, x <= y);
    case OP_gt: MAP2(uint8_t, uint8_t, x > y);
    case OP_ge: MAP2(uint8_t, uint8_t, x >= y);
    default: return 1;
    }
}

/* out = a OP b over the output shape; meta: shape[ndim], a's strides[ndim], b's strides[ndim]
 * (element strides, 0 where an input broadcasts). Returns 0, or 1 for an unknown op/dtype. */
int32_t EXPORT(em_binary)(int32_t op, int32_t dtype, const void *pa, const void *pb, void *po,
                          int32_t ndim) {
    const int32_t *m = em_meta_words();
    em_walk w = {ndim, m, m + ndim, m + 2 * ndim, NULL};
    switch (dtype) {
    case DT_BOOL: return binary_bool(op, pa, pb, po, w);
    case DT_U8: return binary_u8(op, pa, pb, po, w);
    case DT_I8: return binary_i8(op, pa, pb, po, w);
    case DT_I32: return binary_i32(op, pa, pb, po, w);
    case DT_I64: return binary_i64(op, pa, pb, po, w);
    case DT_F32: return binary_float(op, pa, pb, po, w);
    case DT_F64: return binary_double(op, pa, pb, po, w);
    default: return 1;
    }
}

/* ================================================================== unary */
#define UNARY_OPS(X) \
    X(neg) X(abs) X(exp) X(log) X(sqrt) X(sin) X(cos) X(atan) X(tanh) X(erf) X(floor) X(ceil) \
    X(round) X(isnan) X(expm1) X(log1p) X(log2) X(reciprocal) X(rsqrt) X(tan) X(sinh) X(cosh) \
    X(asin) X(acos) X(sigmoid) X(sign) X(trunc) X(isinf) X(log10) X(relu) X(relu6) X(silu) \
    X(gelu) X(gelu_tanh) X(hard_sigmoid) X(hard_swish) X(mish) X(not) X(leaky_relu) X(elu)
enum { UNARY_OPS(NAME_ENUM) OP_UNARY_COUNT };
static const char unary_names[] = UNARY_OPS(NAME_STR);
const char *EXPORT(em_unary_names)(void) { return unary_names; }

#define MAP1(T, TO, EXPR)                                                                  \
    do {                                                                                   \
        const T *a = (const T *)pa; TO *out = (TO *)po;                                    \
        for (int32_t k = 0; k < n; k++) { T x = a[k]; out[k] = (TO)(EXPR); }               \
        return 0;                                                                          \
    } while (0)

/* numpy's sign: 0 for either zero (+0.0 for floats), NaN for NaN */
#define SIGN(x) ((x) > 0 ? 1 : (x) < 0 ? -1 : (x) == 0 ? 0 : (x))
#define FLOAT_UNARY(T, F, C)                                                               \
    static int unary_##T(int op, const void *pa, void *po, int32_t n, double p) {          \
        const T half = (T)0.5, one = (T)1;                                                 \
        switch (op) {                                                                      \
        case OP_neg: MAP1(T, T, -x);                                                       \
        case OP_abs: MAP1(T, T, F(fabs)(x));                                               \
        case OP_exp: MAP1(T, T, F(exp)(x));                                                \
        case OP_log: MAP1(T, T, F(log)(x));                                                \
        case OP_sqrt: MAP1(T, T, F(sqrt)(x));                                              \
        case OP_sin: MAP1(T, T, F(sin)(x));                                                \
        case OP_cos: MAP1(T, T, F(cos)(x));                                                \
        case OP_atan: MAP1(T, T, F(atan)(x));                                              \
        case OP_tanh: MAP1(T, T, F(tanh)(x));                                              \
        case OP_erf: MAP1(T, T, F(erf)(x));                                                \
        case OP_floor: MAP1(T, T, F(floor)(x));                                            \
        case OP_ceil: MAP1(T, T, F(ceil)(x));                                              \
        case OP_round: MAP1(T, T, F(rint)(x));                                             \
        case OP_isnan: MAP1(T, uint8_t, x != x);                                           \
        case OP_expm1: MAP1(T, T, F(expm1)(x));                                            \
        case OP_log1p: MAP1(T, T, F(log1p)(x));                                            \
        case OP_log2: MAP1(T, T, F(log2)(x));                                              \
        case OP_reciprocal: MAP1(T, T, one / x);                                           \
        case OP_rsqrt: MAP1(T, T, one / F(sqrt)(x));                                       \
        case OP_tan: MAP1(T, T, F(tan)(x));                                                \
        case OP_sinh: MAP1(T, T, F(sinh)(x));                                              \
        case OP_cosh: MAP1(T, T, F(cosh)(x));                                              \
        case OP_asin: MAP1(T, T, F(asin)(x));                                              \
        case OP_acos: MAP1(T, T, F(acos)(x));                                              \
        case OP_sigmoid: MAP1(T, T, one / (one + F(exp)(-x)));                             \
        case OP_sign: MAP1(T, T, SIGN(x));                                                 \
        case OP_trunc: MAP1(T, T, F(trunc)(x));                                            \
        case OP_isinf: MAP1(T, uint8_t, F(fabs)(x) == (T)INFINITY);                        \
        case OP_log10: MAP1(T, T, F(log10)(x));                                            \
        case OP_relu: MAP1(T, T, x > 0 ? x : (x != x ? x : 0));                            \
        case OP_relu6: MAP1(T, T, x != x ? x : x < 0 ? 0 : x > 6 ? 6 : x);                 \
        case OP_silu: MAP1(T, T, x / (one + F(exp)(-x)));                                  \
        case OP_gelu: MAP1(T, T, half * x * (one + F(erf)(x * (T)0.7071067811865476)));    \
        case OP_gelu_tanh:                                                                 \
            MAP1(T, T, half * x * (one + F(tanh)((T)0.7978845608028654 *                   \
                                                  (x + (T)0.044715 * x * x * x))));        \
        case OP_hard_sigmoid: MAP1(T, T, x <= -3 ? 0 : x >= 3 ? one : x / 6 + half);       \
        case OP_hard_swish: MAP1(T, T, x <= -3 ? 0 : x >= 3 ? x : x * (x + 3) / 6);        \
        case OP_mish: MAP1(T, T, x * F(tanh)(F(log1p)(F(exp)(x))));                        \
        case OP_leaky_relu: MAP1(T, T, x >= 0 ? x : x * (T)p);                             \
        case OP_elu: MAP1(T, T, x > 0 ? x : (T)p * F(expm1)(x));                           \
        default: return 1;                                                                 \
        }                                                                                  \
    }
#define F_F32(name) name##f
#define F_F64(name) name
FLOAT_UNARY(float, F_F32, f)
FLOAT_UNARY(double, F_F64, d)

#define INT_UNARY(T, U)                                                                    \
    static int unary_##T(int op, const void *pa, void *po, int32_t n, double p) {          \
        (void)p;                                                                           \
        switch (op) {                                                                      \
        case OP_neg: MAP1(T, T, 0 - (U)x);                                                 \
        case OP_abs: MAP1(T, T, x < 0 ? 0 - (U)x : (U)x);                                  \
        case OP_sign: MAP1(T, T, SIGN(x));                                                 \
        case OP_not: MAP1(T, T, ~x);                                                       \
        default: return 1;                                                                 \
        }                                                                                  \
    }
INT_UNARY(u8, uint32_t)
INT_UNARY(i8, uint32_t)
INT_UNARY(i32, uint32_t)
INT_UNARY(i64, uint64_t)

/* out = OP(x) over n contiguous elements; p is the op's parameter (leaky_relu's slope, elu's
 * alpha). Returns 0, or 1 for an unknown op/dtype. */
int32_t EXPORT(em_unary)(int32_t op, int32_t dtype, const void *pa, void *po, int32_t n,
                         double p) {
    switch (dtype) {
    case DT_BOOL:
        if (op != OP_not) return 1;
        for (int32_t k = 0; k < n; k++) ((uint8_t *)po)[k] = !((const uint8_t *)pa)[k];
        return 0;
    case DT_U8: return unary_u8(op, pa, po, n, p);
    case DT_I8: return unary_i8(op, pa, po, n, p);
    case DT_I32: return unary_i32(op, pa, po, n, p);
    case DT_I64: return unary_i64(op, pa, po, n, p);
    case DT_F32: return unary_float(op, pa, po, n, p);
    case DT_F64: return unary_double(op, pa, po, n, p);
    default: return 1;
    }
}

/* softplus: log(1 + exp(beta x)) / beta, and x itself where beta x > threshold (PyTorch's
 * two parameters: em_unary has one) */
#define SOFTPLUS(T, F)                                                                     \
    do {                                                                                   \
        const T *a = (const T *)pa; T *out = (T *)po;                                      \
        const T b = (T)beta, th = (T)threshold;                                            \
        for (int32_t k = 0; k < n; k++) {                                                  \
            T x = a[k], bx = x * b;                                                        \
            out[k] = bx > th ? x : F(log1p)(F(exp)(bx)) / b;                               \
        }                                                                                  \
        return 0;                                                                          \
    } while (0)

int32_t EXPORT(em_softplus)(int32_t dtype, const void *pa, void *po, int32_t n, double beta,
                            double threshold) {
    switch (dtype) {
    case DT_F32: SOFTPLUS(float, F_F32);
    case DT_F64: SOFTPLUS(double, F_F64);
    default: return 1;
    }
}

/* ================================================================== where, cast */
/* out = cond ? a : b over the output shape; meta: shape, cond's, a's and b's strides */
int32_t EXPORT(em_where)(int32_t size, const uint8_t *cond, const uint8_t *pa,
                         const uint8_t *pb, uint8_t *po, int32_t ndim) {
    const int32_t *m = em_meta_words();
    em_walk w = {ndim, m, m + ndim, m + 2 * ndim, m + 3 * ndim};
    EM_FOR_ROWS(w,
        for (int32_t k = 0; k < n; k++) {
            const uint8_t *src = cond[i0 + (int64_t)k * t0] ? pa + (i1 + (int64_t)k * t1) * size
                                                            : pb + (i2 + (int64_t)k * t2) * size;
            memcpy(po + (o + k) * size, src, (size_t)size);
        });
    return 0;
}

/* float → int as numpy does on x86: truncate; NaN, inf and out-of-range values give the most
 * negative value of the 64-bit (int64) or 32-bit (narrower types) conversion */
static inline int64_t f2i(double x, int bits) {
    double lim = bits == 64 ? 9223372036854775808.0 : 2147483648.0;
    int64_t low = bits == 64 ? INT64_MIN : INT32_MIN;
    if (!(x > -lim - 1 && x < lim)) return low;
    double t = trunc(x);
    return t < -lim ? low : (int64_t)t;
}

#define CAST_LOOP(TI, TO, EXPR)                                                            \
    do {                                                                                   \
        const TI *a = (const TI *)pa; TO *out = (TO *)po;                                  \
        for (int32_t k = 0; k < n; k++) { TI x = a[k]; out[k] = (TO)(EXPR); }              \
        return 0;                                                                          \
    } while (0)

#define CAST_TO(TI, IS_FLOAT)                                                              \
    switch (to) {                                                                          \
    case DT_BOOL: CAST_LOOP(TI, uint8_t, x != 0);                                          \
    case DT_U8: CAST_LOOP(TI, uint8_t, IS_FLOAT ? (uint8_t)f2i(x, 32) : (uint8_t)x);       \
    case DT_I8: CAST_LOOP(TI, int8_t, IS_FLOAT ? (int8_t)f2i(x, 32) : (int8_t)x);          \
    case DT_I32: CAST_LOOP(TI, int32_t, IS_FLOAT ? (int32_t)f2i(x, 32) : (int32_t)x);      \
    case DT_I64: CAST_LOOP(TI, int64_t, IS_FLOAT ? f2i(x, 64) : (int64_t)x);               \
    case DT_F32: CAST_LOOP(TI, float, x);                                                  \
    case DT_F64: CAST_LOOP(TI, double, x);                                                 \
    default: return 1;                                                                     \
    }

/* out (dtype `to`) = x (dtype `from`) over n elements; 0, or 1 for an unknown dtype */
int32_t EXPORT(em_cast)(int32_t from, int32_t to, const void *pa, void *po, int32_t n) {
    switch (from) {
    case DT_BOOL: case DT_U8: CAST_TO(uint8_t, 0)
    case DT_I8: CAST_TO(int8_t, 0)
    case DT_I32: CAST_TO(int32_t, 0)
    case DT_I64: CAST_TO(int64_t, 0)
    case DT_F32: CAST_TO(float, 1)
    case DT_F64: CAST_TO(double, 1)
    default: return 1;
    }
}
