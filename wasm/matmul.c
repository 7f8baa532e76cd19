/* Matrix products: a register-blocked, packed GEMM (GotoBLAS/BLIS layout: B packed in panels
 * of MM_NR-column slivers, A in MR-row slivers, a micro-kernel keeping an MR x NR tile of C in
 * SIMD registers) for float32 and float64, shared by conv (wasm/conv.c); batched matmul with
 * strided operands (a transposed or expanded view is packed from its strides, never copied);
 * integer matmul (wrapping, like numpy), with an int8 kernel accumulating in int32 (SIMD
 * i16x8 dot products), also exported for quantized models. */
#include <stdlib.h>
#include <string.h>
#include <wasm_simd128.h>
#include "ember.h"
#include "gemm.h"

/* Blocking (MM_KC in gemm.h): a KC x NC panel of B (1 MiB in f32) stays in L2, an MC x KC
 * block of A (64 KiB) in L2/L1, and one KC x NR sliver of B (8 KiB) in L1 while the
 * micro-kernel sweeps A. */
#define MM_MC 64
#define MM_NC 1024

/* packing buffers, grown on demand and kept (the module is single-threaded) */
static void *mm_grow(void **buf, size_t *cap, size_t bytes) {
    if (bytes > *cap) {
        free(*buf);
        *buf = aligned_alloc(16, (bytes + 15) & ~(size_t)15);
        *cap = *buf ? bytes : 0;
    }
    return *buf;
}

/* ================================================================ micro-kernels */
static inline float mm_hsum_f32(v128_t v) {
    return (wasm_f32x4_extract_lane(v, 0) + wasm_f32x4_extract_lane(v, 1)) +
           (wasm_f32x4_extract_lane(v, 2) + wasm_f32x4_extract_lane(v, 3));
}

/* f32: 4 rows x 8 columns, 8 accumulators (x86 has 16 XMM registers; Cranelift uses no more).
 * wasm SIMD128 has no FMA: mul + add. */
#define MR32 4
static void mm_kernel_f32(int32_t kc, const float *restrict a, const float *restrict b,
                          float *restrict c, int32_t ldc, int accumulate, const float *init) {
    v128_t acc[MR32][2];
    for (int r = 0; r < MR32; r++) acc[r][0] = acc[r][1] = wasm_f32x4_splat(init ? init[r] : 0);
#pragma clang loop unroll_count(2)
    for (int32_t p = 0; p < kc; p++) {
        v128_t b0 = wasm_v128_load(b), b1 = wasm_v128_load(b + 4);
        for (int r = 0; r < MR32; r++) {
            v128_t ar = wasm_v128_load32_splat(a + r);
            acc[r][0] = wasm_f32x4_add(acc[r][0], wasm_f32x4_mul(ar, b0));
            acc[r][1] = wasm_f32x4_add(acc[r][1], wasm_f32x4_mul(ar, b1));
        }
        a += MR32;
        b += MM_NR;
    }
    for (int r = 0; r < MR32; r++) {
        float *cr = c + r * ldc;
        if (accumulate) {
            acc[r][0] = wasm_f32x4_add(acc[r][0], wasm_v128_load(cr));
            acc[r][1] = wasm_f32x4_add(acc[r][1], wasm_v128_load(cr + 4));
        }
        wasm_v128_store(cr, acc[r][0]);
        wasm_v128_store(cr + 4, acc[r][1]);
    }
}

/* f64: 4 rows x 4 columns of f64x2 */
#define MR64 4
#define NR64 4
static void mm_kernel_f64(int32_t kc, const double *restrict a, const double *restrict b,
                          double *restrict c, int32_t ldc, int accumulate, const double *init) {
    v128_t acc[MR64][2];
    for (int r = 0; r < MR64; r++) acc[r][0] = acc[r][1] = wasm_f64x2_splat(init ? init[r] : 0);
    for (int32_t p = 0; p < kc; p++) {
        v128_t b0 = wasm_v128_load(b), b1 = wasm_v128_load(b + 2);
        for (int r = 0; r < MR64; r++) {
            v128_t ar = wasm_v128_load64_splat(a + r);
            acc[r][0] = wasm_f64x2_add(acc[r][0], wasm_f64x2_mul(ar, b0));
            acc[r][1] = wasm_f64x2_add(acc[r][1], wasm_f64x2_mul(ar, b1));
        }
        a += MR64;
        b += NR64;
    }
    for (int r = 0; r < MR64; r++) {
        double *cr = c + r * ldc;
        if (accumulate) {
            acc[r][0] = wasm_f64x2_add(acc[r][0], wasm_v128_load(cr));
            acc[r][1] = wasm_f64x2_add(acc[r][1], wasm_v128_load(cr + 2));
        }
        wasm_v128_store(cr, acc[r][0]);
        wasm_v128_store(cr + 2, acc[r][1]);
    }
}

/* ================================================================ packing and the driver */
/* B[k0:k0+kc, j0:j0+nc] from a strided view (ctx: an mm_view) into NR-column slivers */
#define PACK_B_STRIDED(T, SFX, NR)                                                          \
    static void mm_pack_b_##SFX(const void *ctx, T *dst, int32_t k0, int32_t kc, int32_t j0, \
                                int32_t nc) {                                               \
        const mm_view *v = (const mm_view *)ctx;                                            \
        const int32_t rs = v->rs, cs = v->cs;                                               \
        for (int32_t s = 0; s < nc; s += NR, dst += (size_t)kc * NR) {                      \
            const int32_t w = nc - s < NR ? nc - s : NR;                                    \
            const T *src = (const T *)v->p + (ptrdiff_t)k0 * rs + (ptrdiff_t)(j0 + s) * cs; \
            if (cs == 1 && w == NR) {                                                       \
                for (int32_t p = 0; p < kc; p++)                                            \
                    memcpy(dst + p * NR, src + (ptrdiff_t)p * rs, NR * sizeof(T));          \
                continue;                                                                   \
            }                                                                               \
            if (w < NR) memset(dst, 0, (size_t)kc * NR * sizeof(T));                        \
            for (int32_t j = 0; j < w; j++) {                                               \
                const T *col = src + (ptrdiff_t)j * cs;                                     \
                for (int32_t p = 0; p < kc; p++) dst[p * NR + j] = col[(ptrdiff_t)p * rs];  \
            }                                                                               \
        }                                                                                   \
    }

/* A[i0:i0+mc, k0:k0+kc] into MR-row slivers laid out [kc][MR], rows past mc zero */
#define PACK_A(T, SFX, MR)                                                                  \
    static void mm_pack_a_##SFX(mm_view a, T *dst, int32_t i0, int32_t mc, int32_t k0,      \
                                int32_t kc) {                                               \
        for (int32_t s = 0; s < mc; s += MR, dst += (size_t)kc * MR) {                      \
            const int32_t h = mc - s < MR ? mc - s : MR;                                    \
            const T *src = (const T *)a.p + (ptrdiff_t)(i0 + s) * a.rs + (ptrdiff_t)k0 * a.cs; \
            if (h < MR) memset(dst, 0, (size_t)kc * MR * sizeof(T));                        \
            if (a.cs == 1) {                                                                \
                for (int32_t r = 0; r < h; r++) {                                           \
                    const T *row = src + (ptrdiff_t)r * a.rs;                               \
                    for (int32_t p = 0; p < kc; p++) dst[p * MR + r] = row[p];              \
                }                                                                           \
            } else {                                                                        \
                for (int32_t p = 0; p < kc; p++)                                            \
                    for (int32_t r = 0; r < h; r++)                                         \
                        dst[p * MR + r] = src[(ptrdiff_t)r * a.rs + (ptrdiff_t)p * a.cs];   \
            }                                                                               \
        }                                                                                   \
    }

/* The Goto loop nest; edge tiles go through a scratch tile so the kernel is always full. */
#define GEMM_DRIVER(T, SFX, MR, NR)                                                          \
    typedef void (*mm_pack_##SFX##_fn)(const void *, T *, int32_t, int32_t, int32_t, int32_t); \
    static void *mm_abuf_##SFX, *mm_bbuf_##SFX;                                              \
    static size_t mm_acap_##SFX, mm_bcap_##SFX;                                              \
    static void mm_driver_##SFX(int32_t m, int32_t n, int32_t k, mm_view a,                  \
                                mm_pack_##SFX##_fn pack, const void *ctx, T *c, int32_t ldc, \
                                int accumulate, const T *bias) {                             \
        if (m <= 0 || n <= 0) return;                                                        \
        if (k <= 0) {                                                                        \
            for (int32_t i = 0; i < m && !accumulate; i++)                                   \
                for (int32_t j = 0; j < n; j++) c[(ptrdiff_t)i * ldc + j] = bias ? bias[i] : 0; \
            return;                                                                          \
        }                                                                                    \
        const int32_t ncap = ((MM_NC + NR - 1) / NR) * NR, mcap = ((MM_MC + MR - 1) / MR) * MR; \
        T *bp = mm_grow(&mm_bbuf_##SFX, &mm_bcap_##SFX, (size_t)ncap * MM_KC * sizeof(T));   \
        T *ap = mm_grow(&mm_abuf_##SFX, &mm_acap_##SFX, (size_t)mcap * MM_KC * sizeof(T));   \
        if (!bp || !ap) abort();                                                             \
        T tile[MR * NR] __attribute__((aligned(16)));                                        \
        for (int32_t jc = 0; jc < n; jc += MM_NC) {                                          \
            const int32_t nc = n - jc < MM_NC ? n - jc : MM_NC;                              \
            for (int32_t pc = 0; pc < k; pc += MM_KC) {                                      \
                const int32_t kc = k - pc < MM_KC ? k - pc : MM_KC;                          \
                const int acc = accumulate || pc > 0;                                        \
                pack(ctx, bp, pc, kc, jc, nc);                                               \
                for (int32_t ic = 0; ic < m; ic += MM_MC) {                                  \
                    const int32_t mc = m - ic < MM_MC ? m - ic : MM_MC;                      \
                    mm_pack_a_##SFX(a, ap, ic, mc, pc, kc);                                  \
                    for (int32_t jr = 0; jr < nc; jr += NR) {                                \
                        const int32_t w = nc - jr < NR ? nc - jr : NR;                       \
                        const T *bs = bp + (size_t)jr * kc;                                  \
                        for (int32_t ir = 0; ir < mc; ir += MR) {                            \
                            const int32_t h = mc - ir < MR ? mc - ir : MR;                   \
                            T *cc = c + (ptrdiff_t)(ic + ir) * ldc + jc + jr;                \
                            const T *as = ap + (size_t)ir * kc;                              \
                            T init[MR] = {0}; /* the bias starts the sums (first panel) */   \
                            const T *start = !acc && bias ? init : NULL;                     \
                            for (int32_t r = 0; start && r < h; r++) init[r] = bias[ic + ir + r]; \
                            if (h == MR && w == NR) {                                        \
                                mm_kernel_##SFX(kc, as, bs, cc, ldc, acc, start);            \
                                continue;                                                    \
                            }                                                                \
                            mm_kernel_##SFX(kc, as, bs, tile, NR, 0, start);                 \
                            for (int32_t r = 0; r < h; r++)                                  \
                                for (int32_t j = 0; j < w; j++)                              \
                                    cc[(ptrdiff_t)r * ldc + j] =                             \
                                        acc ? cc[(ptrdiff_t)r * ldc + j] + tile[r * NR + j]  \
                                            : tile[r * NR + j];                              \
                        }                                                                    \
                    }                                                                        \
                }                                                                            \
            }                                                                                \
        }                                                                                    \
    }

PACK_B_STRIDED(float, f32, MM_NR)
PACK_B_STRIDED(double, f64, NR64)
PACK_A(float, f32, MR32)
PACK_A(double, f64, MR64)
GEMM_DRIVER(float, f32, MR32, MM_NR)
GEMM_DRIVER(double, f64, MR64, NR64)

/* Fewer rows than the micro-kernel's (a batch-1 Linear, x @ W.T): packing B would cost as
 * much as the product, so B is read where it lies. Columns of B contiguous (a transposed
 * weight): four dot products at a time; rows contiguous: c_row += a[i, p] * b_row. */
static int mm_thin_f32(int32_t m, int32_t n, int32_t k, mm_view a, mm_view b, float *c,
                       int32_t ldc, int accumulate, const float *bias) {
    const float *A = (const float *)a.p, *B = (const float *)b.p;
    if (b.rs == 1 && a.cs == 1) {
        const int32_t k4 = k & ~3;
        for (int32_t i = 0; i < m; i++) {
            const float *ar = A + (ptrdiff_t)i * a.rs;
            float *cr = c + (ptrdiff_t)i * ldc;
            for (int32_t j = 0; j < n; j += 4) {
                const int32_t w = n - j < 4 ? n - j : 4;
                const float *col[4];
                for (int32_t q = 0; q < 4; q++) /* missing columns re-read column j */
                    col[q] = B + (ptrdiff_t)(j + (q < w ? q : 0)) * b.cs;
                v128_t s0 = wasm_f32x4_splat(0.0f), s1 = s0, s2 = s0, s3 = s0;
                for (int32_t p = 0; p < k4; p += 4) {
                    const v128_t va = wasm_v128_load(ar + p);
                    s0 = wasm_f32x4_add(s0, wasm_f32x4_mul(va, wasm_v128_load(col[0] + p)));
                    s1 = wasm_f32x4_add(s1, wasm_f32x4_mul(va, wasm_v128_load(col[1] + p)));
                    s2 = wasm_f32x4_add(s2, wasm_f32x4_mul(va, wasm_v128_load(col[2] + p)));
                    s3 = wasm_f32x4_add(s3, wasm_f32x4_mul(va, wasm_v128_load(col[3] + p)));
                }
                const float b0 = bias && !accumulate ? bias[i] : 0.0f;
                float t[4] = {b0 + mm_hsum_f32(s0), b0 + mm_hsum_f32(s1), b0 + mm_hsum_f32(s2),
                              b0 + mm_hsum_f32(s3)};
                for (int32_t q = 0; q < w; q++) {
                    for (int32_t p = k4; p < k; p++) t[q] += ar[p] * col[q][p];
                    cr[j + q] = accumulate ? cr[j + q] + t[q] : t[q];
                }
            }
        }
        return 1;
    }
    if (b.cs == 1) {
        for (int32_t i = 0; i < m; i++) {
            float *cr = c + (ptrdiff_t)i * ldc;
            for (int32_t j = 0; j < n && !accumulate; j++) cr[j] = bias ? bias[i] : 0.0f;
            for (int32_t p = 0; p < k; p++) {
                const float x = A[(ptrdiff_t)i * a.rs + (ptrdiff_t)p * a.cs];
                const float *br = B + (ptrdiff_t)p * b.rs;
                for (int32_t j = 0; j < n; j++) cr[j] += x * br[j];
            }
        }
        return 1;
    }
    return 0;
}

void mm_gemm_f32(int32_t m, int32_t n, int32_t k, mm_view a, mm_view b, mm_pack_fn pack,
                 const void *ctx, float *c, int32_t ldc, int accumulate, const float *bias) {
    if (pack) mm_driver_f32(m, n, k, a, pack, ctx, c, ldc, accumulate, bias);
    else if (m >= MR32 || k <= 0 || !mm_thin_f32(m, n, k, a, b, c, ldc, accumulate, bias))
        mm_driver_f32(m, n, k, a, mm_pack_b_f32, &b, c, ldc, accumulate, bias);
}

void mm_gemm_f64(int32_t m, int32_t n, int32_t k, mm_view a, mm_view b, double *c, int32_t ldc,
                 int accumulate, const double *bias) {
    mm_driver_f64(m, n, k, a, mm_pack_b_f64, &b, c, ldc, accumulate, bias);
}

/* ================================================================ integers */
/* int8 x int8 -> int32: c[i, j] = sum_p a[i, p] * bt[j, p] (a is (m, k), bt is (n, k), both
 * contiguous: the weights of a quantized Linear are stored (out, in)). Sixteen products per
 * step: sign-extend to i16x8, then i32x4.dot_i16x8 (pmaddwd). */
static inline int32_t mm_hsum_i32(v128_t v) {
    return wasm_i32x4_extract_lane(v, 0) + wasm_i32x4_extract_lane(v, 1) +
           wasm_i32x4_extract_lane(v, 2) + wasm_i32x4_extract_lane(v, 3);
}

static inline v128_t mm_dot16_i8(v128_t acc, v128_t alo, v128_t ahi, const int8_t *b) {
    v128_t vb = wasm_v128_load(b);
    acc = wasm_i32x4_add(acc, wasm_i32x4_dot_i16x8(alo, wasm_i16x8_extend_low_i8x16(vb)));
    return wasm_i32x4_add(acc, wasm_i32x4_dot_i16x8(ahi, wasm_i16x8_extend_high_i8x16(vb)));
}

int32_t EXPORT(em_gemm_i8_i32)(const int8_t *a, const int8_t *bt, int32_t *c, int32_t m,
                               int32_t n, int32_t k) {
    const int32_t k16 = k & ~15;
    for (int32_t i = 0; i < m; i++) {
        const int8_t *ar = a + (ptrdiff_t)i * k;
        int32_t *cr = c + (ptrdiff_t)i * n;
        int32_t j = 0;
        for (; j + 4 <= n; j += 4) {
            const int8_t *b0 = bt + (ptrdiff_t)j * k, *b1 = b0 + k, *b2 = b1 + k, *b3 = b2 + k;
            v128_t s0 = wasm_i32x4_splat(0), s1 = s0, s2 = s0, s3 = s0;
            for (int32_t p = 0; p < k16; p += 16) {
                v128_t va = wasm_v128_load(ar + p);
                v128_t lo = wasm_i16x8_extend_low_i8x16(va), hi = wasm_i16x8_extend_high_i8x16(va);
                s0 = mm_dot16_i8(s0, lo, hi, b0 + p);
                s1 = mm_dot16_i8(s1, lo, hi, b1 + p);
                s2 = mm_dot16_i8(s2, lo, hi, b2 + p);
                s3 = mm_dot16_i8(s3, lo, hi, b3 + p);
            }
            int32_t t0 = mm_hsum_i32(s0), t1 = mm_hsum_i32(s1), t2 = mm_hsum_i32(s2),
                    t3 = mm_hsum_i32(s3);
            for (int32_t p = k16; p < k; p++) {
                t0 += ar[p] * b0[p], t1 += ar[p] * b1[p], t2 += ar[p] * b2[p], t3 += ar[p] * b3[p];
            }
            cr[j] = t0, cr[j + 1] = t1, cr[j + 2] = t2, cr[j + 3] = t3;
        }
        for (; j < n; j++) {
            const int8_t *b0 = bt + (ptrdiff_t)j * k;
            v128_t s0 = wasm_i32x4_splat(0);
            for (int32_t p = 0; p < k16; p += 16) {
                v128_t va = wasm_v128_load(ar + p);
                s0 = mm_dot16_i8(s0, wasm_i16x8_extend_low_i8x16(va),
                                 wasm_i16x8_extend_high_i8x16(va), b0 + p);
            }
            int32_t t0 = mm_hsum_i32(s0);
            for (int32_t p = k16; p < k; p++) t0 += ar[p] * b0[p];
            cr[j] = t0;
        }
    }
    return 0;
}

/* int8 matmul with int8 results (numpy wraps around): the int32 kernel on contiguous copies,
 * then truncated (exact: wrapping arithmetic agrees modulo 2^8) */
static void *mm_i8buf;
static size_t mm_i8cap;
static int mm_matmul_i8(mm_view av, mm_view bv, int8_t *c, int32_t m,
                        int32_t n, int32_t k) {
    size_t ab = (size_t)m * k, bb = (size_t)n * k, cb = (size_t)m * n * sizeof(int32_t);
    int8_t *buf = mm_grow(&mm_i8buf, &mm_i8cap, ab + bb + cb + 16);
    if (!buf) return 2;
    int8_t *ap = buf, *bp = buf + ab;
    int32_t *cp = (int32_t *)(buf + ((ab + bb + 15) & ~(size_t)15));
    const int8_t *A8 = (const int8_t *)av.p, *B8 = (const int8_t *)bv.p;
    for (int32_t i = 0; i < m; i++)
        for (int32_t p = 0; p < k; p++)
            ap[(size_t)i * k + p] = A8[(ptrdiff_t)i * av.rs + (ptrdiff_t)p * av.cs];
    for (int32_t j = 0; j < n; j++)
        for (int32_t p = 0; p < k; p++)
            bp[(size_t)j * k + p] = B8[(ptrdiff_t)p * bv.rs + (ptrdiff_t)j * bv.cs];
    em_gemm_i8_i32(ap, bp, cp, m, n, k);
    for (size_t q = 0; q < (size_t)m * n; q++) c[q] = (int8_t)cp[q];
    return 0;
}

/* other integers: row-times-panel loops in unsigned arithmetic (wraps like numpy, no UB) */
#define INT_MATMUL(T, U)                                                                    \
    static void mm_matmul_##T(mm_view av, mm_view bv, T *c, int32_t m, int32_t n, int32_t k) { \
        const T *a = (const T *)av.p, *b = (const T *)bv.p;                                 \
        for (int32_t i = 0; i < m; i++) {                                                   \
            U *cr = (U *)(c + (ptrdiff_t)i * n);                                            \
            for (int32_t j = 0; j < n; j++) cr[j] = 0;                                      \
            for (int32_t p = 0; p < k; p++) {                                               \
                const U x = (U)a[(ptrdiff_t)i * av.rs + (ptrdiff_t)p * av.cs];              \
                const T *br = b + (ptrdiff_t)p * bv.rs;                                     \
                if (bv.cs == 1) for (int32_t j = 0; j < n; j++) cr[j] += x * (U)br[j];      \
                else for (int32_t j = 0; j < n; j++) cr[j] += x * (U)br[(ptrdiff_t)j * bv.cs]; \
            }                                                                               \
        }                                                                                   \
    }
INT_MATMUL(uint8_t, uint8_t)
INT_MATMUL(int32_t, uint32_t)
INT_MATMUL(int64_t, uint64_t)

/* ================================================================ batched matmul */
/* c (contiguous, (*batch, m, n)) = a (*batch, m, k) @ b (*batch, k, n), a and b read at
 * element strides (rsa, csa: a's rows and columns; rsb, csb: b's; a and b point at their
 * views' first elements). Batched (nb > 0): meta holds the batch shape[nb], a's batch
 * strides[nb], b's[nb] (0 on broadcast dims); a 2-D product needs no metadata write. */
int32_t EXPORT(em_matmul)(int32_t dtype, const void *a, const void *b, void *c, int32_t m,
                          int32_t k, int32_t n, int32_t rsa, int32_t csa, int32_t rsb,
                          int32_t csb, int32_t nb) {
    const int32_t *shape = em_meta_words(), *sa = shape + nb, *sb = sa + nb;
    int32_t idx[EM_MAX_DIMS] = {0};
    int64_t batches = 1;
    for (int d = 0; d < nb; d++) batches *= shape[d];
    const int size = dtype == DT_F64 || dtype == DT_I64   ? 8
                     : dtype == DT_F32 || dtype == DT_I32 ? 4
                                                          : 1;
    ptrdiff_t oa = 0, ob = 0;
    for (int64_t q = 0; q < batches; q++) {
        mm_view av = {(const uint8_t *)a + oa * size, rsa, csa};
        mm_view bv = {(const uint8_t *)b + ob * size, rsb, csb};
        uint8_t *cq = (uint8_t *)c + (size_t)q * m * n * size;
        switch (dtype) {
        case DT_F32: mm_gemm_f32(m, n, k, av, bv, NULL, NULL, (float *)cq, n, 0, NULL); break;
        case DT_F64: mm_gemm_f64(m, n, k, av, bv, (double *)cq, n, 0, NULL); break;
        case DT_I8: if (mm_matmul_i8(av, bv, (int8_t *)cq, m, n, k)) return 2; break;
        case DT_U8: mm_matmul_uint8_t(av, bv, (uint8_t *)cq, m, n, k); break;
        case DT_I32: mm_matmul_int32_t(av, bv, (int32_t *)cq, m, n, k); break;
        case DT_I64: mm_matmul_int64_t(av, bv, (int64_t *)cq, m, n, k); break;
        default: return 1;
        }
        for (int d = nb - 1; d >= 0; d--) { /* next batch index: odometer over the strides */
            oa += sa[d], ob += sb[d];
            if (++idx[d] < shape[d]) break;
            oa -= (ptrdiff_t)sa[d] * shape[d], ob -= (ptrdiff_t)sb[d] * shape[d];
            idx[d] = 0;
        }
    }
    return 0;
}
