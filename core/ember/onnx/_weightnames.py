"""Names and kinds of the weights in a module written by ``ember onnx convert``.

A weight keeps its initializer's name when that name says what it is
(``encoder.layer.0.attention.query.weight`` -> ``encoder_layer_0_attention_query_weight``).
Exporters that fold layers (Conv + BatchNorm) or share initializers write names such as
``onnx::Conv_123`` or ``weight_7``; such a weight is named after the first node that reads it
(its layer path, else its op) and its role there: ``features_0_conv_weight``, ``conv_bias``.

A float constant read where an op takes a weight (Conv's, MatMul's, a norm's, an Add's bias...)
becomes an ``nn.Parameter``; BatchNorm running statistics, quantization scales and zero points,
integer constants and constants read only as settings (Clip's bounds, Pad's value) are
buffers (the code generator writes small int32/int64 constants as literals instead).

>>> from ember.onnx._graph import Node
>>> nodes = [Node("Conv", ["x", "onnx::Conv_7", "onnx::Conv_8"], ["/stem/conv/Conv_output_0"],
...               {}, "", "/stem/conv/Conv")]
>>> weight_roles(nodes)["onnx::Conv_7"]
('stem_conv_weight', False)
>>> meaningful("onnx::Conv_7"), meaningful("1.layers.0.linear1.bias")
(None, 'layers_0_linear1_bias')
"""

from __future__ import annotations

import re

from ._graph import Node

_NORM = {1: "weight", 2: "bias"}
# ONNX op -> input slot -> the role of a constant read there
_ROLES: dict[str, dict[int, str]] = {
    "Conv": _NORM, "ConvTranspose": _NORM, "Gemm": _NORM, "Linear": _NORM, "MatMul": _NORM,
    "LayerNormalization": _NORM, "InstanceNormalization": _NORM, "GroupNormalization": _NORM,
    "BatchNormalization": {**_NORM, 3: "running_mean", 4: "running_var"},
    "Gather": {0: "weight"}, "PRelu": {1: "weight"},
    "LSTM": {1: "weight_ih", 2: "weight_hh", 3: "bias"},
    "GRU": {1: "weight_ih", 2: "weight_hh", 3: "bias"},
    "RNN": {1: "weight_ih", 2: "weight_hh", 3: "bias"},
    "DequantizeLinear": {0: "weight", 1: "scale", 2: "zero_point"},
    "QuantizeLinear": {1: "scale", 2: "zero_point"},
    "MatMulInteger": {1: "weight", 2: "input_zero_point", 3: "zero_point"},
    "ConvInteger": {1: "weight", 2: "input_zero_point", 3: "zero_point"},
    "Add": {0: "bias", 1: "bias"}, "Mul": {0: "scale", 1: "scale"}, "Sub": {1: "shift"},
    "Div": {1: "divisor"},
}
# roles that hold state rather than trained values
_BUFFER_ROLES = {("BatchNormalization", "running_mean"), ("BatchNormalization", "running_var"),
                 *((op, r) for op in ("DequantizeLinear", "QuantizeLinear", "MatMulInteger",
                                      "ConvInteger") for r in ("scale", "zero_point",
                                                               "input_zero_point"))}
# words that say nothing about which layer a weight belongs to
_GENERIC = {"weight", "weights", "bias", "const", "constant", "w", "b", "c", "initializer",
            "init", "value", "val", "tensor", "param", "onnx", "scale", "zero", "point",
            "quantized", "transposed", "output"}
_WIDTH = 48


def _parts(text: str) -> list[str]:
    return [p.lower() for p in re.split(r"[^0-9A-Za-z]+", text) if p]


def _lead(parts: list[str]) -> list[str]:
    """``parts`` without leading numbers and "onnx" (torch.nn.Sequential's ``0.``, the
    ``onnx::`` prefix): an identifier cannot start with a digit."""
    while parts and (parts[0].isdigit() or parts[0] == "onnx"):
        parts = parts[1:]
    return parts


def meaningful(onnx_name: str) -> str | None:
    """An identifier from an initializer's name when the name says which layer the weight
    belongs to (a word besides generic ones, op names and numbers), else None."""
    parts = _lead(_parts(re.sub(r"_output_\d+$", "", onnx_name)))
    telling = [p for p in parts if not p.isdigit() and p not in _GENERIC
               and p not in _OP_WORDS and not re.fullmatch(r"[a-z]?\d+", p)]
    if not telling:
        return None
    return "_".join(parts)[-_WIDTH:].strip("_")


def layer_of(node: Node) -> str:
    """The layer a node belongs to: its scope path (``/layer1/layer1.0/conv1/Conv`` ->
    ``layer1_0_conv1``, each scope written once), else its op in lowercase."""
    for text in (node.name, *node.outputs):
        segments = [s for s in text.split("/") if s]
        if "/" not in text or len(segments) < 2:
            continue
        path: list[str] = []
        for seg in segments[:-1]:  # the last segment names the op
            if path and seg.startswith(path[-1] + "."):
                path[-1] = seg  # "layer1" then "layer1.0": the scope repeats its parent
            else:
                path.append(seg)
        words = _lead(_parts(".".join(path)))
        if words:
            return "_".join(words)
    return re.sub(r"[^0-9a-z]+", "_", node.op_type.lower()).strip("_") or "op"


def weight_roles(nodes: list[Node]) -> dict[str, tuple[str, bool]]:
    """ONNX name -> (identifier base, is a buffer) for each value ``nodes`` read at a slot
    with a known role; the first such reader decides."""
    out: dict[str, tuple[str, bool]] = {}
    for n in nodes:
        roles = _ROLES.get(n.op_type, {}) if n.domain in ("", "ai.onnx", "com.microsoft") else {}
        for slot, value in enumerate(n.inputs):
            if not value or value in out or slot not in roles:
                continue
            role = roles[slot]
            base = meaningful(value) or f"{layer_of(n)}_{role}"[-_WIDTH:].strip("_")
            out[value] = (base, (n.op_type, role) in _BUFFER_ROLES)
    return out


_OP_WORDS = {op.lower() for op in _ROLES} | {
    "linear", "embedding", "embed", "identity", "reshape", "transpose", "slice", "cast",
    "constantofshape", "unsqueeze", "squeeze", "concat", "pad", "clip", "relu", "sigmoid"}
