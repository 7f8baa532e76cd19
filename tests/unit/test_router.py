"""Router: ops run where the policy says among the capable backends, moves are visible, and
results match numpy float64 (or the numpy backend on its own); composes with Autodiff and
Fusion. Router("wgpu", "numpy") runs on Mesa lavapipe here."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import ember
from ember import Autodiff, Fusion, Router
from ember.backends.numpy import NumpyBackend
from ember.contract import registry
from ember.errors import DTypeError, EmberError, UnsupportedOpError
from ember.router import Cost, PinDtype, PinOp

from _wgpu import B as WGPU  # skips this module when there is no wgpu adapter

NUMPY = ember.get_backend("numpy")


def test_float32_runs_on_wgpu_float64_and_int64_on_numpy():
    r = Router(WGPU, NUMPY)
    a = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    x = ember.tensor(a, backend=r)
    y = (x * 3 + 1).tanh().sum(dim=1)
    assert r.location(y._prim) == "wgpu" and r.runs[1] == 0
    np.testing.assert_allclose(y.numpy(), np.tanh(a.astype(np.float64) * 3 + 1).sum(1),
                               rtol=1e-5)
    z = x.to(ember.float64) / 3  # float64: only numpy holds it
    assert z.dtype == ember.float64 and r.location(z._prim) == "numpy"
    np.testing.assert_array_equal(z.numpy(), a.astype(np.float64) / 3)
    # int64 beyond int32: wgpu would store it as int32, so it lives on numpy, exactly
    big = ember.tensor([2**40, -(2**35), 7], dtype=ember.int64, backend=r)
    assert r.location(big._prim) == "numpy"
    assert (big * 3 + 1).tolist() == [3 * 2**40 + 1, -3 * 2**35 + 1, 22]


def test_index_arguments_may_be_narrow():
    """An int64 index (values in range by contract) goes to wgpu with the float32 table."""
    r = Router(WGPU, NUMPY)
    table = ember.tensor(np.arange(20, dtype=np.float32).reshape(5, 4), backend=r)
    idx = ember.tensor([4, 0, 2], dtype=ember.int64, backend=r)
    assert r.location(idx._prim) == "numpy"
    rows = table[idx]
    assert r.location(rows._prim) == "wgpu"
    np.testing.assert_array_equal(rows.numpy(), np.arange(20).reshape(5, 4)[[4, 0, 2]])
    assert [m.dst for m in r.log] == ["wgpu"] and r.log[0].dtype == "int64"


def test_moves_are_counted_logged_and_kept(caplog):
    r = Router(WGPU, NUMPY)
    w = ember.tensor(np.ones((3, 3), np.float64), backend=r)  # on numpy
    x = ember.tensor(np.eye(3, dtype=np.float32), backend=r)  # on wgpu
    with caplog.at_level(logging.DEBUG, logger="ember.router"):
        for _ in range(3):  # the same x moves to numpy once, then its copy is used
            out = w @ x.to(ember.float64)
    assert r.moves == 1 and r.moved_bytes == 9 * 4
    assert r.log[-1] == ("cast", "wgpu", "numpy", (3, 3), "float32", 36)
    assert any("moved float32 (3, 3)" in m for m in caplog.messages)
    np.testing.assert_array_equal(out.numpy(), np.ones((3, 3)))


def test_pin_by_dtype_and_by_op():
    r = Router(WGPU, NUMPY, policy=PinDtype({"float32": "numpy"}))
    x = ember.tensor([1.0, 4.0], backend=r)
    assert r.location(x._prim) == "numpy" and r.location((x + 1)._prim) == "numpy"
    assert r.runs[0] == 0
    r = Router(WGPU, NUMPY, policy=PinOp({"float_sqrt": "numpy"}))
    x = ember.tensor([1.0, 4.0], backend=r)
    y = x.sqrt()
    assert r.location(x._prim) == "wgpu" and r.location(y._prim) == "numpy"
    assert y.tolist() == [1.0, 2.0] and r.moves == 1


def test_cost_prefers_where_the_operands_are():
    """where(cond, a, b) with cond and a on numpy, b on wgpu. Default: it runs on wgpu (the
    first), moving cond and a; cost-based: on numpy, where most operand bytes are, moving b."""
    big = np.arange(1000, dtype=np.float32)
    for policy, where, moved in ((None, "wgpu", 5000), (Cost(), "numpy", 4000)):
        r = Router(WGPU, NUMPY, policy=PinOp({"from_data": "numpy"}, then=policy))
        a = ember.tensor(big, backend=r)  # pinned: on numpy
        cond = ember.tensor(big % 2 == 0, backend=r)
        r.policy.table.clear()  # from here on, the policy under test decides
        b = ember.tensor(-big, backend=r)  # on wgpu (the first)
        c = ember.where(cond, a, b)
        assert r.location(c._prim) == where and r.moved_bytes == moved
        np.testing.assert_array_equal(c.numpy(), np.where(big % 2 == 0, big, -big))


def test_unsupported_op_goes_to_the_next_backend():
    class NoExp(NumpyBackend):
        name = "numpy-no-exp"
        float_exp = registry.get("float_exp").missing()  # not implemented: not a candidate

    class NoFloat64Sum(NumpyBackend):
        name = "numpy-no-f64-sum"

        def float_sum(self, x, dims):  # implemented, but not for every dtype
            if x.dtype == np.float64:
                raise UnsupportedOpError("float_sum: no float64 here")
            return super().float_sum(x, dims)

    r = Router(NoExp(), ember.get_backend("python"))
    y = ember.tensor([0.0, 1.0], backend=r).exp()
    assert r.location(y._prim) == "python"
    np.testing.assert_allclose(y.tolist(), np.exp([0.0, 1.0]), rtol=1e-6)
    r = Router(NoFloat64Sum(), NUMPY)
    s = ember.tensor([1.5, 2.5], dtype=ember.float64, backend=r).sum()
    assert s.item() == 4.0 and (r.log[0].op, r.log[0].dst) == ("float_sum", "numpy")
    s32 = ember.tensor([1.5, 2.5], backend=r).sum()
    assert r.location(s32._prim) == "numpy-no-f64-sum"


def test_autodiff_over_router_matches_numpy():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 3)).astype(np.float32)
    w = rng.standard_normal((3, 2)).astype(np.float32)
    grads = []
    for backend in (Autodiff(Router(WGPU, NUMPY)), ember.get_backend("autodiff-numpy")):
        x = ember.tensor(a, backend=backend).require_grad()
        k = ember.tensor(w, backend=backend).require_grad()
        loss = ((x @ k).relu() * 0.5).to(ember.float64).sum()  # float64 on numpy
        g = loss.backward()
        grads.append((g.get(x).numpy(), g.get(k).numpy()))
    for got, want in zip(*grads):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_router_over_fusion_and_fusion_over_router():
    a = np.linspace(0, 1, 64, dtype=np.float32)
    want = np.abs((a.astype(np.float64) * 2 + 1) * 3 - 1)
    fused = Fusion(WGPU)
    r = Router(fused, NUMPY)
    x = ember.tensor(a, backend=r)
    y = ((x * 2 + 1) * 3 - 1).abs()
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-6)
    assert fused.programs == 1  # the chain ran as one fused kernel under the Router
    outer = Fusion(Router(WGPU, NUMPY))
    y = ((ember.tensor(a, backend=outer) * 2 + 1) * 3 - 1).abs()
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-6)


def test_caps_and_errors():
    r = Router(WGPU, NUMPY)
    assert ember.float64 in r.caps.dtypes and not r.caps.narrow
    assert Router(WGPU).caps.narrow == {ember.int64}
    with pytest.raises(DTypeError, match="has no float64"):  # the front end reads caps
        ember.tensor([1.0], dtype=ember.float64, backend=Router(WGPU))
    with pytest.raises(DTypeError, match="full: no backend of router-wgpu that implements it "
                       r"holds float64 \(they hold: wgpu: bool"):
        Router(WGPU).full((2,), 1.0, ember.float64)
    with pytest.raises(EmberError, match="at least one backend"):
        Router()
    with pytest.raises(EmberError, match="unknown policy 'fastest'; valid: 'caps', 'cost'"):
        Router(NUMPY, policy="fastest")
    with pytest.raises(EmberError, match="put Autodiff outside"):
        Router(ember.get_backend("autodiff-numpy"), NUMPY)
    with pytest.raises(EmberError, match="no inner backend 'wasm'"):
        Router(NUMPY, policy=PinOp({"float_add": "wasm"})).index("wasm")
