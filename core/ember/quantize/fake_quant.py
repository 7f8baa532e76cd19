"""Fake quantization: float tensors rounded to the int8 grid of the quantized layers, with
straight-through gradients, for quantization-aware training (:mod:`ember.quantize.qat`).

Built from ordinary tensor ops (no kernel of its own), so it trains on every backend through
``Autodiff``. The codes follow :mod:`ember.contract.quantized` exactly: ``x / scale``
rounded by the contract's ``round_code`` (half away from zero, clamped to ±127), times
``scale`` again. The backward pass is the
straight-through estimator: the gradient passes unchanged where ``x / scale`` lies inside
the clamp range ``[-127, 127]`` (ends included) and is zero outside; scales get no gradient
(they come from observers, not from training).

>>> import ember
>>> x = ember.tensor([0.26, -0.74, 3.0], backend="autodiff-numpy").require_grad()
>>> y = fake_quantize(x, ember.tensor([0.5], backend="autodiff-numpy"), hi=4)
>>> y.tolist()  # codes 1, -1 (half away from zero), 4 (clamped at hi=4 here)
[0.5, -0.5, 2.0]
>>> _ = y.sum().backward(); x.grad.tolist()  # 3.0 / 0.5 = 6 > 4: outside, no gradient
[1.0, 1.0, 0.0]
"""

from __future__ import annotations

from ..autodiff import no_grad
from ..contract.quantized import LEVELS
from ..contract.rounding import round_codes
from ..ops.where import where
from ..tensor import Tensor


def codes(x: Tensor, scale: Tensor, lo: int = -LEVELS, hi: int = LEVELS) -> Tensor:
    """The integer codes of ``x`` at ``scale`` (broadcast), as floats of ``x``'s dtype: the
    contract's ``round_codes`` on ``x / scale`` (untracked: callers take the gradient
    straight through).

    >>> import ember
    >>> codes(ember.tensor([1.25, -1.25, 400.0]), ember.tensor([0.5])).tolist()
    [3.0, -3.0, 127.0]
    """
    with no_grad():
        v = (x / scale).detach()
        return Tensor(round_codes(v.backend, v._prim, lo, hi), v.backend)


def fake_quantize(x: Tensor, scale: Tensor, lo: int = -LEVELS, hi: int = LEVELS) -> Tensor:
    """``codes(x, scale) * scale`` with the straight-through gradient (see the module doc).

    The result equals the quantized value bit for bit (the gradient path adds an exact
    zero), so a fake-quantized layer sees what the int8 kernel sees.

    >>> import ember
    >>> fake_quantize(ember.tensor([0.3, 0.7]), ember.tensor([0.25])).tolist()
    [0.25, 0.75]
    """
    with no_grad():
        q = codes(x, scale, lo, hi) * scale
    if not x.is_require_grad():
        return q
    with no_grad():
        v = x / scale
        inside = (v >= lo) & (v <= hi)
    return _straight_through(q, where(inside, x, 0.0))


def fake_quantize_learned(x: Tensor, scale: Tensor, lo: int = -LEVELS,
                          hi: int = LEVELS) -> Tensor:
    """:func:`fake_quantize` whose ``scale`` learns too (LSQ, Esser et al., 2020): the same
    value; ``x`` gets the straight-through gradient, ``scale`` the gradient of
    ``round(clamp(x / scale)) * scale`` with the rounding taken as the identity (code minus
    ``x / scale`` inside the range, the bound outside).

    >>> import ember
    >>> ad = "autodiff-numpy"
    >>> s = ember.tensor([0.5], backend=ad).require_grad()
    >>> y = fake_quantize_learned(ember.tensor([0.3, 3.0], backend=ad), s, hi=4)
    >>> y.tolist(), y.sum().backward().get(s).tolist()  # codes 1 and 4: 1 - 0.6 + 4
    ([0.5, 2.0], [4.400000095367432])
    """
    v = (x / scale).clamp(lo, hi)
    with no_grad():
        c = codes(x, scale, lo, hi)
    # v + (c - v) is c exactly (|c - v| <= 0.5: Sterbenz), so the value is codes * scale
    return (v + (c - v.detach())) * scale


def _straight_through(q: Tensor, passed: Tensor) -> Tensor:
    """``q``'s value with ``passed``'s gradient: ``q + (passed - passed)`` adds an exact
    zero, and only the first ``passed`` is tracked."""
    return q + (passed - passed.detach())


def channel_scale(w: Tensor) -> Tensor:
    """One scale per output channel (dim 0) of ``w``: ``max |w| / 127`` (1 for an all-zero
    channel), shaped to broadcast against ``w``; untracked. The rule of
    ``ember.quantize.weights.per_channel``.

    >>> import ember
    >>> channel_scale(ember.tensor([[0.5, -1.27], [0.0, 0.0]])).tolist()
    [[0.009999999776482582], [1.0]]
    """
    with no_grad():
        amax = w.detach().reshape(w.shape[0], -1).abs().amax(dim=1)
        scale = where(amax > 0, amax / LEVELS, 1.0)
        return scale.reshape((w.shape[0],) + (1,) * (w.ndim - 1))


def fake_quantize_weight(w: Tensor, scale: Tensor | None = None) -> Tensor:
    """``w`` fake-quantized per output channel (symmetric int8, :func:`channel_scale`, or
    ``scale`` given, fixed, shaped to broadcast against ``w``); the gradient passes straight
    through everywhere (every weight lies inside its channel's range; a channel's largest
    weight may land a rounding error past code 127, which must not stop its gradient).

    >>> import ember
    >>> fake_quantize_weight(ember.tensor([[1.0, 0.3]])).tolist()  # step 1/127
    [[1.0, 0.29921260476112366]]
    """
    scale = channel_scale(w) if scale is None else scale
    with no_grad():
        q = codes(w, scale) * scale
    return _straight_through(q, w) if w.is_require_grad() else q
