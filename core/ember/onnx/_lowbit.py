"""ONNX's 8-, 4- and 2-bit element types, which ember stores widened.

float8 (e4m3fn, e4m3fnuz, e5m2, e5m2fnuz, e8m0) and float4 (e2m1) values run as float32,
int4/int2 as int8 and uint4/uint2 as uint8: every value of the narrow type is exact in the
wide one. What the narrow type changes is which values exist, so a ``Cast`` to one rounds
(and saturates) onto its grid through ``ml_dtypes`` (installed with ``onnx``) and keeps the
result widened. ``CastLike`` to a value declared with such a type becomes that ``Cast`` at
load time, since the widened tensor no longer carries the narrow type.
"""

from __future__ import annotations

from ._graph import Graph, Node

# ONNX element type -> ml_dtypes name
LOW_BIT = {17: "float8_e4m3fn", 18: "float8_e4m3fnuz", 19: "float8_e5m2",
           20: "float8_e5m2fnuz", 21: "uint4", 22: "int4", 23: "float4_e2m1fn",
           24: "float8_e8m0fnu", 25: "uint2", 26: "int2"}
# integer types stored widened, and the range their values saturate to
INT_RANGE = {4: (0, 65535), 5: (-32768, 32767), 21: (0, 15), 22: (-8, 7), 25: (0, 3),
             26: (-2, 1)}
# the types a Cast rounds onto (bfloat16 is widened too: see _types)
NARROW = {**LOW_BIT, 16: "bfloat16"}
ELEM_OF = {v: k for k, v in NARROW.items()}
# numpy dtype name -> the numpy dtype ember stores it as
WIDE = {name: ("float32" if name.startswith("float") else
               "uint8" if name.startswith("uint") else "int8") for name in LOW_BIT.values()}
_WIDER = {**WIDE, "bfloat16": "float32"}


def round_to(x, to: int, saturate: bool = True, round_mode: str = "up"):
    """``x`` (an ember tensor) cast to ONNX type ``to`` (one of ``NARROW``), stored widened."""
    import ml_dtypes
    import numpy as np

    from .. import from_numpy

    name = NARROW[to]
    a = np.asarray(x.numpy())
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        if name == "float8_e8m0fnu":
            out = _e8m0(a.astype(np.float32), saturate, round_mode)
        else:
            target = np.dtype(getattr(ml_dtypes, name))
            if name.startswith("float"):
                a = a.astype(np.float32)
                if saturate:  # out-of-range values (infinities too) clamp to the largest
                    big = float(ml_dtypes.finfo(target).max)
                    a = np.clip(a, -big, big)
            out = a.astype(target).astype(_WIDER.get(name, "float32"))
    return from_numpy(np.ascontiguousarray(out), backend=x.backend)


def _e8m0(a, saturate: bool, round_mode: str):
    """float8e8m0 holds only powers of two 2**-127 .. 2**127 (and NaN): round the exponent."""
    import numpy as np

    rnd = {"up": np.ceil, "down": np.floor, "nearest": np.round}[round_mode]
    e = rnd(np.log2(np.abs(a)))
    e = np.clip(e, -127, 127) if saturate else np.where(e > 127, np.nan, np.maximum(e, -127))
    return np.where(np.isnan(a) | np.isnan(e), np.nan, np.exp2(e)).astype(np.float32)


def retype_narrow(graph: Graph) -> None:
    """Give the nodes that take their output type from a narrow-typed input that type:
    ``CastLike(x, like)`` -> ``Cast(x, to=<like's type>)``, and ``QuantizeLinear`` by a zero
    point of a widened type -> ``output_dtype=<its type>``."""
    elems = {**ELEM_OF, "int16": 5, "uint16": 4}
    declared = {n: elem for n, (elem, _) in graph.input_info.items()
                if elem in NARROW or elem in INT_RANGE}
    declared.update({n: elems[a.dtype.name] for n, a in graph.initializers.items()
                     if a.dtype.name in elems})
    nodes = []
    for n in graph.nodes:
        if n.op_type == "Cast" and n.attrs.get("to") in NARROW:
            declared.update({o: n.attrs["to"] for o in n.outputs})
        if (n.op_type == "CastLike" and len(n.inputs) == 2
                and declared.get(n.inputs[1]) in NARROW):
            attrs = {**n.attrs, "to": declared[n.inputs[1]]}
            n = Node("Cast", n.inputs[:1], n.outputs, attrs, n.domain, n.name)
        if (n.op_type == "QuantizeLinear" and len(n.inputs) == 3 and n.inputs[2] in declared
                and not n.attrs.get("output_dtype")):
            attrs = {**n.attrs, "output_dtype": declared[n.inputs[2]]}
            n = Node(n.op_type, n.inputs, n.outputs, attrs, n.domain, n.name)
        nodes.append(n)
    graph.nodes = nodes
