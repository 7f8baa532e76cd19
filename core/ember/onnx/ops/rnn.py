"""Recurrent layers: RNN, GRU, LSTM (all directions, both layouts, peepholes, clip)."""

from __future__ import annotations

import ember

from . import op

_ACTS = {
    "tanh": lambda x, a, b: ember.tanh(x),
    "sigmoid": lambda x, a, b: ember.sigmoid(x),
    "relu": lambda x, a, b: ember.maximum(x, ember.zeros_like(x)),
    "hardsigmoid": lambda x, a, b: ember.clamp(x * a + b, 0.0, 1.0),
    "leakyrelu": lambda x, a, b: ember.where(x >= 0, x, x * a),
    "affine": lambda x, a, b: x * a + b,
    "softsign": lambda x, a, b: x / (1 + ember.abs(x)),
    "softplus": lambda x, a, b: ember.log1p(ember.exp(x)),
    "elu": lambda x, a, b: ember.where(x > 0, x, a * (ember.exp(x) - 1)),
    "scaledtanh": lambda x, a, b: a * ember.tanh(b * x),
}
_DEFAULT_ALPHA = {"hardsigmoid": 0.2, "leakyrelu": 0.01, "elu": 1.0, "affine": 1.0,
                  "scaledtanh": 1.0}
_DEFAULT_BETA = {"hardsigmoid": 0.5, "scaledtanh": 1.0}


def _acts(names, alphas, betas, n_per_dir, defaults, ndir):
    names = names or defaults * ndir
    alphas, betas = list(alphas or []), list(betas or [])
    out = []
    for name in names:
        key = name.lower()
        a = alphas.pop(0) if alphas and key in _DEFAULT_ALPHA else _DEFAULT_ALPHA.get(key, 0)
        b = betas.pop(0) if betas and key in _DEFAULT_BETA else _DEFAULT_BETA.get(key, 0)
        fn = _ACTS[key]
        out.append(lambda x, fn=fn, a=a, b=b: fn(x, a, b))
    return [out[i * n_per_dir:(i + 1) * n_per_dir] for i in range(ndir)]


def _run(cell, x, w, r, b, h0, c0, p, direction, hidden, layout, gates, acts, clip, seq_lens):
    """The recurrence, one direction at a time. The input projection of every step (and the
    biases that add to it) is one matmul over the whole sequence; each step then runs only
    what depends on the previous state."""
    if layout:
        x = x.permute(1, 0, 2)
        h0 = h0.permute(1, 0, 2) if h0 is not None else None
        c0 = c0.permute(1, 0, 2) if c0 is not None else None
    steps, batch = x.shape[:2]
    ndir = 2 if direction == "bidirectional" else 1
    ys, hs, cs = [], [], []
    for d in range(ndir):
        reverse = direction == "reverse" or d == 1
        rd = r[d].permute(1, 0)
        wb, rb = (b[d][:gates * hidden], b[d][gates * hidden:]) if b is not None else (None, None)
        xw = ember.matmul(x, w[d].permute(1, 0))  # (steps, batch, gates * hidden)
        if wb is not None:  # GRU keeps the recurrent bias apart (it is inside the reset gate)
            xw = xw + (wb if gates == 3 else wb + rb)
        h = h0[d] if h0 is not None else ember.zeros(batch, hidden, dtype=x.dtype,
                                                     backend=x.backend)
        c = c0[d] if c0 is not None else ember.zeros_like(h)
        pd = p[d] if p is not None else None
        out = [None] * steps
        order = range(steps - 1, -1, -1) if reverse else range(steps)
        for t in order:
            h, c = cell(xw[t], h, c, rd, rb, pd, acts[d], clip, hidden)
            out[t] = h
        ys.append(ember.stack(out, dim=0))
        hs.append(h)
        cs.append(c)
    y = ember.stack(ys, dim=1)  # seq, dir, batch, hidden
    yh, yc = ember.stack(hs, dim=0), ember.stack(cs, dim=0)
    if layout:
        y, yh, yc = y.permute(2, 0, 1, 3), yh.permute(1, 0, 2), yc.permute(1, 0, 2)
    return y, yh, yc


def _clip(v, clip):
    return ember.clamp(v, -clip, clip) if clip is not None else v


def _rnn_cell(xw, h, c, r, rb, p, acts, clip, hidden):
    return acts[0](_clip(xw + ember.matmul(h, r), clip)), c


def _gru_cell(xw, h, c, r, rb, p, acts, clip, hidden, linear_before_reset=False):
    """``xw``: the step's input projection with its bias; ``rb``: the recurrent bias."""
    f, g = acts
    if linear_before_reset:  # one matmul for the three gates
        hr = ember.matmul(h, r)
        if rb is not None:
            hr = hr + rb
        rz, hh = hr[:, :2 * hidden], hr[:, 2 * hidden:]
    else:
        rz = ember.matmul(h, r[:, :2 * hidden])
        if rb is not None:
            rz = rz + rb[:2 * hidden]
    zr = f(_clip(xw[:, :2 * hidden] + rz, clip))  # the update and reset gates at once
    z, rr = zr[:, :hidden], zr[:, hidden:]
    if not linear_before_reset:
        hh = ember.matmul(rr * h, r[:, 2 * hidden:])
        if rb is not None:
            hh = hh + rb[2 * hidden:]
        n = g(_clip(xw[:, 2 * hidden:] + hh, clip))
    else:
        n = g(_clip(xw[:, 2 * hidden:] + rr * hh, clip))
    return n + z * (h - n), c  # (1 - z) * n + z * h


def _gru_cell_lbr(*args):
    return _gru_cell(*args, linear_before_reset=True)


def _lstm_cell(xw, h, c, r, rb, p, acts, clip, hidden):
    f, g, hact = acts
    gates = xw + ember.matmul(h, r)
    gc = gates[:, 3 * hidden:]
    if p is None:  # input, output and forget gates through one call of f
        iof = f(_clip(gates[:, :3 * hidden], clip))
        i, o, fg = iof[:, :hidden], iof[:, hidden:2 * hidden], iof[:, 2 * hidden:]
        cn = fg * c + i * g(_clip(gc, clip))
        return o * hact(cn), cn
    gi, go, gf = (gates[:, k * hidden:(k + 1) * hidden] for k in range(3))
    i = f(_clip(gi + p[:hidden] * c, clip))
    fg = f(_clip(gf + p[2 * hidden:] * c, clip))
    cn = fg * c + i * g(_clip(gc, clip))
    o = f(_clip(go + p[hidden:2 * hidden] * cn, clip))
    return o * hact(cn), cn


def _common(x, w, direction, layout, hidden_size):
    ndir = 2 if direction == "bidirectional" else 1
    return ndir, hidden_size or w.shape[1] // 1


@op("RNN")
def rnn(ctx, x, w, r, b=None, seq_lens=None, h0=None, activation_alpha=None,
        activation_beta=None, activations=None, clip=None, direction="forward",
        hidden_size=None, layout=0):
    ndir = 2 if direction == "bidirectional" else 1
    hidden = hidden_size or r.shape[-1]
    acts = _acts(activations, activation_alpha, activation_beta, 1, ["Tanh"], ndir)
    y, yh, _ = _run(_rnn_cell, x, w, r, b, h0, None, None, direction, hidden, layout, 1, acts,
                    clip, seq_lens)
    return y, yh


@op("GRU")
def gru(ctx, x, w, r, b=None, seq_lens=None, h0=None, activation_alpha=None,
        activation_beta=None, activations=None, clip=None, direction="forward",
        hidden_size=None, layout=0, linear_before_reset=0):
    ndir = 2 if direction == "bidirectional" else 1
    hidden = hidden_size or r.shape[-1]
    acts = _acts(activations, activation_alpha, activation_beta, 2, ["Sigmoid", "Tanh"], ndir)
    cell = _gru_cell_lbr if linear_before_reset else _gru_cell
    y, yh, _ = _run(cell, x, w, r, b, h0, None, None, direction, hidden, layout, 3, acts, clip,
                    seq_lens)
    return y, yh


@op("LSTM")
def lstm(ctx, x, w, r, b=None, seq_lens=None, h0=None, c0=None, p=None, activation_alpha=None,
         activation_beta=None, activations=None, clip=None, direction="forward",
         hidden_size=None, input_forget=0, layout=0):
    ndir = 2 if direction == "bidirectional" else 1
    hidden = hidden_size or r.shape[-1]
    acts = _acts(activations, activation_alpha, activation_beta, 3,
                 ["Sigmoid", "Tanh", "Tanh"], ndir)
    return _run(_lstm_cell, x, w, r, b, h0, c0, p, direction, hidden, layout, 4, acts, clip,
                seq_lens)
