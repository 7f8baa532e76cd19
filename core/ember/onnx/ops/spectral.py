"""Spectral ops: DFT (forward, inverse, one-sided, inverse of one-sided), STFT and
MelWeightMatrix.

A transform of length N is two matmuls against N x K cosine and sine tables (built once per
call in float64 by Python's math, then cast): O(N*K) per signal, on any backend; the sizes ONNX
models use for audio front ends (N <= 2048) stay small.
"""

from __future__ import annotations

import math

import ember

from .._types import onnx_dtype
from . import op
from ._util import const, scalar


def _tables(ctx, n: int, bins: int, sign: float, dtype, scale: float = 1.0):
    """cos and sign*sin of 2 pi k j / n (times ``scale``) for j < n (rows), k < bins."""
    cos = [[math.cos(2 * math.pi * k * j / n) * scale for k in range(bins)] for j in range(n)]
    sin = [[sign * math.sin(2 * math.pi * k * j / n) * scale for k in range(bins)]
           for j in range(n)]
    return const(ctx, cos, dtype), const(ctx, sin, dtype)


def _fit(t, n: int):
    """``t`` cut or zero-padded to ``n`` along its last dim."""
    have = t.shape[-1]
    if have >= n:
        return t[..., :n]
    pad = ember.zeros(*t.shape[:-1], n - have, dtype=t.dtype, backend=t.backend)
    return ember.cat([t, pad], dim=-1)


def dft_last(ctx, re, im, n: int, inverse: bool, onesided: bool):
    """The DFT of ``re + i im`` along the last dim: (real, imaginary) parts, or only the real
    signal for the inverse of a one-sided spectrum. Sums run in float64 where the backend has
    it (as numpy's FFT does), so a round trip gives back exact values."""
    out = re.dtype
    dt = ember.float64 if ember.float64 in re.backend.caps.dtypes else out
    re = re.astype(dt)
    im = im.astype(dt) if im is not None else None
    y_re, y_im = _dft(ctx, re, im, n, inverse, onesided, dt)
    return y_re.astype(out), (y_im.astype(out) if y_im is not None else None)


def _dft(ctx, re, im, n: int, inverse: bool, onesided: bool, dt):
    if inverse and onesided:  # Hermitian spectrum of a real signal: bins 1..n/2-1 count twice
        bins = n // 2 + 1
        w = [1.0 if k == 0 or 2 * k == n else 2.0 for k in range(bins)]
        cos, sin = _tables_weighted(ctx, n, bins, w, dt)  # rows: bins, columns: samples
        re, im = _fit(re, bins), _fit(im, bins) if im is not None else None
        y = re @ cos - (im @ sin if im is not None else 0.0)
        return y, None
    bins = n // 2 + 1 if onesided else n
    cos, sin = _tables(ctx, n, bins, 1.0 if inverse else -1.0, dt, 1.0 / n if inverse else 1.0)
    re = _fit(re, n)
    out_re, out_im = re @ cos, re @ sin
    if im is not None:
        im = _fit(im, n)
        out_re, out_im = out_re - im @ sin, out_im + im @ cos
    return out_re, out_im


def _tables_weighted(ctx, n: int, bins: int, w: list, dtype):
    """bins x n tables w_k cos(2 pi k j / n) / n and w_k sin(...) / n for the inverse of a
    one-sided spectrum."""
    cos = [[w[k] * math.cos(2 * math.pi * k * j / n) / n for j in range(n)] for k in range(bins)]
    sin = [[w[k] * math.sin(2 * math.pi * k * j / n) / n for j in range(n)] for k in range(bins)]
    return const(ctx, cos, dtype), const(ctx, sin, dtype)


@op("DFT")
def dft(ctx, x, dft_length=None, axis_input=None, axis=None, inverse=0, onesided=0):
    # opset 17-19: axis is an attribute (default 1); opset 20+: an input (default -2)
    a = int(scalar(axis_input)) if axis_input is not None else (
        axis if axis is not None else (1 if ctx.opset < 20 else -2))
    a = a % x.ndim
    re = x[..., 0].movedim(a, -1)
    im = x[..., 1].movedim(a, -1) if x.shape[-1] == 2 else None
    size = x.shape[a]
    n = int(scalar(dft_length)) if dft_length is not None else (
        2 * (size - 1) if inverse and onesided else size)
    y_re, y_im = dft_last(ctx, re, im, n, bool(inverse), bool(onesided))
    parts = [y_re] if y_im is None else [y_re, y_im]
    return ember.stack([p.movedim(-1, a) for p in parts], dim=-1)


@op("STFT")
def stft(ctx, signal, frame_step, window=None, frame_length=None, onesided=1):
    step = int(scalar(frame_step))
    length = int(scalar(frame_length)) if frame_length is not None else window.shape[0]
    frames = (signal.shape[1] - length) // step + 1
    re = ember.stack([signal[:, f * step:f * step + length, 0] for f in range(frames)], dim=1)
    im = (ember.stack([signal[:, f * step:f * step + length, 1] for f in range(frames)], dim=1)
          if signal.shape[-1] == 2 else None)
    if window is not None:
        re = re * window
        im = im * window if im is not None else None
    y_re, y_im = dft_last(ctx, re, im, length, False, bool(onesided))
    return ember.stack([y_re, y_im], dim=-1)


@op("MelWeightMatrix")
def mel_weight_matrix(ctx, num_mel_bins, dft_length, sample_rate, lower_edge_hertz,
                      upper_edge_hertz, output_datatype=1):
    """Triangular mel filters over the bins of a one-sided spectrum: (dft_length/2+1, mels)."""
    mels, n, rate = int(scalar(num_mel_bins)), int(scalar(dft_length)), int(scalar(sample_rate))

    def to_mel(hz):
        return 2595 * math.log1p(hz / 700) / math.log(10)

    lo, hi = to_mel(float(scalar(lower_edge_hertz))), to_mel(float(scalar(upper_edge_hertz)))
    step = (hi - lo) / (mels + 2)
    edges = [int(((n + 1) * 700 * math.expm1((i * step + lo) / 2595 * math.log(10))) // rate)
             for i in range(mels + 2)]
    out = [[0.0] * mels for _ in range(n // 2 + 1)]
    for i in range(mels):
        left, centre, right = edges[i:i + 3]
        if centre == left:
            out[centre][i] = 1.0
        for j in range(left, centre + 1 if centre > left else left):
            out[j][i] = (j - left) / (centre - left)
        for j in range(centre, right):
            out[j][i] = (right - j) / (right - centre)
    return const(ctx, out, onnx_dtype(output_datatype, "MelWeightMatrix"))
