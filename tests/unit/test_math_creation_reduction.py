"""Elementwise math, creation/random and reductions of the Tensor API, on the numpy and the
pure-Python backends, against numpy float64 references."""

from __future__ import annotations

import math

import ember
import numpy as np
import pytest
from _python_ready import python_ready
from ember.errors import DimensionError, DTypeError, ShapeError

BACKENDS = [
    "numpy",
    pytest.param("python", marks=pytest.mark.skipif(not python_ready(),
                                                     reason="python backend not complete")),
]

RNG = np.random.default_rng(1234)
SPECIAL = [0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, 0.3, -0.7, 3.7, -3.2, 1e-4, 20.0,
           math.inf, -math.inf, math.nan]


def T(data, bk, dtype=None):
    """An ember tensor from array-like data on backend ``bk``."""
    arr = np.asarray(data)
    if dtype is not None:
        arr = arr.astype(dtype)
    return ember.tensor(arr, backend=bk)


def N(t: ember.Tensor) -> np.ndarray:
    """The tensor's values as numpy (shape taken from the tensor, so 0-d stays 0-d)."""
    return np.asarray(t.tolist(), dtype=t.dtype.name).reshape(t.shape)


def close(got: ember.Tensor, ref, dtype: str | None = None, rtol=2e-6, atol=1e-6):
    ref = np.asarray(ref)
    assert got.shape == ref.shape, (got.shape, ref.shape)
    if dtype is not None:
        assert got.dtype.name == dtype, (got.dtype, dtype)
    g = N(got)
    if g.dtype.kind in "biu":
        np.testing.assert_array_equal(g, ref)
    else:
        np.testing.assert_allclose(g.astype(np.float64), ref, rtol=rtol, atol=atol)


# ======================================================================= elementwise math
def _erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x)


UNARY = {
    "exp": np.exp, "expm1": np.expm1, "log": np.log, "log1p": np.log1p, "log2": np.log2,
    "log10": np.log10, "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x),
    "reciprocal": lambda x: 1 / x, "sin": np.sin, "cos": np.cos, "tan": np.tan,
    "tanh": np.tanh, "sinh": np.sinh, "cosh": np.cosh, "asin": np.arcsin, "arcsin": np.arcsin,
    "acos": np.arccos, "arccos": np.arccos, "atan": np.arctan, "arctan": np.arctan,
    "erf": _erf, "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
}


@pytest.mark.parametrize("bk", BACKENDS)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_float_unary(bk, name):
    x = np.array(SPECIAL + [-0.99, 0.99, 1.0, -1.0, 1e-7], dtype=np.float32)
    with np.errstate(all="ignore"):
        ref = UNARY[name](x.astype(np.float64))
    t = T(x, bk)
    close(getattr(ember, name)(t), ref, "float32", rtol=1e-5, atol=1e-6)
    close(getattr(t, name)(), ref, "float32", rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("bk", BACKENDS)
@pytest.mark.parametrize("name", ["exp", "sqrt", "sin", "sigmoid", "log10", "erf"])
def test_float_unary_promotes_ints(bk, name):
    x = np.array([0, 1, 2, 4, 9], dtype=np.int32)
    with np.errstate(all="ignore"):
        ref = UNARY[name](x.astype(np.float64))
    close(getattr(ember, name)(T(x, bk)), ref, "float32", rtol=1e-5)


@pytest.mark.parametrize("bk", BACKENDS)
def test_float_unary_keeps_float64_and_float16(bk):
    x = np.array([0.1, 1.0, 2.0])
    close(ember.exp(T(x, bk)), np.exp(x), "float64", rtol=1e-12)
    close(ember.sqrt(T(x, bk, "float16")), np.sqrt(x), "float16", rtol=2e-3, atol=1e-3)


@pytest.mark.parametrize("bk", BACKENDS)
def test_atan2_quadrants(bk):
    ys = np.array([1.0, 1.0, -1.0, -1.0, 0.0, 0.0, 2.0, -2.0, 0.0, math.nan], dtype=np.float32)
    xs = np.array([1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 0.0, 0.0, 0.0, 1.0], dtype=np.float32)
    ref = np.arctan2(ys.astype(np.float64), xs.astype(np.float64))
    close(ember.atan2(T(ys, bk), T(xs, bk)), ref, "float32", rtol=1e-6)
    close(T(ys, bk).arctan2(T(xs, bk)), ref, "float32", rtol=1e-6)
    close(ember.atan2(T([1, -1], bk), 0.0), np.arctan2([1.0, -1.0], 0.0), "float32")


@pytest.mark.parametrize("bk", BACKENDS)
@pytest.mark.parametrize("name,ref", [("floor", np.floor), ("ceil", np.ceil),
                                      ("trunc", np.trunc), ("round", np.round),
                                      ("sign", np.sign), ("abs", np.abs)])
def test_kind_preserving(bk, name, ref):
    x = np.array(SPECIAL + [-1.5, 0.49999997, -3.5, 4.5], dtype=np.float32)
    close(getattr(ember, name)(T(x, bk)), ref(x.astype(np.float64)), "float32", rtol=0)
    for dtype in ("int32", "int64", "int8"):
        i = np.array([-7, -1, 0, 3, 100], dtype=dtype)
        close(getattr(T(i, bk), name)(), ref(i), dtype)


@pytest.mark.parametrize("bk", BACKENDS)
@pytest.mark.parametrize("decimals", [1, 2, 3, -1, -2])
def test_round_decimals(bk, decimals):
    x = np.array([1.2345, -2.5678, 0.125, 1234.5, -15.0, 250.0, 349.9], dtype=np.float64)
    close(ember.round(T(x, bk), decimals=decimals), np.round(x, decimals), "float64",
          rtol=1e-12)
    close(T([1234, -1251], bk).round(decimals=-2), np.array([1200, -1300]), "int64")


@pytest.mark.parametrize("bk", BACKENDS)
def test_abs_dunder_and_square(bk):
    close(abs(T([-1.5, 2.0, -0.0], bk, "float32")), [1.5, 2.0, 0.0], "float32")
    close(ember.absolute(T([-3], bk)), [3], "int64")
    close(ember.square(T([-3, 2], bk, "int32")), [9, 4], "int32")
    close(T([-1.5, 3.0], bk, "float32").square(), [2.25, 9.0], "float32")
    close(round(T([1.26, 2.5], bk, "float64"), 1), [1.3, 2.5], "float64")


@pytest.mark.parametrize("bk", BACKENDS)
def test_nan_inf_tests(bk):
    x = np.array([1.0, math.nan, math.inf, -math.inf, -0.0], dtype=np.float32)
    t = T(x, bk)
    close(ember.isnan(t), np.isnan(x), "bool")
    close(t.isinf(), np.isinf(x), "bool")
    close(t.isfinite(), np.isfinite(x), "bool")
    i = T([[1, 2], [3, 4]], bk)
    close(i.isnan(), np.zeros((2, 2), bool), "bool")
    close(i.isinf(), np.zeros((2, 2), bool), "bool")
    close(i.isfinite(), np.ones((2, 2), bool), "bool")


@pytest.mark.parametrize("bk", BACKENDS)
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_nan_to_num(bk, dtype):
    x = np.array([1.0, math.nan, math.inf, -math.inf], dtype=dtype)
    close(ember.nan_to_num(T(x, bk)), np.nan_to_num(x).astype(np.float64), dtype, rtol=0)
    close(T(x, bk).nan_to_num(nan=-1.0, posinf=9.0, neginf=-9.0),
          np.nan_to_num(x, nan=-1.0, posinf=9.0, neginf=-9.0), dtype, rtol=0)
    close(ember.nan_to_num(T([1, 2], bk)), [1, 2], "int64")


@pytest.mark.parametrize("bk", BACKENDS)
def test_clamp(bk):
    x = np.array([-2.0, -0.5, 0.0, 0.7, 3.0, math.nan], dtype=np.float32)
    t = T(x, bk)
    close(ember.clamp(t, min=-1.0, max=1.0), np.clip(x, -1, 1), "float32")
    close(t.clamp(min=0.0), np.maximum(x, 0), "float32")
    close(t.clip(max=0.5), np.minimum(x, 0.5), "float32")
    lo = np.array([-1.0, 0.0, 1.0, 0.0, 0.0, 0.0], dtype=np.float32)
    close(t.clamp(T(lo, bk), 2.0), np.minimum(np.maximum(x, lo), 2.0), "float32")
    # min > max gives max, as in PyTorch
    close(t.clamp(min=1.0, max=0.0), np.where(np.isnan(x), np.nan, 0.0), "float32")
    close(T([-5, 0, 5], bk).clamp(-1, 1), [-1, 0, 1], "int64")
    close(T([-5, 0, 5], bk).clamp(max=0.5), [-5.0, 0.0, 0.5], "float32")
    with pytest.raises(ValueError, match="clamp"):
        t.clamp()


def test_tensor_methods_never_depend_on_import_order():
    """``t.softmax`` existed only after ``import ember.nn``: every method now comes from one
    table that ``import ember`` binds, whatever is imported first."""
    import subprocess
    import sys

    code = (
        "from ember.tensor import Tensor\n"
        "import ember.ops.creation as c\n"
        "t = c.tensor([1.0, 2.0])\n"
        "print(sorted(m for m in ('softmax', 'relu', 'log_softmax', 'require_grad', 'T', 'log10')"
        " if hasattr(t, m)))\n"
        "import sys; print('ember.nn' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split("\n")
    assert out[0] == "['T', 'log10', 'log_softmax', 'relu', 'require_grad', 'softmax']"
    assert out[1] == "False"


# ======================================================================= creation
@pytest.mark.parametrize("bk", BACKENDS)
def test_constant_fills(bk):
    for fn, value in ((ember.zeros, 0), (ember.ones, 1), (ember.empty, None)):
        a, b = fn(2, 3, backend=bk), fn((2, 3), backend=bk)
        assert a.shape == b.shape == (2, 3) and a.dtype == ember.float32
        assert a.backend.name == bk
        if value is not None:
            close(a, np.full((2, 3), value), "float32")
    close(ember.zeros(3, dtype=ember.int64, backend=bk), [0, 0, 0], "int64")
    close(ember.full((2,), 7, backend=bk), [7, 7], "int64")
    close(ember.full((2,), 0.5, backend=bk), [0.5, 0.5], "float32")
    assert ember.zeros((), backend=bk).shape == ()
    assert ember.ones(0, 4, backend=bk).shape == (0, 4)


@pytest.mark.parametrize("bk", BACKENDS)
def test_like_and_new(bk):
    ref = T([[1, 2], [3, 4]], bk, "int32")
    close(ember.zeros_like(ref), np.zeros((2, 2)), "int32")
    close(ember.ones_like(ref, dtype=ember.float64), np.ones((2, 2)), "float64")
    close(ember.full_like(ref, 9), np.full((2, 2), 9), "int32")
    assert ember.empty_like(ref).shape == (2, 2)
    assert ember.zeros_like(ref).backend is ref.backend
    r = ember.rand_like(ref.float())
    assert r.shape == (2, 2) and r.dtype == ember.float32
    assert ember.randn_like(ref, dtype=ember.float64).dtype == ember.float64
    close(ref.new_zeros(3), [0, 0, 0], "int32")
    close(ref.new_ones((1, 2)), [[1, 1]], "int32")
    close(ref.new_full((2,), 5), [5, 5], "int32")
    close(ref.new_tensor([1.5]), [1], "int32")
    assert ref.new_empty(2, dtype=ember.float32).dtype == ember.float32


@pytest.mark.parametrize("bk", BACKENDS)
@pytest.mark.parametrize("args", [(5,), (2, 10, 3), (10, 2, -3), (0, 1, 0.1), (1, 2, 0.25),
                                  (-1.5, 2.0, 0.5), (3, 3), (5, 0), (0.0, -1.0, -0.3),
                                  (0, 10, 7)])
def test_arange(bk, args):
    ref = np.arange(*args)
    t = ember.arange(*args, backend=bk)
    want = "int64" if all(isinstance(a, int) for a in args) else "float32"
    close(t, ref, want, rtol=1e-6)


@pytest.mark.parametrize("bk", BACKENDS)
def test_arange_dtype(bk):
    close(ember.arange(4, dtype=ember.float64, backend=bk), np.arange(4.0), "float64")
    close(ember.arange(1, 4, dtype="int32", backend=bk), [1, 2, 3], "int32")
    with pytest.raises(ValueError, match="arange"):
        ember.arange(0, 5, 0)


@pytest.mark.parametrize("bk", BACKENDS)
@pytest.mark.parametrize("args", [(0, 1, 5), (-1, 1, 1), (2, 3, 0), (0, 10, 7), (5, -5, 11),
                                  (0.1, 0.7, 4)])
def test_linspace(bk, args):
    close(ember.linspace(*args, backend=bk), np.linspace(*args), "float32", rtol=1e-6)
    close(ember.linspace(*args, dtype=ember.float64, backend=bk), np.linspace(*args),
          "float64", rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("bk", BACKENDS)
def test_eye(bk):
    close(ember.eye(3, backend=bk), np.eye(3), "float32")
    close(ember.eye(2, 4, dtype=ember.int64, backend=bk), np.eye(2, 4, dtype=int), "int64")
    close(ember.eye(3, 1, backend=bk), np.eye(3, 1), "float32")
    assert ember.eye(0, backend=bk).shape == (0, 0)


# ----------------------------------------------------------------------- random
@pytest.mark.parametrize("fn", ["rand", "randn"])
def test_random_same_seed_same_numbers_on_every_backend(fn):
    if not python_ready():
        pytest.skip("python backend not complete")
    draw = getattr(ember, fn)
    a = draw(3, 5, generator=ember.Generator(seed=7), backend="numpy")
    b = draw(3, 5, generator=ember.Generator(seed=7), backend="python")
    if fn == "rand":
        np.testing.assert_array_equal(N(a), N(b))
    else:  # transcendental functions may differ by an ulp between libm and numpy
        np.testing.assert_allclose(N(a), N(b), rtol=1e-6, atol=1e-7)
    ia = ember.randint(-50, 50, (100,), generator=ember.Generator(seed=3), backend="numpy")
    ib = ember.randint(-50, 50, (100,), generator=ember.Generator(seed=3), backend="python")
    np.testing.assert_array_equal(N(ia), N(ib))


def test_rand_matches_philox_reference():
    """rand's numbers are the documented stream: top 24 bits of Philox words."""
    from ember.random import philox_uniform

    got = N(ember.rand(10, generator=ember.Generator(seed=99)))
    np.testing.assert_array_equal(got, np.array(philox_uniform(10, 99, 0), dtype=np.float32))


@pytest.mark.parametrize("bk", BACKENDS)
def test_generator_advances_and_seed(bk):
    g = ember.Generator(seed=5)
    a, b = ember.rand(8, generator=g, backend=bk), ember.rand(8, generator=g, backend=bk)
    assert not np.array_equal(N(a), N(b))
    assert g.offset == 4
    ember.seed(11)
    c = ember.rand(4, backend=bk)
    ember.seed(11)
    np.testing.assert_array_equal(N(c), N(ember.rand(4, backend=bk)))
    assert not np.array_equal(N(ember.rand(4, generator=ember.Generator(1), backend=bk)),
                              N(ember.rand(4, generator=ember.Generator(2), backend=bk)))


@pytest.mark.parametrize("bk", BACKENDS)
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_rand_range_and_dtype(bk, dtype):
    x = N(ember.rand(4000, generator=ember.Generator(0), dtype=dtype, backend=bk))
    assert x.dtype == np.dtype(dtype)
    assert x.min() >= 0 and x.max() < 1
    assert abs(x.mean() - 0.5) < 0.03


@pytest.mark.parametrize("bk", BACKENDS)
def test_randn_distribution(bk):
    x = N(ember.randn(100, 101, generator=ember.Generator(0), backend=bk)).astype(np.float64)
    assert x.shape == (100, 101) and np.isfinite(x).all()
    assert abs(x.mean()) < 0.03 and abs(x.std() - 1) < 0.03
    assert abs((np.abs(x) < 1).mean() - 0.6827) < 0.02  # the bell shape, not just 2 moments
    assert ember.randn(3, backend=bk).shape == (3,)
    assert ember.randn(0, 2, backend=bk).shape == (0, 2)
    with pytest.raises(DTypeError):
        ember.randn(3, dtype=ember.int64, backend=bk)


@pytest.mark.parametrize("bk", BACKENDS)
def test_randint(bk):
    g = ember.Generator(1)
    x = ember.randint(10, (10000,), generator=g, backend=bk)
    assert x.dtype == ember.int64
    counts = np.bincount(N(x), minlength=10)
    assert counts.size == 10 and counts.min() > 850 and counts.max() < 1150
    y = N(ember.randint(-3, 4, size=(2, 50), generator=g, backend=bk))
    assert y.shape == (2, 50) and y.min() == -3 and y.max() == 3
    big = N(ember.randint(0, 2**40, (1000,), generator=g, backend=bk))
    assert big.min() >= 0 and big.max() < 2**40 and big.max() > 2**39
    assert ember.randint(0, 5, (3,), dtype=ember.int32, backend=bk).dtype == ember.int32
    with pytest.raises(ValueError):
        ember.randint(5, 5, (2,))


@pytest.mark.parametrize("bk", BACKENDS)
def test_bernoulli_normal_uniform(bk):
    g = ember.Generator(2)
    close(ember.bernoulli(T([0.0, 1.0, 0.0, 1.0], bk, "float32"), generator=g),
          [0, 1, 0, 1], "float32")
    p = N(ember.bernoulli(ember.full((5000,), 0.3, dtype=ember.float64, backend=bk),
                          generator=g))
    assert p.dtype == np.float64 and set(np.unique(p)) <= {0.0, 1.0}
    assert abs(p.mean() - 0.3) < 0.03
    assert abs(N(ember.zeros(4000, backend=bk).bernoulli(0.8, generator=g)).mean() - 0.8) < 0.03
    assert ember.bernoulli(0.5, size=(3, 2), backend=bk).shape == (3, 2)
    n = N(ember.normal(3.0, 2.0, (10000,), generator=g, backend=bk)).astype(np.float64)
    assert abs(n.mean() - 3) < 0.1 and abs(n.std() - 2) < 0.1
    m = ember.normal(T([0.0, 100.0], bk, "float32"), 0.0)
    close(m, [0.0, 100.0], "float32")
    u = N(ember.uniform(-2.0, 3.0, (5000,), generator=g, backend=bk))
    assert u.min() >= -2 and u.max() < 3 and abs(u.mean() - 0.5) < 0.1


# ======================================================================= reductions
X3 = RNG.standard_normal((2, 3, 4)).astype(np.float32)
DIMS = [None, 0, -1, 1, (0, 2), (-1, 0), (0, 1, 2)]


@pytest.mark.parametrize("bk", BACKENDS)
@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("name,ref", [
    ("sum", np.sum), ("mean", np.mean), ("prod", np.prod), ("amax", np.max),
    ("amin", np.min), ("var", lambda x, axis, keepdims: np.var(x, axis=axis, ddof=1,
                                                               keepdims=keepdims)),
    ("std", lambda x, axis, keepdims: np.std(x, axis=axis, ddof=1, keepdims=keepdims)),
    ("logsumexp", lambda x, axis, keepdims: np.log(np.sum(np.exp(x), axis=axis,
                                                          keepdims=keepdims))),
    ("norm", lambda x, axis, keepdims: np.sqrt(np.sum(x * x, axis=axis, keepdims=keepdims))),
])
def test_float_reductions(bk, dim, keepdim, name, ref):
    expected = ref(X3.astype(np.float64), axis=dim, keepdims=keepdim)
    t = T(X3, bk)
    close(getattr(t, name)(dim=dim, keepdim=keepdim), expected, "float32", rtol=1e-5,
          atol=1e-6)


@pytest.mark.parametrize("bk", BACKENDS)
@pytest.mark.parametrize("dim", [None, 0, 1, -1])
@pytest.mark.parametrize("keepdim", [False, True])
def test_arg_reductions(bk, dim, keepdim):
    x = np.array([[3.0, 7.0, 7.0, -1.0], [2.0, 2.0, 9.0, -5.0], [0.0, 8.0, 1.0, -5.0]],
                 dtype=np.float32)
    t = T(x, bk)
    for name, ref in (("argmax", np.argmax), ("argmin", np.argmin)):
        expected = ref(x, axis=dim, keepdims=keepdim)
        close(getattr(t, name)(dim=dim, keepdim=keepdim), expected, "int64")
        close(getattr(ember, name)(T(x.astype(np.int32), bk), dim, keepdim), expected, "int64")


@pytest.mark.parametrize("bk", BACKENDS)
def test_max_min_forms(bk):
    x = np.array([[1.0, 5.0, 2.0], [3.0, 0.0, 3.0]], dtype=np.float32)
    t = T(x, bk)
    m = t.max()
    assert m.shape == () and m.item() == 5.0
    assert ember.min(t).item() == 0.0
    r = t.max(dim=1)
    values, _ = r
    close(values, [5.0, 3.0], "float32")
    close(r.indices, [1, 0], "int64")
    r = t.min(-1, keepdim=True)
    close(r.values, [[1.0], [0.0]], "float32")
    close(r.indices, [[0], [1]], "int64")
    close(t.max(T([[2.0]], bk, "float32")), np.maximum(x, 2.0), "float32")
    close(ember.min(t, T([[2.0]], bk, "float32")), np.minimum(x, 2.0), "float32")
    close(T([[True, False], [False, False]], bk).max(dim=0).values, [True, False], "bool")
    close(T([[True, False], [True, True]], bk).amin(dim=1), [False, True], "bool")
    close(T([4, -2, 9], bk, "int32").max(), np.int32(9), "int32")
    with pytest.raises(DimensionError, match="amax"):
        t.max(dim=(0, 1))
    with pytest.raises(DimensionError, match="argmax"):
        t.argmax(dim=(0, 1))
    with pytest.raises(DimensionError):
        t.sum(dim=2)


@pytest.mark.parametrize("bk", BACKENDS)
def test_reduction_dtypes(bk):
    i = T([[1, 2], [3, 4]], bk, "int32")
    close(i.sum(), np.int64(10), "int64")
    close(i.sum(dim=0), [4, 6], "int64")
    close(i.prod(), np.int64(24), "int64")
    close(i.mean(), np.float64(2.5), "float32")
    close(i.mean(dim=1, dtype=ember.float64), [1.5, 3.5], "float64")
    close(i.var(), np.var([1, 2, 3, 4], ddof=1), "float32")
    close(i.cumsum(1), [[1, 3], [3, 7]], "int64")
    close(i.cumprod(0), [[1, 2], [3, 8]], "int64")
    close(i.amax(), np.int32(4), "int32")
    close(i.norm(), np.sqrt(30.0), "float32")
    b = T([True, True, False], bk)
    close(b.sum(), np.int64(2), "int64")
    close(b.prod(), np.int64(0), "int64")
    close(b.cumsum(0), [1, 2, 2], "int64")
    close(i.sum(dtype=ember.float64), np.float64(10.0), "float64")
    close(T([1.5, 2.0], bk, "float16").sum(), np.float64(3.5), "float16")


@pytest.mark.parametrize("bk", BACKENDS)
def test_nan_and_inf_propagate(bk):
    x = np.array([[1.0, math.nan, 3.0], [4.0, 5.0, math.inf]], dtype=np.float32)
    t = T(x, bk)
    close(t.sum(dim=1), [math.nan, math.inf], "float32")
    close(t.amax(dim=1), [math.nan, math.inf], "float32")
    close(t.amin(dim=1), [math.nan, 4.0], "float32")
    close(t.argmax(dim=1), [1, 2], "int64")
    close(t.mean(dim=0), [2.5, math.nan, math.inf], "float32")
    close(t.any(dim=1), [True, True], "bool")
    ninf = T([-math.inf, -math.inf], bk, "float32")
    close(ninf.logsumexp(0), np.float64(-math.inf), "float32")


@pytest.mark.parametrize("bk", BACKENDS)
def test_empty_reductions(bk):
    e = ember.zeros(0, 3, backend=bk)
    close(e.sum(0), np.zeros(3), "float32")
    close(e.prod(dim=0), np.ones(3), "float32")
    close(e.mean(0), np.full(3, np.nan), "float32")
    close(e.var(0), np.full(3, np.nan), "float32")
    close(e.logsumexp(0), np.full(3, -np.inf), "float32")
    close(e.any(0), np.zeros(3, bool), "bool")
    close(e.all(0), np.ones(3, bool), "bool")
    close(e.sum(), np.float64(0.0), "float32")
    close(ember.zeros(0, dtype=ember.int32, backend=bk).sum(), np.int64(0), "int64")
    close(e.sum(1), np.zeros(0), "float32")
    close(e.amax(dim=1), np.zeros(0), "float32")
    close(e.cumsum(0), np.zeros((0, 3)), "float32")
    for name in ("max", "min", "amax", "amin", "argmax", "argmin"):
        with pytest.raises(ShapeError, match=name):
            getattr(e, name)()
    with pytest.raises(ShapeError, match="max"):
        e.max(dim=0)


@pytest.mark.parametrize("bk", BACKENDS)
def test_zero_dim(bk):
    s = T(np.float32(2.5), bk)
    for name in ("sum", "mean", "prod", "amax", "amin", "logsumexp"):
        r = getattr(s, name)()
        assert r.shape == (), name
        assert r.item() == pytest.approx(2.5), name
    assert s.sum(dim=0, keepdim=True).shape == ()
    assert s.max(dim=-1).values.item() == 2.5
    assert s.argmax().item() == 0 and s.argmax().shape == ()
    assert s.argmax(dim=0).item() == 0
    assert math.isnan(s.var().item())
    assert s.var(correction=0).item() == 0.0
    assert s.cumsum(0).shape == () and s.cumsum(0).item() == 2.5
    assert s.norm().item() == 2.5
    assert T(np.int32(0), bk).any().item() is False


@pytest.mark.filterwarnings("ignore:Degrees of freedom")
@pytest.mark.parametrize("bk", BACKENDS)
def test_var_std_arguments(bk):
    x = np.array([[1.0, 2.0, 4.0], [0.0, -3.0, 8.0]], dtype=np.float32)
    t, x64 = T(x, bk), x.astype(np.float64)
    close(t.var(unbiased=False), np.var(x64), "float32", rtol=1e-6)
    close(t.var(False), np.var(x64), "float32", rtol=1e-6)
    close(t.var(1, correction=0), np.var(x64, axis=1), "float32", rtol=1e-6)
    with np.errstate(all="ignore"):  # n - correction = 0: inf (PyTorch and numpy)
        ref = np.std(x64, axis=0, ddof=2, keepdims=True)
    close(t.std(dim=0, correction=2, keepdim=True), ref, "float32")
    close(ember.std(t, 1), np.std(x64, axis=1, ddof=1), "float32", rtol=1e-6)
    close(t.std(axis=0, unbiased=True), np.std(x64, axis=0, ddof=1), "float32", rtol=1e-6)
    with pytest.raises(TypeError):
        t.var(correction=1, unbiased=True)


@pytest.mark.parametrize("bk", BACKENDS)
def test_any_all_count_nonzero(bk):
    x = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 0.0], [2.0, -1.0, math.nan]], dtype=np.float32)
    t = T(x, bk)
    for dim in (None, 0, 1, (0, 1)):
        close(t.any(dim=dim), np.any(x, axis=dim), "bool")
        close(ember.all(t, dim), np.all(x, axis=dim), "bool")
        close(t.count_nonzero(dim), np.count_nonzero(x, axis=dim), "int64")
    close(t.any(dim=1, keepdim=True), np.any(x, axis=1, keepdims=True), "bool")
    close(T([1, 2], bk).all(axis=0), np.bool_(True), "bool")


@pytest.mark.parametrize("bk", BACKENDS)
@pytest.mark.parametrize("dim", [0, 1, -1, -3])
def test_scans(bk, dim):
    x = (RNG.random((3, 2, 4)) + 0.5).astype(np.float32)
    x64 = x.astype(np.float64)
    close(T(x, bk).cumsum(dim), np.cumsum(x64, axis=dim), "float32", rtol=1e-6)
    close(ember.cumprod(T(x, bk), dim=dim), np.cumprod(x64, axis=dim), "float32", rtol=1e-5)
    close(T(x, bk).cumsum(), np.cumsum(x64), "float32", rtol=1e-6)
    close(T(x, bk).cumsum(dim, dtype=ember.float64), np.cumsum(x, axis=dim, dtype=np.float64),
          "float64", rtol=1e-12)


@pytest.mark.parametrize("bk", BACKENDS)
@pytest.mark.parametrize("p", [2, 1, math.inf, -math.inf, "fro", 3, 0.5, 0])
@pytest.mark.parametrize("dim", [None, 1, (0, 1)])
def test_norm(bk, p, dim):
    x = np.array([[3.0, -4.0, 0.0], [1.0, 0.0, -2.0]], dtype=np.float32)
    a = np.abs(x.astype(np.float64))
    q = 2 if p == "fro" else p
    if q == math.inf:
        ref = a.max(axis=dim)
    elif q == -math.inf:
        ref = a.min(axis=dim)
    elif q == 0:
        ref = (a != 0).sum(axis=dim).astype(np.float64)
    else:
        ref = (a**q).sum(axis=dim) ** (1.0 / q)
    close(T(x, bk).norm(p=p, dim=dim), ref, "float32", rtol=1e-5)
    close(ember.norm(T(x, bk), p, dim, keepdim=True),
          np.reshape(ref, (1, 1) if dim != 1 else (2, 1)), "float32", rtol=1e-5)


@pytest.mark.parametrize("bk", BACKENDS)
def test_tuple_and_list_dims(bk):
    t = T(X3, bk)
    x64 = X3.astype(np.float64)
    close(t.sum(dim=[2, 0]), x64.sum(axis=(0, 2)), "float32", rtol=1e-5)
    close(t.mean(axis=(-2, -1), keepdim=True), x64.mean(axis=(1, 2), keepdims=True),
          "float32", rtol=1e-5, atol=1e-6)
    close(t.amin(dim=(1,)), x64.min(axis=1), "float32")
