"""The op registry: every backend op declared once, and what the layers above read from it."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import ember
from ember.contract import Backend, Kind, Spec, infer, registry
from ember.errors import UnsupportedOpError

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.conformance.infer_check import InferChecked, InferError  # noqa: E402


def test_every_backend_method_is_a_declared_op():
    for b in ("numpy", "python", "autodiff-numpy"):
        backend = type(ember.get_backend(b))
        for name in dir(backend):
            if name.startswith(("float_", "int_", "bool_")):
                assert name in registry.REGISTRY, f"{backend.__name__}.{name}"


def test_each_op_is_complete():
    for op in registry.ops():
        assert isinstance(op.kind, Kind) and callable(op.infer), op
        assert set(op.tensors) <= set(op.args), op
        if op.grad is not None:
            assert op.differentiable, op
        # a required primitive that is differentiable needs a rule Autodiff can run
        if op.required and op.differentiable and op.kind is not Kind.DATA:
            assert op.grad is not None or op.name in ("cast", "cat"), op


def test_required_ops_are_the_ones_without_a_default_body():
    required = set(Backend.required_ops())
    assert required == {op.name for op in registry.ops() if op.default is None}
    assert {"float_add", "reshape", "float_matmul", "where"} <= required
    assert "float_sigmoid" not in required and "conv" not in required


def test_a_backend_method_named_like_no_op_is_refused():
    with pytest.raises(TypeError, match="float_tanhh: no op of that name"):
        type("Typo", (Backend,), {"float_tanhh": lambda self, x: x})


def test_implement_takes_only_declared_ops():
    class Mine(Backend):
        pass

    Mine.implement(registry.get("float_exp"), lambda self, x: "exp!")
    assert Mine().float_exp(None) == "exp!"
    fake = registry.Op("float_fake", Kind.ELEMENTWISE, ("x",), {}, ("x",), infer.same, True,
                       None, "", 1)
    with pytest.raises(TypeError, match="not a declared op"):
        Mine.implement(fake, lambda self, x: x)


def test_a_missing_required_primitive_names_itself():
    class Empty(Backend):
        name = "empty"

    assert "float_add" in Empty.missing_ops()
    with pytest.raises(UnsupportedOpError, match="float_add: backend 'empty'"):
        Empty().float_add(1, 2)


def test_unknown_op_lookup_suggests_near_names():
    with pytest.raises(UnsupportedOpError, match="did you mean .*float_tanh"):
        registry.get("float_tahn")


def test_shape_rules_without_running():
    conv = registry.get("conv")
    x, w = Spec((2, 3, 9, 9), ember.float32), Spec((8, 3, 3, 3), ember.float32)
    assert conv.infer(x, w, None, (2, 2), ((1, 1), (1, 1)), (1, 1), 1) == Spec(
        (2, 8, 5, 5), ember.float32
    )
    assert registry.get("float_argmax").infer(Spec((4, 5), ember.float32), 1) == Spec(
        (4, 1), ember.int64
    )
    values, indices = registry.get("float_sort").infer(Spec((3,), ember.float16), 0, False)
    assert values.dtype == ember.float16 and indices.dtype == ember.int64


def test_the_infer_check_catches_a_wrong_rule(monkeypatch):
    """The conformance run on ``checked-numpy`` compares every result with its rule; a
    planted wrong rule must fail it."""
    b = InferChecked(ember.get_backend("numpy"))
    x = ember.tensor(np.ones((2, 3), np.float32), backend=b)
    assert x.exp().sum(dim=1).shape == (2,)
    monkeypatch.setattr(registry.get("float_exp"), "infer", infer.to_bool)
    with pytest.raises(InferError, match="float_exp: declared result"):
        x.exp()
