/* The quantized kernels' shared pieces (wasm/quant.c: quantization, Linear, the pair GEMM
 * and em_qconv; wasm/quant_dw.c: depthwise): the conv geometry, the scratch buffers, SIMD
 * quantization of floats, and the output (float32 or codes) written from the registers that
 * hold the int32 sums. */
#ifndef EMBER_QUANT_H
#define EMBER_QUANT_H

#include <stdlib.h>
#include <string.h>
#include <wasm_simd128.h>
#include "ember.h"

/* the 16 words of conv.c's cv_geom, in the same order (em_meta_words) */
typedef struct {
    int32_t n, c, h, w, c_out, kh, kw, sh, sw, ph, pw, dh, dw, groups, oh, ow;
} qt_geom;

/* scratch buffers, grown on demand and kept (the module is single-threaded) */
typedef struct {
    void *p;
    size_t cap;
} qt_buf;
extern qt_buf qt_codes, qt_plane, qt_offs, qt_row; /* shared by em_qconv and depthwise */
void *qt_grow(qt_buf *b, size_t bytes);

/* ================================================================ rounding */
/* The one rounding of every quantized kernel (ember/contract/rounding.py's round_code): the
 * codes of four floats v, rounded half away from zero, clamped to [lo, hi] (integer-valued
 * bounds), NaN to 0, as i32 lanes. WebAssembly's float arithmetic rounds to nearest even,
 * under which trunc(v + h), h the float below 0.5 with v's sign, is the rule (a tie reaches
 * the next integer: n + 0.5 + h rounds up to n + 1; anything below a tie stays under it;
 * floor(|v| + 0.5) would take 0.49999997 to 1); i32x4.trunc_sat truncates, and takes NaN to
 * 0. Clamped first, the same codes (rounding is monotone). Scalar callers take lane 0
 * (qt_round1): this is the only definition. */
static inline __attribute__((always_inline)) v128_t qt_round4(v128_t v, v128_t lo, v128_t hi) {
    v = wasm_f32x4_pmax(wasm_f32x4_pmin(v, hi), lo); /* this order keeps NaN: trunc_sat's 0 */
    const v128_t h = wasm_v128_or(wasm_v128_and(v, wasm_i32x4_splat(INT32_MIN)),
                                  wasm_f32x4_splat(0x1.fffffep-2f)); /* +-(0.5 - 2^-25) */
    return wasm_i32x4_trunc_sat_f32x4(wasm_f32x4_add(v, h));
}

static inline int32_t qt_round1(float v, int32_t lo, int32_t hi) {
    return wasm_i32x4_extract_lane(qt_round4(wasm_f32x4_splat(v), wasm_f32x4_splat((float)lo),
                                             wasm_f32x4_splat((float)hi)),
                                   0);
}

/* ================================================================ quantization */
/* the input code of x at scale s (u: unsigned, 0..255, else -127..127) */
static inline int32_t qt_code(float x, float s, int u) {
    return qt_round1(x / s, u ? 0 : -127, u ? 255 : 127);
}

/* codes of four floats, as i32 lanes (as qt_code) */
static inline __attribute__((always_inline)) v128_t qt_q4(v128_t x, v128_t vs, int u) {
    return qt_round4(wasm_f32x4_div(x, vs), wasm_f32x4_splat(u ? 0.0f : -127.0f),
                     wasm_f32x4_splat(u ? 255.0f : 127.0f));
}

/* codes of eight floats, as i16 lanes */
static inline __attribute__((always_inline)) v128_t qt_q8(const float *x, v128_t vs, int u) {
    return wasm_i16x8_narrow_i32x4(qt_q4(wasm_v128_load(x), vs, u),
                                   qt_q4(wasm_v128_load(x + 4), vs, u));
}
/* codes of n floats into bytes: int8, or uint8 when u */
void qt_quantize(const float *x, int8_t *q, size_t n, float s, int u);

/* the eight bytes at p as i16 lanes: uint8 codes when u, else int8 */
static inline __attribute__((always_inline)) v128_t qt_load8(const int8_t *p, int u) {
    return u ? wasm_u16x8_load8x8(p) : wasm_i16x8_load8x8(p);
}

static inline int32_t qt_byte(const int8_t *p, int u) { return u ? *(const uint8_t *)p : *p; }

/* eight codes of a row as i16 lanes, from every `sw`-th byte at src (SW: compile-time
 * stride 1 or 2, which reads 16 bytes; 0: any; U: unsigned bytes) */
static inline __attribute__((always_inline)) v128_t qt_row8(const int8_t *src, int32_t sw,
                                                            int SW, int U) {
    if (SW == 1) return qt_load8(src, U);
    if (SW == 2) { /* the even bytes of 16 */
        v128_t b = wasm_v128_load(src);
        b = wasm_i8x16_shuffle(b, b, 0, 2, 4, 6, 8, 10, 12, 14, 0, 2, 4, 6, 8, 10, 12, 14);
        return U ? wasm_u16x8_extend_low_u8x16(b) : wasm_i16x8_extend_low_i8x16(b);
    }
    int16_t tmp[8] __attribute__((aligned(16)));
    for (int q = 0; q < 8; q++) tmp[q] = U ? (uint8_t)src[q * sw] : src[q * sw];
    return wasm_v128_load(tmp);
}

/* ================================================================ the output */
/* What a kernel writes for output channel o and its int32 sum: v = sum * sc[o] + off[o]
 * (float32), stored as it is, or as codes: rounded half away from zero, clamped to [lo, hi],
 * as int8 or (u8) uint8. Passed by value: the kernels keep it in registers. */
typedef struct {
    const float *sc, *off;
    int32_t codes, u8, lo, hi;
} qt_out;

static inline size_t qt_esize(qt_out o) { return o.codes ? 1 : sizeof(float); }

/* eight outputs from their sums (a0: the first four) and factors (s0, f0: the first four's):
 * w of them stored at dst as float32 or codes */
static inline __attribute__((always_inline)) void qt_emit8(qt_out o, v128_t a0, v128_t a1,
                                                           v128_t s0, v128_t s1, v128_t f0,
                                                           v128_t f1, void *dst, int32_t w) {
    const v128_t v0 = wasm_f32x4_add(wasm_f32x4_mul(wasm_f32x4_convert_i32x4(a0), s0), f0);
    const v128_t v1 = wasm_f32x4_add(wasm_f32x4_mul(wasm_f32x4_convert_i32x4(a1), s1), f1);
    float tile[8] __attribute__((aligned(16)));
    void *to = w == 8 ? dst : tile;
    if (o.codes) {
        const v128_t lo = wasm_f32x4_splat((float)o.lo), hi = wasm_f32x4_splat((float)o.hi);
        if (o.u8) {
            const v128_t h = wasm_i16x8_narrow_i32x4(qt_round4(v0, lo, hi),
                                                     qt_round4(v1, lo, hi));
            wasm_v128_store64_lane(to, wasm_u8x16_narrow_i16x8(h, h), 0);
        } else {
            const v128_t h = wasm_i16x8_narrow_i32x4(qt_round4(v0, lo, hi),
                                                     qt_round4(v1, lo, hi));
            wasm_v128_store64_lane(to, wasm_i8x16_narrow_i16x8(h, h), 0);
        }
    } else {
        wasm_v128_store(to, v0);
        wasm_v128_store((float *)to + 4, v1);
    }
    if (w < 8) memcpy(dst, tile, (size_t)w * qt_esize(o));
}

/* ================================================================ convolution */
/* the padded plane's size: every window of the output, plus `extra` columns */
static inline void qt_padded(const qt_geom *g, int32_t extra_w, int32_t *hp, int32_t *wp) {
    *hp = (g->oh - 1) * g->sh + (g->kh - 1) * g->dh + 1;
    *wp = (g->ow - 1) * g->sw + (g->kw - 1) * g->dw + 1 + extra_w;
    if (*hp < g->h + g->ph) *hp = g->h + g->ph; /* rows past the windows are unused */
    if (*wp < g->w + g->pw) *wp = g->w + g->pw;
}

/* the depthwise conv (groups == C == C_out) of x (float32, or codes when in_codes) */
int qt_depthwise(const qt_geom *g, const void *x, int in_codes, const int8_t *w, qt_out o,
                 void *y, float s, int u);

#endif
