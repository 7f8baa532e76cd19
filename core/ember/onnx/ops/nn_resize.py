"""Resize and Upsample: separable, one axis at a time.

Nearest gathers rows (exact for integers); linear and cubic (with antialias and
exclude_outside) build an ``out × in`` weight matrix per axis in Python and apply it with a
matmul, which covers every coordinate mode with one code path.
"""

from __future__ import annotations

import math

import ember

from ... import limits
from ...errors import ShapeError
from . import op
from ._util import const, floats, ints


def _orig(x, out_len, in_len, scale, mode, roi_start, roi_end):
    if mode == "half_pixel":
        return (x + 0.5) / scale - 0.5
    if mode == "half_pixel_symmetric":
        adj = out_len / (scale * in_len)
        center = in_len / 2
        return center * (1 - adj) + (x + 0.5) / scale - 0.5
    if mode == "pytorch_half_pixel":
        return (x + 0.5) / scale - 0.5 if out_len > 1 else 0.0
    if mode == "align_corners":
        return x * (in_len - 1) / (out_len - 1) if out_len > 1 else 0.0
    if mode == "asymmetric":
        return x / scale
    if mode == "tf_crop_and_resize":
        if out_len > 1:
            return roi_start * (in_len - 1) + x * (roi_end - roi_start) * (in_len - 1) / (
                out_len - 1)
        return 0.5 * (roi_start + roi_end) * (in_len - 1)
    raise ember.UnsupportedOpError(f"Resize: coordinate_transformation_mode '{mode}'")


def _nearest(v, mode, down):
    if mode == "round_prefer_floor":
        return math.ceil(v - 0.5) if v != math.floor(v) + 0.5 else math.floor(v)
    if mode == "round_prefer_ceil":
        return math.floor(v + 0.5)
    if mode == "floor":
        return math.floor(v)
    return math.ceil(v)


def _coeffs(kind, ratio, scale, a, antialias):
    s = min(scale, 1.0) if antialias else 1.0
    if kind == "linear":
        start = int(math.floor(-1 / s) + 1)
        offs = list(range(start, 2 - start))
        c = [max(0.0, 1 - abs((o - ratio) * s)) for o in offs]
    else:
        start = int(math.floor(-2 / s) + 1)
        offs = list(range(start, 2 - start))

        def k(t):
            t = abs(t)
            if t <= 1:
                return (a + 2) * t ** 3 - (a + 3) * t ** 2 + 1
            if t < 2:
                return a * t ** 3 - 5 * a * t ** 2 + 8 * a * t - 4 * a
            return 0.0

        c = [k(s * (o - ratio)) for o in offs]
    total = sum(c)
    return offs, [v / total for v in c]


def _resize_axis(x, ax, out_len, scale, p):
    in_len = x.shape[ax]
    mode = p["coordinate_transformation_mode"]
    # align_corners uses the unrounded resized length (in_len * scale) like ONNX's reference
    xs = [_orig(i, in_len * scale if mode == "align_corners" and p["from_scales"] else out_len,
                in_len, scale, mode, p["roi"][0], p["roi"][1])
          for i in range(out_len)]
    outside = [mode == "tf_crop_and_resize" and (v < 0 or v > in_len - 1) for v in xs]
    if p["mode"] == "nearest":
        idx = [min(max(_nearest(v, p["nearest_mode"], scale < 1), 0), in_len - 1) for v in xs]
        y = ember.index_select(x, ax, const(p["ctx"], idx, ember.int64))
    else:
        rows = []
        for v in xs:
            base = math.floor(v)
            offs, cs = _coeffs(p["mode"], v - base, scale, p["cubic_coeff_a"], p["antialias"])
            row = [0.0] * in_len
            taps = [(base + o, c) for o, c in zip(offs, cs)]
            if p["exclude_outside"]:
                taps = [(j, c) for j, c in taps if 0 <= j < in_len]
                t = sum(c for _, c in taps) or 1.0
                taps = [(j, c / t) for j, c in taps]
            for j, c in taps:
                row[min(max(j, 0), in_len - 1)] += c
            rows.append(row)
        w = const(p["ctx"], rows, ember.float64 if x.dtype == ember.float64 else ember.float32)
        xm = x.movedim(ax, -1)
        y = ember.matmul(xm.astype(w.dtype), w.permute(1, 0)).movedim(-1, ax).astype(x.dtype)
    if any(outside):
        shape = [1] * x.ndim
        shape[ax] = out_len
        mask = const(p["ctx"], outside, ember.bool).reshape(shape)
        y = ember.where(mask, ember.full_like(y, p["extrapolation_value"]), y)
    return y


def _check_output(x, ax, sizes, mode) -> None:
    """Before anything is allocated: the output against ``max_tensor_bytes`` and, for linear
    and cubic, each axis's ``out × in`` weight matrix (built in Python) against
    ``max_folded_elements``, the budget of constants ember builds itself."""
    shape = list(x.shape)
    for a, n in zip(ax, sizes):
        if not 0 <= n:
            raise ShapeError(f"Resize: output size {n} along axis {a} of input {tuple(x.shape)}"
                             "; sizes and scales must give sizes >= 0")
        if mode in ("linear", "cubic"):
            limits.check(ShapeError, f"Resize: a {n}×{x.shape[a]} weight matrix for axis {a}",
                         n * x.shape[a], "max_folded_elements")
        shape[a] = n
    limits.check(ShapeError, f"Resize: an output of shape {tuple(shape)} from "
                 f"{tuple(x.shape)}", math.prod(shape) * x.dtype.itemsize, "max_tensor_bytes")


@op("Resize")
def resize(ctx, x, roi=None, scales=None, sizes=None, antialias=0, axes=None,
           coordinate_transformation_mode="half_pixel", cubic_coeff_a=-0.75, exclude_outside=0,
           extrapolation_value=0.0, keep_aspect_ratio_policy="stretch", mode="nearest",
           nearest_mode="round_prefer_floor"):
    ax = [a + x.ndim if a < 0 else a for a in axes] if axes is not None else list(range(x.ndim))
    roi_v = floats(roi) if roi is not None and roi.numel() else None
    sc = floats(scales) if scales is not None and scales.numel() else None
    sz = ints(sizes) if sizes is not None and sizes.numel() else None
    if sz is not None:
        if keep_aspect_ratio_policy != "stretch":
            f = (min if keep_aspect_ratio_policy == "not_larger" else max)(
                s / x.shape[a] for a, s in zip(ax, sz))
            sc = [f] * len(ax)
            sz = [math.floor(x.shape[a] * f + 0.5) for a in ax]
        else:
            sc = [s / x.shape[a] for a, s in zip(ax, sz)]
    else:
        sz = [math.floor(x.shape[a] * s) for a, s in zip(ax, sc)]
    _check_output(x, ax, sz, mode)
    p = {"ctx": ctx, "from_scales": sizes is None or not sizes.numel(),
         "coordinate_transformation_mode": coordinate_transformation_mode,
         "cubic_coeff_a": cubic_coeff_a, "exclude_outside": exclude_outside,
         "extrapolation_value": extrapolation_value, "nearest_mode": nearest_mode,
         "antialias": antialias, "mode": mode if mode in ("cubic", "linear") else "nearest"}
    n = len(ax)
    for i, (a, out_len, s) in enumerate(zip(ax, sz, sc)):
        if out_len == x.shape[a] and s == 1.0 and coordinate_transformation_mode != (
                "tf_crop_and_resize"):
            continue
        p["roi"] = (roi_v[i], roi_v[i + n]) if roi_v else (0.0, 1.0)
        if roi_v and len(roi_v) == 2 * x.ndim:
            p["roi"] = (roi_v[a], roi_v[a + x.ndim])
        x = _resize_axis(x, a, out_len, s, p)
    return x


@op("Upsample")
def upsample(ctx, x, scales_in=None, mode="nearest", scales=None):
    sc = floats(scales_in) if scales_in is not None else scales
    m = "linear" if mode in ("linear", "bilinear") else "nearest"
    return resize(ctx, x, None, const(ctx, sc, ember.float32), None,
                  coordinate_transformation_mode="asymmetric", mode=m, nearest_mode="floor")
