"""Weight initialisers (``torch.nn.init`` names), seeded by ``ember.seed``/``ember.Generator``.

Each ``name_`` function fills a :class:`~ember.nn.Parameter` in place (through ``assign``) and
returns it; given a plain Tensor it returns a new filled tensor of the same shape, dtype and
backend. Names without the trailing underscore are aliases.

>>> import ember
>>> from ember import nn
>>> w = nn.Parameter(ember.zeros(3, 4))
>>> _ = nn.init.xavier_uniform_(w, generator=ember.Generator(0))
>>> bool((w.abs() <= (6 / 7) ** 0.5).all())
True
"""

from __future__ import annotations

import math

from ..tensordata import TensorData
from ..random import Generator, default_generator
from ..shape import numel
from ..tensor import Tensor


def _target_backend(t: Tensor):
    return t.backend.inner or t.backend


def _put(t: Tensor, value: Tensor) -> Tensor:
    from .parameter import Parameter

    if isinstance(t, Parameter):
        return t.assign(value)
    from .parameter import _onto

    return _onto(value, t.backend)


def _uniform01(t: Tensor, generator: Generator | None) -> Tensor:
    """Uniform [0, 1) numbers of ``t``'s shape/dtype from the Philox stream."""
    g = generator or default_generator
    backend = _target_backend(t)
    s, off = g.take(numel(t.shape))
    return Tensor(backend.random_uniform(tuple(t.shape), t.dtype, s, off), backend)


def _normal01(t: Tensor, generator: Generator | None) -> Tensor:
    """Standard normal numbers (Box-Muller over two uniform draws)."""
    u1 = _uniform01(t, generator)
    u2 = _uniform01(t, generator)
    r = ((1.0 - u1).log() * -2.0).sqrt()  # 1 - u1 is in (0, 1]: log stays finite
    return r * (u2 * (2.0 * math.pi)).cos()


# ---------------------------------------------------------------------------- fans and gains
def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for a nonlinearity (``torch.nn.init.calculate_gain``).

    >>> round(calculate_gain("relu"), 4)
    1.4142
    """
    linear = {"linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
              "conv_transpose3d", "sigmoid"}
    if nonlinearity in linear:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else float(param)
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(
        f"calculate_gain: unsupported nonlinearity {nonlinearity!r} (valid: linear, conv*, "
        "sigmoid, tanh, relu, leaky_relu, selu)"
    )


def _calculate_fan_in_and_fan_out(t: Tensor) -> tuple[int, int]:
    shape = t.shape
    if len(shape) < 2:
        raise ValueError(
            f"fan in/out: needs a tensor with at least 2 dims, got shape {tuple(shape)}"
        )
    receptive = numel(shape[2:])
    return shape[1] * receptive, shape[0] * receptive


def _fan(t: Tensor, mode: str) -> int:
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"mode must be 'fan_in' or 'fan_out', got {mode!r}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(t)
    return fan_in if mode == "fan_in" else fan_out


# ---------------------------------------------------------------------------- fills
def uniform_(t: Tensor, a: float = 0.0, b: float = 1.0, generator: Generator | None = None):
    """Fill with U(a, b).

    >>> import ember
    >>> from ember.nn import init
    >>> w = init.uniform_(ember.zeros(100), -2.0, 2.0, generator=ember.Generator(0))
    >>> bool(((w >= -2) & (w < 2)).all()), bool(w.min() < -1.5 and w.max() > 1.5)
    (True, True)
    """
    return _put(t, _uniform01(t, generator) * (b - a) + a)


def normal_(t: Tensor, mean: float = 0.0, std: float = 1.0, generator: Generator | None = None):
    """Fill with N(mean, std²).

    >>> import ember
    >>> from ember.nn import init
    >>> w = init.normal_(ember.zeros(100, 100), mean=3.0, std=0.5, generator=ember.Generator(0))
    >>> round(w.mean().item(), 1), round(w.std().item(), 1)
    (3.0, 0.5)
    """
    return _put(t, _normal01(t, generator) * std + mean)


def constant_(t: Tensor, val: float):
    """Fill with ``val``, in place; returns the tensor.

    >>> import ember
    >>> from ember.nn import init
    >>> init.constant_(ember.zeros(2), 0.5).tolist()
    [0.5, 0.5]
    """
    from ..ops.creation import full

    backend = _target_backend(t)
    return _put(t, full(tuple(t.shape), val, dtype=t.dtype, backend=backend))


def zeros_(t: Tensor):
    """Fill with zeros, in place; returns the tensor.

    >>> import ember
    >>> from ember.nn import init
    >>> init.zeros_(ember.ones(2)).tolist()
    [0.0, 0.0]
    """
    return constant_(t, 0.0)


def ones_(t: Tensor):
    """Fill with ones, in place; returns the tensor.

    >>> import ember
    >>> from ember.nn import init
    >>> init.ones_(ember.zeros(2)).tolist()
    [1.0, 1.0]
    """
    return constant_(t, 1.0)


def xavier_uniform_(t: Tensor, gain: float = 1.0, generator: Generator | None = None):
    """Glorot uniform: U(-a, a) with ``a = gain * sqrt(6 / (fan_in + fan_out))``.

    >>> import ember
    >>> from ember.nn import init
    >>> w = init.xavier_uniform_(ember.zeros(3, 5), generator=ember.Generator(0))  # a = 0.866
    >>> bool((w.abs() < 0.8661).all()), bool(w.abs().max() > 0.5)
    (True, True)
    """
    fan_in, fan_out = _calculate_fan_in_and_fan_out(t)
    a = gain * math.sqrt(6.0 / float(fan_in + fan_out))
    return uniform_(t, -a, a, generator)


def xavier_normal_(t: Tensor, gain: float = 1.0, generator: Generator | None = None):
    """Glorot normal: N(0, std²) with ``std = gain * sqrt(2 / (fan_in + fan_out))``.

    >>> import ember
    >>> from ember.nn import init
    >>> w = init.xavier_normal_(ember.zeros(100, 100), generator=ember.Generator(0))  # std 0.1
    >>> round(w.std().item(), 2)
    0.1
    """
    fan_in, fan_out = _calculate_fan_in_and_fan_out(t)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(t, 0.0, std, generator)


def kaiming_uniform_(t: Tensor, a: float = 0.0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu", generator: Generator | None = None):
    """He uniform: U(-b, b) with ``b = gain * sqrt(3 / fan)``.

    >>> import ember
    >>> from ember.nn import init
    >>> w = init.kaiming_uniform_(ember.zeros(4, 3), generator=ember.Generator(0))  # b = sqrt(2)
    >>> bool((w.abs() < 1.4143).all())
    True
    """
    gain = calculate_gain(nonlinearity, a)
    bound = gain * math.sqrt(3.0 / _fan(t, mode))
    return uniform_(t, -bound, bound, generator)


def kaiming_normal_(t: Tensor, a: float = 0.0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu", generator: Generator | None = None):
    """He normal: N(0, std²) with ``std = gain / sqrt(fan)``.

    >>> import ember
    >>> from ember.nn import init
    >>> w = init.kaiming_normal_(ember.zeros(100, 50), generator=ember.Generator(0))  # std 0.2
    >>> round(w.std().item(), 2)
    0.2
    """
    gain = calculate_gain(nonlinearity, a)
    return normal_(t, 0.0, gain / math.sqrt(_fan(t, mode)), generator)


def orthogonal_(t: Tensor, gain: float = 1.0, generator: Generator | None = None):
    """A (semi-)orthogonal matrix from the QR decomposition of a normal draw (as torch).

    >>> import ember
    >>> from ember.nn import init
    >>> w = init.orthogonal_(ember.zeros(3, 3), generator=ember.Generator(0))
    >>> bool(((w @ w.T) - ember.eye(3)).abs().max() < 1e-5)
    True
    """
    if t.ndim < 2:
        raise ValueError(f"orthogonal_: needs at least 2 dims, got shape {tuple(t.shape)}")
    rows = t.shape[0]
    cols = numel(t.shape) // rows
    flat = _normal01(Tensor(t._prim, t.backend).reshape(rows, cols), generator).tolist()
    if rows < cols:
        flat = [list(col) for col in zip(*flat)]
    q = _orthonormal_columns(flat)  # len(flat) x min(rows, cols)
    if rows < cols:
        q = [list(col) for col in zip(*q)]
    values = [v * gain for row in q for v in row]
    backend = _target_backend(t)
    out = Tensor(backend.from_data(TensorData.from_values(values, tuple(t.shape), t.dtype)),
                 backend)
    return _put(t, out)


def _orthonormal_columns(m: list[list[float]]) -> list[list[float]]:
    """Q of the QR decomposition of a tall matrix, with R's diagonal made positive."""
    try:
        import numpy as np
    except ImportError:
        np = None
    if np is not None:
        q, r = np.linalg.qr(np.asarray(m, dtype=np.float64))
        q *= np.sign(np.diag(r))
        return q.tolist()
    n_rows, n_cols = len(m), len(m[0])
    cols: list[list[float]] = []
    for j in range(n_cols):  # modified Gram-Schmidt: R's diagonal is the positive norm
        v = [m[i][j] for i in range(n_rows)]
        for c in cols:
            dot = sum(a * b for a, b in zip(v, c))
            v = [a - dot * b for a, b in zip(v, c)]
        norm = math.sqrt(sum(a * a for a in v)) or 1.0
        cols.append([a / norm for a in v])
    return [[cols[j][i] for j in range(n_cols)] for i in range(n_rows)]


uniform = uniform_
normal = normal_
constant = constant_
zeros = zeros_
ones = ones_
xavier_uniform = glorot_uniform = glorot_uniform_ = xavier_uniform_
xavier_normal = glorot_normal = glorot_normal_ = xavier_normal_
kaiming_uniform = he_uniform = he_uniform_ = kaiming_uniform_
kaiming_normal = he_normal = he_normal_ = kaiming_normal_
orthogonal = orthogonal_
