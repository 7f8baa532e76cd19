"""Load-time checks of an ONNX model: bounds before allocation, and a well-formed graph.

Everything here raises :class:`OnnxLoadError` naming the problem (and, for a bound, the
``ember.limits`` field that sets it), so a malformed or hostile file never reaches numpy, the
op registry or the runtime in a state that could hang, exhaust memory or crash untyped.
"""

from __future__ import annotations

import functools
import math

from .. import limits
from ._graph import Function, Node, OnnxLoadError, walk

# elements packed per stored entry/byte where it is not one; complex values take two entries
_SUB_BYTE_BITS = {21: 4, 22: 4, 23: 4, 25: 2, 26: 2, 27: 6, 28: 6}  # uint4 ... float6e3m2
_PER_ENTRY = {21: 2, 22: 2, 23: 2, 25: 4, 26: 4}
_COMPLEX = (14, 15)
_STRING = 8


def scan(proto, file_bytes: int) -> None:
    """Bound what converting ``proto`` will allocate, before converting it: subgraph nesting
    (``max_nesting``), nodes, tensors and attribute entries (``max_tensors``), and the bytes
    that are not tensor data (``max_header_bytes``)."""
    lim = limits.current()
    entries = tensor_bytes_total = 0
    stack = [(proto.graph, 1)] + [(f, 1) for f in proto.functions]
    while stack:
        g, depth = stack.pop()
        limits.check(OnnxLoadError, "onnx.load: subgraph nesting depth", depth, "max_nesting")
        tensors = [*getattr(g, "initializer", ()), *getattr(g, "sparse_initializer", ())]
        entries += len(g.node) + len(tensors) + len(g.input) + len(g.output)
        tensor_bytes_total += sum(t.ByteSize() for t in tensors)
        for n in g.node:
            entries += len(n.attribute)
            for a in n.attribute:
                entries += (len(a.ints) + len(a.floats) + len(a.strings) + len(a.tensors)
                            + len(a.graphs))
                tensor_bytes_total += sum(t.ByteSize() for t in a.tensors)
                tensor_bytes_total += a.t.ByteSize() + a.sparse_tensor.ByteSize()
                stack.extend((s, depth + 1) for s in [*([a.g] if a.HasField("g") else []),
                                                      *a.graphs])
            if entries > lim.max_tensors:
                break
        limits.check(OnnxLoadError, "onnx.load: nodes, tensors and attribute values", entries,
                     "max_tensors")
    limits.check(OnnxLoadError, "onnx.load: protobuf bytes outside tensor data",
                 file_bytes - tensor_bytes_total, "max_header_bytes")


def _dtype(t, what: str):
    from onnx import helper

    try:
        return helper.tensor_dtype_to_np_dtype(t.data_type)
    except KeyError:
        raise OnnxLoadError(f"onnx.load: {what} has unknown element type {t.data_type}; see "
                            "onnx.TensorProto.DataType for the valid ones") from None


def _elements(dims, what: str) -> int:
    dims = [int(d) for d in dims]
    limits.check_shape(OnnxLoadError, f"onnx.load: {what}", dims)
    if any(d < 0 for d in dims):
        raise OnnxLoadError(f"onnx.load: {what} declares a negative dimension in {dims}")
    return math.prod(dims)


def tensor_bytes(t, what: str) -> int:
    """The bytes a TensorProto's declared shape and type take, within ``max_tensor_bytes``."""
    n = _elements(t.dims, what)
    bits = _SUB_BYTE_BITS.get(t.data_type, _dtype(t, what).itemsize * 8)
    nbytes = 0 if t.data_type == _STRING else (n * bits + 7) // 8
    limits.check(OnnxLoadError, f"onnx.load: {what} of shape {list(t.dims)} takes bytes",
                 nbytes, "max_tensor_bytes")
    return nbytes


def check_tensor_data(t, what: str) -> None:
    """The data a TensorProto holds must be what its shape and type declare."""
    from onnx import helper

    n = _elements(t.dims, what)
    if t.HasField("raw_data") and t.data_type != _STRING:
        held, want, unit = len(t.raw_data), tensor_bytes(t, what), "bytes"
    else:
        held, unit = len(getattr(t, helper.tensor_dtype_to_field(t.data_type))), "values"
        per = _PER_ENTRY.get(t.data_type, 1)
        want = 2 * n if t.data_type in _COMPLEX else -(-n // per)
    if held != want:
        raise OnnxLoadError(
            f"onnx.load: {what} declares shape {list(t.dims)} ({n} elements, {want} {unit}) "
            f"but holds {held} {unit}; the file is truncated or corrupt")


def dense_bytes(st, what: str) -> int:
    """What a SparseTensorProto takes once densified, within ``max_tensor_bytes``."""
    nbytes = _elements(st.dims, what) * _dtype(st.values, what).itemsize
    limits.check(OnnxLoadError, f"onnx.load: {what} of dense shape {list(st.dims)} takes "
                 "bytes", nbytes, "max_tensor_bytes")
    return nbytes


@functools.lru_cache(maxsize=512)
def _schema_attr_types(op_type: str, version: int, domain: str) -> dict[str, int]:
    import onnx.defs

    try:
        schema = onnx.defs.get_schema(op_type, version, domain)
    except Exception:  # noqa: BLE001 - not a standard op (or not at this opset): no schema
        return {}
    return {name: int(a.type) for name, a in schema.attributes.items()}


def _kind(t: int) -> str:
    from onnx import AttributeProto

    try:
        return AttributeProto.AttributeType.Name(t)
    except ValueError:
        return f"type {t}"


def check_attr_types(n, op_type: str, domain: str, opsets: dict[str, int], what: str) -> None:
    """A standard op's attributes must have the types its ONNX schema declares, as
    onnxruntime requires: a STRING where an INT belongs is a malformed file, and one that must
    not reach the op functions or the code generator."""
    version = opsets.get(domain)
    types = _schema_attr_types(op_type, version, domain) if version is not None else {}
    for a in n.attribute:
        want = types.get(a.name)
        if want is not None and not a.ref_attr_name and a.type != want:
            raise OnnxLoadError(
                f"onnx.load: {what}: attribute '{a.name}' is {_kind(a.type)}, but the ONNX "
                f"{op_type} schema (opset {version}) declares it {_kind(want)}")


def check_calls(functions: dict[tuple[str, str], Function]) -> None:
    """Model-local functions may call each other, but not in a cycle (ONNX forbids recursion,
    and running it would never end) nor more than ``max_nesting`` deep."""
    calls = {k: sorted({(n.domain, n.op_type) for n in walk(f.nodes)} & functions.keys())
             for k, f in functions.items()}
    height: dict[tuple[str, str], int] = {}

    def visit(key, path: tuple) -> int:
        if key in path:
            chain = " -> ".join(f"{d}.{name}" if d else name for d, name in (*path, key))
            raise OnnxLoadError(f"onnx.load: local function calls form a cycle: {chain}; ONNX "
                                "functions cannot be recursive")
        if key not in height:
            limits.check(OnnxLoadError, "onnx.load: nesting of local function calls",
                         len(path) + 1, "max_nesting")
            height[key] = 1 + max((visit(c, (*path, key)) for c in calls[key]), default=0)
            limits.check(OnnxLoadError, "onnx.load: nesting of local function calls",
                         height[key], "max_nesting")
        return height[key]

    for key in calls:
        visit(key, ())


def check_wiring(inputs, nodes: list[Node], outputs: list[str], where: str,
                 outer: tuple[set[str], ...] = ()) -> None:
    """Every node input must come from ``inputs``, an earlier node or, in a subgraph, a value
    of an enclosing scope defined before it; every output must be computed (a truncated file
    that still parses usually fails here)."""
    known = set(inputs) | {""}
    scopes = (known, *outer)  # shared, not copied: many subgraphs must not cost N^2
    for i, node in enumerate(nodes):
        bad = [x for x in node.inputs if not any(x in s for s in scopes)]
        if bad:
            raise OnnxLoadError(
                f"onnx.load: {where}: node {i} '{node.name}' ({node.op_type}) reads {bad}, "
                "which no input, initializer or earlier node defines; the file may be "
                "truncated or the graph not topologically sorted")
        for g in node.subgraphs():
            check_wiring([*g.inputs, *g.initializers], g.nodes, g.outputs,
                         f"{where} > {node.op_type} '{node.name}' body '{g.name}'", scopes)
        known.update(node.outputs)
    missing = [o for o in outputs if o not in known]
    if missing:
        raise OnnxLoadError(f"onnx.load: {where}: outputs {missing} are never computed")
