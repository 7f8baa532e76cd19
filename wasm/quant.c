/* Quantized Linear and convolution (ember.contract.quantized): int8 x int8 products with exact
 * int32 sums, rescaled in the same call. The input is float32, quantized to codes here (x /
 * in_scale rounded half away from zero, clamped to +-127, or 0..255 unsigned), or codes already
 * (int8 or uint8, from the layer before: used as they are, no pass over them). The output is
 * float32 (sum * in_scale * w_scale + bias), or codes at the next layer's scale (the _q ops):
 * v = sum * m + c, m = in_scale * w_scale / out_scale, c = bias / out_scale, rounded half away
 * from zero and clamped to [lo, hi] (int8, or uint8 when lo >= 0), from the registers that
 * hold the sums (qt_emit8 in quant.h: no pass of its own).
 *
 * - em_qlinear: the codes through em_gemm_i8_i32 (matmul.c; the weight is (N, K) as stored)
 *   into an int32 scratch, then one epilogue over it (qt_emit8, per 8 columns);
 * - em_qconv: a GEMM per sample and group, C (C_out/g, positions) = W x columns, in outer-
 *   product form: codes widened to i16 and packed in pairs along K, so one
 *   i32x4.dot_i16x8 adds two products into each of four sums and a 4 x 8 tile of sums stays
 *   in registers (no horizontal adds), rescaled and stored from the registers.
 *   The columns are packed straight from the input for 1x1 stride-1 convs (float input:
 *   quantized as it is packed), else from a zero-padded plane of codes through offset tables
 *   (no bounds checks). Depthwise (groups == C == C_out): wasm/quant_dw.c.
 * Unsigned input codes (uint8 codes, or the *_u8 ops' argument `u`) are kept as uint8
 * (zero-extended where the signed path sign-extends); em_qlinear runs them through the
 * signed GEMM as q - 128 and adds back 128 x each weight row's sum.
 * Geometry: the 16 words of conv.c's cv_geom, in the same order (qt_geom, quant.h). */
#include "quant.h"

int32_t em_gemm_i8_i32(const int8_t *a, const int8_t *bt, int32_t *c, int32_t m, int32_t n,
                       int32_t k);

qt_buf qt_codes, qt_plane, qt_offs, qt_row;
static qt_buf qt_acc, qt_scales, qt_apack, qt_bpack;

void *qt_grow(qt_buf *b, size_t bytes) {
    if (bytes > b->cap) {
        free(b->p);
        b->p = aligned_alloc(16, (bytes + 15) & ~(size_t)15);
        b->cap = b->p ? bytes : 0;
    }
    return b->p;
}

/* ================================================================ quantization */
/* codes of n floats into bytes: int8, or uint8 when u */
void qt_quantize(const float *x, int8_t *q, size_t n, float s, int u) {
    const v128_t vs = wasm_f32x4_splat(s);
    size_t i = 0;
    if (u)
        for (; i + 16 <= n; i += 16)
            wasm_v128_store(q + i, wasm_u8x16_narrow_i16x8(qt_q8(x + i, vs, 1),
                                                           qt_q8(x + i + 8, vs, 1)));
    else
        for (; i + 16 <= n; i += 16)
            wasm_v128_store(q + i, wasm_i8x16_narrow_i16x8(qt_q8(x + i, vs, 0),
                                                           qt_q8(x + i + 8, vs, 0)));
    for (; i + 8 <= n; i += 8) { /* rows of 56, 28, 14 floats: the last 8 in SIMD too */
        const v128_t h = qt_q8(x + i, vs, u);
        wasm_v128_store64_lane(q + i, u ? wasm_u8x16_narrow_i16x8(h, h)
                                        : wasm_i8x16_narrow_i16x8(h, h), 0);
    }
    for (; i < n; i++) q[i] = (int8_t)qt_code(x[i], s, u);
}

/* ================================================================ the output */
/* the output's per-channel factors in the scratch: float32 out, sc = in_scale * w_scale and
 * off = bias; codes out (out_scale not NULL), the module doc's m and c */
static int qt_output(qt_out *o, const float *w_scale, const float *bias, float s,
                     const float *out_scale, int32_t n, int32_t lo, int32_t hi) {
    float *f = qt_grow(&qt_scales, (size_t)2 * n * sizeof(float));
    if (!f) return 2;
    const float os = out_scale ? *out_scale : 1.0f;
    for (int32_t j = 0; j < n; j++) {
        f[j] = out_scale ? (s * w_scale[j]) / os : s * w_scale[j];
        f[n + j] = bias ? (out_scale ? bias[j] / os : bias[j]) : 0.0f;
    }
    *o = (qt_out){f, f + n, out_scale != NULL, lo >= 0, lo, hi};
    return 0;
}

/* one output, dst[i]: the float or code qt_emit8 gives (the same v and qt_round4) */
static inline void qt_emit1(qt_out o, int32_t sum, float s, float f, void *dst, size_t i) {
    const float v = (float)sum * s + f;
    if (!o.codes) {
        ((float *)dst)[i] = v;
        return;
    }
    const int32_t q = qt_round1(v, o.lo, o.hi);
    if (o.u8)
        ((uint8_t *)dst)[i] = (uint8_t)q;
    else
        ((int8_t *)dst)[i] = (int8_t)q;
}

/* ================================================================ Linear */
/* the sum of each of the n rows of w (n, k) int8 */
static void qt_row_sums(const int8_t *w, int32_t n, int32_t k, int32_t *out) {
    for (int32_t j = 0; j < n; j++) {
        const int8_t *r = w + (size_t)j * k;
        v128_t acc = wasm_i32x4_splat(0);
        int32_t p = 0;
        for (; p + 16 <= k; p += 16)
            acc = wasm_i32x4_add(acc, wasm_i32x4_extadd_pairwise_i16x8(
                                          wasm_i16x8_extadd_pairwise_i8x16(wasm_v128_load(r + p))));
        int32_t t = wasm_i32x4_extract_lane(acc, 0) + wasm_i32x4_extract_lane(acc, 1) +
                    wasm_i32x4_extract_lane(acc, 2) + wasm_i32x4_extract_lane(acc, 3);
        for (; p < k; p++) t += r[p];
        out[j] = t;
    }
}

/* y (m, n) = codes(x (m, k)) @ w^T, rescaled as out_scale says (NULL: float32 out; else
 * codes clamped to [lo, hi]); w (n, k) int8. x: float32, or codes (bytes) already; u:
 * unsigned codes, multiplied as q - 128 (int8) with 128 x the row sums added back */
int32_t EXPORT(em_qlinear)(const void *x, const int8_t *w, const float *w_scale,
                           const float *bias, const float *in_scale, const float *out_scale,
                           void *y, int32_t m, int32_t k, int32_t n, int32_t codes, int32_t u,
                           int32_t lo, int32_t hi) {
    const size_t mk = (size_t)m * k;
    int8_t *q = codes && !u ? (int8_t *)x : qt_grow(&qt_codes, mk); /* int8 codes: as they are */
    int32_t *acc = qt_grow(&qt_acc, (size_t)(m + 1) * n * sizeof(int32_t));
    qt_out o;
    if (!q || !acc || qt_output(&o, w_scale, bias, *in_scale, out_scale, n, lo, hi)) return 2;
    if (!codes) qt_quantize(x, q, mk, *in_scale, u);
    if (u) { /* the flip, from the codes wherever they are */
        const int8_t *src = codes ? x : q;
        const v128_t flip = wasm_i8x16_splat((int8_t)0x80);
        size_t i = 0;
        for (; i + 16 <= mk; i += 16)
            wasm_v128_store(q + i, wasm_v128_xor(wasm_v128_load(src + i), flip));
        for (; i < mk; i++) q[i] = (int8_t)(src[i] ^ 0x80);
    }
    em_gemm_i8_i32(q, w, acc, m, n, k);
    int32_t *back = acc + (size_t)m * n; /* what the flip took off each column */
    if (u) {
        qt_row_sums(w, n, k, back);
        for (int32_t j = 0; j < n; j++) back[j] *= 128;
    } else {
        memset(back, 0, (size_t)n * sizeof(int32_t));
    }
    const size_t es = qt_esize(o);
    for (int32_t r = 0; r < m; r++) {
        const int32_t *a = acc + (size_t)r * n;
        char *yr = (char *)y + (size_t)r * n * es;
        int32_t j = 0;
        for (; j + 8 <= n; j += 8)
            qt_emit8(o, wasm_i32x4_add(wasm_v128_load(a + j), wasm_v128_load(back + j)),
                     wasm_i32x4_add(wasm_v128_load(a + j + 4), wasm_v128_load(back + j + 4)),
                     wasm_v128_load(o.sc + j), wasm_v128_load(o.sc + j + 4),
                     wasm_v128_load(o.off + j), wasm_v128_load(o.off + j + 4), yr + j * es, 8);
        for (; j < n; j++) qt_emit1(o, a[j] + back[j], o.sc[j], o.off[j], yr, (size_t)j);
    }
    return 0;
}

/* ================================================================ the pair GEMM */
/* A (the weight, m x k int8) as 4-row slivers: per pair of k, four i32 words, row r's
 * (A[r][2p], A[r][2p+1]) as two i16 (zeros past m and k) */
#define QMR 4
#define QNR 8
static void qt_pack_a(const int8_t *w, int32_t m, int32_t k, int32_t kp, int16_t *dst) {
    for (int32_t s = 0; s < m; s += QMR)
        for (int32_t p = 0; p < kp; p++)
            for (int32_t r = 0; r < QMR; r++, dst += 2) {
                const int32_t row = s + r, k0 = 2 * p;
                const int8_t *wr = w + (size_t)row * k;
                dst[0] = row < m ? wr[k0] : 0;
                dst[1] = row < m && k0 + 1 < k ? wr[k0 + 1] : 0;
            }
}

/* A 4 x 8 tile: sums over kp pairs, then output rows r0 .. r0+h of o (w columns), at c
 * (row stride ldc elements) */
static void qt_kernel(int32_t kp, const int16_t *restrict a, const int16_t *restrict b,
                      void *c, int32_t ldc, qt_out o, int32_t r0, int32_t h, int32_t w) {
    v128_t acc[QMR][2];
    for (int r = 0; r < QMR; r++) acc[r][0] = acc[r][1] = wasm_i32x4_splat(0);
    for (int32_t p = 0; p < kp; p++) {
        const v128_t b0 = wasm_v128_load(b), b1 = wasm_v128_load(b + 8);
        for (int r = 0; r < QMR; r++) {
            const v128_t ar = wasm_v128_load32_splat(a + 2 * r);
            acc[r][0] = wasm_i32x4_add(acc[r][0], wasm_i32x4_dot_i16x8(ar, b0));
            acc[r][1] = wasm_i32x4_add(acc[r][1], wasm_i32x4_dot_i16x8(ar, b1));
        }
        a += 2 * QMR;
        b += 2 * QNR;
    }
    for (int r = 0; r < h; r++) {
        const v128_t s = wasm_f32x4_splat(o.sc[r0 + r]), f = wasm_f32x4_splat(o.off[r0 + r]);
        qt_emit8(o, acc[r][0], acc[r][1], s, s, f, f, (char *)c + (size_t)r * ldc * qt_esize(o),
                 w);
    }
}

/* The columns' packer: B[k][j0 .. j0+nc) as 8-column slivers, per pair of k two v128 of
 * (B[2p][j], B[2p+1][j]) i16 pairs for columns j..j+3 and j+4..j+7 (zeros past k and nc) */
typedef void (*qt_fill_fn)(const void *ctx, int16_t *dst, int32_t j0, int32_t nc);

/* c (m, n) = A (packed) x B (packed by fill), as o's channels ch .. ch+m */
static void qt_gemm(int32_t m, int32_t n, int32_t kp, const int16_t *ap, qt_fill_fn fill,
                    const void *ctx, int16_t *bp, int32_t ncap, void *c, int32_t ldc, qt_out o,
                    int32_t ch) {
    const size_t es = qt_esize(o);
    for (int32_t j0 = 0; j0 < n; j0 += ncap) {
        const int32_t nc = n - j0 < ncap ? n - j0 : ncap;
        fill(ctx, bp, j0, nc);
        for (int32_t s = 0; s < m; s += QMR) {
            const int16_t *as = ap + (size_t)s * kp * 2;
            const int32_t h = m - s < QMR ? m - s : QMR;
            for (int32_t jr = 0; jr < nc; jr += QNR)
                qt_kernel(kp, as, bp + (size_t)jr * kp * 2,
                          (char *)c + ((size_t)s * ldc + j0 + jr) * es, ldc, o, ch + s, h,
                          nc - jr < QNR ? nc - jr : QNR);
        }
    }
}

/* interleave two rows of eight i16 codes into the two pair vectors of a sliver */
static inline void qt_store_pairs(int16_t *dst, v128_t r0, v128_t r1) {
    wasm_v128_store(dst, wasm_i16x8_shuffle(r0, r1, 0, 8, 1, 9, 2, 10, 3, 11));
    wasm_v128_store(dst + 8, wasm_i16x8_shuffle(r0, r1, 4, 12, 5, 13, 6, 14, 7, 15));
}

/* 1x1 stride-1 convs: B[k][j] = x[k * pos + j]'s code: codes as they are, or floats quantized
 * as they are packed */
typedef struct {
    const void *x;
    int32_t k, kp, pos, codes, u;
    float s;
} qt_pw_ctx;

/* eight codes of row k at column j as i16 lanes (zeros past k) */
static inline __attribute__((always_inline)) v128_t qt_pw_row(const qt_pw_ctx *cx, int32_t k,
                                                              int32_t j, v128_t vs, int u) {
    if (k >= cx->k) return wasm_i16x8_splat(0);
    const size_t i = (size_t)k * cx->pos + j;
    return cx->codes ? qt_load8((const int8_t *)cx->x + i, u)
                     : qt_q8((const float *)cx->x + i, vs, u);
}

static inline int32_t qt_pw_code(const qt_pw_ctx *cx, int32_t k, int32_t j) {
    const size_t i = (size_t)k * cx->pos + j;
    return cx->codes ? qt_byte((const int8_t *)cx->x + i, cx->u)
                     : qt_code(((const float *)cx->x)[i], cx->s, cx->u);
}

static void qt_fill_pointwise(const void *vctx, int16_t *dst, int32_t j0, int32_t nc) {
    const qt_pw_ctx *cx = vctx;
    const v128_t vs = wasm_f32x4_splat(cx->s);
    for (int32_t jr = 0; jr < nc; jr += QNR) {
        const int32_t j = j0 + jr, w = nc - jr < QNR ? nc - jr : QNR;
        for (int32_t p = 0; p < cx->kp; p++, dst += 2 * QNR) {
            const int32_t k0 = 2 * p, k1 = k0 + 1;
            if (w == QNR) { /* u as a constant: each branch gets its own code */
                if (cx->u)
                    qt_store_pairs(dst, qt_pw_row(cx, k0, j, vs, 1), qt_pw_row(cx, k1, j, vs, 1));
                else
                    qt_store_pairs(dst, qt_pw_row(cx, k0, j, vs, 0), qt_pw_row(cx, k1, j, vs, 0));
                continue;
            }
            for (int32_t t = 0; t < QNR; t++) {
                dst[2 * t] = t < w ? qt_pw_code(cx, k0, j + t) : 0;
                dst[2 * t + 1] = t < w && k1 < cx->k ? qt_pw_code(cx, k1, j + t) : 0;
            }
        }
    }
}

/* other convs: B[k][j] = plane[koff[k] + joff[j]], a zero-padded plane of codes (the group's
 * channels) read through offset tables: koff (channel, tap) and joff (output position). Eight
 * columns in one output row at stride 1 or 2 (a run: most of them) are one SIMD load per k;
 * others (across a row's end, the last columns, other strides) are gathered one by one. */
typedef struct {
    const int8_t *plane;
    const int32_t *koff, *joff;
    int32_t k, kp, u, sw;
} qt_cols_ctx;

/* the eight columns' codes of row k (zeros past k): SW the run's stride (1, 2), else 0 */
static inline __attribute__((always_inline)) v128_t qt_cols_row(const qt_cols_ctx *cx,
                                                                int32_t k, const int32_t *jo,
                                                                int32_t w, int SW, int U) {
    if (k >= cx->k) return wasm_i16x8_splat(0);
    const int8_t *b = cx->plane + cx->koff[k];
    if (SW) return qt_row8(b + jo[0], SW, SW, U);
    int16_t tmp[QNR] __attribute__((aligned(16)));
    for (int32_t t = 0; t < QNR; t++) tmp[t] = t < w ? qt_byte(b + jo[t], U) : 0;
    return wasm_v128_load(tmp);
}

#define QT_FILL_COLUMNS(NAME, SW, U)                                                        \
    static void NAME(const qt_cols_ctx *cx, int16_t *dst, const int32_t *jo, int32_t w) {   \
        for (int32_t p = 0; p < cx->kp; p++, dst += 2 * QNR)                                \
            qt_store_pairs(dst, qt_cols_row(cx, 2 * p, jo, w, SW, U),                       \
                           qt_cols_row(cx, 2 * p + 1, jo, w, SW, U));                       \
    }
QT_FILL_COLUMNS(qt_cols_gather, 0, 0)
QT_FILL_COLUMNS(qt_cols_gather_u, 0, 1)
QT_FILL_COLUMNS(qt_cols_run1, 1, 0)
QT_FILL_COLUMNS(qt_cols_run1_u, 1, 1)
QT_FILL_COLUMNS(qt_cols_run2, 2, 0)
QT_FILL_COLUMNS(qt_cols_run2_u, 2, 1)

static void qt_fill_columns(const void *vctx, int16_t *dst, int32_t j0, int32_t nc) {
    typedef void (*fill8)(const qt_cols_ctx *, int16_t *, const int32_t *, int32_t);
    static const fill8 fills[3][2] = {{qt_cols_gather, qt_cols_gather_u},
                                      {qt_cols_run1, qt_cols_run1_u},
                                      {qt_cols_run2, qt_cols_run2_u}};
    const qt_cols_ctx *cx = vctx;
    for (int32_t jr = 0; jr < nc; jr += QNR, dst += 2 * QNR * cx->kp) {
        const int32_t w = nc - jr < QNR ? nc - jr : QNR, *jo = cx->joff + j0 + jr;
        const int run = w == QNR && cx->sw <= 2 && jo[QNR - 1] - jo[0] == (QNR - 1) * cx->sw;
        fills[run ? cx->sw : 0][cx->u != 0](cx, dst, jo, w);
    }
}

/* ================================================================ convolution */
/* channels [0, cn) of x (one sample's, planes of h x w) as codes in zero-padded planes:
 * codes copied, floats quantized */
static void qt_pad_codes(const qt_geom *g, const void *x, int codes, int32_t cn, int8_t *dst,
                         int32_t hp, int32_t wp, float s, int u) {
    memset(dst, 0, (size_t)cn * hp * wp);
    for (int32_t c = 0; c < cn; c++)
        for (int32_t iy = 0; iy < g->h; iy++) {
            const size_t i = ((size_t)c * g->h + iy) * g->w;
            int8_t *to = dst + ((size_t)c * hp + iy + g->ph) * wp + g->pw;
            if (codes)
                memcpy(to, (const int8_t *)x + i, (size_t)g->w);
            else
                qt_quantize((const float *)x + i, to, (size_t)g->w, s, u);
        }
}
/* y = codes(x) (*) w, rescaled as out_scale says (NULL: float32 out; else codes clamped to
 * [lo, hi]): x (N, C, H, W) float32 or codes (bytes) already, w (C_out, C/groups, KH, KW)
 * int8, y (N, C_out, OH, OW); u: unsigned codes */
int32_t EXPORT(em_qconv)(const void *x, const int8_t *w, const float *w_scale,
                         const float *bias, const float *in_scale, const float *out_scale,
                         void *y, int32_t codes, int32_t u, int32_t lo, int32_t hi) {
    qt_geom g;
    memcpy(&g, em_meta_words(), sizeof g);
    const float s = *in_scale;
    qt_out o;
    if (qt_output(&o, w_scale, bias, s, out_scale, g.c_out, lo, hi)) return 2;
    if (g.groups == g.c && g.c_out == g.c) return qt_depthwise(&g, x, codes, w, o, y, s, u);
    const int32_t cg = g.c / g.groups, og = g.c_out / g.groups, taps = g.kh * g.kw;
    const int32_t k = cg * taps, kp = (k + 1) / 2, pos = g.oh * g.ow;
    const int pointwise = taps == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0 &&
                          g.oh == g.h && g.ow == g.w;
    const size_t xsize = codes ? 1 : sizeof(float), es = qt_esize(o);
    /* columns per packed block: the block (kp pairs x ncap columns of i16) stays in L2 */
    int32_t ncap = ((1 << 16) / kp) & ~(QNR - 1);
    if (ncap < QNR) ncap = QNR;
    if (ncap > 512) ncap = 512;
    int16_t *ap = qt_grow(&qt_apack, (size_t)((og + QMR - 1) & ~(QMR - 1)) * kp * 2 * 2);
    int16_t *bp = qt_grow(&qt_bpack, (size_t)ncap * kp * 2 * 2);
    if (!ap || !bp) return 2;
    int32_t hp = 0, wp = 0;
    int8_t *plane = NULL;
    int32_t *koff = NULL, *joff = NULL;
    if (!pointwise) {
        qt_padded(&g, 0, &hp, &wp);
        plane = qt_grow(&qt_plane, (size_t)cg * hp * wp + 16); /* + a stride-2 run's 16 bytes */
        koff = qt_grow(&qt_offs, (size_t)(k + pos) * sizeof(int32_t));
        if (!plane || !koff) return 2;
        joff = koff + k;
        for (int32_t q = 0; q < k; q++) {
            const int32_t c = q / taps, t = q % taps;
            koff[q] = (c * hp + (t / g.kw) * g.dh) * wp + (t % g.kw) * g.dw;
        }
        for (int32_t j = 0; j < pos; j++) joff[j] = (j / g.ow) * g.sh * wp + (j % g.ow) * g.sw;
    }
    for (int32_t gi = 0; gi < g.groups; gi++) {
        qt_pack_a(w + (size_t)gi * og * k, og, k, kp, ap);
        for (int32_t n = 0; n < g.n; n++) {
            const char *xs = (const char *)x + ((size_t)n * g.c + (size_t)gi * cg) * g.h * g.w *
                                                   xsize;
            char *ys = (char *)y + ((size_t)n * g.c_out + (size_t)gi * og) * pos * es;
            if (pointwise) {
                qt_pw_ctx ctx = {xs, k, kp, pos, codes, u, s};
                qt_gemm(og, pos, kp, ap, qt_fill_pointwise, &ctx, bp, ncap, ys, pos, o, gi * og);
            } else {
                qt_pad_codes(&g, xs, codes, cg, plane, hp, wp, s, u);
                qt_cols_ctx ctx = {plane, koff, joff, k, kp, u, g.sw};
                qt_gemm(og, pos, kp, ap, qt_fill_columns, &ctx, bp, ncap, ys, pos, o, gi * og);
            }
        }
    }
    return 0;
}
