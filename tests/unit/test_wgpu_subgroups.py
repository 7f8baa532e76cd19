"""The wgpu subgroup kernels (reduce.wgsl's `reduce_sg`, nn.wgsl's `softmax_sg`) against numpy
float64 and against the plain kernels (EMBER_WGPU_SUBGROUPS=0), on lavapipe's subgroups.

Tolerances: max/min/arg reductions are exact in any order, so they must equal numpy exactly.
A float32 sum of k terms in any order differs from the exact sum by at most
(k - 1) * 2**-24 * sum(|x|) (the standard bound on recursive summation, which covers every
association tree); a product of k factors by at most about (k - 1) * 2**-24 relative.
"""

from __future__ import annotations

import pytest
from _wgpu import B, down, np, up

U = 2.0 ** -24
LENGTHS = (1, 7, 8, 9, 63, 64, 65, 255, 256, 1000, 4097)

pytestmark = pytest.mark.skipif("subgroup" not in B.rt.info.features,
                                reason="the adapter has no subgroup feature")


@pytest.fixture(params=["1", "0"], ids=["subgroups", "plain"])
def mode(request, monkeypatch):
    monkeypatch.setenv("EMBER_WGPU_SUBGROUPS", request.param)
    return request.param


def _data(rng, shape, op):
    if op == "prod":  # factors near 1 keep long products finite
        return rng.uniform(0.97, 1.03, shape).astype(np.float32)
    return rng.standard_normal(shape).astype(np.float32)


def _run(op, x, dim):
    if op in ("argmax", "argmin"):
        return down(getattr(B, "float_" + op)(up(x), dim)).reshape(-1)
    return down(getattr(B, "float_" + op)(up(x), (dim,))).reshape(-1)


def _check(op, x, dim, got):
    x64 = np.moveaxis(x.astype(np.float64), dim, -1)
    k = x64.shape[-1]
    if op == "sum":
        bound = (k - 1) * U * np.abs(x64).sum(-1) + 1e-30
        assert np.all(np.abs(got - x64.sum(-1).reshape(-1)) <= bound.reshape(-1))
    elif op == "prod":
        ref = x64.prod(-1).reshape(-1)
        assert np.all(np.abs(got - ref) <= 1.01 * k * U * np.abs(ref))
    else:
        ref = getattr(np, op)(np.moveaxis(x, dim, -1), axis=-1).reshape(-1)
        np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("op", ["sum", "prod", "max", "min", "argmax", "argmin"])
@pytest.mark.parametrize("k", LENGTHS)
def test_reductions_match_numpy(mode, op, k):
    rng = np.random.default_rng(k)
    for rows, dim in ((1, 1), (5, 1), (3, 0)):
        shape = (rows, k) if dim == 1 else (k, rows)
        x = _data(rng, shape, op)
        _check(op, x, dim, _run(op, x, dim))


def test_subgroup_kernel_is_the_one_dispatched(monkeypatch):
    monkeypatch.setenv("EMBER_WGPU_SUBGROUPS", "1")
    down(B.float_sum(up(np.ones((3, 300), np.float32)), (1,)))
    assert any(key[:2] == ("reduce", "reduce_sg") for key in B.rt.lib._pipelines)


@pytest.mark.parametrize("op", ["sum", "prod", "max", "argmin"])
def test_deterministic_and_close_to_the_plain_kernel(monkeypatch, op):
    rng = np.random.default_rng(7)
    x = _data(rng, (37, 4097), op)
    monkeypatch.setenv("EMBER_WGPU_SUBGROUPS", "1")
    first, second = _run(op, x, 1), _run(op, x, 1)
    assert first.tobytes() == second.tobytes()
    monkeypatch.setenv("EMBER_WGPU_SUBGROUPS", "0")
    plain = _run(op, x, 1)
    if op in ("sum", "prod"):
        # both within the reassociation bound of the exact value: 2x that bound apart at most
        scale = np.abs(x.astype(np.float64)).sum(1) if op == "sum" else np.abs(plain)
        assert np.all(np.abs(first - plain) <= 2 * 4096 * U * scale * 1.01)
    else:
        assert first.tobytes() == plain.tobytes()


@pytest.mark.parametrize("op", ["max", "min", "argmax", "argmin", "sum"])
def test_nan_and_inf(mode, op):
    x = np.random.default_rng(3).standard_normal((6, 300)).astype(np.float32)
    x[0, 17] = np.nan
    x[1, 5] = np.inf
    x[1, 200] = -np.inf
    x[2, 99] = np.nan
    x[2, 250] = np.nan
    x[3, :] = np.inf
    x[4, :] = -np.inf
    x[5, 123] = np.inf
    x[5, 124] = np.inf
    got = _run(op, x, 1)
    with np.errstate(invalid="ignore"):  # inf + -inf
        ref = getattr(np, op)(x, axis=1)
    np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("op", ["sum", "max", "argmax"])
def test_int32(mode, op):
    x = np.random.default_rng(5).integers(-1000, 1000, (4, 1000)).astype(np.int32)
    fn = getattr(B, "int_" + op)
    got = down(fn(up(x), 1) if op == "argmax" else fn(up(x), (1,))).reshape(-1)
    np.testing.assert_array_equal(got, getattr(np, op)(x, axis=1))


# softmax: both kernels compute exp(x - max) / sum with the sum reassociated, so each is within
# (k - 1) * 2**-24 of the exact sum plus a few ulp of f_exp / f_log and the division: a
# (k + 32) * 2**-24 relative (softmax) or absolute-over-(1 + |y|) (log_softmax) allowance
def _softmax(x, dim, log):
    fn = B.log_softmax if log else B.softmax
    return down(fn(up(x), dim))


def _softmax_ref(x, dim, log):
    x64 = x.astype(np.float64)
    shifted = x64 - x64.max(dim, keepdims=True)
    logs = np.log(np.exp(shifted).sum(dim, keepdims=True))
    return shifted - logs if log else np.exp(shifted - logs)


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("k", LENGTHS)
def test_softmax_matches_numpy(mode, log, k):
    rng = np.random.default_rng(k)
    for shape, dim in (((1, k), 1), ((11, k), 1), ((k, 3), 0), ((2, k, 3), 1)):
        x = (3 * rng.standard_normal(shape)).astype(np.float32)
        got, ref = _softmax(x, dim, log), _softmax_ref(x, dim, log)
        allowance = (k + 32) * U * (1 + np.abs(ref) if log else np.abs(ref))
        assert np.all(np.abs(got - ref) <= allowance), (shape, np.abs(got - ref).max())


def test_softmax_subgroup_kernel_is_the_one_dispatched(monkeypatch):
    monkeypatch.setenv("EMBER_WGPU_SUBGROUPS", "1")
    down(B.softmax(up(np.ones((3, 300), np.float32)), 1))
    assert any(key[:2] == ("nn", "softmax_sg") for key in B.rt.lib._pipelines)


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_softmax_deterministic_and_specials_as_the_plain_kernel(monkeypatch, log):
    x = np.random.default_rng(9).standard_normal((40, 1000)).astype(np.float32)
    x[0, 3] = np.nan
    x[1, 7] = np.inf
    x[2, :] = -np.inf
    x[3, 10] = -np.inf
    x[4, 0] = 1e30
    monkeypatch.setenv("EMBER_WGPU_SUBGROUPS", "1")
    first, second = _softmax(x, 1, log), _softmax(x, 1, log)
    assert first.tobytes() == second.tobytes()
    monkeypatch.setenv("EMBER_WGPU_SUBGROUPS", "0")
    plain = _softmax(x, 1, log)
    special = ~np.isfinite(plain) | ~np.isfinite(first)
    np.testing.assert_array_equal(first[special], plain[special])
    ref = _softmax_ref(x[5:], 1, log)
    allowance = 2 * (1000 + 32) * U * (1 + np.abs(ref) if log else np.abs(ref))
    assert np.all(np.abs(first[5:] - plain[5:]) <= allowance)
