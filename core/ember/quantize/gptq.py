"""GPTQ weight rounding: each weight rounded in turn, the error it leaves pushed onto the
weights not yet rounded, so that the layer's *output* on the calibration inputs moves as
little as possible (Frantar et al., 2023, "GPTQ"; the Optimal Brain Quantizer of Frantar &
Alistarh, 2022), instead of each weight rounded to its nearest code on its own.

The layer's inputs enter only through ``H = sum x xᵀ`` over the calibration positions
(:class:`Hessian`, one per layer, accumulated by the calibration pass); a convolution's
"inputs" are its patches, one ``H`` per group (a depthwise convolution has one small ``H``
per channel). All of it is numpy at quantization time.

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> x = rng.standard_normal((512, 16)) @ rng.standard_normal((16, 16))  # correlated inputs
>>> w = rng.standard_normal((8, 16))
>>> h = Hessian()
>>> h.add_rows(x)
>>> scale = np.abs(w).max(axis=1) / 7                                     # int4 codes
>>> near = np.clip(np.round(w / scale[:, None]), -7, 7)
>>> codes, _ = gptq_codes(w, h.matrix(), scale[:, None], 7)
>>> def err(c):
...     return float(np.sum(((c * scale[:, None] - w) @ x.T) ** 2))
>>> bool(err(codes) < err(near))
True
"""

from __future__ import annotations

from ..contract.rounding import round_codes_np

#: positions (rows of patches) sampled per calibration batch and group: enough for ``H``
MAX_POSITIONS = 8192
#: columns rounded between two updates of the rest (the "lazy batch" of GPTQ)
COLUMN_BLOCK = 64


class Hessian:
    """``sum x xᵀ`` of a layer's inputs over the calibration data, per group, in float64.

    ``add_rows`` takes rows of inputs (a Linear's, or patches); ``add_conv`` a Conv2d's
    input batch (N, C, H, W) with its geometry.
    """

    def __init__(self):
        self.h = None
        self.count = 0

    def add_rows(self, rows, groups: int = 1) -> None:
        """``rows``: (P, K) inputs of one group, or (G, P, K) of ``G`` groups."""
        import numpy as np

        x = np.asarray(rows, dtype=np.float64)
        if x.ndim == 2:
            x = x[None]
        x = np.where(np.isfinite(x), x, 0.0)
        h = np.matmul(x.transpose(0, 2, 1), x)  # BLAS (einsum's loop is far slower)
        self.h = h if self.h is None else self.h + h
        self.count += x.shape[1]

    def add_conv(self, x, kernel, stride, pads, dilation, groups: int) -> None:
        """A Conv2d's input ``x`` (N, C, H, W): its patches (``pads``: (before, after) pairs),
        at most :data:`MAX_POSITIONS` output positions per group, evenly spread."""
        import numpy as np
        from numpy.lib.stride_tricks import sliding_window_view

        x = np.asarray(x, dtype=np.float32)
        n, c = x.shape[:2]
        (kh, kw), (sh, sw), (dh, dw) = kernel, stride, dilation
        xp = np.pad(x, ((0, 0), (0, 0), *pads))
        span = (dh * (kh - 1) + 1, dw * (kw - 1) + 1)
        win = sliding_window_view(xp, span, axis=(2, 3))[:, :, ::sh, ::sw, ::dh, ::dw]
        oh, ow = win.shape[2:4]
        step = 1
        while n * -(-oh // step) * -(-ow // step) > MAX_POSITIONS:
            step += 1
        win = win[:, :, ::step, ::step]
        p = win.shape[0] * win.shape[2] * win.shape[3]
        cg = c // groups
        patches = win.reshape(n, groups, cg, win.shape[2], win.shape[3], kh, kw)
        patches = patches.transpose(1, 0, 3, 4, 2, 5, 6).reshape(groups, p, cg * kh * kw)
        self.add_rows(patches)

    def matrix(self):
        """``H`` averaged over the positions seen: (G, K, K) (G = 1 but for grouped convs)."""
        return self.h / max(self.count, 1)


def gptq_codes(w, h, scale, top: int, block: int | None = None, damp: float = 0.01,
               search: bool = False):
    """``(codes, scale)``: GPTQ's codes for the weights ``w`` (G·R, K) — ``R`` rows per group
    of ``h`` (G, K, K) — in ``-top..top`` (int4: -8..7, :func:`.weights.low_code`).

    ``scale``: (G·R, 1) one scale per row (kept), or with ``block`` None and a per-block
    scheme the scales are chosen as the rounding reaches each ``block`` of columns, from the
    weights as GPTQ has updated them (returned (G·R, ceil(K / block)), float32): max |w| /
    ``top``, or with ``search`` the least-squared-error one (:func:`.weights.block_scales`).
    ``damp``: added to ``H``'s diagonal, as a fraction of its mean (inputs never seen, or
    fewer positions than ``K``, leave ``H`` singular).
    """
    import numpy as np

    from .weights import block_scales, low_code

    h = np.array(h, dtype=np.float64)
    g, k, _ = h.shape
    w = np.array(w, dtype=np.float64).reshape(g, -1, k)
    idx = np.arange(k)
    diag = h[:, idx, idx]
    h[:, idx, idx] += damp * diag.mean(axis=1, keepdims=True) + (diag <= 0)
    u = np.linalg.cholesky(np.linalg.inv(h)).transpose(0, 2, 1)  # H⁻¹ = Uᵀ U, U upper
    fixed = block is None
    s = np.asarray(scale, dtype=np.float64).reshape(g, -1, 1) if fixed else None
    width = COLUMN_BLOCK if fixed else block
    scales = []
    q = np.empty_like(w)
    for b in range(0, k, width):
        e = min(b + width, k)
        part = w[:, :, b:e].copy()
        if not fixed:
            s = block_scales(part, top, search).astype(np.float64)[:, :, None]
            scales.append(s[:, :, 0])
        errs = np.empty_like(part)
        for j in range(e - b):
            col = part[:, :, j:j + 1]
            code = round_codes_np(col / s, low_code(top), top)
            q[:, :, b + j] = code[:, :, 0]
            err = (col - code * s) / u[:, b + j, b + j].reshape(g, 1, 1)
            part[:, :, j:] -= err * u[:, None, b + j, b + j:e]
            errs[:, :, j] = err[:, :, 0]
        w[:, :, e:] -= errs @ u[:, b:e, e:]
    codes = q.reshape(-1, k).astype(np.int8)
    if fixed:
        return codes, np.asarray(scale, dtype=np.float32).reshape(len(codes), -1)
    return codes, np.stack(scales, axis=2).reshape(len(codes), -1).astype(np.float32)
