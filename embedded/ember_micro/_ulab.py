# The ulab tier: vectorised kernels over ulab.numpy, viewing the runtime's array('f') buffers
# ruff: noqa: FURB136, PLR1730 - MicroPython code: % formatting, inline compares
# in place with frombuffer. Tested on real ulab 6.12 firmware (tests/embedded/test_ulab.py:
# MicroPython 1.25 unix builds with ulab in 2-D and 4-D float32, float64, and without reverse
# operators), on 1-D/2-D arrays (ULAB_MAX_DIMS = 2, the common build):
#   ulab.numpy: frombuffer, array, zeros, dot, maximum, clip, tanh, mean, dtypes float /
#   int8 / uint8; ndarray: reshape, slicing with steps, slice assignment, in-place + - * /
#   with broadcasting (any dtype on the right: read in place, no converted copy), // and % on
#   uint8, comparisons, the buffer protocol.
# What ulab does that the code relies on (code/ndarray.c, numpy/transform.c):
# - assigning floats into an int8 array rounds half away from zero (roundf) and wraps beyond
#   the int8 range: quantize clamps first, then assigns;
# - `dot` reads int8 operands itself and returns a new float array, so int8 weights and inputs
#   are never widened into float copies;
# - every operation allocates: a result or view header (128 bytes on a 64-bit port, about half
#   on a 32-bit board), its data, and three small shape/stride vectors per binary operator
#   (a scalar operand becomes a 1-element array too); a slice assignment first copies its
#   right-hand side converted to the target's dtype. So the kernels use few, large operations:
#   in-place operators on views of the runtime's buffers, results placed through memoryviews
#   (no copy), temporaries bounded by one output row of a conv/pool, QSTEP elements or a dense
#   chunk's rows;
# - the ndarray is always the left operand: firmware built with
#   MICROPY_PY_REVERSE_SPECIAL_METHODS=0 (ESP8266 and other small ports) has no `1.0 - a`;
# - single-precision firmware only: `np.float` must view array('f') memory. Double-precision
#   firmware (PYBD_SF6, several NUCLEO/STM32F7 boards) raises ImportError here, and the tier
#   choice falls back to native or pure (`ember_micro.info()` says so).
from ulab import numpy as np

name = "ulab"
STEP = 256  # elements per elementwise step: temporaries of at most 1 KB
QSTEP = 4 * STEP  # quantize's step: its temporaries are byte masks and int8 (1 KB)
# a streamed layer's chunk (Model's `chunk`, bytes): a dot and its placement cost ~0.2 KB of
# garbage per chunk, so this tier streams in chunks twice the other tiers' size
CHUNK = 16384
PATCH_BYTES = 8192  # a conv row's gathered input patch, when groups == 1 (else per tap)
# the loader allocates the patch once with its other large buffers (SCRATCH, reserve): made at
# each conv call, 8 KB could find no contiguous room in a heap fragmented by the call's
# temporaries, at heap sizes where the model otherwise runs
SCRATCH = PATCH_BYTES
_patch = [None]


def reserve(buf):
    _patch[0] = buf

if np.zeros(1, dtype=np.float).itemsize != 4:
    raise ImportError("ulab tier needs single-precision float firmware (this ulab's float "
                      "is %d bytes; array('f') buffers can't be viewed)"
                      % np.zeros(1, dtype=np.float).itemsize)


def _has_out():
    # ulab builds with ULAB_MATH_FUNCTIONS_OUT_KEYWORD accept out= on tanh, exp...; others
    # raise TypeError for the keyword
    z = np.zeros(1, dtype=np.float)
    try:
        np.tanh(z, out=z)
        return True
    except TypeError:
        return False


OUT = _has_out()


def _tanh_inplace(v):
    if OUT:
        np.tanh(v, out=v)
    else:
        v[:] = np.tanh(v)


def _f(buf, n, off=0):
    return np.frombuffer(buf, dtype=np.float, count=n, offset=4 * off)


def _b(buf, n, off=0):
    return np.frombuffer(buf, dtype=np.int8, count=n, offset=off)


def _act_inplace(v, code):
    # v: a float ndarray (a temporary or a view into a runtime buffer), changed in place
    if code == 1:  # multiply by the 0/1 mask in place: a byte per value instead of a float
        v *= v > 0.0  # (NaN stays NaN as in the other tiers; -inf would become NaN, not 0)
    elif code == 2:
        v[:] = np.clip(v, 0.0, 6.0)
    elif code == 3:  # sigmoid(v) = tanh(v / 2) / 2 + 1/2: no division by an ndarray
        v *= 0.5
        _tanh_inplace(v)
        v *= 0.5
        v += 0.5
    elif code == 4:
        _tanh_inplace(v)
    elif code == 5:  # hardswish: v * clip(v + 3, 0, 6) / 6
        t = np.clip(v + 3.0, 0.0, 6.0)
        t *= v
        t *= 1.0 / 6.0
        v[:] = t


def act(x, n, code):
    if code == 0:
        return
    v = _f(x, n)
    for lo in range(0, n, STEP):
        hi = lo + STEP if lo + STEP < n else n
        _act_inplace(v[lo:hi], code)


def load_u8(x, data, n, mul, add):
    # zero, then add the uint8 view in place (converted element by element, no float copy),
    # then scale and shift in place: four operations whatever n
    v = _f(x, n)
    v[:] = 0.0
    v += np.frombuffer(data, dtype=np.uint8, count=n)
    v *= mul
    v += add


def copy(dst, src, n):
    # float32 buffers (array('f')), through memoryviews: no ndarray, no copy of src
    memoryview(dst)[:n] = memoryview(src)[:n]


def add(x, y, n):
    v = _f(x, n)
    v += _f(y, n)


def quantize(xq, x, n, inv_scale):
    # round half away from zero, saturating at +-127, NaN -> 0 (as the other tiers). x is
    # scaled in place (the runtime never reads a layer's float input again after quantising
    # it); NaN and saturation through boolean-index assignment (byte masks); then the slice
    # assignment converts to int8, rounding half away from zero (ulab's roundf)
    v = _f(x, n)
    q = _b(xq, n)
    v *= inv_scale
    for lo in range(0, n, QSTEP):
        hi = lo + QSTEP if lo + QSTEP < n else n
        t = v if n <= QSTEP else v[lo:hi]
        t[t != t] = 0.0
        t[t > 127.0] = 127.0
        t[t < -127.0] = -127.0
        if n <= QSTEP:
            q[:] = t
        else:
            q[lo:hi] = t


def dequant(wf, codes, c0, nrows, row_len, scales, s0, block, wdtype):
    # weight-only rows to floats (layout in _pure.dequant), the chunk's rows at once as one
    # (nrows, row_len) view: zeroed, the codes added in place (read element by element, no
    # float copy); int4: low nibbles (byte % 16) into the even columns, high nibbles
    # (byte // 16) into the odd ones, minus 8; then the block scales, in one operation when
    # the row is one block or whole blocks, else one per block column
    nb = (row_len + block - 1) // block
    o = _f(wf, nrows * row_len).reshape((nrows, row_len))
    o[:, :] = 0.0
    if wdtype == 2:
        o += _b(codes, nrows * row_len, c0).reshape((nrows, row_len))
    else:
        rb = (row_len + 1) >> 1
        u = np.frombuffer(codes, dtype=np.uint8, count=nrows * rb,
                          offset=c0).reshape((nrows, rb))
        even = o[:, 0::2]
        even += u % 16
        if row_len > 1:
            odd = o[:, 1::2]
            odd += (u // 16)[:, :row_len >> 1]
        o -= 8.0
    s = _f(scales, nrows * nb, s0).reshape((nrows, nb))
    if nb == 1:
        o *= s
    elif row_len == nb * block:
        v = o.reshape((nrows * nb, block))
        v *= s.reshape((nrows * nb, 1))
    else:
        for b in range(nb):
            v = o[:, b * block:(b + 1) * block]
            v *= s[:, b:b + 1]


# The views of one weighted layer, kept from its first chunk of rows to its last: a streamed
# layer comes in dozens of chunks (the MNIST MLP's f32 hidden layer: 64 of 2 rows), and fresh
# views per chunk were most of its garbage. Dropped after the layer's last row, so no buffer
# outlives its model through this cache. Callers give a layer's rows in order from row 0
# (model.py and tune.py do): scale, bias and activation run once, after the last row.
_layer = None  # [w, x, out, nrows, (nrows, nin) weights, input, output, next row, output
# memoryview]


def _views(out, o0, x, w, nrows, nin, rows, q):
    global _layer
    c = _layer
    if o0 == 0:
        c = [w, x, out, nrows,
             (_b(w, nrows * nin) if q else _f(w, nrows * nin)).reshape((nrows, nin)),
             _b(x, nin) if q else _f(x, nin), _f(out, rows), 0, memoryview(out)]
        _layer = c
    elif c is None or c[0] is not w or c[1] is not x or c[2] is not out or c[7] != o0:
        _layer = None
        raise ValueError("ulab dense: a layer's rows come in order from row 0 (got row %d)"
                         % o0)
    elif nrows > c[3]:
        c[3] = nrows
        c[4] = (_b(w, nrows * nin) if q else _f(w, nrows * nin)).reshape((nrows, nin))
    c[7] = o0 + nrows
    return c


def _dense(out, o0, x, w, nrows, nin, bias, mult, act_code, q):
    rows = len(mult) if mult is not None else (len(bias) if bias is not None else 0)
    if not rows:  # rows unknown (no bias, no scale): epilogue per chunk, fresh views
        w2 = (_b(w, nrows * nin) if q else _f(w, nrows * nin)).reshape((nrows, nin))
        _dense_rows(out, o0, np.dot(w2, _b(x, nin) if q else _f(x, nin)), nrows, bias,
                    mult, act_code)
        return
    c = _views(out, o0, x, w, nrows, nin, rows, q)
    w2 = c[4] if nrows == c[3] else c[4][:nrows]
    # the raw dot per chunk, placed through a memoryview (a slice assignment would copy it);
    # scale, bias and activation once over the layer's output
    c[8][o0:o0 + nrows] = memoryview(np.dot(w2, c[5]))
    if o0 + nrows < rows:
        return
    global _layer
    _layer = None
    o = c[6]
    if mult is not None:
        o *= _f(mult, rows)
    if bias is not None:
        o += _f(bias, rows)
    if act_code:
        for lo in range(0, rows, STEP):
            _act_inplace(o if rows <= STEP else o[lo:lo + STEP], act_code)


def _dense_rows(out, o0, y, n, bias, mult, act_code):
    if mult is not None:
        y *= _f(mult, n, o0)
    if bias is not None:
        y += _f(bias, n, o0)
    _act_inplace(y, act_code)
    _f(out, n, o0)[:] = y


def dense(out, o0, x, w, nrows, nin, bias, act_code):
    _dense(out, o0, x, w, nrows, nin, bias, None, act_code, False)


def dense_q(out, o0, xq, wq, nrows, nin, bias, mult, act_code):
    # int8 x int8 straight into dot (float result, one value per row): no widened copies;
    # the caller's chunk (resident block or streamed rows) bounds nrows
    _dense(out, o0, xq, wq, nrows, nin, bias, mult, act_code, True)


def _cols(lo_pad, k, size, stride, n_out):
    # output columns whose input column ox*stride - pad + k lies inside [0, size)
    a = lo_pad - k
    lo = 0 if a <= 0 else (a + stride - 1) // stride
    b = size - 1 + lo_pad - k
    hi = -1 if b < 0 else b // stride
    if hi > n_out - 1:
        hi = n_out - 1
    return lo, hi


def _taps(g, oy, every=False):
    # the kernel taps (ky, kx) of output row oy that read inside the input: output columns
    # lo..hi take the flat (C, H*W) input columns start:stop:sw. `every`: the taps that read
    # only padding too, with lo > hi
    _, h, wd, _, _, ow, kh, kw, sh, sw, ph, pw, _ = g
    for ky in range(kh):
        iy = oy * sh - ph + ky
        inside = 0 <= iy < h
        if not (inside or every):
            continue
        for kx in range(kw):
            lo, hi = _cols(pw, kx, wd, sw, ow) if inside else (1, 0)
            if lo <= hi:
                yield ky, kx, lo, hi, iy * wd + lo * sw - pw + kx, iy * wd + hi * sw - pw + kx + 1
            elif every:
                yield ky, kx, 1, 0, 0, 0


def _epilogue(out2, acc, m, b, oc0, noc, oy, ow, act_code):
    if m is not None:
        acc *= m
    if b is not None:
        acc += b
    _act_inplace(acc, act_code)
    out2[oc0:oc0 + noc, oy * ow:(oy + 1) * ow] = acc


def _conv_patch(out2, x2, w2, m, b, g, oc0, noc, act_code, q):
    # groups == 1: per output row, gather the (ksz, ow) input patch into one scratch array
    # (one strided assignment per tap: rows tap, tap + kk, ... are the channels) and take a
    # single dot with the (noc, ksz) weights; the dot's result is the row's only new array
    cin, _, _, _, oh, ow, kh, kw, _, sw, _, _, _ = g
    kk = kh * kw
    buf = _patch[0]
    if buf is None:  # no loader reserved it (the kernels called on their own)
        patch = np.zeros((cin * kk, ow), dtype=np.int8 if q else np.float)
    else:  # every entry is written for each row below: no need to clear it
        patch = (_b(buf, cin * kk * ow) if q else _f(buf, cin * kk * ow)).reshape((cin * kk, ow))
    for oy in range(oh):
        for ky, kx, lo, hi, start, stop in _taps(g, oy, True):
            t = ky * kw + kx
            if lo > hi:  # the whole row of this tap is padding
                patch[t::kk, :] = 0
                continue
            patch[t::kk, lo:hi + 1] = x2[:, start:stop:sw]
            if lo > 0:
                patch[t::kk, :lo] = 0
            if hi < ow - 1:
                patch[t::kk, hi + 1:] = 0
        _epilogue(out2, np.dot(w2, patch), m, b, oc0, noc, oy, ow, act_code)


def _conv(out, x2, w2, bias, mult, g, oc0, noc, act_code, q):
    # x2 (cin, H*W) and w2 (noc, ksz) are views of the runtime's buffers, float or int8 (q)
    cin, _, _, cout, oh, ow, kh, kw, _, sw, _, _, groups = g
    cin_g = cin // groups
    cout_g = cout // groups
    kk = kh * kw
    out2 = _f(out, cout * oh * ow).reshape((cout, oh * ow))
    depthwise = cin_g == 1 and cout_g == 1
    b = None if bias is None else _f(bias, noc, oc0).reshape((noc, 1))
    m = None if mult is None else _f(mult, noc, oc0).reshape((noc, 1))
    if groups == 1 and cin * kk * ow * (1 if q else 4) <= PATCH_BYTES:
        _conv_patch(out2, x2, w2, m, b, g, oc0, noc, act_code, q)
        return
    # grouped, depthwise or a patch too big: per output row one (noc, ow) accumulator plus
    # one dot (or product) per tap
    for oy in range(oh):
        acc = np.zeros((noc, ow), dtype=np.float)
        for ky, kx, lo, hi, start, stop in _taps(g, oy):
            wk = w2[:, ky * kw + kx::kk]  # (noc, cin_g)
            if depthwise:
                xs = x2[oc0:oc0 + noc, start:stop:sw]
                # int8 * int8 would stay int8 (and wrap) in ulab: widen the row, not the layer
                t = np.array(xs, dtype=np.float) if q else xs * 1.0
                t *= wk
                a = acc[:, lo:hi + 1]
                a += t
                continue
            r = 0
            while r < noc:
                grp = (oc0 + r) // cout_g
                end = min(noc, (grp + 1) * cout_g - oc0)
                xs = x2[grp * cin_g:(grp + 1) * cin_g, start:stop:sw]
                a = acc[r:end, lo:hi + 1]
                a += np.dot(wk[r:end], xs)
                r = end
        _epilogue(out2, acc, m, b, oc0, noc, oy, ow, act_code)


def conv(out, x, w, bias, g, oc0, noc, act_code):
    cin, h, wd = g[0], g[1], g[2]
    ksz = (cin // g[12]) * g[6] * g[7]
    _conv(out, _f(x, cin * h * wd).reshape((cin, h * wd)),
          _f(w, noc * ksz).reshape((noc, ksz)), bias, None, g, oc0, noc, act_code, False)


def conv_q(out, xq, wq, bias, mult, g, oc0, noc, act_code):
    cin, h, wd = g[0], g[1], g[2]
    ksz = (cin // g[12]) * g[6] * g[7]
    _conv(out, _b(xq, cin * h * wd).reshape((cin, h * wd)),
          _b(wq, noc * ksz).reshape((noc, ksz)), bias, mult, g, oc0, noc, act_code, True)


def pool(out, x, g, kind):
    c, h, wd, _, oh, ow, kh, kw, _, sw, _, _, _ = g
    x2 = _f(x, c * h * wd).reshape((c, h * wd))
    out2 = _f(out, c * oh * ow).reshape((c, oh * ow))
    for oy in range(oh):
        o = out2[:, oy * ow:(oy + 1) * ow]
        if _pool_row_inplace(o, x2, g, oy, kind):
            continue
        row = np.zeros((c, ow), dtype=np.float)
        if kind == 0:
            row -= 3.4e38
        cnt = np.zeros(ow, dtype=np.float)
        for _, _, lo, hi, start, stop in _taps(g, oy):
            xs = x2[:, start:stop:sw]
            if kind == 0:
                row[:, lo:hi + 1] = np.maximum(row[:, lo:hi + 1], xs)
            else:
                a = row[:, lo:hi + 1]
                a += xs
                n = cnt[lo:hi + 1]
                n += 1.0
        if kind == 1:
            row *= 1.0 / (kh * kw)
        elif kind == 2:
            row /= cnt
        o[:, :] = row


def _pool_row_inplace(o, x2, g, oy, kind):
    # when every tap of output row oy covers all its columns (no column padding, the usual
    # pool), work in the output row itself: no accumulator, one fewer array per tap
    ow, kh, kw, sw = g[5], g[6], g[7], g[9]
    n = 0
    for _, _, lo, hi, _, _ in _taps(g, oy):
        if lo != 0 or hi != ow - 1:
            return False
        n += 1
    if n == 0:
        return False
    first = True
    for _, _, _, _, start, stop in _taps(g, oy):
        xs = x2[:, start:stop:sw]
        if first:
            o[:, :] = xs
            first = False
        elif kind == 0:
            o[:, :] = np.maximum(o, xs)
        else:
            o += xs
    if kind == 1:
        o *= 1.0 / (kh * kw)
    elif kind == 2:
        o *= 1.0 / n
    return True


def gap(out, x, c, hw):
    _f(out, c)[:] = np.mean(_f(x, c * hw).reshape((c, hw)), axis=1)
