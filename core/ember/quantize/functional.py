"""``qlinear`` and ``qconv2d``: the quantized ops on tensors (checked here, run by the
backend's ``qlinear``/``qconv`` op; semantics in :mod:`ember.contract.quantized`).

>>> import ember
>>> from ember.quantize.functional import qlinear
>>> x = ember.tensor([[1.0, -2.0]])
>>> w = ember.tensor([[3, 4]], dtype=ember.int8)
>>> one = ember.tensor([1.0])
>>> qlinear(x, w, one, None, ember.tensor([0.5])).tolist()  # codes 2, -4; 6 - 16 = -10
[[-5.0]]
"""

from __future__ import annotations

from .. import dtype as dt
from ..errors import DTypeError, ShapeError
from ..ops._dispatch import check_float
from ..ops.creation import zeros
from ..tensor import Tensor, check_same_backend


def _check(op: str, x: Tensor, weight: Tensor, w_scale: Tensor, bias, in_scale: Tensor) -> None:
    check_float(op, x, ("w_scale", w_scale), ("bias", bias), ("in_scale", in_scale))
    if weight.dtype != dt.int8:
        raise DTypeError(f"{op}: weight must be int8 codes, got {weight.dtype}")
    check_same_backend(op, x, weight)
    c_out = weight.shape[0]
    if w_scale.shape != (c_out,):
        raise ShapeError(f"{op}: w_scale must have shape ({c_out},), got {w_scale.shape}")
    if bias is not None and bias.shape != (c_out,):
        raise ShapeError(f"{op}: bias must have shape ({c_out},), got {bias.shape}")
    if in_scale.shape != (1,):
        raise ShapeError(f"{op}: in_scale must have shape (1,), got {in_scale.shape}")


def qlinear(x: Tensor, weight: Tensor, w_scale: Tensor, bias: Tensor | None,
            in_scale: Tensor, unsigned: bool = False) -> Tensor:
    """Quantized ``x @ weight.T + bias``: ``x`` (..., K) float, ``weight`` (N, K) int8 codes,
    ``w_scale`` (N,) and ``in_scale`` (1,) their scales (the input is quantized here, to
    codes 0..255 when ``unsigned``)."""
    _check("qlinear", x, weight, w_scale, bias, in_scale)
    if bias is None:  # the op takes tensors only
        bias = zeros(weight.shape[0], dtype=x.dtype, backend=x.backend)
    if weight.ndim != 2 or x.ndim < 1 or x.shape[-1] != weight.shape[1]:
        raise ShapeError(f"qlinear: input {x.shape} and weight {weight.shape} don't fit "
                         "(need (..., K) and (N, K))")
    b = x.backend
    op = b.qlinear_u8 if unsigned else b.qlinear
    prim = op(x._prim, weight._prim, w_scale._prim, bias._prim, in_scale._prim)
    return Tensor(prim, b)


def qconv2d(x: Tensor, weight: Tensor, w_scale: Tensor, bias: Tensor | None, in_scale: Tensor,
            stride: tuple[int, int], padding: tuple[tuple[int, int], ...],
            dilation: tuple[int, int], groups: int, unsigned: bool = False) -> Tensor:
    """Quantized 2-d convolution: ``x`` (N, C, H, W) float, ``weight`` (C_out, C / groups,
    kh, kw) int8 codes; ``padding`` is one ``(before, after)`` pair per spatial dim;
    ``unsigned``: input codes 0..255."""
    _check("qconv2d", x, weight, w_scale, bias, in_scale)
    if x.ndim != 4 or weight.ndim != 4 or weight.shape[1] * groups != x.shape[1]:
        raise ShapeError(f"qconv2d: input {x.shape} and weight {weight.shape} with "
                         f"groups={groups} don't fit (need (N, C, H, W) and "
                         "(C_out, C / groups, kh, kw))")
    for size, k, (lo, hi), d in zip(x.shape[2:], weight.shape[2:], padding, dilation):
        if size + lo + hi < d * (k - 1) + 1:
            raise ShapeError(f"qconv2d: input {x.shape} padded by {padding} is smaller than "
                             f"the kernel {weight.shape[2:]}")
    b = x.backend
    op = b.qconv_u8 if unsigned else b.qconv
    prim = op(x._prim, weight._prim, w_scale._prim, None if bias is None else bias._prim,
              in_scale._prim, tuple(stride), tuple(tuple(p) for p in padding),
              tuple(dilation), groups)
    return Tensor(prim, b)
