"""Direct ember spellings of common ONNX nodes for ``ember onnx convert``.

Each rule turns one node into a readable expression (``F.conv2d``, ``F.linear``, ``x + y``,
``F.layer_norm``...) or returns None, in which case the generator writes
``call("Op", ...)``. Attribute values reach the code only through :func:`~._pyast.lit`, after
the typed getters below checked their Python type (a string where an int belongs means no
direct spelling, not pasted text).
"""

from __future__ import annotations

import ast

from ._graph import Node
from ._pyast import f32, lit, template
from ._spell_tensor import numbers, spell_tensor


class NoSpelling(Exception):
    """An attribute of a type the direct spelling does not expect: use ``call`` instead."""


def _int(a: dict, key: str, default: int) -> int:
    v = a.get(key, default)
    if type(v) is not int:
        raise NoSpelling(key)
    return v


def _ints(a: dict, key: str, default: list[int]) -> tuple[int, ...]:
    v = a.get(key, default)
    if not isinstance(v, list) or any(type(x) is not int for x in v):
        raise NoSpelling(key)
    return tuple(v)


def _float(a: dict, key: str, default: float) -> float:
    """A float attribute (float32 in ONNX), written as its shortest float32 decimal."""
    v = a.get(key, default)
    if type(v) is not float:
        raise NoSpelling(key)
    return f32(v)


_INFIX = {"Add": "+", "Sub": "-", "Mul": "*"}
_UNARY = {"Relu": "F.relu", "Sigmoid": "ember.sigmoid", "Tanh": "ember.tanh",
          "Exp": "ember.exp", "Sqrt": "ember.sqrt", "Log": "ember.log", "Erf": "ember.erf",
          "Neg": "ember.neg", "Abs": "ember.abs"}
# inputs each spelling reads; a node without them goes through ``call``, which reports it
_ARITY = {"Add": 2, "Sub": 2, "Mul": 2, "BatchNormalization": 5, "MatMul": 2, "Conv": 2,
          "Gemm": 2, "LayerNormalization": 2, "Linear": 2}


def spell(node: Node, ins: list[ast.expr], consts: dict, opset: int,
          info: dict | None = None) -> ast.expr | None:
    """A direct spelling of a one-output ``node`` with input expressions ``ins`` (None for an
    omitted input), or None. ``consts`` maps ONNX names to the constant tensors, ``info``
    names to their (element type, static dims) where shape inference knows them."""
    a, op = node.attrs, node.op_type
    need = _ARITY.get(op, 1)
    if (len(ins) < need or any(i is None for i in ins[:need]) or len(node.outputs) != 1
            or node.domain not in ("", "ai.onnx")):
        return None
    x = ins[0]
    opt = [i if i is not None else ast.Constant(None) for i in ins]
    if op in _INFIX and len(ins) == 2 and "broadcast" not in a:
        left, right = numbers(node, ins, consts)
        return ast.BinOp(left,
                         {"+": ast.Add(), "-": ast.Sub(), "*": ast.Mult()}[_INFIX[op]],
                         right)
    if op in _UNARY and len(ins) == 1 and not a:
        return template(f"{_UNARY[op]}(P_x)", x=x)
    if op == "BatchNormalization" and len(ins) == 5 and not a.get("training_mode"):
        return template("F.batch_norm(P_x, P_m, P_v, P_s, P_b, False, 0.0, P_eps)", x=x,
                        s=ins[1], b=ins[2], m=ins[3], v=ins[4],
                        eps=lit(_float(a, "epsilon", 1e-5)))
    if op == "Div" and len(ins) == 2 and any(
            i in consts and consts[i].dtype.name.startswith("float") for i in node.inputs):
        # ONNX Div takes one type: a float constant makes it true division
        left, right = numbers(node, ins, consts)
        return ast.BinOp(left, ast.Div(), right)
    if op == "Gather" and len(ins) == 2 and _const_ints(node.inputs[1], consts, scalar=True):
        i, = _const_ints(node.inputs[1], consts, scalar=True)
        d = _int(a, "axis", 0)
        if i >= 0 and d >= 0:
            return template("P_x[P_i]" if d == 0 else "P_x.select(P_d, P_i)", x=x, i=lit(i),
                            d=lit(d))
    if op in ("Squeeze", "Unsqueeze"):
        dims = (_const_ints(node.inputs[1], consts) if len(ins) == 2 else
                list(_ints(a, "axes", [])) if len(ins) == 1 and "axes" in a else None)
        if dims and len(dims) == 1 and dims[0] >= 0:
            return template(f"P_x.{op.lower()}(P_d)", x=x, d=lit(dims[0]))
    if op == "MatMul" and len(ins) == 2:
        return template("P_x @ P_y", x=x, y=ins[1])
    if op == "Linear":  # a MatMul (+ Add) folded by the generator; the weight is transposed
        return template("F.linear(P_x, P_w, P_b)", x=x, w=ins[1], b=opt[2] if len(ins) > 2
                        else ast.Constant(None))
    if op == "Identity":
        return x
    if op == "Transpose" and "perm" in a:
        return template("P_x.permute(P_p)", x=x, p=lit(_ints(a, "perm", [])))
    if op == "Reshape" and len(ins) == 2 and node.inputs[1] in consts and not a.get("allowzero"):
        shape = [int(v) for v in consts[node.inputs[1]].reshape(-1).tolist()]
        rank = len((info or {}).get(node.inputs[0], (None, ()))[1] or ())
        copied = [k for k, d in enumerate(shape) if d == 0]
        # 0 copies the input's dim: x.shape[k], where the input's rank is known to have it
        # (else call('Reshape') checks it when it runs: a typed error, not an IndexError)
        if not copied or copied[-1] < rank:
            dims = [template("P_x.shape[P_k]", x=x, k=lit(k)) if d == 0 else lit(d)
                    for k, d in enumerate(shape)]
            return template("P_x.reshape(P_s)", x=x, s=ast.Tuple(dims, ast.Load()))
    if op == "Concat":
        parts = ast.List([i for i in ins if i is not None], ast.Load())
        return template("ember.cat(P_xs, dim=P_d)", xs=parts, d=lit(_int(a, "axis", 0)))
    if op in ("Softmax", "LogSoftmax"):
        fn = "F.softmax" if op == "Softmax" else "F.log_softmax"
        axis = _int(a, "axis", -1 if opset >= 13 else 1)
        dims = (info or {}).get(node.inputs[0], (None, None))[1]
        if opset >= 13 or axis == -1 or dims is not None and all(
                d == 1 for d in dims[axis + 1:]):
            return template(f"{fn}(P_x, dim=P_d)", x=x, d=lit(axis))
        if axis >= 0:  # before opset 13: over the dims from axis on, flattened
            return template(f"{fn}(P_x.flatten(P_d), dim=-1).reshape(P_x.shape)", x=x,
                            d=lit(axis))
    if op == "Gelu" and len(ins) == 1:
        if a.get("approximate", "none") == "none":
            return template("F.gelu(P_x)", x=x)
        return template("F.gelu(P_x, approximate=P_a)", x=x, a=lit(a["approximate"]))
    if op == "LayerNormalization" and node.inputs[1] in consts and _int(a, "axis", -1) == -1:
        w = consts[node.inputs[1]]
        if w.ndim == 1 and a.get("stash_type", 1) == 1:
            return template("F.layer_norm(P_x, P_n, P_w, P_b, eps=P_e)", x=x,
                            n=lit(tuple(w.shape)), w=ins[1],
                            b=opt[2] if len(ins) > 2 else ast.Constant(None),
                            e=lit(_float(a, "epsilon", 1e-5)))
    if op == "Conv" and node.inputs[1] in consts:
        nd = consts[node.inputs[1]].ndim - 2
        pads = _ints(a, "pads", [0] * 2 * nd)
        if nd == 2 and a.get("auto_pad", "NOTSET") == "NOTSET" and pads[:nd] == pads[nd:]:
            return template(
                "F.conv2d(P_x, P_w, P_b, stride=P_s, padding=P_p, dilation=P_d, groups=P_g)",
                x=x, w=ins[1], b=opt[2] if len(ins) > 2 else ast.Constant(None),
                s=lit(_ints(a, "strides", [1, 1])), p=lit(pads[:nd]),
                d=lit(_ints(a, "dilations", [1, 1])), g=lit(_int(a, "group", 1)))
    if op == "Constant" and len(a) == 1 and not ins:
        return _constant(a)
    bias_1d = len(ins) < 3 or (node.inputs[2] in consts and consts[node.inputs[2]].ndim == 1)
    if (op == "Gemm" and a.get("transB") == 1 and not a.get("transA") and a.get("alpha", 1.0)
            == 1.0 and a.get("beta", 1.0) == 1.0 and bias_1d):
        return template("F.linear(P_x, P_w, P_b)", x=x, w=ins[1],
                        b=opt[2] if len(ins) > 2 else ast.Constant(None))
    return spell_tensor(node, ins, consts, info or {})


def _const_ints(key: str, consts: dict, scalar: bool = False) -> list[int] | None:
    """A constant integer input's values (a 0-d one only when ``scalar``), else None."""
    t = consts.get(key)
    if t is None or not t.dtype.name.startswith("int") or t.numel() > 8 or (
            scalar and t.ndim != 0):
        return None
    return [int(v) for v in t.reshape(-1).tolist()]


_CONSTANT_KINDS = {"value_float": "float32", "value_floats": "float32", "value_int": "int64",
                   "value_ints": "int64"}


def _constant(a: dict) -> ast.expr | None:
    """A Constant node as the tensor literal it holds."""
    import numpy as np

    (key, v), = a.items()
    if key == "value" and type(v).__module__ == "numpy":
        return lit(v) if v.size <= 16 else None
    if key in _CONSTANT_KINDS and isinstance(v, (int, float, list)):
        return lit(np.array(v, _CONSTANT_KINDS[key]))
    return None
