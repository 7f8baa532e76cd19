"""ONNX's int16, uint16, uint32 and uint64 in ember's wider integers, with their own
wrap-around.

int16 and uint16 values run as int32, uint32 as int64 (:mod:`._types`). Every integer op ember
runs computes its result modulo 2**32 or 2**64, so reducing an output modulo 2**16 (2**32)
gives exactly what the narrow type gives: ``uint16 0 - 1`` is 65535, ``int16 32767 + 1`` is
-32768, a uint16 sum or cumulative sum wraps, uint32 ``NOT x`` is ``2**32 - 1 - x``. So each
node output whose ONNX type is one of these is wrapped to it after the node runs; its type is
found at load time from the graph's declared types (inputs, initializers, ``Cast`` targets...)
carried forward through the nodes that keep their input's type.

uint64 runs as int64, which holds only its values below 2**63: a uint64 value may flow only
through ops whose results stay within their inputs' values (comparisons, Max, Div, Gather,
Reshape...). A graph that sends one into arithmetic that can leave that range (Add, Sub,
ReduceSum, BitwiseNot...) is refused at load with :class:`OnnxUnsupportedError`; a uint64
input value of 2**63 or more is refused when it is fed (:func:`._types.numpy_to_tensor`).
"""

from __future__ import annotations

from .. import dtype as dt
from ..errors import UnsupportedOpError
from ._graph import Graph, Node, OnnxUnsupportedError
from ._types import INT16, UINT16, UINT32, UINT64

# ONNX type -> (ember storage dtype, modulus, signed)
WRAPPED = {INT16: (dt.int32, 1 << 16, True), UINT16: (dt.int32, 1 << 16, False),
           UINT32: (dt.int64, 1 << 32, False)}
_NAMES = {INT16: "int16", UINT16: "uint16", UINT32: "uint32", UINT64: "uint64"}
_NUMPY = {name: elem for elem, name in _NAMES.items()}
# ops whose outputs do not take the type of their type-carrying input
_OWN_TYPE = {"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "And", "Or", "Xor",
             "Not", "IsNaN", "IsInf", "Shape", "Size", "ArgMax", "ArgMin", "NonZero",
             "DequantizeLinear", "QuantizeLinear", "DynamicQuantizeLinear", "If", "Loop",
             "Scan", "RandomNormalLike", "RandomUniformLike", "Bernoulli", "Multinomial",
             "Cast", "CastLike", "BitCast", "EyeLike", "Constant", "ConstantOfShape"}
# the input whose type the outputs take, where it is not the first
_TYPE_FROM = {"Where": 1, "OneHot": 2}
# ops whose results are among (or between) their inputs' values: uint64 stays exact
_KEEPS_RANGE = {"Identity", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose",
                "Concat", "Split", "Slice", "Gather", "GatherElements", "GatherND", "Expand",
                "Tile", "Max", "Min", "ReduceMax", "ReduceMin", "TopK", "Sort", "Unique",
                "Where", "Div", "Mod", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "Equal",
                "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "ArgMax", "ArgMin",
                "Shape", "Size", "Cast", "CastLike", "Compress", "ReverseSequence"}


def _attr_type(node: Node) -> int | None:
    """The ONNX type an own-typed node's output has, where its attributes tell."""
    if node.op_type in ("Cast", "BitCast"):
        return node.attrs.get("to")
    if node.op_type == "EyeLike":
        return node.attrs.get("dtype")
    value = node.attrs.get("value")
    if node.op_type in ("Constant", "ConstantOfShape") and hasattr(value, "dtype"):
        return _NUMPY.get(value.dtype.name)
    return None


def _keeps_range(node: Node) -> bool:
    return node.op_type in _KEEPS_RANGE or (
        node.op_type == "BitShift" and node.attrs.get("direction") == "RIGHT")


def narrow_types(graph: Graph, outer: dict | None = None) -> dict[int, list]:
    """``id(node) -> [ONNX type or None per output]`` for the nodes of ``graph`` and its
    subgraphs whose outputs are int16/uint16/uint32; raises for uint64 arithmetic."""
    known = dict(outer or {})
    known.update({n: e for n, (e, _) in graph.input_info.items() if e in _NAMES})
    known.update({n: _NUMPY[a.dtype.name] for n, a in graph.initializers.items()
                  if a.dtype.name in _NUMPY})
    found: dict[int, list] = {}
    for node in graph.nodes:
        carried = [known.get(i) for i in node.inputs]
        if node.op_type == "CastLike" and len(node.inputs) > 1:
            elem = known.get(node.inputs[1])
        elif node.op_type in _OWN_TYPE:
            elem = _attr_type(node)
        else:
            at = _TYPE_FROM.get(node.op_type, 0)
            elem = carried[at] if at < len(carried) else None
        if elem == UINT64 and not _keeps_range(node):
            raise OnnxUnsupportedError(
                f"onnx.load: node '{node.name}' ({node.op_type}) computes a uint64 result, "
                "which ember holds as int64 (values below 2**63): only ops whose results stay "
                f"within their inputs' values can ({', '.join(sorted(_KEEPS_RANGE))}, "
                "BitShift RIGHT)")
        if elem in _NAMES:
            known.update({o: elem for o in node.outputs if o})
            if elem in WRAPPED:
                found[id(node)] = [elem] * len(node.outputs)
        for sub in node.subgraphs():
            found.update(narrow_types(sub, known))
    return found


def wrap(x, elem: int):
    """``x`` (stored as ``WRAPPED[elem]``'s dtype) reduced onto ONNX type ``elem``'s range;
    other values (indices, floats) pass unchanged."""
    storage, modulus, signed = WRAPPED[elem]
    if getattr(x, "dtype", None) is not storage or not x.numel():
        return x
    low = -(modulus // 2) if signed else 0
    if low <= x.min().item() and x.max().item() < low + modulus:
        return x  # in range already (and no modulus to upload where int64 is 32-bit)
    if signed:
        return (x + modulus // 2) % modulus - modulus // 2
    return x % modulus


def wrap_outputs(types: list, outs: list) -> list:
    return [wrap(v, e) if e is not None and v is not None else v for e, v in zip(types, outs)]


def check_convertible(narrow: dict) -> None:
    """``ember onnx convert`` writes no wrap-around, so it refuses a graph that needs one
    (``narrow``: :func:`narrow_types` of the graph)."""
    if narrow:
        raise UnsupportedOpError(
            "onnx convert: the graph computes on int16/uint16/uint32 values, whose wrap-around "
            "convert does not write; ember.onnx.load runs it")
