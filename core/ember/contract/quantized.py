"""Quantized Linear and convolution: int8 inputs times int8 weights, accumulated in int32,
rescaled to float in the same op (``ember.quantize``'s layers call them).

Both ops take a float input ``x`` and quantize it on the way in, with one scale for the
whole tensor (symmetric, zero point 0, like the microcontroller runtime)::

    q[i]   = round_code(v, -127, 127),                      v = x[i] / in_scale
    acc[o] = sum_k q[k] * weight[o, k]                         (exact int32)
    y[o]   = float(acc[o]) * (in_scale * w_scale[o]) + bias[o]

``weight`` is int8, ``w_scale`` (C_out,) and ``in_scale`` (1,) are float tensors of ``x``'s
dtype, ``bias`` is (C_out,) (``qconv``: or None; ``qlinear`` takes only tensors, the fast
path of decorators like Router); the products and sums run in ``x``'s dtype in the order
written. ``round_code`` (:mod:`ember.contract.rounding`, the one rounding of every target):
half away from zero, clamped, NaN to code 0. Backends override the defaults with integer
kernels.

The default bodies use primitives only: ``qlinear`` an int32 matmul (exact),
``qconv`` the float ``conv`` on the integer values (exact while
``C_in / groups * prod(kernel) * 127**2 < 2**24`` in float32; numpy splits larger sums).

``qlinear_u8`` and ``qconv_u8`` are the same ops with *unsigned* input codes, for inputs that
are never negative (after ReLU/ReLU6; ``ember.quantize`` picks them from the calibration)::

    q[i] = round_code(v, 0, 255)

twice the resolution of ±127 over the same range (negative inputs give code 0; zero, the
convolutions' padding, is still code 0, so no zero point is needed). Products are
``0..255 x -127..127``; float32 sums of them are exact while ``K * 255 * 127 < 2**24``.

**Codes between layers.** Every one of these ops also takes ``x`` as *codes*: an int8 or
uint8 tensor (what ``qlinear_q``/``qconv_q`` return) is used as ``q`` as it is, without
quantizing (``unsigned`` then doesn't matter; the float results take ``w_scale``'s dtype).
``qlinear_q`` and ``qconv_q`` end in codes instead of floats, at the next layer's input scale
``out_scale`` (1,), clamped to ``[out_lo, out_hi]`` (a ReLU/ReLU6 between the layers folds
into that clamp)::

    m[o]   = (in_scale * w_scale[o]) / out_scale,   c[o] = bias[o] / out_scale
    v[o]   = float(acc[o]) * m[o] + c[o]              (a fused multiply-add is allowed)
    out[o] = round_code(v[o], out_lo, out_hi)

as uint8 when ``out_lo >= 0``, else int8 (``-127 <= out_lo <= out_hi``, ``out_hi <= 255``, and
``<= 127`` for int8). ``bias`` is a tensor (zeros for a layer without one). The float
``m``, ``c`` and ``v`` may differ by an ulp between targets, so a code may differ by one
where ``v`` is within an ulp of a half-integer.
"""

from __future__ import annotations

from .. import dtype as dt
from .convolution import _conv_shape
from .registry import Kind, Spec, declare
from .rounding import round_codes
from .windows import along, trailing

LEVELS = 127  # codes are -127..127: the range is symmetric, so -x quantizes to -q
U_LEVELS = 255  # unsigned codes (``*_u8`` ops): 0..255


def code_range(unsigned: bool) -> tuple[int, int]:
    """The input codes' ``(lowest, highest)``: ``(-127, 127)``, or ``(0, 255)`` unsigned."""
    return (0, U_LEVELS) if unsigned else (-LEVELS, LEVELS)


def codes_dtype(out_lo: int, out_hi: int):
    """The dtype of ``qlinear_q``/``qconv_q``'s codes: uint8 when ``out_lo >= 0``, else
    int8; a range neither holds raises ValueError."""
    if not -LEVELS <= out_lo <= out_hi <= (U_LEVELS if out_lo >= 0 else LEVELS):
        raise ValueError(f"output code range [{out_lo}, {out_hi}] must lie in [-127, 127] "
                         "(int8 codes) or [0, 255] (uint8 codes)")
    return dt.uint8 if out_lo >= 0 else dt.int8


def _qlinear_shape(x, weight, w_scale, bias, in_scale):
    return Spec(tuple(x.shape[:-1]) + (weight.shape[0],), w_scale.dtype)


def _qconv_shape(x, weight, w_scale, bias, in_scale, stride, padding, dilation, groups):
    shape = _conv_shape(x, weight, bias, stride, padding, dilation, groups).shape
    return Spec(shape, w_scale.dtype)


def _qlinear_q_shape(x, weight, w_scale, bias, in_scale, out_scale, unsigned, out_lo, out_hi):
    return Spec(tuple(x.shape[:-1]) + (weight.shape[0],), codes_dtype(out_lo, out_hi))


def _qconv_q_shape(x, weight, w_scale, bias, in_scale, out_scale, stride, padding, dilation,
                   groups, unsigned, out_lo, out_hi):
    shape = _conv_shape(x, weight, bias, stride, padding, dilation, groups).shape
    return Spec(shape, codes_dtype(out_lo, out_hi))


_Q = "x, weight, w_scale, bias, in_scale"
qlinear = declare(
    "qlinear", Kind.MODULE, _Q, _qlinear_shape, tensors=_Q, differentiable=False,
    doc="Quantized Linear: ``x`` (..., K) float, ``weight`` (N, K) int8 -> (..., N) float.",
)
qconv = declare(
    "qconv", Kind.MODULE, _Q + ", stride, padding, dilation, groups", _qconv_shape,
    tensors=_Q, differentiable=False,
    doc="Quantized conv (PyTorch's cross-correlation; ``padding`` as in ``conv``).",
)
qlinear_u8 = declare(
    "qlinear_u8", Kind.MODULE, _Q, _qlinear_shape, tensors=_Q, differentiable=False,
    doc="``qlinear`` with unsigned input codes 0..255 (for non-negative inputs).",
)
qconv_u8 = declare(
    "qconv_u8", Kind.MODULE, _Q + ", stride, padding, dilation, groups", _qconv_shape,
    tensors=_Q, differentiable=False,
    doc="``qconv`` with unsigned input codes 0..255 (for non-negative inputs).",
)
_QQ = "x, weight, w_scale, bias, in_scale, out_scale"
qlinear_q = declare(
    "qlinear_q", Kind.MODULE, _QQ + ", unsigned, out_lo, out_hi", _qlinear_q_shape,
    tensors=_QQ, differentiable=False,
    doc="``qlinear`` ending in codes at ``out_scale``, clamped to ``[out_lo, out_hi]``.",
)
qconv_q = declare(
    "qconv_q", Kind.MODULE,
    _QQ + ", stride, padding, dilation, groups, unsigned, out_lo, out_hi", _qconv_q_shape,
    tensors=_QQ, differentiable=False,
    doc="``qconv`` ending in codes at ``out_scale``, clamped to ``[out_lo, out_hi]``.",
)

CODE_DTYPES = (dt.int8, dt.uint8)


def input_codes(b, x, in_scale, unsigned: bool, like):
    """The codes ``q`` of the module doc as integer-valued floats of ``like``'s dtype: an
    int8/uint8 ``x`` is the codes already; a float ``x`` is quantized."""
    if b.dtype(x) in CODE_DTYPES:
        return b.cast(x, b.dtype(like))
    return quantize_codes(b, x, in_scale, unsigned)


def quantize_codes(b, x, in_scale, unsigned: bool = False):
    """The codes of ``x / in_scale`` (``round_code``, clamped to ±127; ``unsigned``:
    0..255), as integer-valued floats of ``x``'s dtype (primitives only)."""
    shape = tuple(b.shape(x))
    v = b.float_div(x, b.expand(b.reshape(in_scale, (1,) * len(shape)), shape))
    return round_codes(b, v, *code_range(unsigned))


def _out_scale(b, w_scale, in_scale):
    return b.float_mul(w_scale, b.expand(in_scale, tuple(b.shape(w_scale))))


def _linear_acc(self, x, weight, w_scale, in_scale, unsigned: bool):
    """The exact sums ``acc`` as floats of ``w_scale``'s dtype, shaped (rows, N)."""
    shape = tuple(self.shape(x))
    k = tuple(self.shape(weight))[1]
    rows = 1
    for s in shape[:-1]:
        rows *= s
    q = self.cast(self.reshape(input_codes(self, x, in_scale, unsigned, w_scale), (rows, k)),
                  dt.int32)
    w = self.permute(self.cast(weight, dt.int32), (1, 0))
    return self.cast(self.int_matmul(q, w), self.dtype(w_scale))


def _conv_acc(self, x, weight, w_scale, in_scale, stride, padding, dilation, groups,
              unsigned: bool):
    """The exact sums ``acc`` as floats of ``w_scale``'s dtype, (N, C_out, ...)."""
    q = input_codes(self, x, in_scale, unsigned, w_scale)
    return self.conv(q, self.cast(weight, self.dtype(q)), None, stride, padding, dilation,
                     groups)


def _linear_body(self, x, weight, w_scale, bias, in_scale, unsigned: bool):
    shape = tuple(self.shape(x))
    n = tuple(self.shape(weight))[0]
    y = _linear_acc(self, x, weight, w_scale, in_scale, unsigned)
    rows = tuple(self.shape(y))[0]
    y = self.float_mul(y, trailing(self, _out_scale(self, w_scale, in_scale), (rows, n)))
    y = self.float_add(y, trailing(self, bias, (rows, n)))
    return self.reshape(y, shape[:-1] + (n,))


def _conv_body(self, x, weight, w_scale, bias, in_scale, stride, padding, dilation, groups,
               unsigned: bool):
    y = _conv_acc(self, x, weight, w_scale, in_scale, stride, padding, dilation, groups,
                  unsigned)
    shape = tuple(self.shape(y))
    y = self.float_mul(y, along(self, _out_scale(self, w_scale, in_scale), shape, 1,
                                self.dtype(y)))
    if bias is not None:
        y = self.float_add(y, along(self, bias, shape, 1, self.dtype(y)))
    return y


def requant_factors(b, w_scale, bias, in_scale, out_scale):
    """``(m, c)`` of the module doc, one per output channel (C_out,)."""
    n = tuple(b.shape(w_scale))
    out = b.expand(out_scale, n)
    return b.float_div(_out_scale(b, w_scale, in_scale), out), b.float_div(bias, out)


def _requantize(b, acc, w_scale, bias, in_scale, out_scale, out_lo, out_hi, axis: int):
    """``acc`` (float sums) to codes at ``out_scale`` (the module doc's ``out``)."""
    shape = tuple(b.shape(acc))
    m, c = requant_factors(b, w_scale, bias, in_scale, out_scale)
    v = b.float_add(b.float_mul(acc, along(b, m, shape, axis, b.dtype(acc))),
                    along(b, c, shape, axis, b.dtype(acc)))
    q = round_codes(b, v, out_lo, out_hi)
    return b.cast(q, codes_dtype(out_lo, out_hi))


@qlinear.implements
def qlinear(self, x, weight, w_scale, bias, in_scale):
    """Quantized Linear (see the module doc): an exact int32 matmul of the codes."""
    return _linear_body(self, x, weight, w_scale, bias, in_scale, False)


@qlinear_u8.implements
def qlinear_u8(self, x, weight, w_scale, bias, in_scale):
    """``qlinear`` with unsigned input codes (see the module doc)."""
    return _linear_body(self, x, weight, w_scale, bias, in_scale, True)


@qconv.implements
def qconv(self, x, weight, w_scale, bias, in_scale, stride: tuple, padding: tuple,
          dilation: tuple, groups: int):
    """Quantized conv (see the module doc): the float conv of the integer codes."""
    return _conv_body(self, x, weight, w_scale, bias, in_scale, stride, padding, dilation,
                      groups, False)


@qconv_u8.implements
def qconv_u8(self, x, weight, w_scale, bias, in_scale, stride: tuple, padding: tuple,
             dilation: tuple, groups: int):
    """``qconv`` with unsigned input codes (see the module doc)."""
    return _conv_body(self, x, weight, w_scale, bias, in_scale, stride, padding, dilation,
                      groups, True)


@qlinear_q.implements
def qlinear_q(self, x, weight, w_scale, bias, in_scale, out_scale, unsigned: bool,
              out_lo: int, out_hi: int):
    """``qlinear`` ending in codes (see the module doc)."""
    shape = tuple(self.shape(x))
    acc = _linear_acc(self, x, weight, w_scale, in_scale, unsigned)
    q = _requantize(self, acc, w_scale, bias, in_scale, out_scale, out_lo, out_hi, 1)
    return self.reshape(q, shape[:-1] + (tuple(self.shape(weight))[0],))


@qconv_q.implements
def qconv_q(self, x, weight, w_scale, bias, in_scale, out_scale, stride: tuple,
            padding: tuple, dilation: tuple, groups: int, unsigned: bool, out_lo: int,
            out_hi: int):
    """``qconv`` ending in codes (see the module doc)."""
    acc = _conv_acc(self, x, weight, w_scale, in_scale, stride, padding, dilation, groups,
                    unsigned)
    return _requantize(self, acc, w_scale, bias, in_scale, out_scale, out_lo, out_hi, 1)
