# The ulab tier: vectorised kernels over ulab.numpy, viewing the runtime's array('f') buffers
# ruff: noqa: FURB136, PLR1730 - MicroPython code: % formatting, inline compares
# in place with frombuffer. Written against ulab's documented API only, on 1-D/2-D arrays
# (ULAB_MAX_DIMS >= 2, the default build):
#   ulab.numpy: frombuffer, array, zeros, dot, maximum, clip, exp, tanh, floor, where, mean,
#   dtypes float / int8 / uint8; ndarray: reshape, itemsize, slicing with steps, slice
#   assignment, broadcasting arithmetic (+ - * /), comparisons.
# Not checked on real ulab firmware here: ulab is in no package registry this project can reach.
# The tests run this file on CPython with numpy standing in for ulab.numpy.
from ulab import numpy as np

name = "ulab"

if np.zeros(1, dtype=np.float).itemsize != 4:
    # double-precision firmware: np.float can't view array('f') memory
    raise ImportError("ember_micro: ulab tier needs single-precision float firmware")


def _f(buf, n, off=0):
    return np.frombuffer(buf, dtype=np.float, count=n, offset=4 * off)


def _b(buf, n, off=0):
    return np.frombuffer(buf, dtype=np.int8, count=n, offset=off)


def _act(v, code):
    if code == 1:
        return np.maximum(v, 0.0)
    if code == 2:
        return np.clip(v, 0.0, 6.0)
    if code == 3:
        return 1.0 / (1.0 + np.exp(-v))
    if code == 4:
        return np.tanh(v)
    if code == 5:
        return v * np.clip(v + 3.0, 0.0, 6.0) / 6.0
    return v


def act(x, n, code):
    v = _f(x, n)
    v[:] = _act(v, code)


def load_u8(x, data, n, mul, add):
    _f(x, n)[:] = np.frombuffer(data, dtype=np.uint8, count=n) * mul + add


def copy(dst, src, n):
    _f(dst, n)[:] = _f(src, n)


def add(x, y, n):
    v = _f(x, n)
    v[:] = v + _f(y, n)


def quantize(xq, x, n, inv_scale):
    v = _f(x, n) * inv_scale
    v = np.clip(np.where(v == v, v, 0.0), -127.0, 127.0)  # saturating; NaN becomes 0
    r = np.where(v >= 0.0, np.floor(v + 0.5), -np.floor(0.5 - v))
    _b(xq, n)[:] = np.array(np.clip(r, -127.0, 127.0), dtype=np.int8)


def dense(out, o0, x, w, nrows, nin, bias, act_code):
    y = np.dot(_f(w, nrows * nin).reshape((nrows, nin)), _f(x, nin))
    if bias is not None:
        y = y + _f(bias, nrows, o0)
    _f(out, nrows, o0)[:] = _act(y, act_code)


_BLOCK = 16  # int8 rows widened to float per step: bounds the temporary to 16 * nin floats


def dense_q(out, o0, xq, wq, nrows, nin, bias, mult, act_code):
    xf = np.array(_b(xq, nin), dtype=np.float)
    o = _f(out, nrows, o0)
    r = 0
    while r < nrows:
        n = nrows - r if nrows - r < _BLOCK else _BLOCK
        wf = np.array(_b(wq, n * nin, r * nin), dtype=np.float).reshape((n, nin))
        y = np.dot(wf, xf) * _f(mult, n, o0 + r)
        if bias is not None:
            y = y + _f(bias, n, o0 + r)
        o[r:r + n] = _act(y, act_code)
        r += n


def _cols(lo_pad, k, size, stride, n_out):
    # output columns whose input column ox*stride - pad + k lies inside [0, size)
    a = lo_pad - k
    lo = 0 if a <= 0 else (a + stride - 1) // stride
    b = size - 1 + lo_pad - k
    hi = -1 if b < 0 else b // stride
    if hi > n_out - 1:
        hi = n_out - 1
    return lo, hi


def _taps(g, oy):
    # the kernel taps (ky, kx) of output row oy that read inside the input: output columns
    # lo..hi take the flat (C, H*W) input columns start:stop:sw
    _, h, wd, _, _, ow, kh, kw, sh, sw, ph, pw, _ = g
    for ky in range(kh):
        iy = oy * sh - ph + ky
        if iy < 0 or iy >= h:
            continue
        for kx in range(kw):
            lo, hi = _cols(pw, kx, wd, sw, ow)
            if lo <= hi:
                yield ky, kx, lo, hi, iy * wd + lo * sw - pw + kx, iy * wd + hi * sw - pw + kx + 1


def _conv(out, x2, w2, bias, mult, g, oc0, noc, act_code):
    cin, _, _, cout, oh, ow, kh, kw, _, sw, _, _, groups = g
    cin_g = cin // groups
    cout_g = cout // groups
    kk = kh * kw
    out2 = _f(out, cout * oh * ow).reshape((cout, oh * ow))
    depthwise = cin_g == 1 and cout_g == 1
    # per-channel column vectors, broadcast over the output row
    b = None if bias is None else _f(bias, noc, oc0).reshape((noc, 1))
    m = None if mult is None else _f(mult, noc, oc0).reshape((noc, 1))
    for oy in range(oh):
        acc = np.zeros((noc, ow), dtype=np.float)
        for ky, kx, lo, hi, start, stop in _taps(g, oy):
            wk = w2[:, ky * kw + kx::kk]  # (noc, cin_g)
            if depthwise:
                acc[:, lo:hi + 1] = acc[:, lo:hi + 1] + wk * x2[oc0:oc0 + noc, start:stop:sw]
                continue
            r = 0
            while r < noc:
                grp = (oc0 + r) // cout_g
                end = min(noc, (grp + 1) * cout_g - oc0)
                xs = x2[grp * cin_g:(grp + 1) * cin_g, start:stop:sw]
                acc[r:end, lo:hi + 1] = acc[r:end, lo:hi + 1] + np.dot(wk[r:end], xs)
                r = end
        if m is not None:
            acc = acc * m
        if b is not None:
            acc = acc + b
        out2[oc0:oc0 + noc, oy * ow:(oy + 1) * ow] = _act(acc, act_code)


def conv(out, x, w, bias, g, oc0, noc, act_code):
    cin, h, wd = g[0], g[1], g[2]
    ksz = (cin // g[12]) * g[6] * g[7]
    _conv(out, _f(x, cin * h * wd).reshape((cin, h * wd)),
          _f(w, noc * ksz).reshape((noc, ksz)), bias, None, g, oc0, noc, act_code)


def conv_q(out, xq, wq, bias, mult, g, oc0, noc, act_code):
    cin, h, wd = g[0], g[1], g[2]
    ksz = (cin // g[12]) * g[6] * g[7]
    xf = np.array(_b(xq, cin * h * wd), dtype=np.float).reshape((cin, h * wd))
    wf = np.array(_b(wq, noc * ksz), dtype=np.float).reshape((noc, ksz))
    _conv(out, xf, wf, bias, mult, g, oc0, noc, act_code)


def pool(out, x, g, kind):
    c, h, wd, _, oh, ow, kh, kw, _, sw, _, _, _ = g
    x2 = _f(x, c * h * wd).reshape((c, h * wd))
    out2 = _f(out, c * oh * ow).reshape((c, oh * ow))
    for oy in range(oh):
        if kind == 0:
            row = np.zeros((c, ow), dtype=np.float) - 3.4e38
        else:
            row = np.zeros((c, ow), dtype=np.float)
        cnt = np.zeros(ow, dtype=np.float)
        for _, _, lo, hi, start, stop in _taps(g, oy):
            xs = x2[:, start:stop:sw]
            if kind == 0:
                row[:, lo:hi + 1] = np.maximum(row[:, lo:hi + 1], xs)
            else:
                row[:, lo:hi + 1] = row[:, lo:hi + 1] + xs
                cnt[lo:hi + 1] = cnt[lo:hi + 1] + 1.0
        if kind == 1:
            row = row / (kh * kw)
        elif kind == 2:
            row = row / cnt
        out2[:, oy * ow:(oy + 1) * ow] = row


def gap(out, x, c, hw):
    _f(out, c)[:] = np.mean(_f(x, c * hw).reshape((c, hw)), axis=1)
