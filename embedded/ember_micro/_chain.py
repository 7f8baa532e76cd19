# Integer chains for the pure tier: int8 layers that hand int8 values to the next int8 layer.
# ruff: noqa: PLR1730 - MicroPython code: inline compares
# On MicroPython every float the pure tier computes is a heap object (16 bytes on ports with
# the usual object model), but small ints (31 bits on 32-bit ports) are not. When an int8
# layer's output only passes through ReLU/ReLU6 and max pooling before the next int8 layer
# quantises it, the float step in between is unnecessary: quantising is monotone, so it
# commutes with max, ReLU and ReLU6, and the layer can emit the next layer's int8 input
# straight from its integer accumulator (requantisation in integers: clamp, multiply, shift).
# The rounding is that of the float path to within 2^-20 of a quantisation step (ties round
# half away from zero as on every tier); where the bounds below don't hold, the layer keeps
# the float path.
#
# Per producing layer, `req` is array('i'): [qmin, qmax] then per output row
# [lo, hi, c0, MH, ML, K, O, S]: acc is clamped to [lo, hi] (beyond, the value saturates
# anyway); with d = acc - c0, t = d * MH + d * ML / 2^K + O (rounded) is the value in the
# next layer's quantisation steps times 2^S: the multiplier r * 2^S = MH + ML / 2^K in two
# parts, d * ML in two halves of d (_pure._requant), so that r keeps ~17 more bits than one
# small-int product allows; |t| < 2^29 and every product < 2^30: all stay small ints.
from array import array

from .format import ACT, CONV2D, LINEAR, MAXPOOL

ROW = 8  # ints per output row in req
SMALL = 1 << 29  # |t| bound: small ints are 31-bit signed on 32-bit ports
ACC_MAX = (1 << 30) - 1  # |acc| bound, so that partial sums stay small ints
MAX_SHIFT = 24
MAX_FRAC = 17  # bits of ML: (2^SPLIT - 1) * ML < 2^30
SPLIT = 12


def _floor(v):
    i = int(v)
    return i - 1 if v < i else i


def _clamp(v, a):
    return -a if v < -a else (a if v > a else v)


def round_code(v, lo, hi):
    # ember.contract.rounding.round_code, the one rounding of every tier: MicroPython can't
    # import ember, so this copy is held to it bit for bit by tests/unit/test_rounding.py.
    # Half away from zero, clamped to the ints [lo, hi], NaN -> 0; v - int(v) is exact, so
    # single-precision firmware rounds as double does (int(v + 0.5) takes 0.49999997 to 1)
    if v != v:
        return 0
    if v <= lo:
        return lo
    if v >= hi:
        return hi
    t = int(v)
    f = v - t
    return t + 1 if f >= 0.5 else (t - 1 if f <= -0.5 else t)


def _row(r, bq, acc_max):
    # the ROW ints of one output row, or None when they wouldn't stay small ints
    if not (0.0 < r < 1e30) or bq != bq or not (-1e30 < bq < 1e30):
        return None
    # accumulators only reach +-acc_max: the bounds are clamped there (as floats, before int)
    lo = _floor(_clamp((-127.5 - bq) / r - 1.0, acc_max))
    hi = _floor(_clamp((127.5 - bq) / r + 1.0, acc_max)) + 1
    c0 = round_code(-bq / r, -acc_max, acc_max)
    c0 = lo if c0 < lo else (hi if c0 > hi else c0)
    d = hi - c0 if hi - c0 > c0 - lo else c0 - lo
    # r * 2^S = MH + ML / 2^K, and d * ML is taken in two halves (d = dh * 2^SPLIT + dl,
    # 0 <= dl < 2^SPLIT) so that each product stays a small int while ML keeps K <= 17 bits:
    # r is carried to ~2^-17 of MH's unit, the precision of float32 arithmetic on the values
    k = MAX_FRAC
    while k > SPLIT and (((d >> SPLIT) + 1) << k) >= ACC_MAX:
        k -= 1
    if k <= SPLIT:  # _pure._requant rounds the high half at bit K - SPLIT - 1
        return None
    e = c0 * r + bq
    s = MAX_SHIFT
    while s >= 0:
        big = 1 << s
        # checked as floats first: converting a float beyond the small ints to int would make
        # a long int (or raise OverflowError on firmware without them)
        if r * big * (d + 1) < SMALL and -SMALL < e * big < SMALL:
            mh = _floor(r * big)
            ml = round_code((r * big - mh) * (1 << k), 0, 1 << k)
            if ml >= 1 << k:
                mh, ml = mh + 1, ml - (1 << k)
            o = round_code(e * big, -SMALL, SMALL)
            if d * mh + d + 2 + (o if o >= 0 else -o) < SMALL:
                return lo, hi, c0, mh, ml, k, o, s
        s -= 1
    return None


def requant(L, nxt_inv, qmin, qmax):
    """The req array turning L's int32 accumulators into the next layer's int8 inputs, or
    None when some row can't be done in small ints."""
    acc_max = L.row_len * 127 * 127
    if acc_max > ACC_MAX:
        return None
    req = array("i", [0] * (2 + ROW * L.rows))
    req[0], req[1] = qmin, qmax
    for c in range(L.rows):
        bq = L.bias[c] * nxt_inv if L.bias is not None else 0.0
        row = _row(L.mult[c] * nxt_inv, bq, acc_max)
        if row is None:
            return None
        for j in range(ROW):
            req[2 + ROW * c + j] = row[j]
    return req


def _clamp_for(code, inv, qmin, qmax):
    # ReLU / ReLU6 after quantising: max(q, 0), min(q, quantise(6))
    if code == 1 or code == 2:
        qmin = 0
    if code == 2:
        q6 = 6.0 * inv
        q6 = round_code(q6, 0, 127)
        qmax = q6 if q6 < qmax else qmax
    return qmin, qmax


def _candidate(layers, i):
    # (consumer index, ReLU codes on the way) when layer i's output reaches an int8 layer
    # through ReLU/ReLU6/max pooling only
    L = layers[i]
    if not ((L.op == LINEAR or L.op == CONV2D) and L.wdtype and L.act in (0, 1, 2)):
        return None
    codes = [L.act]
    j = i + 1
    while j < len(layers) and (layers[j].op == MAXPOOL or
                               (layers[j].op == ACT and layers[j].act in (1, 2))):
        if layers[j].op == ACT:
            codes.append(layers[j].act)
        j += 1
    if j == len(layers) or layers[j].op not in (LINEAR, CONV2D) or not layers[j].wdtype:
        return None
    return j, codes


def _route(layers, max_qin):
    # where the int8 values of a full run land, as Model.forward moves them: a layer that
    # quantises float input writes buffer 0 (the model's, max_qin bytes); a chain's producer
    # and its max pools write the buffer their input isn't in. Returns (size buffer 1 needs,
    # None) or (0, index of a producer whose values would overflow buffer 0)
    need = 0
    where = -1  # -1: the values are floats
    for i in range(len(layers)):
        L = layers[i]
        if L.op == LINEAR or L.op == CONV2D:
            if L.wdtype and where < 0:
                where = 0
            if L.req is None:
                where = -1
                continue
            producer = i
        elif L.op != MAXPOOL or where < 0:
            continue
        where = 1 - where
        if where == 1:
            need = L.n_out if L.n_out > need else need
        elif L.n_out > max_qin:
            return 0, producer
    return need, None


def bound(layers):
    """The most int8 values the chains plan() may form can leave in the second int8 buffer:
    the largest output of a candidate producer or of the max pools after it. Needs only the
    layer records, so the loader allocates the buffer before the weights."""
    most = 0
    for i in range(len(layers)):
        c = _candidate(layers, i)
        if c is None:
            continue
        for k in range(i, c[0]):
            n = layers[k].n_out
            most = n if n > most else most
    return most


def plan(layers, max_qin):
    """Give each int8 layer whose output reaches the next int8 layer through ReLU/ReLU6/max
    pooling only a `req` and `chain_end` (the consumer's index). Returns the size of the second
    int8 buffer the chains need (the first is the model's quantised-input buffer, max_qin; a
    chain whose values wouldn't fit it stays on the float path)."""
    for i in range(len(layers)):
        c = _candidate(layers, i)
        if c is None:
            continue
        j, codes = c
        inv = 1.0 / layers[j].in_scale
        qmin, qmax = -127, 127
        for code in codes:
            qmin, qmax = _clamp_for(code, inv, qmin, qmax)
        req = requant(layers[i], inv, qmin, qmax)
        if req is not None:
            layers[i].req = req
            layers[i].chain_end = j
    while True:
        need, bad = _route(layers, max_qin)
        if bad is None:
            return need
        layers[bad].req = None
