"""Pooling and resizing: ``max_pool1d/2d``, ``avg_pool1d/2d``, ``adaptive_avg_pool1d/2d``,
``interpolate`` (PyTorch's signatures and output sizes)."""

from __future__ import annotations

import math

from .. import dtype as dt
from ..shape import pool_output_size
from ..errors import ShapeError, UnsupportedOpError
from ..tensor import Tensor
from .functional_util import as_input, batched, check_float, ints, result, unbatch


def _pool_args(op, nd, input, kernel_size, stride, padding, dilation, ceil_mode,
               codes: bool = False):
    x, unbatched = batched(op, as_input(input, op), nd)
    if not (codes and x.dtype in (dt.int8, dt.uint8)):
        check_float(op, x)
    kernel = ints(op, "kernel_size", kernel_size, nd, 1)
    stride = (
        kernel
        if stride is None or stride == () or stride == []
        else ints(op, "stride", stride, nd, 1)
    )
    padding = ints(op, "padding", padding, nd, 0)
    dilation = ints(op, "dilation", dilation, nd, 1)
    if any(2 * p > k for p, k in zip(padding, kernel)):
        raise ValueError(f"{op}: padding {padding} must be at most half of kernel_size {kernel}")
    out = tuple(
        pool_output_size(*a, bool(ceil_mode))
        for a in zip(x.shape[2:], kernel, stride, padding, dilation)
    )
    if any(o < 1 for o in out):
        raise ShapeError(
            f"{op}: input {x.shape} is too small for kernel {kernel} with padding {padding} "
            f"and dilation {dilation}: output size would be {out}"
        )
    return x, unbatched, kernel, stride, padding, dilation


def _max_pool(
    op, nd, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices
) -> Tensor:
    if return_indices:
        raise UnsupportedOpError(f"{op}: return_indices=True is not supported yet")
    x, unbatched, kernel, stride, padding, dilation = _pool_args(
        op, nd, input, kernel_size, stride, padding, dilation, ceil_mode, codes=True
    )
    # int8 codes between quantized layers: max pooling runs on them as they are, but padding
    # (-inf) needs floats (exact for codes)
    codes = x.dtype if x.dtype in (dt.int8, dt.uint8) and any(padding) else None
    if codes is not None:
        x = x.float()
    prim = x.backend.max_pool(x._prim, kernel, stride, padding, dilation, bool(ceil_mode))
    y = result(x, prim)
    return unbatch(y if codes is None else y.to(codes), unbatched)


def max_pool1d(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
) -> Tensor:
    """Max over sliding windows of (N, C, L); ``stride`` defaults to ``kernel_size``, padding
    counts as -inf.

    >>> import ember
    >>> from ember.nn import functional as F
    >>> F.max_pool1d(ember.tensor([[[1.0, 3.0, 2.0, 5.0, 4.0]]]), 2).tolist()
    [[[3.0, 5.0]]]
    """
    return _max_pool(
        "max_pool1d", 1, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices
    )


def max_pool2d(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
) -> Tensor:
    """Max over sliding windows of (N, C, H, W) (float, or int8/uint8 codes: the int8
    activations between ``ember.quantize``'s layers, whose order is their values' order).

    >>> import ember
    >>> from ember.nn import functional as F
    >>> F.max_pool2d(ember.ones(1, 1, 5, 5), 2, ceil_mode=True).shape
    (1, 1, 3, 3)
    """
    return _max_pool(
        "max_pool2d", 2, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices
    )


def _avg_pool(
    op, nd, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override=None
) -> Tensor:
    x, unbatched, kernel, stride, padding, _ = _pool_args(
        op, nd, input, kernel_size, stride, padding, 1, ceil_mode
    )
    if divisor_override is not None and (
        not isinstance(divisor_override, int) or divisor_override == 0
    ):
        raise ValueError(f"{op}: divisor_override must be a non-zero int, got {divisor_override!r}")
    prim = x.backend.avg_pool(
        x._prim, kernel, stride, padding, bool(ceil_mode), bool(count_include_pad), divisor_override
    )
    return unbatch(result(x, prim), unbatched)


def avg_pool1d(
    input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True
) -> Tensor:
    """Mean over sliding windows of (N, C, L).

    >>> import ember
    >>> from ember.nn import functional as F
    >>> F.avg_pool1d(ember.tensor([[[1.0, 3.0, 2.0, 6.0]]]), 2).tolist()
    [[[2.0, 4.0]]]
    """
    return _avg_pool(
        "avg_pool1d", 1, input, kernel_size, stride, padding, ceil_mode, count_include_pad
    )


def avg_pool2d(
    input,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode=False,
    count_include_pad=True,
    divisor_override=None,
) -> Tensor:
    """Mean over sliding windows of (N, C, H, W); ``count_include_pad=False`` leaves the zero
    padding out of each window's divisor.

    >>> import ember
    >>> from ember.nn import functional as F
    >>> F.avg_pool2d(ember.ones(1, 1, 4, 4), 2).tolist()
    [[[[1.0, 1.0], [1.0, 1.0]]]]
    """
    return _avg_pool(
        "avg_pool2d",
        2,
        input,
        kernel_size,
        stride,
        padding,
        ceil_mode,
        count_include_pad,
        divisor_override,
    )


def _adaptive(op: str, nd: int, input, output_size) -> Tensor:
    x, unbatched = batched(op, as_input(input, op), nd)
    check_float(op, x)
    if isinstance(output_size, int) or output_size is None:
        output_size = (output_size,) * nd
    output_size = tuple(output_size)
    if len(output_size) == 1:
        output_size *= nd
    if len(output_size) != nd:
        raise ShapeError(f"{op}: output_size must have {nd} entries, got {output_size}")
    # None keeps that dim's input size (PyTorch)
    size = tuple(s if o is None else o for o, s in zip(output_size, x.shape[2:]))
    if not all(isinstance(o, int) and o >= 1 for o in size):
        raise ValueError(f"{op}: output_size must be positive ints, got {output_size}")
    if any(s == 0 for s in x.shape[2:]):
        raise ShapeError(f"{op}: input {x.shape} has an empty spatial dim")
    prim = x.backend.adaptive_avg_pool(x._prim, size)
    return unbatch(result(x, prim), unbatched)


def adaptive_avg_pool1d(input, output_size) -> Tensor:
    """Average (N, C, L) down (or up) to ``output_size`` with PyTorch's adaptive windows.

    >>> import ember
    >>> from ember.nn import functional as F
    >>> F.adaptive_avg_pool1d(ember.tensor([[[1.0, 2.0, 3.0, 4.0, 5.0]]]), 2).tolist()
    [[[2.0, 4.0]]]
    """
    return _adaptive("adaptive_avg_pool1d", 1, input, output_size)


def adaptive_avg_pool2d(input, output_size) -> Tensor:
    """Average (N, C, H, W) to ``output_size`` (int, pair, or None entries to keep a dim).

    >>> import ember
    >>> from ember.nn import functional as F
    >>> F.adaptive_avg_pool2d(ember.ones(2, 3, 7, 5), 1).shape
    (2, 3, 1, 1)
    """
    return _adaptive("adaptive_avg_pool2d", 2, input, output_size)


_LINEAR = {"linear": 1, "bilinear": 2, "trilinear": 3}
_MODES = ("nearest", "nearest-exact", "linear", "bilinear", "trilinear", "area")


def interpolate(
    input,
    size=None,
    scale_factor=None,
    mode="nearest",
    align_corners=None,
    recompute_scale_factor=None,
    antialias=False,
) -> Tensor:
    """Resize the spatial dims of (N, C, *spatial) to ``size`` or by ``scale_factor``.

    Modes: 'nearest', 'nearest-exact', 'linear' (3-d input), 'bilinear' (4-d), 'trilinear'
    (5-d) and 'area' (adaptive average pooling). Coordinates follow PyTorch, including its
    use of ``scale_factor`` (not the rounded sizes) unless ``recompute_scale_factor=True``.

    >>> import ember
    >>> from ember.nn import functional as F
    >>> x = ember.tensor([[[0.0, 1.0]]])
    >>> F.interpolate(x, size=3, mode="linear", align_corners=True).tolist()
    [[[0.0, 0.5, 1.0]]]
    """
    op = "interpolate"
    x = as_input(input, op)
    if mode not in _MODES:
        raise ValueError(f"{op}: mode must be one of {', '.join(_MODES)}, got {mode!r}")
    if antialias:
        raise UnsupportedOpError(f"{op}: antialias=True is not supported")
    if x.ndim < 3:
        raise ShapeError(f"{op}: expected a batched input (N, C, *spatial), got shape {x.shape}")
    nd = x.ndim - 2
    if mode in _LINEAR and _LINEAR[mode] != nd:
        raise ShapeError(
            f"{op}: mode '{mode}' needs a {_LINEAR[mode] + 2}-d input, got shape {x.shape}"
        )
    if mode not in _LINEAR and align_corners is not None:
        raise ValueError(
            f"{op}: align_corners can only be set with the linear modes "
            f"(linear, bilinear, trilinear), not '{mode}'"
        )
    check_float(op, x)
    if (size is None) == (scale_factor is None):
        raise ValueError(f"{op}: give exactly one of size or scale_factor")
    spatial = x.shape[2:]
    scales = None
    if size is not None:
        out = ints(op, "size", size, nd, 1)
    else:
        factors = (
            (scale_factor,) * nd if isinstance(scale_factor, (int, float)) else tuple(scale_factor)
        )
        if len(factors) != nd or not all(isinstance(f, (int, float)) and f > 0 for f in factors):
            raise ValueError(
                f"{op}: scale_factor must be a positive number or {nd} of them, got "
                f"{scale_factor!r}"
            )
        out = tuple(math.floor(s * f) for s, f in zip(spatial, factors))
        if any(o < 1 for o in out):
            raise ShapeError(f"{op}: scale_factor {scale_factor} shrinks {spatial} to {out}")
        scales = None if recompute_scale_factor else tuple(float(f) for f in factors)
    if any(s == 0 for s in spatial):
        raise ShapeError(f"{op}: input {x.shape} has an empty spatial dim")
    b = x.backend
    if mode == "area":
        return result(x, b.adaptive_avg_pool(x._prim, out))
    align = bool(align_corners) if mode in _LINEAR else None
    return result(x, b.interpolate(x._prim, out, mode, align, scales))
