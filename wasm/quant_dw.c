/* The quantized depthwise convolution (groups == C == C_out; ember.contract.quantized, called
 * by em_qconv in wasm/quant.c): a direct kernel on a zero-padded plane of codes (the input's
 * codes as they are, or its floats quantized once), 8 outputs per step with i16 x i16 -> i32
 * multiply-adds, whole rows in SIMD, the output (float32 or codes) from the registers.
 * Stride 1 or 2 with dilation 1 pairs horizontally adjacent taps into one i32x4.dot_i16x8;
 * square 3x3 and 5x5 kernels run two output rows per pass. */
#include "quant.h"

/* one output row of a depthwise plane: 8 outputs per step, the even and odd taps summed
 * apart (four add chains, not two: the loop is bound by the adds' latency) */
#define QT_DW_ROW(NAME, SW, U)                                                              \
    static void NAME(const int8_t *base, int32_t sw, const int32_t *offs, const v128_t *wt,  \
                     int32_t taps, int32_t ow8, qt_out o, v128_t vs, v128_t vb, void *row) { \
        for (int32_t ox = 0; ox < ow8; ox += 8) {                                           \
            v128_t lo = wasm_i32x4_splat(0), hi = lo, lo1 = lo, hi1 = lo;                   \
            const int8_t *src = base + ox * (SW ? SW : sw);                                 \
            int32_t t = 0;                                                                  \
            for (; t + 1 < taps; t += 2) {                                                  \
                const v128_t v0 = qt_row8(src + offs[t], sw, SW, U);                        \
                const v128_t v1 = qt_row8(src + offs[t + 1], sw, SW, U);                    \
                lo = wasm_i32x4_add(lo, wasm_i32x4_extmul_low_i16x8(v0, wt[t]));            \
                hi = wasm_i32x4_add(hi, wasm_i32x4_extmul_high_i16x8(v0, wt[t]));           \
                lo1 = wasm_i32x4_add(lo1, wasm_i32x4_extmul_low_i16x8(v1, wt[t + 1]));      \
                hi1 = wasm_i32x4_add(hi1, wasm_i32x4_extmul_high_i16x8(v1, wt[t + 1]));     \
            }                                                                               \
            if (t < taps) {                                                                 \
                const v128_t v0 = qt_row8(src + offs[t], sw, SW, U);                        \
                lo = wasm_i32x4_add(lo, wasm_i32x4_extmul_low_i16x8(v0, wt[t]));            \
                hi = wasm_i32x4_add(hi, wasm_i32x4_extmul_high_i16x8(v0, wt[t]));           \
            }                                                                               \
            lo = wasm_i32x4_add(lo, lo1);                                                   \
            hi = wasm_i32x4_add(hi, hi1);                                                   \
            qt_emit8(o, lo, hi, vs, vs, vb, vb, (char *)row + ox * qt_esize(o), 8);         \
        }                                                                                   \
    }
QT_DW_ROW(qt_dw_row1, 1, 0)
QT_DW_ROW(qt_dw_row2, 2, 0)
QT_DW_ROW(qt_dw_rown, 0, 0)
QT_DW_ROW(qt_dw_row1u, 1, 1)
QT_DW_ROW(qt_dw_row2u, 2, 1)
QT_DW_ROW(qt_dw_rownu, 0, 1)

/* the i16 codes one tap pair multiplies for eight outputs at sp (stride SW 1 or 2; U:
 * unsigned bytes): a0 for the first four's pairs, a1 the second four's (stride 2), or a0 the
 * even outputs' pairs and a1 the odd ones' (stride 1: the bytes one further) */
static inline __attribute__((always_inline)) void qt_pair_load(const int8_t *sp, int SW, int U,
                                                               v128_t *a0, v128_t *a1) {
    if (SW == 1) {
        *a0 = qt_load8(sp, U);
        *a1 = qt_load8(sp + 1, U);
    } else {
        const v128_t b = wasm_v128_load(sp);
        *a0 = U ? wasm_u16x8_extend_low_u8x16(b) : wasm_i16x8_extend_low_i8x16(b);
        *a1 = U ? wasm_u16x8_extend_high_u8x16(b) : wasm_i16x8_extend_high_i8x16(b);
    }
}

/* stride 1's sums in output order: lo held outputs ox, ox+2, .., hi ox+1, ox+3, .. */
static inline __attribute__((always_inline)) void qt_pair_order(v128_t *lo, v128_t *hi) {
    const v128_t e = *lo;
    *lo = wasm_i32x4_shuffle(e, *hi, 0, 4, 1, 5);
    *hi = wasm_i32x4_shuffle(e, *hi, 2, 6, 3, 7);
}

/* one output row of a depthwise plane at stride 1 or 2 (SW), dilation 1: horizontally
 * adjacent taps in pairs, (w[dx], w[dx + 1]) in each i32 lane of pw[p] (0 past the kernel),
 * so one i32x4.dot_i16x8 adds two taps into four outputs: stride 2 reads the pairs in order
 * (outputs ox .. ox+7 from 16 bytes); stride 1 sums even and odd outputs apart (the odd
 * ones from the bytes one further) and interleaves them once per 8 outputs */
#define QT_DW_PAIRS(NAME, SW, U)                                                            \
    static void NAME(const int8_t *base, const int32_t *poffs, const v128_t *pw, int32_t np, \
                     int32_t ow8, qt_out o, v128_t vs, v128_t vb, void *row) {              \
        for (int32_t ox = 0; ox < ow8; ox += 8) {                                           \
            v128_t lo = wasm_i32x4_splat(0), hi = lo;                                       \
            const int8_t *src = base + ox * SW;                                             \
            for (int32_t p = 0; p < np; p++) {                                              \
                v128_t a0, a1;                                                              \
                qt_pair_load(src + poffs[p], SW, U, &a0, &a1);                              \
                lo = wasm_i32x4_add(lo, wasm_i32x4_dot_i16x8(a0, pw[p]));                   \
                hi = wasm_i32x4_add(hi, wasm_i32x4_dot_i16x8(a1, pw[p]));                   \
            }                                                                               \
            if (SW == 1) qt_pair_order(&lo, &hi);                                           \
            qt_emit8(o, lo, hi, vs, vs, vb, vb, (char *)row + ox * qt_esize(o), 8);         \
        }                                                                                   \
    }
QT_DW_PAIRS(qt_dwp_row1, 1, 0)
QT_DW_PAIRS(qt_dwp_row2, 2, 0)
QT_DW_PAIRS(qt_dwp_row1u, 1, 1)
QT_DW_PAIRS(qt_dwp_row2u, 2, 1)

/* two output rows of a square K x K depthwise kernel at stride SW both ways, dilation 1, as
 * QT_DW_PAIRS: every input row is loaded once for both output rows (K + SW rows for 2K row
 * passes), and the constant K unrolls the taps with the weights in registers */
#define QT_DW_PAIRS2(NAME, SW, U, K)                                                        \
    static void NAME(const int8_t *base, int32_t wp, const v128_t *pw, int32_t ow8, qt_out o, \
                     v128_t vs, v128_t vb, void *row0, void *row1) {                        \
        enum { P = (K + 1) / 2 };                                                           \
        for (int32_t ox = 0; ox < ow8; ox += 8) {                                           \
            v128_t lo0 = wasm_i32x4_splat(0), hi0 = lo0, lo1 = lo0, hi1 = lo0;              \
            const int8_t *src = base + ox * SW;                                             \
            for (int r = 0; r < K + SW; r++)                                                \
                for (int c = 0; c < P; c++) {                                               \
                    v128_t a0, a1;                                                          \
                    qt_pair_load(src + r * wp + 2 * c, SW, U, &a0, &a1);                    \
                    if (r < K) {                                                            \
                        lo0 = wasm_i32x4_add(lo0, wasm_i32x4_dot_i16x8(a0, pw[r * P + c])); \
                        hi0 = wasm_i32x4_add(hi0, wasm_i32x4_dot_i16x8(a1, pw[r * P + c])); \
                    }                                                                       \
                    if (r >= SW) {                                                          \
                        const v128_t w1 = pw[(r - SW) * P + c];                             \
                        lo1 = wasm_i32x4_add(lo1, wasm_i32x4_dot_i16x8(a0, w1));            \
                        hi1 = wasm_i32x4_add(hi1, wasm_i32x4_dot_i16x8(a1, w1));            \
                    }                                                                       \
                }                                                                           \
            if (SW == 1) {                                                                  \
                qt_pair_order(&lo0, &hi0);                                                  \
                qt_pair_order(&lo1, &hi1);                                                  \
            }                                                                               \
            qt_emit8(o, lo0, hi0, vs, vs, vb, vb, (char *)row0 + ox * qt_esize(o), 8);      \
            qt_emit8(o, lo1, hi1, vs, vs, vb, vb, (char *)row1 + ox * qt_esize(o), 8);      \
        }                                                                                   \
    }
QT_DW_PAIRS2(qt_dw3_rows1, 1, 0, 3)
QT_DW_PAIRS2(qt_dw3_rows2, 2, 0, 3)
QT_DW_PAIRS2(qt_dw3_rows1u, 1, 1, 3)
QT_DW_PAIRS2(qt_dw3_rows2u, 2, 1, 3)
QT_DW_PAIRS2(qt_dw5_rows1, 1, 0, 5)
QT_DW_PAIRS2(qt_dw5_rows2, 2, 0, 5)
QT_DW_PAIRS2(qt_dw5_rows1u, 1, 1, 5)
QT_DW_PAIRS2(qt_dw5_rows2u, 2, 1, 5)

typedef void (*qt_dwp_fn)(const int8_t *, const int32_t *, const v128_t *, int32_t, int32_t,
                          qt_out, v128_t, v128_t, void *);
typedef void (*qt_dw2_fn)(const int8_t *, int32_t, const v128_t *, int32_t, qt_out, v128_t,
                          v128_t, void *, void *);
typedef void (*qt_dw_fn)(const int8_t *, int32_t, const int32_t *, const v128_t *, int32_t,
                         int32_t, qt_out, v128_t, v128_t, void *);

int qt_depthwise(const qt_geom *g, const void *x, int in_codes, const int8_t *w, qt_out o,
                 void *y, float s, int u) {
    const int32_t taps = g->kh * g->kw, pos = g->oh * g->ow, ow8 = (g->ow + 7) & ~7;
    const size_t plane_in = (size_t)g->h * g->w, nx = (size_t)g->n * g->c * plane_in;
    const size_t es = qt_esize(o);
    int32_t hp, wp;
    qt_padded(g, (ow8 - g->ow) * g->sw + 32, &hp, &wp);
    const int pairs = g->dw == 1 && (g->sw == 1 || g->sw == 2);
    const int32_t pkw = (g->kw + 1) / 2, np = g->kh * pkw; /* tap pairs per row, in all */
    /* codes in: read as they are; floats: quantized once, in one pass */
    const int8_t *codes = in_codes ? x : qt_grow(&qt_codes, nx);
    int8_t *plane = qt_grow(&qt_plane, (size_t)hp * wp);
    int32_t *offs = qt_grow(&qt_offs, (size_t)(taps + np) * sizeof(int32_t));
    v128_t *wt = qt_grow(&qt_row, (size_t)(taps + np) * sizeof(v128_t) +
                                      (size_t)2 * ow8 * sizeof(float));
    if (!codes || !plane || !offs || !wt) return 2;
    int32_t *poffs = offs + taps;
    v128_t *pw = wt + taps;
    void *row = pw + np;
    const qt_dwp_fn dwp_row = u ? (g->sw == 1 ? qt_dwp_row1u : qt_dwp_row2u)
                                : (g->sw == 1 ? qt_dwp_row1 : qt_dwp_row2);
    for (int32_t p = 0; p < np; p++) poffs[p] = (p / pkw) * g->dh * wp + (p % pkw) * 2;
    const qt_dw_fn dw_row = u ? (g->sw == 1 ? qt_dw_row1u : g->sw == 2 ? qt_dw_row2u : qt_dw_rownu)
                              : (g->sw == 1 ? qt_dw_row1 : g->sw == 2 ? qt_dw_row2 : qt_dw_rown);
    for (int32_t t = 0; t < taps; t++) offs[t] = (t / g->kw) * g->dh * wp + (t % g->kw) * g->dw;
    static const qt_dw2_fn dw2s[2][2][2] = {
        {{qt_dw3_rows1, qt_dw3_rows1u}, {qt_dw3_rows2, qt_dw3_rows2u}},
        {{qt_dw5_rows1, qt_dw5_rows1u}, {qt_dw5_rows2, qt_dw5_rows2u}}};
    const qt_dw2_fn dw2 = pairs && g->dh == 1 && g->sh == g->sw && g->kh == g->kw &&
                                  (g->kh == 3 || g->kh == 5)
                              ? dw2s[g->kh == 5][g->sw == 2][u != 0]
                              : NULL;
    const int direct = ow8 == g->ow; /* whole rows of 8: straight to y */
    if (!in_codes) qt_quantize(x, (int8_t *)codes, nx, s, u);
    memset(plane, 0, (size_t)hp * wp);
    for (int32_t n = 0; n < g->n; n++)
        for (int32_t c = 0; c < g->c; c++) {
            const int8_t *src = codes + ((size_t)n * g->c + c) * plane_in;
            for (int32_t iy = 0; iy < g->h; iy++) /* the borders stay zero */
                memcpy(plane + (size_t)(iy + g->ph) * wp + g->pw, src + (size_t)iy * g->w,
                       (size_t)g->w);
            const int8_t *wc = w + (size_t)c * taps;
            for (int32_t t = 0; t < taps; t++) wt[t] = wasm_i16x8_splat(wc[t]);
            for (int32_t p = 0; p < np; p++) {
                const int32_t ky = p / pkw, kx = (p % pkw) * 2;
                const uint16_t wa = (uint16_t)wc[ky * g->kw + kx];
                const uint16_t wb = kx + 1 < g->kw ? (uint16_t)wc[ky * g->kw + kx + 1] : 0;
                pw[p] = wasm_i32x4_splat((int32_t)(wa | ((uint32_t)wb << 16)));
            }
            const v128_t vs = wasm_f32x4_splat(o.sc[c]), vb = wasm_f32x4_splat(o.off[c]);
            char *yc = (char *)y + ((size_t)n * g->c + c) * pos * es;
            int32_t oy = 0;
            for (; dw2 && oy + 2 <= g->oh; oy += 2) {
                char *yr = yc + (size_t)oy * g->ow * es, *yr1 = yr + (size_t)g->ow * es;
                char *row1 = (char *)row + (size_t)ow8 * es;
                dw2(plane + (size_t)oy * g->sh * wp, wp, pw, ow8, o, vs, vb, direct ? yr : row,
                    direct ? yr1 : row1);
                if (!direct) {
                    memcpy(yr, row, (size_t)g->ow * es);
                    memcpy(yr1, row1, (size_t)g->ow * es);
                }
            }
            for (; oy < g->oh; oy++) {
                const int8_t *base = plane + (size_t)oy * g->sh * wp;
                char *yr = yc + (size_t)oy * g->ow * es;
                void *to = direct ? yr : row;
                if (pairs)
                    dwp_row(base, poffs, pw, np, ow8, o, vs, vb, to);
                else
                    dw_row(base, g->sw, offs, wt, taps, ow8, o, vs, vb, to);
                if (to == row) memcpy(yr, row, (size_t)g->ow * es);
            }
        }
    return 0;
}

