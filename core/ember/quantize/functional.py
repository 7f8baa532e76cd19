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

from collections.abc import Callable

from .. import dtype as dt
from ..errors import DTypeError, ShapeError
from ..contract.quantized import CODE_DTYPES, codes_dtype
from ..ops._dispatch import check_float
from ..ops.creation import zeros
from ..tensor import Tensor, check_same_backend


def _check_layer(op: str, weight: Tensor, w_scale: Tensor, bias, in_scale: Tensor,
                 out_scale=None) -> None:
    """The layer's own tensors: float scales and bias of one dtype, int8 weight codes, their
    shapes, one backend."""
    check_float(op, w_scale, ("bias", bias), ("in_scale", in_scale), ("out_scale", out_scale))
    if weight.dtype != dt.int8:
        raise DTypeError(f"{op}: weight must be int8 codes, got {weight.dtype}")
    check_same_backend(op, w_scale, weight)
    c_out = weight.shape[0]
    if w_scale.shape != (c_out,):
        raise ShapeError(f"{op}: w_scale must have shape ({c_out},), got {w_scale.shape}")
    if bias is not None and bias.shape != (c_out,):
        raise ShapeError(f"{op}: bias must have shape ({c_out},), got {bias.shape}")
    for name, scale in (("in_scale", in_scale), ("out_scale", out_scale)):
        if scale is not None and scale.shape != (1,):
            raise ShapeError(f"{op}: {name} must have shape (1,), got {scale.shape}")


def _check_input(op: str, x: Tensor, w_scale: Tensor) -> None:
    """``x``: codes from the layer before (int8/uint8), or floats of the scales' dtype, on
    their backend."""
    if x.dtype not in CODE_DTYPES:
        check_float(op, x, ("w_scale", w_scale))
    check_same_backend(op, x, w_scale)


def _out_range(op: str, out_range) -> tuple[int, int]:
    try:
        lo, hi = (int(v) for v in out_range)
        codes_dtype(lo, hi)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{op}: out_range must be (lo, hi) in [-127, 127] (int8 codes) or "
                         f"[0, 255] (uint8 codes), got {out_range!r}") from e
    return lo, hi


def qlinear(x: Tensor, weight: Tensor, w_scale: Tensor, bias: Tensor | None,
            in_scale: Tensor, unsigned: bool = False, out_scale: Tensor | None = None,
            out_range: tuple[int, int] = (-127, 127)) -> Tensor:
    """Quantized ``x @ weight.T + bias``: ``x`` (..., K) float, ``weight`` (N, K) int8 codes,
    ``w_scale`` (N,) and ``in_scale`` (1,) their scales (the input is quantized here, to
    codes 0..255 when ``unsigned``; an int8/uint8 ``x`` is codes already). With
    ``out_scale`` (1,) the result is codes at that scale clamped to ``out_range`` (uint8
    when its low end is >= 0), the next quantized layer's input.

    >>> import ember
    >>> x = ember.tensor([[1.0, -2.0]])
    >>> w = ember.tensor([[3, 4]], dtype=ember.int8)
    >>> one = ember.tensor([1.0])
    >>> y = qlinear(x, w, one, None, one, out_scale=ember.tensor([2.0]), out_range=(0, 255))
    >>> y.tolist(), y.dtype.name  # -5 / 2 clamps at code 0
    ([[0]], 'uint8')
    """
    return qlinear_op(weight, w_scale, bias, in_scale, unsigned, out_scale, out_range)(x)


def qlinear_op(weight: Tensor, w_scale: Tensor, bias: Tensor | None, in_scale: Tensor,
               unsigned: bool = False, out_scale: Tensor | None = None,
               out_range: tuple[int, int] = (-127, 127)) -> Callable[[Tensor], Tensor]:
    """:func:`qlinear` as a function of its input alone: the layer's tensors are checked
    once, here, and each call checks only ``x`` (a quantized layer keeps this while its
    buffers stay the same: a small layer runs in a few microseconds of Python).

    >>> import ember
    >>> w = ember.tensor([[3, 4]], dtype=ember.int8)
    >>> one = ember.tensor([1.0])
    >>> run = qlinear_op(w, one, None, ember.tensor([0.5]))
    >>> run(ember.tensor([[1.0, -2.0]])).tolist()  # codes 2, -4; 6 - 16 = -10
    [[-5.0]]
    """
    _check_layer("qlinear", weight, w_scale, bias, in_scale, out_scale)
    if weight.ndim != 2:
        raise ShapeError(f"qlinear: weight must be (N, K), got {weight.shape}")
    if bias is None:  # the op takes tensors only
        bias = zeros(weight.shape[0], dtype=w_scale.dtype, backend=weight.backend)
    k = weight.shape[1]
    if out_scale is not None:
        lo, hi = _out_range("qlinear", out_range)
        op, tail = "qlinear_q", (bool(unsigned), lo, hi)
    else:
        op, tail = ("qlinear_u8" if unsigned else "qlinear"), ()
    tensors = (weight, w_scale, bias, in_scale) + (() if out_scale is None else (out_scale,))

    def run(x: Tensor) -> Tensor:
        _check_input("qlinear", x, w_scale)
        if x.ndim < 1 or x.shape[-1] != k:
            raise ShapeError(f"qlinear: input {x.shape} and weight {weight.shape} don't fit "
                             "(need (..., K) and (N, K))")
        # the op and prims looked up now: ember.jit traces through the backend's methods,
        # and an in-place change of a buffer is seen
        b = x.backend
        return Tensor(getattr(b, op)(x._prim, *(t._prim for t in tensors), *tail), b)

    return run


def qconv2d(x: Tensor, weight: Tensor, w_scale: Tensor, bias: Tensor | None, in_scale: Tensor,
            stride: tuple[int, int], padding: tuple[tuple[int, int], ...],
            dilation: tuple[int, int], groups: int, unsigned: bool = False,
            out_scale: Tensor | None = None,
            out_range: tuple[int, int] = (-127, 127)) -> Tensor:
    """Quantized 2-d convolution: ``x`` (N, C, H, W) float (or int8/uint8 codes), ``weight``
    (C_out, C / groups, kh, kw) int8 codes; ``padding`` is one ``(before, after)`` pair per
    spatial dim; ``unsigned``: input codes 0..255; ``out_scale``/``out_range``: codes out,
    as :func:`qlinear`.

    >>> import ember
    >>> x = ember.tensor([[[[1, 2], [3, 4]]]], dtype=ember.uint8)  # codes
    >>> w = ember.tensor([[[[1]]]], dtype=ember.int8)
    >>> half = ember.tensor([0.5])
    >>> qconv2d(x, w, half, None, half, (1, 1), ((0, 0), (0, 0)), (1, 1), 1).tolist()
    [[[[0.25, 0.5], [0.75, 1.0]]]]
    """
    return qconv2d_op(weight, w_scale, bias, in_scale, stride, padding, dilation, groups,
                      unsigned, out_scale, out_range)(x)


def qconv2d_op(weight: Tensor, w_scale: Tensor, bias: Tensor | None, in_scale: Tensor,
               stride: tuple[int, int], padding: tuple[tuple[int, int], ...],
               dilation: tuple[int, int], groups: int, unsigned: bool = False,
               out_scale: Tensor | None = None, out_range: tuple[int, int] = (-127, 127)
               ) -> Callable[[Tensor], Tensor]:
    """:func:`qconv2d` as a function of its input alone (the layer's tensors checked once,
    as :func:`qlinear_op`).

    >>> import ember
    >>> w = ember.tensor([[[[2]]]], dtype=ember.int8)
    >>> one = ember.tensor([1.0])
    >>> run = qconv2d_op(w, one, None, one, (1, 1), ((0, 0), (0, 0)), (1, 1), 1)
    >>> run(ember.tensor([[[[1.0, -3.0]]]])).tolist()
    [[[[2.0, -6.0]]]]
    """
    _check_layer("qconv2d", weight, w_scale, bias, in_scale, out_scale)
    if weight.ndim != 4:
        raise ShapeError(f"qconv2d: weight must be (C_out, C / groups, kh, kw), got "
                         f"{weight.shape}")
    geometry = (tuple(stride), tuple(tuple(p) for p in padding), tuple(dilation), groups)
    tensors = [weight, w_scale, bias, in_scale]
    if out_scale is not None:
        lo, hi = _out_range("qconv2d", out_range)
        if bias is None:
            tensors[2] = zeros(weight.shape[0], dtype=w_scale.dtype, backend=weight.backend)
        tensors.append(out_scale)
        op, tail = "qconv_q", (*geometry, bool(unsigned), lo, hi)
    else:
        op, tail = ("qconv_u8" if unsigned else "qconv"), geometry
    channels = weight.shape[1] * groups
    spans = [d * (k - 1) + 1 for k, d in zip(weight.shape[2:], dilation)]

    def run(x: Tensor) -> Tensor:
        _check_input("qconv2d", x, w_scale)
        if x.ndim != 4 or x.shape[1] != channels:
            raise ShapeError(f"qconv2d: input {x.shape} and weight {weight.shape} with "
                             f"groups={groups} don't fit (need (N, C, H, W) and "
                             "(C_out, C / groups, kh, kw))")
        for size, span, (lo, hi) in zip(x.shape[2:], spans, padding):
            if size + lo + hi < span:
                raise ShapeError(f"qconv2d: input {x.shape} padded by {padding} is smaller "
                                 f"than the kernel {weight.shape[2:]}")
        prims = (None if t is None else t._prim for t in tensors)
        b = x.backend  # looked up now, as in qlinear_op
        return Tensor(getattr(b, op)(x._prim, *prims, *tail), b)

    return run
