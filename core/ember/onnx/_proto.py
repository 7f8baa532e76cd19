"""Reading ONNX files into a small, plain-Python graph (the only module that touches protobuf).

The ``onnx`` package is optional: it is imported here, lazily, with an error naming the extra.
Everything downstream (the runtime, the op registry, the code generator) sees only
:class:`Graph`, :class:`Node` and :class:`Function` objects holding Python values and numpy
arrays. Reading is bounded by ``ember.limits`` before anything is allocated (see ``_checks``),
and every way a file can fail to read raises :class:`OnnxLoadError`.
"""

from __future__ import annotations

import os
import stat
from typing import Any

from ..errors import malformed_file
from ._checks import (
    check_attr_types,
    check_calls,
    check_tensor_data,
    dense_bytes,
    scan,
    tensor_bytes,
)
from ._graph import (  # noqa: F401 - OnnxUnsupportedError: imported from here too
    Function,
    Graph,
    Model,
    Node,
    OnnxLoadError,
    OnnxUnsupportedError,
    _AttrRef,
)

# protobuf cannot encode a larger message: bigger models keep their weights in external files
PROTOBUF_MAX_BYTES = (2 << 30) - 1
_CHUNK = 16 << 20


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


def text(value, what: str) -> str:
    """A protobuf string field as ``str``: protobuf hands back ``bytes`` when the file's bytes
    are not UTF-8, which ONNX names must be."""
    if isinstance(value, str):
        return value
    raise OnnxLoadError(f"onnx.load: {what} is not UTF-8 text: {bytes(value)[:40]!r}; ONNX "
                        "names and strings must be valid UTF-8")


def _domain(value, what: str) -> str:
    d = text(value, what)
    return "" if d == "ai.onnx" else d


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


class Reader:
    """Converts protobuf messages of one file; ``base_dir`` is where external data lives."""

    def __init__(self, base_dir: str | None = None, file_bytes: int = 0):
        self.base_dir = base_dir
        self.file_bytes = file_bytes
        self.dense_bytes = 0  # what sparse tensors expand to, against max_expansion_bytes
        self.opsets: dict[str, int] = {}  # the model's, to check attributes against schemas

    def tensor(self, t, what: str = "tensor"):
        """A TensorProto as a numpy array, its declared size checked against its data first."""
        from onnx import numpy_helper

        what = f"{what} '{text(t.name, what + ' name')}'"
        tensor_bytes(t, what)
        if t.data_location == require_onnx().TensorProto.EXTERNAL:
            if self.base_dir is None:
                raise OnnxLoadError(f"onnx.load: {what} has external data but no directory "
                                    "is known")
            from onnx.external_data_helper import load_external_data_for_tensor

            load_external_data_for_tensor(t, self.base_dir)
        check_tensor_data(t, what)
        return numpy_helper.to_array(t)

    def sparse(self, st, what: str = "sparse tensor"):
        """A SparseTensorProto, densified once its dense size fits the limits."""
        import numpy as np

        from .. import limits

        values, indices = self.tensor(st.values, what), self.tensor(st.indices, what)
        self.dense_bytes += dense_bytes(st, what)
        limits.check(OnnxLoadError, f"onnx.load: sparse tensors expand the {self.file_bytes}"
                     "-byte file by", self.dense_bytes - self.file_bytes, "max_expansion_bytes")
        dims = tuple(st.dims)
        flat = np.zeros(int(np.prod(dims)), values.dtype)
        # indices are linear (NNZ,) or coordinates (NNZ, rank)
        linear = indices if indices.ndim == 1 else (
            np.ravel_multi_index(tuple(indices.T), dims) if indices.size else indices[:, 0])
        if linear.size and (linear.min() < 0 or linear.max() >= flat.size):
            raise OnnxLoadError(f"onnx.load: {what} has indices outside its shape {list(dims)}")
        flat[linear] = values.reshape(-1)
        return flat.reshape(dims)

    def attr(self, a, what: str):
        A = require_onnx().AttributeProto
        if a.ref_attr_name:
            return _AttrRef(text(a.ref_attr_name, f"{what}: a referenced attribute name"))
        kind = a.type
        if kind == A.FLOAT:
            return float(a.f)
        if kind == A.INT:
            return int(a.i)
        if kind == A.STRING:
            return a.s.decode("utf-8", "replace")
        if kind == A.TENSOR:
            return self.tensor(a.t, what)
        if kind == A.GRAPH:
            return self.graph(a.g)
        if kind == A.FLOATS:
            return [float(v) for v in a.floats]
        if kind == A.INTS:
            return [int(v) for v in a.ints]
        if kind == A.STRINGS:
            return [s.decode("utf-8", "replace") for s in a.strings]
        if kind == A.TENSORS:
            return [self.tensor(t, what) for t in a.tensors]
        if kind == A.GRAPHS:
            return [self.graph(g) for g in a.graphs]
        if kind in (A.TYPE_PROTO, A.TYPE_PROTOS):
            return None  # only Optional's 'type' uses these; the value carries its own type
        if kind == A.SPARSE_TENSOR:
            return self.sparse(a.sparse_tensor, what)
        raise OnnxUnsupportedError(f"onnx.load: {what} has an unsupported type {kind}")

    def attrs(self, protos, what: str) -> dict[str, Any]:
        out = {}
        for a in protos:
            name = text(a.name, f"{what}: an attribute name")
            out[name] = self.attr(a, f"{what}, attribute '{name}'")
        return out

    def node(self, n) -> Node:
        op_type = text(n.op_type, "a node's op_type")
        name = text(n.name, f"the name of a {op_type} node")
        what = f"node '{name}' ({op_type})"
        domain = _domain(n.domain, f"{what}: the domain")
        inputs = [text(i, f"{what}: an input name") for i in n.input]
        outputs = [text(o, f"{what}: an output name") for o in n.output]
        attrs = self.attrs(n.attribute, what)  # names checked as UTF-8 first
        check_attr_types(n, op_type, domain, self.opsets, what)
        return Node(op_type, inputs, outputs, attrs, domain, name)

    def graph(self, g) -> Graph:
        name = text(g.name, "a graph name")
        inits = {text(t.name, f"graph '{name}': an initializer name"):
                 self.tensor(t, f"graph '{name}': initializer") for t in g.initializer}
        for st in g.sparse_initializer:
            key = text(st.values.name, f"graph '{name}': a sparse initializer name")
            inits[key] = self.sparse(st, f"graph '{name}': sparse initializer")
        ins = {text(i.name, f"graph '{name}': an input name"): i for i in g.input}
        outs = {text(o.name, f"graph '{name}': an output name"): o for o in g.output}
        return Graph(
            name=name,
            nodes=[self.node(n) for n in g.node],
            inputs=[i for i in ins if i not in inits],
            outputs=list(outs),
            initializers=inits,
            input_info={k: _value_info(v) for k, v in ins.items()},
            output_info={k: _value_info(v) for k, v in outs.items()},
        )

    def function(self, f) -> Function:
        what = f"function '{text(f.name, 'a function name')}'"
        return Function(
            inputs=[text(i, f"{what}: an input name") for i in f.input],
            outputs=[text(o, f"{what}: an output name") for o in f.output],
            defaults=self.attrs(f.attribute_proto, what),
            nodes=[self.node(n) for n in f.node],
        )

    def model(self, proto) -> Model:
        opsets = {_domain(o.domain, "an opset domain"): int(o.version) for o in proto.opset_import}
        opset = opsets.get("", 1 if proto.ir_version < 3 else 21)
        self.opsets = {**opsets, "": opset}
        graph = self.graph(proto.graph)
        functions = {(_domain(f.domain, "a function domain"), text(f.name, "a function name")):
                     self.function(f) for f in proto.functions}
        return Model(graph, opset, opsets, functions, text(proto.producer_name, "producer_name"))


def _read(where: str) -> bytearray:
    try:
        with open(where, "rb") as f:
            info = os.fstat(f.fileno())
            if not stat.S_ISREG(info.st_mode):  # /dev/zero, a FIFO: endless or no size
                raise OnnxLoadError(f"onnx.load: '{where}' is not a regular file (a device, "
                                    "pipe or socket); give the path of an .onnx file")
            _check_file_size(info.st_size, where)
            # in chunks, never past the ceiling: fstat says 0 for /proc files, and read(n)
            # would reserve all n bytes up front
            raw = bytearray()
            while chunk := f.read(min(_CHUNK, PROTOBUF_MAX_BYTES + 1 - len(raw))):
                raw += chunk
    except OSError as e:
        raise OnnxLoadError(f"onnx.load: cannot read '{where}': {e}") from e
    _check_file_size(len(raw), where)
    return raw


def _check_file_size(size: int, where: str) -> None:
    if size > PROTOBUF_MAX_BYTES:
        raise OnnxLoadError(
            f"onnx.load: '{where}' is {size} bytes; an ONNX protobuf holds at most "
            f"{PROTOBUF_MAX_BYTES} (larger models keep their weights in external data files)")


def _parse(source):
    """``(ModelProto, where, base_dir, size in bytes)`` for a path, bytes or a ModelProto."""
    onnx = require_onnx()
    if isinstance(source, onnx.ModelProto):
        return source, "<ModelProto>", None, source.ByteSize()
    if isinstance(source, (bytes, bytearray, memoryview)):
        raw, where, base_dir = bytes(source), "<bytes>", None
        _check_file_size(len(raw), where)
    else:
        where = os.fspath(source)
        base_dir = os.path.dirname(os.path.abspath(where))
        raw = _read(where)
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
    return proto, where, base_dir, len(raw)


def read_model(source) -> Model:
    """Parse a path, bytes or ``onnx.ModelProto`` into a :class:`Model`.

    Raises :class:`OnnxLoadError` for anything that is not a readable ONNX model, including
    one that passes an ``ember.limits`` bound.
    """
    proto, where, base_dir, size = _parse(source)
    with malformed_file(OnnxLoadError, f"onnx.load: '{where}'"):
        scan(proto, size)
        model = Reader(base_dir, size).model(proto)
        check_calls(model.functions)
    return model
