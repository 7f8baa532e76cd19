"""ONNX export: ``ember.onnx.export(module, example_inputs, "model.onnx")``.

The module runs once, in eval mode, on the example inputs while :class:`ember.jit`'s tracer
records the backend ops it calls (the op registry's names: ``conv``, ``float_matmul``,
``layer_norm``…). Steps that read only parameters and constants are folded into initializers
(a Linear's transposed weight, a batch norm's scale), the rest become ONNX nodes through
:mod:`ember.onnx.exporter_ops`, one small emitter per op, into an
:class:`~ember.onnx.exporter_graph.Graph`. The model is checked with
``onnx.checker.check_model(full_check=True)`` and written atomically.

Needs the optional ``onnx`` package and numpy (``pip install 'ember[onnx]'``).

>>> import os, tempfile, ember
>>> from ember import nn
>>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
>>> path = os.path.join(tempfile.mkdtemp(), "mlp.onnx")
>>> graph = ember.onnx.export(model, ember.randn(3, 4), path, dynamic_batch=True)
>>> [n.op_type for n in graph.graph.node]
['MatMul', 'Add', 'Relu', 'MatMul', 'Add']
"""

from __future__ import annotations

import dataclasses
import os

from ..contract import registry
from ..contract.registry import Kind
from ..jit.chain import innermost, lower
from ..contract.passes import eliminate_dead
from ..contract.program import Slot
from ..jit.trace import Tracer
from ..jit.tree import flatten
from ..tensor import Tensor
from .exporter_batch import batch_symbols, grown
from .exporter_graph import Dim, Graph, OnnxExportError, OnnxExportUnsupportedError
from .exporter_ops import EMITTERS

#: the default ONNX opset: LayerNormalization is a standard op from 17 on
OPSET = 17


def export(module, example_inputs, path: str | os.PathLike, *, input_names=None,
           output_names=None, dynamic_batch: bool = False, opset: int = OPSET):
    """Trace ``module(*example_inputs)`` and write it to ``path`` as an ONNX model; returns
    the ``onnx.ModelProto``.

    ``example_inputs`` is a tensor or a tuple of tensors. ``dynamic_batch`` makes dim 0 of
    every input the symbolic ``"batch"`` so the model runs at any batch size (the module is
    traced a second time at batch + 1 to tell which sizes follow it). The module is
    exported in eval mode (Dropout off, BatchNorm with its running statistics) and left in
    the mode it had.

    >>> import os, tempfile, ember, ember.onnx
    >>> from ember import nn
    >>> path = os.path.join(tempfile.mkdtemp(), "mlp.onnx")
    >>> model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    >>> proto = ember.onnx.export(model, ember.ones(1, 3), path, dynamic_batch=True)
    >>> [node.op_type for node in proto.graph.node]
    ['MatMul', 'Add', 'Relu', 'MatMul', 'Add']
    >>> x = ember.randn(5, 3)
    >>> bool((ember.onnx.load(path)(x) - model(x)).abs().max() < 1e-5)  # any batch size
    True
    """
    onnx = _require("onnx")
    if opset < OPSET:
        raise OnnxExportError(f"onnx export: opset must be >= {OPSET}, got {opset}")
    inputs = (example_inputs,) if isinstance(example_inputs, Tensor) else tuple(example_inputs)
    if not inputs or not all(isinstance(t, Tensor) for t in inputs):
        raise OnnxExportError(
            "onnx export: example_inputs must be a tensor or a tuple of tensors, got "
            f"{type(example_inputs).__name__}"
        )
    input_names = _names(input_names, len(inputs), "input")
    tracer, outs = _trace(module, inputs)
    output_names = _names(output_names, len(outs), "output")
    args, shapes = {}, {}
    if dynamic_batch:  # a second trace at batch + 1 tells which sizes follow the batch
        second, _ = _trace(module, grown(inputs))
        args, shapes = batch_symbols(tracer, second, inputs[0].shape[0])
    tape = eliminate_dead(_fold(tracer, tracer.tape(outs, None), shapes))
    graph = Graph(tracer.backend, opset)
    for slot, name in zip(tape.inputs, input_names):
        graph.add_input(slot, name, tracer.keep[slot], shapes.get(slot))
    for slot, prim in tape.constants.items():
        graph.add_constant(slot, prim)
    for step in tape.steps:
        graph.add_step(EMITTERS, step, tracer.keep, args.get(id(step)), shapes)
    for slot, name in zip(tape.outputs, output_names):
        graph.add_output(slot, name, tracer.keep[slot])
    model = graph.model(getattr(module, "__class__", type(module)).__name__)
    onnx.checker.check_model(model, full_check=True)
    from ..io.atomic import atomic_write

    with atomic_write(path) as f:
        f.write(model.SerializeToString())
    return model


def _trace(module, inputs: tuple[Tensor, ...]):
    """Run the module once under a tracer; returns it and the outputs' primitives."""
    backend = inputs[0].backend
    tracer = Tracer(innermost(backend), backend)
    for t in inputs:
        if innermost(t.backend) is not tracer.backend:
            raise OnnxExportError(
                f"onnx export: the example inputs are on backends {backend.name} and "
                f"{t.backend.name}; put them (and the module) on one backend"
            )
        tracer.add_input(lower(t.backend, t._prim))
    was_training = getattr(module, "training", False)
    if hasattr(module, "eval"):
        module.eval()
    tracer.install()
    try:
        result = module(*inputs)
        outs, _ = flatten(result)
        prims = [lower(t.backend, t._prim) for t in outs]
        tracer.finish()
    finally:
        tracer.remove()
        if was_training:
            module.train()
    if not outs:
        raise OnnxExportError("onnx export: the module returned no tensor")
    for step in tracer.steps:
        if step.kind != "op" or any(isinstance(a, Slot) for a in step.kwargs.values()):
            raise OnnxExportUnsupportedError(
                f"onnx export: the module runs a {step.kind} step ({step.name}) that ONNX "
                "can't express; export in eval mode without random ops or in-place updates"
            )
    return tracer, prims


def _fold(tracer: Tracer, tape, shapes: dict):
    """The tape with every step that reads only constants turned into a constant (its value
    is the one the trace computed).

    With a dynamic batch (``shapes``: the symbolic shapes of the slots), a value whose shape
    follows the batch can't be frozen: one broadcast from a constant and read only by
    broadcasting elementwise ops stays un-broadcast (ONNX broadcasts it the same way), any
    other stays a step.
    """
    readers: dict[int, list] = {}
    for step in tape.steps:
        for slot in step.inputs():
            readers.setdefault(slot, []).append(step)
    constants, steps = dict(tape.constants), []
    for step in tape.steps:
        follows = any(isinstance(d, Dim) for s in step.outputs() for d in shapes.get(s, ()))
        if not all(i in constants for i in step.inputs()):
            steps.append(step)
        elif not follows:
            constants.update((s, tracer.keep[s]) for s in step.outputs())
        elif step.name in ("expand", "full") and all(
            _broadcasts(r) for r in readers.get(step.out, [])
        ):
            constants[step.out] = _unbroadcast(tracer, step, constants)
            shapes.pop(step.out)  # a constant of fixed shape now
        else:
            steps.append(step)
    return dataclasses.replace(tape, constants=constants, steps=steps)


def _broadcasts(step) -> bool:
    """Whether ``step`` is an elementwise op of several tensors (ONNX broadcasts them)."""
    op = registry.REGISTRY.get(step.name)
    return op is not None and op.kind is Kind.ELEMENTWISE and len(op.tensor_positions) > 1


def _unbroadcast(tracer: Tracer, step, constants):
    """The value of a constant ``expand``/``full`` step before broadcasting."""
    if step.name == "expand":
        return constants[step.args[0].id]
    shape, value, dtype = step.args
    return tracer.backend.full((1,) * len(shape), value, dtype)


def _names(given, n: int, stem: str) -> list[str]:
    names = list(given) if given is not None else [
        stem if n == 1 else f"{stem}_{i}" for i in range(n)
    ]
    if len(names) != n or len(set(names)) != n:
        raise OnnxExportError(f"onnx export: expected {n} distinct {stem} names, got {names}")
    return names


def _require(name: str):
    try:
        return __import__(name)
    except ImportError as e:
        raise ImportError(
            f"ember.onnx.export needs the '{name}' package: pip install 'ember[onnx]'"
        ) from e
