// ember_kernels: native (.mpy) C kernels for ember_micro, built with MicroPython's natmod
// tooling (py/dynruntime.mk) for x64, armv6m, armv7emsp...
//
// Same functions and arguments as ember_micro/_pure.py. Buffers come in through the buffer
// protocol (array('f'), array('b'), bytes); every call checks that the indexes it will touch
// fit in the buffers, so a wrong call raises ValueError instead of corrupting memory.
// Float scalars are read with mp_obj_get_float_to_f, which is right whatever float type the
// firmware uses. No libm: exp is computed here, so the module links on bare-metal targets.
#include "py/dynruntime.h"

typedef union {
    float f;
    int32_t i;
} fi_t;

static void need(int ok) {
    if (!ok) {
        mp_raise_ValueError(MP_ERROR_TEXT("ember_kernels: buffer too small for the call"));
    }
}

static float *fbuf(mp_obj_t o, size_t n, int rw) {
    mp_buffer_info_t bi;
    mp_get_buffer_raise(o, &bi, rw ? MP_BUFFER_RW : MP_BUFFER_READ);
    need(bi.len >= n * sizeof(float));
    return (float *)bi.buf;
}

static const int8_t *bbuf(mp_obj_t o, size_t n) {
    mp_buffer_info_t bi;
    mp_get_buffer_raise(o, &bi, MP_BUFFER_READ);
    need(bi.len >= n);
    return (const int8_t *)bi.buf;
}

static float fexp(float x) {
    // 2^k * e^r with |r| <= ln2/2; degree-6 Taylor: relative error < 2e-7
    if (x > 88.0f) {
        x = 88.0f;
    }
    if (x < -87.0f) {
        return 0.0f;
    }
    float t = x * 1.44269504f;
    int k = (int)(t + (t >= 0.0f ? 0.5f : -0.5f));
    float r = x - (float)k * 0.693147181f;
    float p = 1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120
        + r * (1.0f / 720))))));
    fi_t u;
    u.f = p;
    u.i += k << 23;
    return u.f;
}

static float act1(float v, int act) {
    switch (act) {
        case 1:
            return v > 0.0f ? v : 0.0f;
        case 2:
            return v < 0.0f ? 0.0f : (v > 6.0f ? 6.0f : v);
        case 3:
            return 1.0f / (1.0f + fexp(-v));
        case 4:
            if (v > 9.0f) {
                return 1.0f;
            }
            if (v < -9.0f) {
                return -1.0f;
            }
            return 1.0f - 2.0f / (fexp(2.0f * v) + 1.0f);
        case 5: {
            float t = v + 3.0f;
            t = t < 0.0f ? 0.0f : (t > 6.0f ? 6.0f : t);
            return v * t / 6.0f;
        }
        default:
            return v;
    }
}

#define ARG_INT(i) ((int)mp_obj_get_int(args[i]))

// act(x, n, code)
static mp_obj_t k_act(size_t n_args, const mp_obj_t *args) {
    int n = ARG_INT(1), code = ARG_INT(2);
    float *x = fbuf(args[0], n, 1);
    for (int i = 0; i < n; i++) {
        x[i] = act1(x[i], code);
    }
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_VAR(k_act_obj, 3, k_act);

// load_u8(x, data, n, mul, add)
static mp_obj_t k_load_u8(size_t n_args, const mp_obj_t *args) {
    int n = ARG_INT(2);
    float *x = fbuf(args[0], n, 1);
    const uint8_t *d = (const uint8_t *)bbuf(args[1], n);
    float mul = mp_obj_get_float_to_f(args[3]), add = mp_obj_get_float_to_f(args[4]);
    for (int i = 0; i < n; i++) {
        x[i] = d[i] * mul + add;
    }
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_VAR(k_load_u8_obj, 5, k_load_u8);

// copy(dst, src, n)
static mp_obj_t k_copy(size_t n_args, const mp_obj_t *args) {
    int n = ARG_INT(2);
    float *d = fbuf(args[0], n, 1);
    const float *s = fbuf(args[1], n, 0);
    for (int i = 0; i < n; i++) {
        d[i] = s[i];
    }
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_VAR(k_copy_obj, 3, k_copy);

// add(x, y, n): x += y
static mp_obj_t k_add(size_t n_args, const mp_obj_t *args) {
    int n = ARG_INT(2);
    float *x = fbuf(args[0], n, 1);
    const float *y = fbuf(args[1], n, 0);
    for (int i = 0; i < n; i++) {
        x[i] += y[i];
    }
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_VAR(k_add_obj, 3, k_add);

// quantize(xq, x, n, inv_scale)
static mp_obj_t k_quantize(size_t n_args, const mp_obj_t *args) {
    int n = ARG_INT(2);
    mp_buffer_info_t bi;
    mp_get_buffer_raise(args[0], &bi, MP_BUFFER_RW);
    need(bi.len >= (size_t)n);
    int8_t *q = (int8_t *)bi.buf;
    const float *x = fbuf(args[1], n, 0);
    float inv = mp_obj_get_float_to_f(args[3]);
    for (int i = 0; i < n; i++) {
        float v = x[i] * inv;
        // saturating (inf included) before the cast, which is undefined out of range; NaN -> 0
        if (v >= 127.0f) {
            q[i] = 127;
        } else if (v <= -127.0f) {
            q[i] = -127;
        } else if (v == v) {
            // half away from zero, as ember.contract.rounding.round_code (held to it by
            // tests/unit/test_rounding.py): v - t is exact, where v + 0.5f took 0.49999997 to 1
            int t = (int)v;
            float f = v - (float)t;
            q[i] = (int8_t)(t + (f >= 0.5f) - (f <= -0.5f));
        } else {
            q[i] = 0;
        }
    }
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_VAR(k_quantize_obj, 4, k_quantize);

// dequant(wf, codes, c0, nrows, row_len, scales, s0, block, wdtype): weight-only rows to
// floats, wf[r * row_len + i] = code * scales[s0 + r * nb + i / block]; codes from byte c0,
// wdtype 2: int8, a byte each; 3: int4, code + 8 in a nibble, low first, rows byte-aligned
static mp_obj_t k_dequant(size_t n_args, const mp_obj_t *args) {
    int c0 = ARG_INT(2), nrows = ARG_INT(3), row_len = ARG_INT(4), s0 = ARG_INT(6);
    int block = ARG_INT(7), wdtype = ARG_INT(8);
    need(c0 >= 0 && nrows >= 0 && row_len > 0 && s0 >= 0 && block > 0
         && (wdtype == 2 || wdtype == 3));
    int nb = (row_len + block - 1) / block;
    size_t rb = wdtype == 2 ? (size_t)row_len : (size_t)(row_len + 1) / 2;
    float *wf = fbuf(args[0], (size_t)nrows * row_len, 1);
    const uint8_t *codes = (const uint8_t *)bbuf(args[1], (size_t)c0 + nrows * rb);
    const float *scales = fbuf(args[5], (size_t)s0 + (size_t)nrows * nb, 0);
    for (int r = 0; r < nrows; r++) {
        const uint8_t *row = codes + c0 + r * rb;
        const float *sc = scales + s0 + (size_t)r * nb;
        for (int b = 0, lo = 0; b < nb; b++, lo += block) {
            int hi = lo + block < row_len ? lo + block : row_len;
            float s = sc[b];
            for (int i = lo; i < hi; i++) {
                int v = wdtype == 2 ? (int)(int8_t)row[i] : ((row[i >> 1] >> ((i & 1) * 4)) & 15) - 8;
                *wf++ = (float)v * s;
            }
        }
    }
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_VAR(k_dequant_obj, 9, k_dequant);

// dense(out, o0, x, w, nrows, nin, bias, act)
static mp_obj_t k_dense(size_t n_args, const mp_obj_t *args) {
    int o0 = ARG_INT(1), nrows = ARG_INT(4), nin = ARG_INT(5), act = ARG_INT(7);
    float *out = fbuf(args[0], o0 + nrows, 1);
    const float *x = fbuf(args[2], nin, 0);
    const float *w = fbuf(args[3], (size_t)nrows * nin, 0);
    const float *b = args[6] == mp_const_none ? NULL : fbuf(args[6], o0 + nrows, 0);
    for (int r = 0; r < nrows; r++) {
        const float *wr = w + (size_t)r * nin;
        float s = 0.0f;
        for (int i = 0; i < nin; i++) {
            s += wr[i] * x[i];
        }
        if (b) {
            s += b[o0 + r];
        }
        out[o0 + r] = act1(s, act);
    }
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_VAR(k_dense_obj, 8, k_dense);

// dense_q(out, o0, xq, wq, nrows, nin, bias, mult, act)
static mp_obj_t k_dense_q(size_t n_args, const mp_obj_t *args) {
    int o0 = ARG_INT(1), nrows = ARG_INT(4), nin = ARG_INT(5), act = ARG_INT(8);
    float *out = fbuf(args[0], o0 + nrows, 1);
    const int8_t *x = bbuf(args[2], nin);
    const int8_t *w = bbuf(args[3], (size_t)nrows * nin);
    const float *b = args[6] == mp_const_none ? NULL : fbuf(args[6], o0 + nrows, 0);
    const float *m = fbuf(args[7], o0 + nrows, 0);
    for (int r = 0; r < nrows; r++) {
        const int8_t *wr = w + (size_t)r * nin;
        int32_t acc = 0;
        for (int i = 0; i < nin; i++) {
            acc += (int32_t)wr[i] * x[i];
        }
        float s = (float)acc * m[o0 + r];
        if (b) {
            s += b[o0 + r];
        }
        out[o0 + r] = act1(s, act);
    }
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_VAR(k_dense_q_obj, 9, k_dense_q);

typedef struct {
    int cin, h, w, cout, oh, ow, kh, kw, sh, sw, ph, pw, groups;
} geom_t;

static void get_geom(mp_obj_t o, geom_t *g) {
    mp_buffer_info_t bi;
    mp_get_buffer_raise(o, &bi, MP_BUFFER_READ);
    need(bi.typecode == 'i' && bi.len >= 13 * sizeof(int32_t));
    const int32_t *v = (const int32_t *)bi.buf;
    g->cin = v[0]; g->h = v[1]; g->w = v[2]; g->cout = v[3]; g->oh = v[4]; g->ow = v[5];
    g->kh = v[6]; g->kw = v[7]; g->sh = v[8]; g->sw = v[9]; g->ph = v[10]; g->pw = v[11];
    g->groups = v[12];
    need(g->groups > 0 && g->sh > 0 && g->sw > 0 && g->cin % g->groups == 0
         && g->cout % g->groups == 0);
}

// Valid output columns for kernel column kx: 0 <= ox*sw - pw + kx < w.
static void col_range(const geom_t *g, int kx, int *lo, int *hi) {
    int a = g->pw - kx;  // need ox*sw >= a
    int l = a <= 0 ? 0 : (a + g->sw - 1) / g->sw;
    int bmax = g->w - 1 + g->pw - kx;  // need ox*sw <= bmax
    int h = bmax < 0 ? -1 : bmax / g->sw;
    if (h > g->ow - 1) {
        h = g->ow - 1;
    }
    *lo = l;
    *hi = h;
}

// Weight-stationary loops: each weight is loaded once per output plane, and the inner loop
// runs over a precomputed valid column range (no per-pixel bounds tests).
static void conv_core(fi_t *out, const float *xf, const int8_t *xq, const float *wf,
    const int8_t *wq, const float *b, const float *m, const geom_t *g, int oc0, int noc,
    int act) {
    int cin_g = g->cin / g->groups, cout_g = g->cout / g->groups;
    int hw = g->h * g->w, ohw = g->oh * g->ow, ksz = cin_g * g->kh * g->kw;
    for (int oc = oc0; oc < oc0 + noc; oc++) {
        fi_t *o = out + (size_t)oc * ohw;
        int ic0 = (oc / cout_g) * cin_g;
        for (int i = 0; i < ohw; i++) {
            if (wq) {
                o[i].i = 0;
            } else {
                o[i].f = 0.0f;
            }
        }
        for (int ci = 0; ci < cin_g; ci++) {
            size_t xb = (size_t)(ic0 + ci) * hw;
            for (int ky = 0; ky < g->kh; ky++) {
                for (int kx = 0; kx < g->kw; kx++) {
                    size_t wi = (size_t)(oc - oc0) * ksz + (ci * g->kh + ky) * g->kw + kx;
                    int lo, hi;
                    col_range(g, kx, &lo, &hi);
                    if (lo > hi) {
                        continue;
                    }
                    for (int oy = 0; oy < g->oh; oy++) {
                        int iy = oy * g->sh - g->ph + ky;
                        if (iy < 0 || iy >= g->h) {
                            continue;
                        }
                        size_t xr = xb + (size_t)iy * g->w - g->pw + kx;
                        fi_t *orow = o + oy * g->ow;
                        if (wq) {
                            int32_t wv = wq[wi];
                            for (int ox = lo; ox <= hi; ox++) {
                                orow[ox].i += wv * xq[xr + ox * g->sw];
                            }
                        } else {
                            float wv = wf[wi];
                            for (int ox = lo; ox <= hi; ox++) {
                                orow[ox].f += wv * xf[xr + ox * g->sw];
                            }
                        }
                    }
                }
            }
        }
        float bv = b ? b[oc] : 0.0f;
        for (int i = 0; i < ohw; i++) {
            float s = wq ? (float)o[i].i * m[oc] : o[i].f;
            o[i].f = act1(s + bv, act);
        }
    }
}

// conv(out, x, w, bias, g, oc0, noc, act)
static mp_obj_t k_conv(size_t n_args, const mp_obj_t *args) {
    geom_t g;
    get_geom(args[4], &g);
    int oc0 = ARG_INT(5), noc = ARG_INT(6), act = ARG_INT(7);
    need(oc0 >= 0 && oc0 + noc <= g.cout);
    fi_t *out = (fi_t *)fbuf(args[0], (size_t)g.cout * g.oh * g.ow, 1);
    const float *x = fbuf(args[1], (size_t)g.cin * g.h * g.w, 0);
    const float *w = fbuf(args[2], (size_t)noc * (g.cin / g.groups) * g.kh * g.kw, 0);
    const float *b = args[3] == mp_const_none ? NULL : fbuf(args[3], g.cout, 0);
    conv_core(out, x, NULL, w, NULL, b, NULL, &g, oc0, noc, act);
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_VAR(k_conv_obj, 8, k_conv);

// conv_q(out, xq, wq, bias, mult, g, oc0, noc, act)
static mp_obj_t k_conv_q(size_t n_args, const mp_obj_t *args) {
    geom_t g;
    get_geom(args[5], &g);
    int oc0 = ARG_INT(6), noc = ARG_INT(7), act = ARG_INT(8);
    need(oc0 >= 0 && oc0 + noc <= g.cout);
    fi_t *out = (fi_t *)fbuf(args[0], (size_t)g.cout * g.oh * g.ow, 1);
    const int8_t *x = bbuf(args[1], (size_t)g.cin * g.h * g.w);
    const int8_t *w = bbuf(args[2], (size_t)noc * (g.cin / g.groups) * g.kh * g.kw);
    const float *b = args[3] == mp_const_none ? NULL : fbuf(args[3], g.cout, 0);
    const float *m = fbuf(args[4], g.cout, 0);
    conv_core(out, NULL, x, NULL, w, b, m, &g, oc0, noc, act);
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_VAR(k_conv_q_obj, 9, k_conv_q);

// pool(out, x, g, kind): kind 0 max, 1 average counting padding, 2 average of valid cells
static mp_obj_t k_pool(size_t n_args, const mp_obj_t *args) {
    geom_t g;
    get_geom(args[2], &g);
    int kind = ARG_INT(3);
    float *out = fbuf(args[0], (size_t)g.cin * g.oh * g.ow, 1);
    const float *x = fbuf(args[1], (size_t)g.cin * g.h * g.w, 0);
    for (int c = 0; c < g.cin; c++) {
        const float *xc = x + (size_t)c * g.h * g.w;
        float *oc = out + (size_t)c * g.oh * g.ow;
        for (int oy = 0; oy < g.oh; oy++) {
            for (int ox = 0; ox < g.ow; ox++) {
                float best = -3.4e38f, s = 0.0f;
                int cnt = 0;
                for (int ky = 0; ky < g.kh; ky++) {
                    int iy = oy * g.sh - g.ph + ky;
                    if (iy < 0 || iy >= g.h) {
                        continue;
                    }
                    for (int kx = 0; kx < g.kw; kx++) {
                        int ix = ox * g.sw - g.pw + kx;
                        if (ix < 0 || ix >= g.w) {
                            continue;
                        }
                        float v = xc[iy * g.w + ix];
                        best = v > best ? v : best;
                        s += v;
                        cnt++;
                    }
                }
                oc[oy * g.ow + ox] = kind == 0 ? best
                    : (kind == 1 ? s / (g.kh * g.kw) : s / (cnt ? cnt : 1));
            }
        }
    }
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_VAR(k_pool_obj, 4, k_pool);

// gap(out, x, c, hw)
static mp_obj_t k_gap(size_t n_args, const mp_obj_t *args) {
    int c = ARG_INT(2), hw = ARG_INT(3);
    float *out = fbuf(args[0], c, 1);
    const float *x = fbuf(args[1], (size_t)c * hw, 0);
    for (int ch = 0; ch < c; ch++) {
        float s = 0.0f;
        for (int i = 0; i < hw; i++) {
            s += x[(size_t)ch * hw + i];
        }
        out[ch] = s / hw;
    }
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_VAR(k_gap_obj, 4, k_gap);

mp_obj_t mpy_init(mp_obj_fun_bc_t *self, size_t n_args, size_t n_kw, mp_obj_t *args) {
    MP_DYNRUNTIME_INIT_ENTRY
    mp_store_global(MP_QSTR_act, MP_OBJ_FROM_PTR(&k_act_obj));
    mp_store_global(MP_QSTR_load_u8, MP_OBJ_FROM_PTR(&k_load_u8_obj));
    mp_store_global(MP_QSTR_copy, MP_OBJ_FROM_PTR(&k_copy_obj));
    mp_store_global(MP_QSTR_add, MP_OBJ_FROM_PTR(&k_add_obj));
    mp_store_global(MP_QSTR_quantize, MP_OBJ_FROM_PTR(&k_quantize_obj));
    mp_store_global(MP_QSTR_dense, MP_OBJ_FROM_PTR(&k_dense_obj));
    mp_store_global(MP_QSTR_dense_q, MP_OBJ_FROM_PTR(&k_dense_q_obj));
    mp_store_global(MP_QSTR_conv, MP_OBJ_FROM_PTR(&k_conv_obj));
    mp_store_global(MP_QSTR_conv_q, MP_OBJ_FROM_PTR(&k_conv_q_obj));
    mp_store_global(MP_QSTR_pool, MP_OBJ_FROM_PTR(&k_pool_obj));
    mp_store_global(MP_QSTR_gap, MP_OBJ_FROM_PTR(&k_gap_obj));
    mp_store_global(MP_QSTR_dequant, MP_OBJ_FROM_PTR(&k_dequant_obj));
    MP_DYNRUNTIME_INIT_EXIT
}

#if defined(__ARM_ARCH_6M__)
// Cortex-M0: float division from fdiv_pic.c in this object (libgcc's doesn't link into a .mpy)
#include "fdiv_pic.c"
#endif
