/* Convolution (PyTorch's cross-correlation) over 1-D and 2-D inputs (a 1-D conv is a 2-D
 * one of height 1), its transpose and its weight gradient, all on the GEMM of matmul.c:
 *
 * - float32 forward: implicit GEMM. The GEMM's B operand, the im2col columns, is never built:
 *   cv_pack_f32 writes each packed panel straight from the image (SIMD loads for 8 positions
 *   of a row in the interior at stride 1 or 2, bounds-checked gathers elsewhere);
 * - 1x1 stride-1 unpadded convs: the image is B as it is (no packing beyond the GEMM's own);
 * - the bias starts the GEMM's sums (no pass of its own);
 * - depthwise float32 (groups == C_in == C_out): a direct SIMD kernel over a zero-padded
 *   copy of each plane, 2 rows x 8 columns of outputs per step (stride 2 de-interleaves with
 *   shuffles);
 * - float64, the weight gradient (dW += grad @ cols^T) and the transpose (cols = W^T @ x,
 *   then col2im adds the columns into the output) use explicit im2col/col2im buffers.
 *
 * Geometry (metadata words, cv_geom's order): N, C (x's channels), H, W, C_out (y's), KH, KW,
 * stride, padding before (the rest is implied by the sizes) and dilation per dim, groups, and
 * y's OH, OW. The transpose uses the same fields with x and y swapped in the index relation
 * x_pos = y_pos * stride - pad + k * dilation. */
#include <stdlib.h>
#include <string.h>
#include <wasm_simd128.h>
#include "ember.h"
#include "gemm.h"

typedef struct {
    int32_t n, c, h, w, c_out, kh, kw, sh, sw, ph, pw, dh, dw, groups, oh, ow;
} cv_geom;

static void *cv_buf;
static size_t cv_cap;

static void *cv_scratch(size_t bytes) {
    if (bytes > cv_cap) {
        free(cv_buf);
        cv_buf = aligned_alloc(16, (bytes + 15) & ~(size_t)15);
        cv_cap = cv_buf ? bytes : 0;
    }
    return cv_buf;
}

/* ================================================================ implicit GEMM packer */
typedef struct {
    const cv_geom *g;
    const float *x; /* the group's first input channel of one sample */
} cv_pack_ctx;

/* B[k, p] = x[ci, oh*sh + kh*dh - ph, ow*sw + kw*dw - pw] (0 outside), k = (ci, kh, kw),
 * p = (oh, ow), packed as the GEMM's MM_NR-column slivers */
static void cv_pack_f32(const void *ctx, float *dst, int32_t k0, int32_t kc, int32_t j0,
                        int32_t nc) {
    const cv_pack_ctx *cx = (const cv_pack_ctx *)ctx;
    const cv_geom *g = cx->g;
    const int32_t taps = g->kh * g->kw, H = g->h, W = g->w;
    int32_t plane[MM_KC], ky[MM_KC], kx[MM_KC];
    for (int32_t q = 0; q < kc; q++) {
        const int32_t k = k0 + q, ci = k / taps, t = k % taps;
        plane[q] = ci * H * W;
        ky[q] = (t / g->kw) * g->dh - g->ph;
        kx[q] = (t % g->kw) * g->dw - g->pw;
    }
    for (int32_t s = 0; s < nc; s += MM_NR, dst += (size_t)kc * MM_NR) {
        const int32_t width = nc - s < MM_NR ? nc - s : MM_NR;
        int32_t iy[MM_NR], ix[MM_NR];
        int32_t oy = (j0 + s) / g->ow, ox = (j0 + s) % g->ow;
        for (int32_t t = 0; t < MM_NR; t++) {
            /* lanes past the panel read as out of bounds: zero */
            iy[t] = t < width ? oy * g->sh : -(1 << 30);
            ix[t] = ox * g->sw;
            if (++ox == g->ow) ox = 0, oy++;
        }
        /* eight positions of one output row at stride 1 or 2: vector loads in the interior */
        const int row = width == MM_NR && g->sw <= 2 && iy[0] == iy[MM_NR - 1];
        for (int32_t q = 0; q < kc; q++) {
            float *d = dst + q * MM_NR;
            const float *src = cx->x + plane[q];
            if (row) {
                const int32_t y = iy[0] + ky[q], x0 = ix[0] + kx[q];
                if ((uint32_t)y >= (uint32_t)H) {
                    wasm_v128_store(d, wasm_f32x4_splat(0.0f));
                    wasm_v128_store(d + 4, wasm_f32x4_splat(0.0f));
                    continue;
                }
                const float *r = src + y * W + x0;
                if (g->sw == 1 && x0 >= 0 && x0 + MM_NR <= W) {
                    wasm_v128_store(d, wasm_v128_load(r));
                    wasm_v128_store(d + 4, wasm_v128_load(r + 4));
                    continue;
                }
                if (g->sw == 2 && x0 >= 0 && x0 + 2 * MM_NR <= W) {
                    wasm_v128_store(d, wasm_i32x4_shuffle(wasm_v128_load(r),
                                                          wasm_v128_load(r + 4), 0, 2, 4, 6));
                    wasm_v128_store(d + 4, wasm_i32x4_shuffle(wasm_v128_load(r + 8),
                                                              wasm_v128_load(r + 12), 0, 2, 4, 6));
                    continue;
                }
            }
            for (int32_t t = 0; t < MM_NR; t++) {
                const int32_t y = iy[t] + ky[q], x = ix[t] + kx[q];
                d[t] = (uint32_t)y < (uint32_t)H && (uint32_t)x < (uint32_t)W ? src[y * W + x]
                                                                             : 0.0f;
            }
        }
    }
}

/* ================================================================ depthwise (float32) */
/* Slack past each padded row: the 8-wide steps of the last columns read up to 14 floats past
 * the row (stride 2), so every step is a full SIMD step; only the stores are trimmed. */
#define CV_SLACK 16

/* eight outputs at r (stride 1: two loads; stride 2: four, and the even lanes) */
static inline __attribute__((always_inline)) void cv_load8(const float *r, int32_t sw,
                                                           v128_t *lo, v128_t *hi) {
    if (sw == 1) {
        *lo = wasm_v128_load(r);
        *hi = wasm_v128_load(r + 4);
    } else {
        *lo = wasm_i32x4_shuffle(wasm_v128_load(r), wasm_v128_load(r + 4), 0, 2, 4, 6);
        *hi = wasm_i32x4_shuffle(wasm_v128_load(r + 8), wasm_v128_load(r + 12), 0, 2, 4, 6);
    }
}

/* `rows` (1 or 2) output rows from row `top` of the padded plane, eight columns per step.
 * Each tap's multiply-add depends on the last one into the same register: the even and odd
 * taps and each row and half row get accumulators of their own (up to 8 chains), so the
 * adds' latency overlaps instead of bounding the loop. Constant sw and rows (the callers')
 * specialise the loops. */
static inline __attribute__((always_inline)) void cv_dw_rows(
    const float *top, int32_t row_step, int32_t sw, int rows, const int32_t *off, int32_t taps,
    const float *w, float bias, float *y, int32_t ow) {
    for (int32_t ox = 0; ox < ow; ox += 8) {
        v128_t ev[2][2], od[2][2], lo, hi;
        for (int q = 0; q < 2; q++) {
            ev[q][0] = ev[q][1] = wasm_f32x4_splat(bias);
            od[q][0] = od[q][1] = wasm_f32x4_splat(0.0f);
        }
        const float *base = top + ox * sw;
        int32_t t = 0;
        for (; t + 2 <= taps; t += 2) {
            const v128_t w0 = wasm_v128_load32_splat(w + t), w1 = wasm_v128_load32_splat(w + t + 1);
            for (int q = 0; q < rows; q++) {
                cv_load8(base + q * row_step + off[t], sw, &lo, &hi);
                ev[q][0] = wasm_f32x4_add(ev[q][0], wasm_f32x4_mul(w0, lo));
                ev[q][1] = wasm_f32x4_add(ev[q][1], wasm_f32x4_mul(w0, hi));
                cv_load8(base + q * row_step + off[t + 1], sw, &lo, &hi);
                od[q][0] = wasm_f32x4_add(od[q][0], wasm_f32x4_mul(w1, lo));
                od[q][1] = wasm_f32x4_add(od[q][1], wasm_f32x4_mul(w1, hi));
            }
        }
        if (t < taps) {
            const v128_t w0 = wasm_v128_load32_splat(w + t);
            for (int q = 0; q < rows; q++) {
                cv_load8(base + q * row_step + off[t], sw, &lo, &hi);
                ev[q][0] = wasm_f32x4_add(ev[q][0], wasm_f32x4_mul(w0, lo));
                ev[q][1] = wasm_f32x4_add(ev[q][1], wasm_f32x4_mul(w0, hi));
            }
        }
        for (int q = 0; q < rows; q++) {
            float *yr = y + q * ow + ox;
            const v128_t s0 = wasm_f32x4_add(ev[q][0], od[q][0]);
            const v128_t s1 = wasm_f32x4_add(ev[q][1], od[q][1]);
            if (ox + 8 <= ow) {
                wasm_v128_store(yr, s0);
                wasm_v128_store(yr + 4, s1);
            } else {
                float tail[8];
                wasm_v128_store(tail, s0);
                wasm_v128_store(tail + 4, s1);
                memcpy(yr, tail, (size_t)(ow - ox) * sizeof(float));
            }
        }
    }
}

/* y[oh, ow] = bias + sum_t w[t] * xp[oh*sh*wp + off[t] + ow*sw] on the padded plane xp (row
 * length wp): strides 1 and 2 on SIMD, two output rows at a time; other strides scalar */
static void cv_depthwise_plane(const cv_geom *g, const float *xp, int32_t wp,
                               const int32_t *off, int32_t taps, const float *w, float bias,
                               float *y) {
    const int32_t OW = g->ow, step = g->sh * wp;
    if (g->sw > 2) {
        for (int32_t oy = 0; oy < g->oh; oy++, y += OW)
            for (int32_t ox = 0; ox < OW; ox++) {
                float acc = bias;
                for (int32_t t = 0; t < taps; t++)
                    acc += w[t] * xp[(ptrdiff_t)oy * step + off[t] + ox * g->sw];
                y[ox] = acc;
            }
        return;
    }
    int32_t oy = 0;
    for (; oy + 2 <= g->oh; oy += 2, y += 2 * OW) {
        const float *top = xp + (ptrdiff_t)oy * step;
        if (g->sw == 1) cv_dw_rows(top, step, 1, 2, off, taps, w, bias, y, OW);
        else cv_dw_rows(top, step, 2, 2, off, taps, w, bias, y, OW);
    }
    if (oy < g->oh) {
        const float *top = xp + (ptrdiff_t)oy * step;
        if (g->sw == 1) cv_dw_rows(top, step, 1, 1, off, taps, w, bias, y, OW);
        else cv_dw_rows(top, step, 2, 1, off, taps, w, bias, y, OW);
    }
}

static int cv_depthwise_f32(const cv_geom *g, const float *x, const float *w, const float *bias,
                            float *y) {
    /* the padded plane holds what the windows read: rows [-ph, hp - ph), cols [-pw, wn - pw) */
    const int32_t hp = (g->oh - 1) * g->sh + (g->kh - 1) * g->dh + 1;
    const int32_t wn = (g->ow - 1) * g->sw + (g->kw - 1) * g->dw + 1, wp = wn + CV_SLACK;
    const int32_t taps = g->kh * g->kw;
    const size_t plane = (size_t)hp * wp + CV_SLACK;
    float *xp = cv_scratch((plane + taps) * sizeof(float));
    if (!xp) return 2;
    int32_t *off = (int32_t *)(xp + plane);
    for (int32_t t = 0; t < taps; t++) off[t] = (t / g->kw) * g->dh * wp + (t % g->kw) * g->dw;
    const int32_t rows = g->h < hp - g->ph ? g->h : hp - g->ph;
    const int32_t cols = g->w < wn - g->pw ? g->w : wn - g->pw;
    memset(xp, 0, plane * sizeof(float));
    for (int32_t p = 0; p < g->n * g->c; p++) {
        const int32_t ch = p % g->c;
        const float *xs = x + (size_t)p * g->h * g->w;
        /* the zero border stays from the first plane; only the interior is rewritten */
        for (int32_t r = 0; r < rows; r++)
            memcpy(xp + (ptrdiff_t)(r + g->ph) * wp + g->pw, xs + (ptrdiff_t)r * g->w,
                   (size_t)(cols > 0 ? cols : 0) * sizeof(float));
        cv_depthwise_plane(g, xp, wp, off, taps, w + (size_t)ch * taps, bias ? bias[ch] : 0.0f,
                           y + (size_t)p * g->oh * g->ow);
    }
    return 0;
}

/* ================================================================ im2col / col2im */
/* cols[(ci, kh, kw), (oh, ow)] for `cg` channels of one sample */
#define IM2COL(T)                                                                          \
    static void cv_im2col_##T(const cv_geom *g, const T *x, int32_t cg, T *cols) {         \
        const int32_t OH = g->oh, OW = g->ow, H = g->h, W = g->w;                          \
        for (int32_t ci = 0; ci < cg; ci++)                                                \
            for (int32_t a = 0; a < g->kh; a++)                                            \
                for (int32_t b = 0; b < g->kw; b++) {                                      \
                    const T *src = x + (size_t)ci * H * W;                                 \
                    for (int32_t oy = 0; oy < OH; oy++, cols += OW) {                      \
                        const int32_t y = oy * g->sh + a * g->dh - g->ph;                  \
                        if ((uint32_t)y >= (uint32_t)H) {                                  \
                            memset(cols, 0, (size_t)OW * sizeof(T));                       \
                            continue;                                                      \
                        }                                                                  \
                        for (int32_t ox = 0; ox < OW; ox++) {                              \
                            const int32_t xx = ox * g->sw + b * g->dw - g->pw;             \
                            cols[ox] = (uint32_t)xx < (uint32_t)W ? src[y * W + xx] : 0;   \
                        }                                                                  \
                    }                                                                      \
                }                                                                          \
    }

/* the adjoint, for the transpose: y[co, oh, ow] += cols[(co, kh, kw), (ih, iw)] where
 * ih*sh - ph + kh*dh = oh (and the same across); x's H, W are the columns' */
#define COL2IM(T)                                                                          \
    static void cv_col2im_##T(const cv_geom *g, const T *cols, int32_t cog, T *y) {         \
        const int32_t OH = g->oh, OW = g->ow, H = g->h, W = g->w;                          \
        for (int32_t co = 0; co < cog; co++)                                               \
            for (int32_t a = 0; a < g->kh; a++)                                            \
                for (int32_t b = 0; b < g->kw; b++) {                                      \
                    T *dst = y + (size_t)co * OH * OW;                                     \
                    for (int32_t iy = 0; iy < H; iy++, cols += W) {                        \
                        const int32_t oy = iy * g->sh - g->ph + a * g->dh;                 \
                        if ((uint32_t)oy >= (uint32_t)OH) continue;                        \
                        for (int32_t ix = 0; ix < W; ix++) {                               \
                            const int32_t ox = ix * g->sw - g->pw + b * g->dw;             \
                            if ((uint32_t)ox < (uint32_t)OW) dst[oy * OW + ox] += cols[ix]; \
                        }                                                                  \
                    }                                                                      \
                }                                                                          \
    }

/* y[n, co, :] = bias[co], or 0 without one (the transpose's columns are added onto it) */
#define FILL_BIAS(T)                                                                       \
    static void cv_fill_##T(T *y, const T *bias, int32_t n, int32_t c, int32_t len) {     \
        for (int32_t p = 0; p < n * c; p++, y += len) {                                    \
            const T v = bias ? bias[p % c] : 0;                                            \
            for (int32_t q = 0; q < len; q++) y[q] = v;                                    \
        }                                                                                  \
    }

IM2COL(float)
IM2COL(double)
COL2IM(float)
COL2IM(double)
FILL_BIAS(float)
FILL_BIAS(double)

static void cv_gemm(int dtype, int32_t m, int32_t n, int32_t k, mm_view a, mm_view b,
                    void *c, int32_t ldc, int accumulate, const void *bias) {
    if (dtype == DT_F32)
        mm_gemm_f32(m, n, k, a, b, NULL, NULL, (float *)c, ldc, accumulate, bias);
    else mm_gemm_f64(m, n, k, a, b, (double *)c, ldc, accumulate, bias);
}

/* the element `off` of a buffer of `size`-byte elements */
#define CV_AT(p, off) ((uint8_t *)(p) + (size_t)(off) * size)

static cv_geom cv_read_geom(void) {
    cv_geom g;
    memcpy(&g, em_meta_words(), sizeof g);
    return g;
}

/* ================================================================ exports */
/* y = conv(x, w) + bias: x (N, C, H, W), w (C_out, C/groups, KH, KW), bias (C_out) or 0 */
int32_t EXPORT(em_conv)(int32_t dtype, const void *x, const void *w, const void *bias,
                        void *y) {
    const cv_geom g = cv_read_geom();
    const int32_t cg = g.c / g.groups, og = g.c_out / g.groups, taps = g.kh * g.kw;
    const int32_t kg = cg * taps, pos = g.oh * g.ow;
    const size_t size = dtype == DT_F32 ? 4 : 8;
    if (dtype != DT_F32 && dtype != DT_F64) return 1;
    if (dtype == DT_F32 && g.groups == g.c && g.c_out == g.c)
        return cv_depthwise_f32(&g, x, w, bias, y);
    const int pointwise = taps == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0 &&
                          g.oh == g.h && g.ow == g.w;
    void *cols = NULL;
    if (dtype == DT_F64 && !pointwise && !(cols = cv_scratch((size_t)kg * pos * size))) return 2;
    for (int32_t s = 0; s < g.n; s++)
        for (int32_t gi = 0; gi < g.groups; gi++) {
            const void *xs = CV_AT(x, ((size_t)s * g.c + (size_t)gi * cg) * g.h * g.w);
            void *ys = CV_AT(y, ((size_t)s * g.c_out + (size_t)gi * og) * pos);
            mm_view a = {CV_AT(w, (size_t)gi * og * kg), kg, 1};
            const void *bg = bias ? CV_AT(bias, (size_t)gi * og) : NULL;
            if (pointwise) {
                cv_gemm(dtype, og, pos, kg, a, (mm_view){xs, pos, 1}, ys, pos, 0, bg);
            } else if (dtype == DT_F32) {
                cv_pack_ctx ctx = {&g, (const float *)xs};
                mm_gemm_f32(og, pos, kg, a, (mm_view){0}, cv_pack_f32, &ctx, ys, pos, 0, bg);
            } else {
                cv_im2col_double(&g, (const double *)xs, cg, cols);
                mm_gemm_f64(og, pos, kg, a, (mm_view){cols, pos, 1}, ys, pos, 0, bg);
            }
        }
    return 0;
}

/* dw (C_out, C/groups, KH, KW) = sum over samples of grad_g @ cols_g^T per group: x (N, C,
 * H, W), grad (N, C_out, OH, OW) */
int32_t EXPORT(em_conv_weight_grad)(int32_t dtype, const void *x, const void *grad, void *dw) {
    const cv_geom g = cv_read_geom();
    const int32_t cg = g.c / g.groups, og = g.c_out / g.groups, kg = cg * g.kh * g.kw;
    const int32_t pos = g.oh * g.ow;
    const size_t size = dtype == DT_F32 ? 4 : 8;
    if (dtype != DT_F32 && dtype != DT_F64) return 1;
    void *cols = cv_scratch((size_t)kg * pos * size);
    if (!cols) return 2;
    if (g.n == 0) memset(dw, 0, (size_t)g.c_out * kg * size);
    for (int32_t s = 0; s < g.n; s++)
        for (int32_t gi = 0; gi < g.groups; gi++) {
            const void *xs = CV_AT(x, ((size_t)s * g.c + (size_t)gi * cg) * g.h * g.w);
            const void *gs = CV_AT(grad, ((size_t)s * g.c_out + (size_t)gi * og) * pos);
            if (dtype == DT_F32) cv_im2col_float(&g, (const float *)xs, cg, cols);
            else cv_im2col_double(&g, (const double *)xs, cg, cols);
            cv_gemm(dtype, og, kg, pos, (mm_view){gs, pos, 1}, (mm_view){cols, 1, pos},
                    CV_AT(dw, (size_t)gi * og * kg), kg, s > 0, NULL);
        }
    return 0;
}

/* y (N, C_out, OH, OW) = conv_transpose(x, w) + bias: x (N, C, H, W), w (C, C_out/groups,
 * KH, KW); the columns of one sample and group are W_g^T @ x_g, added into y by col2im */
int32_t EXPORT(em_conv_transpose)(int32_t dtype, const void *x, const void *w,
                                  const void *bias, void *y) {
    const cv_geom g = cv_read_geom();
    const int32_t cig = g.c / g.groups, cog = g.c_out / g.groups, taps = g.kh * g.kw;
    const int32_t m = cog * taps, pos = g.h * g.w, opos = g.oh * g.ow;
    const size_t size = dtype == DT_F32 ? 4 : 8;
    if (dtype != DT_F32 && dtype != DT_F64) return 1;
    void *cols = cv_scratch((size_t)m * pos * size);
    if (!cols) return 2;
    if (dtype == DT_F32) cv_fill_float(y, bias, g.n, g.c_out, opos);
    else cv_fill_double(y, bias, g.n, g.c_out, opos);
    for (int32_t s = 0; s < g.n; s++)
        for (int32_t gi = 0; gi < g.groups; gi++) {
            const void *xs = CV_AT(x, ((size_t)s * g.c + (size_t)gi * cig) * pos);
            void *ys = CV_AT(y, ((size_t)s * g.c_out + (size_t)gi * cog) * opos);
            mm_view a = {CV_AT(w, (size_t)gi * cig * m), 1, m};
            cv_gemm(dtype, m, pos, cig, a, (mm_view){xs, pos, 1}, cols, pos, 0, NULL);
            if (dtype == DT_F32) cv_col2im_float(&g, cols, cog, (float *)ys);
            else cv_col2im_double(&g, cols, cog, (double *)ys);
        }
    return 0;
}
