"""Reading ONNX files into a small, plain-Python graph (the only module that touches protobuf).

The ``onnx`` package is optional: it is imported here, lazily, with an error naming the extra.
Everything downstream (the runtime, the op registry, the code generator) sees only
:class:`Graph` and :class:`Node` objects holding Python values and numpy arrays.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from ..errors import EmberError


class OnnxLoadError(EmberError, ValueError):
    """An ONNX file that cannot be read: missing, truncated, not a model, or a bad graph."""


def require_onnx():
    """Import ``onnx`` or say how to install it."""
    try:
        import onnx
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError(
            "ember.onnx needs the 'onnx' package: pip install 'ember[onnx]' "
            "(or pip install onnx)"
        ) from e
    return onnx


@dataclass
class Node:
    op_type: str
    inputs: list[str]
    outputs: list[str]
    attrs: dict[str, Any]
    domain: str = ""
    name: str = ""


@dataclass
class Graph:
    """A graph: nodes in topological order, named inputs/outputs, constant tensors."""

    name: str
    nodes: list[Node]
    inputs: list[str]  # runtime inputs (initializers excluded)
    outputs: list[str]
    initializers: dict[str, Any] = field(default_factory=dict)  # name -> numpy array
    input_info: dict[str, tuple] = field(default_factory=dict)  # name -> (elem_type, shape)
    output_info: dict[str, tuple] = field(default_factory=dict)

    def walk(self):
        """Every node, including those in subgraphs (If/Loop/Scan bodies)."""
        for n in self.nodes:
            yield n
            for v in n.attrs.values():
                for g in v if isinstance(v, list) else [v]:
                    if isinstance(g, Graph):
                        yield from g.walk()


@dataclass
class Model:
    graph: Graph
    opset: int  # version of the default (ai.onnx) domain
    opsets: dict[str, int]
    functions: dict[tuple[str, str], Any]  # (domain, name) -> FunctionProto
    producer: str = ""


def _value_info(vi) -> tuple:
    t = vi.type
    if not t.HasField("tensor_type"):
        return (None, None)
    tt = t.tensor_type
    shape = None
    if tt.HasField("shape"):
        shape = tuple(d.dim_value if d.HasField("dim_value") else (d.dim_param or None)
                      for d in tt.shape.dim)
    return (tt.elem_type, shape)


def tensor_to_numpy(t, base_dir: str | None = None):
    """A TensorProto as a numpy array (external data read from ``base_dir``)."""
    onnx = require_onnx()
    from onnx import numpy_helper

    if t.data_location == onnx.TensorProto.EXTERNAL:
        if base_dir is None:
            raise OnnxLoadError(f"tensor '{t.name}' has external data but no directory is known")
        from onnx.external_data_helper import load_external_data_for_tensor

        load_external_data_for_tensor(t, base_dir)
    return numpy_helper.to_array(t)


def _attr(a, base_dir):
    onnx = require_onnx()
    A = onnx.AttributeProto
    if a.ref_attr_name:
        return _AttrRef(a.ref_attr_name)
    kind = a.type
    if kind == A.FLOAT:
        return float(a.f)
    if kind == A.INT:
        return int(a.i)
    if kind == A.STRING:
        return a.s.decode("utf-8", "replace")
    if kind == A.TENSOR:
        return tensor_to_numpy(a.t, base_dir)
    if kind == A.GRAPH:
        return convert_graph(a.g, base_dir)
    if kind == A.FLOATS:
        return [float(v) for v in a.floats]
    if kind == A.INTS:
        return [int(v) for v in a.ints]
    if kind == A.STRINGS:
        return [s.decode("utf-8", "replace") for s in a.strings]
    if kind == A.TENSORS:
        return [tensor_to_numpy(t, base_dir) for t in a.tensors]
    if kind == A.GRAPHS:
        return [convert_graph(g, base_dir) for g in a.graphs]
    if kind in (A.TYPE_PROTO, A.TYPE_PROTOS):
        return None  # only Optional's 'type' uses these; the value carries its own type
    if kind == A.SPARSE_TENSOR:
        from onnx import numpy_helper

        return numpy_helper.to_array(a.sparse_tensor.values)  # dense rebuild below if needed
    raise OnnxLoadError(f"attribute '{a.name}' has an unsupported type {kind}")


@dataclass(frozen=True)
class _AttrRef:
    """An attribute of a function body that refers to the caller's attribute."""

    name: str


def convert_node(n, base_dir=None) -> Node:
    return Node(
        op_type=n.op_type,
        inputs=list(n.input),
        outputs=list(n.output),
        attrs={a.name: _attr(a, base_dir) for a in n.attribute},
        domain=n.domain if n.domain != "ai.onnx" else "",
        name=n.name,
    )


def convert_graph(g, base_dir=None) -> Graph:
    inits = {t.name: tensor_to_numpy(t, base_dir) for t in g.initializer}
    for st in g.sparse_initializer:
        from onnx import numpy_helper

        inits[st.values.name] = numpy_helper.to_array(st)
    return Graph(
        name=g.name,
        nodes=[convert_node(n, base_dir) for n in g.node],
        inputs=[i.name for i in g.input if i.name not in inits],
        outputs=[o.name for o in g.output],
        initializers=inits,
        input_info={i.name: _value_info(i) for i in g.input},
        output_info={o.name: _value_info(o) for o in g.output},
    )


def read_model(source) -> Model:
    """Parse a path, bytes or ``onnx.ModelProto`` into a :class:`Model`.

    Raises :class:`OnnxLoadError` for anything that is not a readable ONNX model.
    """
    onnx = require_onnx()
    base_dir = None
    if isinstance(source, onnx.ModelProto):
        proto = source
    else:
        if isinstance(source, (bytes, bytearray, memoryview)):
            raw, where = bytes(source), "<bytes>"
        else:
            where = os.fspath(source)
            base_dir = os.path.dirname(os.path.abspath(where))
            try:
                with open(where, "rb") as f:
                    raw = f.read()
            except OSError as e:
                raise OnnxLoadError(f"onnx.load: cannot read '{where}': {e}") from e
        proto = onnx.ModelProto()
        try:
            proto.ParseFromString(raw)
        except Exception as e:
            raise OnnxLoadError(
                f"onnx.load: '{where}' is not a valid ONNX model ({len(raw)} bytes): the "
                f"protobuf does not parse ({type(e).__name__}: {e}); the file may be truncated "
                "or not an ONNX file"
            ) from e
        if not proto.HasField("graph") or (proto.ir_version == 0 and not proto.graph.node):
            raise OnnxLoadError(
                f"onnx.load: '{where}' holds no ONNX graph ({len(raw)} bytes); the file may be "
                "truncated or not an ONNX file"
            )
    opsets = {(o.domain if o.domain != "ai.onnx" else ""): int(o.version)
              for o in proto.opset_import}
    opset = opsets.get("", 1 if proto.ir_version < 3 else 21)
    try:
        graph = convert_graph(proto.graph, base_dir)
    except OnnxLoadError:
        raise
    except Exception as e:
        raise OnnxLoadError(f"onnx.load: the graph cannot be read: {type(e).__name__}: {e}") from e
    functions = {(f.domain, f.name): f for f in proto.functions}
    return Model(graph, opset, opsets, functions, proto.producer_name)
