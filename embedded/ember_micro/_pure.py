# Pure MicroPython kernels over array('f') / array('b'): the tier that runs everywhere.
# ruff: noqa: FURB136, PLR1730 - MicroPython code: % formatting, inline compares
# Every tier module has the same functions; shapes and offsets are checked once by the loader,
# so the loops here trust them. Geometry `g` is array('i'):
#   [cin, h, w, cout, oh, ow, kh, kw, sh, sw, ph, pw, groups]
# act codes: 0 none, 1 relu, 2 relu6, 3 sigmoid, 4 tanh, 5 hardswish.
import math

from ._chain import round_code

name = "pure"
INT_CHAINS = True  # Model runs int8 chains in integers on this tier (see _chain.py)


# a global: `-3.4e38` in a loop would negate (and allocate) a float at every use
_LOWEST = -3.4e38


def _act1(v, act):
    if act == 1:
        return v if v > 0.0 else 0.0
    if act == 2:
        return 0.0 if v < 0.0 else (6.0 if v > 6.0 else v)
    if act == 3:
        if v < -80.0:
            return 0.0
        return 1.0 / (1.0 + math.exp(-v))
    if act == 4:
        return math.tanh(v)
    if act == 5:
        t = v + 3.0
        t = 0.0 if t < 0.0 else (6.0 if t > 6.0 else t)
        return v * t / 6.0
    return v


def act(x, n, code):
    if code == 1:
        for i in range(n):
            if x[i] < 0.0:
                x[i] = 0.0
        return
    for i in range(n):
        x[i] = _act1(x[i], code)


def load_u8(x, data, n, mul, add):
    for i in range(n):
        x[i] = data[i] * mul + add


def lut(xq, data, n, table):
    # uint8 input straight to the first int8 layer's quantised input: one small int per byte
    for i in range(n):
        xq[i] = table[data[i]]


def copy(dst, src, n):
    for i in range(n):
        dst[i] = src[i]


def add(x, y, n):
    for i in range(n):
        x[i] += y[i]


def quantize(xq, x, n, inv_scale):
    # saturating: beyond +-127 (inf included) clamps, NaN becomes 0 (as the other tiers do)
    for i in range(n):
        xq[i] = round_code(x[i] * inv_scale, -127, 127)


def dense(out, o0, x, w, nrows, nin, bias, act_code):
    k = 0
    for r in range(nrows):
        s = bias[o0 + r] if bias is not None else 0.0
        for i in range(nin):
            s += w[k + i] * x[i]
        k += nin
        out[o0 + r] = _act1(s, act_code)


def dense_q(out, o0, xq, wq, nrows, nin, bias, mult, act_code, req=None):
    # int8 x int8 products summed in small ints: no float objects inside the loop; with `req`
    # (an int8 chain, _chain.py) the rows go to `out` as the next layer's int8 inputs
    k = 0
    for r in range(nrows):
        acc = 0
        for i in range(nin):
            acc += wq[k + i] * xq[i]
        k += nin
        o = o0 + r
        if req is not None:
            out[o] = _requant(acc, req, o)
            continue
        s = acc * mult[o]
        if bias is not None:
            s += bias[o]
        out[o] = _act1(s, act_code)


def _requant(acc, req, c):
    # the int8 value of accumulator acc of row c (req layout in _chain.py); small ints only
    b = 2 + 8 * c
    if acc < req[b]:
        acc = req[b]
    elif acc > req[b + 1]:
        acc = req[b + 1]
    d = acc - req[b + 2]
    ml = req[b + 4]
    k = req[b + 5]
    dh = d >> 12  # d * ml = (dh * 2^12 + dl) * ml, each half a small int (_chain.SPLIT)
    t = (d * req[b + 3] + ((dh * ml + (1 << (k - 13))) >> (k - 12))
         + (((d - (dh << 12)) * ml + (1 << (k - 1))) >> k) + req[b + 6])
    s = req[b + 7]
    t = (t + ((1 << s) >> 1)) >> s if t >= 0 else -((((1 << s) >> 1) - t) >> s)
    return req[0] if t < req[0] else (req[1] if t > req[1] else t)


def _conv(out, x, w, bias, mult, g, oc0, noc, act_code, req=None):
    cin, h, wd, cout, oh, ow, kh, kw, sh, sw, ph, pw, groups = g
    cin_g = cin // groups
    cout_g = cout // groups
    ksz = cin_g * kh * kw
    hw = h * wd
    for oc in range(oc0, oc0 + noc):
        ic0 = (oc // cout_g) * cin_g
        wbase = (oc - oc0) * ksz
        b = bias[oc] if bias is not None else 0.0
        m = mult[oc] if mult is not None else 1.0
        obase = oc * oh * ow
        for oy in range(oh):
            iy0 = oy * sh - ph
            for ox in range(ow):
                ix0 = ox * sw - pw
                s = 0.0 if mult is None else 0
                for ci in range(cin_g):
                    xb = (ic0 + ci) * hw
                    wb = wbase + ci * kh * kw
                    for ky in range(kh):
                        iy = iy0 + ky
                        if iy < 0 or iy >= h:
                            continue
                        row = xb + iy * wd
                        wr = wb + ky * kw
                        for kx in range(kw):
                            ix = ix0 + kx
                            if 0 <= ix < wd:
                                s += w[wr + kx] * x[row + ix]
                if req is not None:
                    out[obase + oy * ow + ox] = _requant(s, req, oc)
                    continue
                if mult is not None:
                    s = s * m
                out[obase + oy * ow + ox] = _act1(s + b, act_code)


def conv(out, x, w, bias, g, oc0, noc, act_code):
    _conv(out, x, w, bias, None, g, oc0, noc, act_code)


def conv_q(out, xq, wq, bias, mult, g, oc0, noc, act_code, req=None):
    _conv(out, xq, wq, bias, mult, g, oc0, noc, act_code, req)


def pool(out, x, g, kind):
    # kind: 0 max, 1 average counting padding, 2 average over valid cells only
    c, h, wd, _, oh, ow, kh, kw, sh, sw, ph, pw, _ = g
    for ch in range(c):
        xb = ch * h * wd
        ob = ch * oh * ow
        for oy in range(oh):
            iy0 = oy * sh - ph
            for ox in range(ow):
                ix0 = ox * sw - pw
                best = _LOWEST
                s = 0.0
                cnt = 0
                for ky in range(kh):
                    iy = iy0 + ky
                    if iy < 0 or iy >= h:
                        continue
                    for kx in range(kw):
                        ix = ix0 + kx
                        if 0 <= ix < wd:
                            v = x[xb + iy * wd + ix]
                            if v > best:
                                best = v
                            if kind:  # max pooling sums nothing: int8 chains stay ints
                                cnt += 1
                                s += v
                if kind == 0:
                    out[ob + oy * ow + ox] = best
                elif kind == 1:
                    out[ob + oy * ow + ox] = s / (kh * kw)
                else:
                    out[ob + oy * ow + ox] = s / cnt


def gap(out, x, c, hw):
    for ch in range(c):
        s = 0.0
        b = ch * hw
        for i in range(hw):
            s += x[b + i]
        out[ch] = s / hw
