"""``core/ember/tensor.pyi`` (the type stub IDEs and type checkers read for ember.tensor) is
current: regenerating it from the Tensor class gives the committed file, it declares every
method and property a tensor has at run time, its imports resolve, and the wheel ships it with
``py.typed``."""

from __future__ import annotations

import ast
import importlib

import pytest

import ember
from ember import tensor_stub

TENSOR = ember.Tensor


def test_committed_stub_is_current():
    assert tensor_stub.PATH.read_text() == tensor_stub.render(), (
        f"{tensor_stub.PATH} is stale (a Tensor method or signature changed): regenerate it "
        "with `python -m ember.tensor_stub` and commit it"
    )
    assert tensor_stub.main(["--check"]) == 0


def _declared(tree: ast.Module) -> dict[str, set[str]]:
    out = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            names = set()
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    names.add(item.name)
                elif isinstance(item, ast.AnnAssign):
                    names.add(item.target.id)
            out[node.name] = names
    return out


def test_stub_declares_every_tensor_member():
    declared = _declared(ast.parse(tensor_stub.render()))["Tensor"]
    members = set(vars(TENSOR)) - tensor_stub.LEFT_OUT
    assert members - declared == set()
    for name in ("sum", "reshape", "__add__", "__getitem__", "grad", "T", "to", "backward",
                 "requires_grad", "cpu", "relu", "exp"):
        assert name in declared, name
    assert "__getattr__" in vars(TENSOR) and "__getattr__" not in declared  # on purpose


def test_stub_signatures_and_imports():
    text = tensor_stub.render()
    assert "def grad(self) -> Tensor | None: ..." in text
    assert "def grad(self, value: Tensor | None) -> None: ..." in text
    assert "def backward(self, gradient=..., *, into: Gradients | None = ..., " in text
    assert "async def to_data_async(self) -> TensorData: ..." in text
    for node in ast.parse(text).body:
        if isinstance(node, ast.ImportFrom):
            module = importlib.import_module(node.module)
            for alias in node.names:
                assert hasattr(module, alias.name), f"{node.module}.{alias.name}"


def test_stub_resolves_what_it_can_and_writes_any_otherwise():
    writer = tensor_stub._Writer()

    def f(x: "NoSuchName", y: "int | None" = None) -> "tuple[int, ...]":  # noqa: F821
        return ()

    assert writer.signature(f, method=False) == "(x: Any, y: int | None = ...) -> tuple[int, ...]"


def test_wheel_ships_the_stub_and_py_typed():
    wheel = pytest.importorskip("hatchling.builders.wheel")
    root = tensor_stub.PATH.parents[2]
    files = {f.distribution_path for f in wheel.WheelBuilder(str(root)).recurse_included_files()}
    assert {"ember/tensor.pyi", "ember/py.typed"} <= files
