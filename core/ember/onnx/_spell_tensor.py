"""Direct ember spellings of ONNX's slicing, casting, padding, clipping, pooling and reduction
nodes for ``ember onnx convert`` (the arithmetic and layer ones are in ``_spell``).

Constant inputs (a Slice's starts, a Pad's pads, a Clip's bounds) become Python literals, so
the code reads ``x[..., 1:]``, ``F.pad(x, (0, 1, 0, 1))``, ``x.clamp(0.0, 6.0)``,
``x.float()``, ``F.max_pool2d(x, (3, 3), (2, 2))``. ``info`` maps an ONNX value name to the
``(element type, dims)`` that ONNX shape inference proved (see ``_static``): a spelling that
needs a rank or an input type it lacks is not used, and the node goes through ``call``.
"""

from __future__ import annotations

import ast
import math

from .. import limits
from ..errors import ShapeError
from ._flow import safe_text
from ._graph import Node
from ._pyast import f32, lit, template
from ._types import BOOL, DOUBLE, FLOAT, FLOAT16, INT8, INT32, INT64, UINT8

# Cast's target -> the Tensor method that casts to it
_CASTS = {FLOAT: "float", DOUBLE: "double", FLOAT16: "half", INT32: "int", INT64: "long",
          BOOL: "bool"}
_CAST_TO = {INT8: "int8", UINT8: "uint8"}  # x.to(ember.<dtype>)
_FLOATS = {FLOAT, DOUBLE, FLOAT16}
_BIG = 1 << 62  # ONNX writes "to the end" as INT64_MAX (or INT64_MIN backwards)
_REDUCE = {"ReduceMean": "mean", "ReduceSum": "sum", "ReduceMax": "amax", "ReduceMin": "amin"}
_COMPARE = {"Equal": ast.Eq(), "Less": ast.Lt(), "Greater": ast.Gt(), "LessOrEqual": ast.LtE(),
            "GreaterOrEqual": ast.GtE()}
_UNARY_METHODS = {"Floor": "floor", "Ceil": "ceil", "Reciprocal": "reciprocal", "Sign": "sign",
                  "Round": "round", "Not": "logical_not"}


def _consts(key: str, consts: dict) -> list | None:
    """A constant input's values as a flat list (small ones only), else None."""
    t = consts.get(key) if key else None
    if t is None or t.numel() > 64:
        return None
    return t.reshape(-1).tolist()


def _rank(key: str, info: dict) -> int | None:
    dims = info.get(key, (None, None))[1]
    return None if dims is None else len(dims)


def spell_tensor(node: Node, ins: list, consts: dict, info: dict) -> ast.expr | None:
    """A direct spelling of ``node`` (one output, default domain), or None."""
    op, a, x = node.op_type, node.attrs, ins[0]
    if op in _COMPARE or op in ("Mod", "Pow"):
        x, *rest = numbers(node, ins, consts) if len(ins) == 2 else ins
        ins = [x, *rest]
    if op == "Cast" and len(ins) == 1 and set(a) <= {"to", "saturate"}:
        return _cast(node, x, info)
    if op == "Slice" and len(ins) >= 3:
        return _slice(node, x, consts, info)
    if op == "Clip":
        return _clip(node, x, consts)
    if op == "Pad" and len(ins) >= 2:
        return _pad(node, x, consts)
    if op in ("MaxPool", "AveragePool") and len(ins) == 1:
        return _pool(node, x)
    if op in ("GlobalAveragePool", "GlobalMaxPool") and len(ins) == 1:
        rank = _rank(node.inputs[0], info)
        if rank is None or rank < 3:
            return None
        fn = "mean" if op == "GlobalAveragePool" else "amax"
        return template(f"P_x.{fn}(P_d, keepdim=True)", x=x, d=lit(tuple(range(2, rank))))
    if op in _REDUCE:
        return _reduce(node, ins, consts)
    if op == "Flatten" and len(ins) == 1 and a.get("axis", 1) == 1 and (_rank(
            node.inputs[0], info) or 0) >= 2:
        return template("P_x.flatten(1)", x=x)
    if op == "Gather" and len(ins) == 2 and a.get("axis", 0) == 0 and node.inputs[0] in consts:
        return template("P_w[P_i]", w=x, i=ins[1])  # an embedding lookup
    if op in _COMPARE and len(ins) == 2:
        return ast.Compare(x, [_COMPARE[op]], [ins[1]])
    if op == "Mod" and len(ins) == 2 and not a.get("fmod"):
        return ast.BinOp(x, ast.Mod(), ins[1])  # fmod=0: the sign of the divisor, as Python's
    if op == "Where" and len(ins) == 3:
        return template("ember.where(P_c, P_x, P_y)", c=x, x=ins[1], y=ins[2])
    if op == "Pow" and len(ins) == 2 and info.get(node.inputs[0], (None,))[0] in _FLOATS:
        return ast.BinOp(x, ast.Pow(), ins[1])  # an integer base keeps its type: call
    if op == "Div" and len(ins) == 2 and info.get(node.inputs[0], (None,))[0] in _FLOATS:
        return ast.BinOp(x, ast.Div(), ins[1])  # integers divide toward zero: call
    if op == "Sum" and ins and None not in ins:
        out = ins[0]
        for other in ins[1:]:
            out = ast.BinOp(out, ast.Add(), other)
        return out
    if op == "Dropout" and len(ins) <= 2:  # ratio only: off in eval(), as in ONNX inference
        ratio = _consts(node.inputs[1], consts) if len(ins) == 2 else [a.get("ratio", 0.5)]
        if ratio is not None and len(ratio) == 1:
            return template("F.dropout(P_x, P_p, self.training)", x=x, p=lit(f32(ratio[0])))
    if op == "Shape" and len(ins) == 1 and set(a) <= {"start", "end"}:
        part = ast.Slice(lit(a["start"]) if a.get("start") else None,
                         lit(a["end"]) if "end" in a else None, None)
        shape = template("P_x.shape", x=x)
        if "start" in a or "end" in a:
            shape = ast.Subscript(shape, part, ast.Load())
        return template("ember.tensor(P_s, dtype=ember.int64)", s=shape)
    if op == "ConvTranspose" and len(ins) >= 2 and node.inputs[1] in consts:
        return _conv_transpose(node, ins, consts)
    if op == "DequantizeLinear" and len(ins) in (2, 3):
        return _dequantize(node, x, consts)
    if op == "ConstantOfShape" and len(ins) == 1 and node.inputs[0] in consts:
        return _full(node, consts)
    if op == "Resize" and 3 <= len(ins) <= 4:
        return _resize(node, x, consts)
    if op in _UNARY_METHODS and len(ins) == 1 and not a:
        return template(f"P_x.{_UNARY_METHODS[op]}()", x=x)
    if op == "LeakyRelu" and len(ins) == 1:
        return template("F.leaky_relu(P_x, P_a)", x=x, a=lit(f32(a.get("alpha", 0.01))))
    if op == "HardSigmoid" and len(ins) == 1:
        alpha, beta = f32(a.get("alpha", 0.2)), f32(a.get("beta", 0.5))
        if math.isclose(alpha, 1 / 6, rel_tol=1e-6) and beta == 0.5:
            return template("F.hardsigmoid(P_x)", x=x)
        return template("(P_x * P_a + P_b).clamp(0.0, 1.0)", x=x, a=lit(alpha), b=lit(beta))
    if op == "HardSwish" and len(ins) == 1:
        return template("F.hardswish(P_x)", x=x)
    return None


def numbers(node: Node, ins: list[ast.expr], consts: dict) -> list[ast.expr]:
    """A binary op's operands, with a 0-d constant written as a number (``x * 0.5``,
    ``i % 2``) when the other operand is not a constant (so the result stays a tensor of
    its dtype)."""
    keys = node.inputs[:2]
    if sum(k in consts for k in keys) != 1:
        return ins[:2]
    out = []
    for k, e in zip(keys, ins):
        t = consts.get(k)
        out.append(lit(_number(t)) if t is not None and t.ndim == 0 and t.dtype.name != "bool"
                   else e)
    return out


# Resize (mode, coordinate_transformation_mode, nearest_mode) -> F.interpolate's arguments
_RESIZE = {("nearest", "asymmetric", "floor"): "mode='nearest'",
           ("linear", "half_pixel", None): "mode='bilinear', align_corners=False",
           ("linear", "align_corners", None): "mode='bilinear', align_corners=True"}


def _resize(node: Node, x, consts: dict):
    a = node.attrs
    mode = a.get("mode", "nearest")
    key = (mode, a.get("coordinate_transformation_mode", "half_pixel"),
           a.get("nearest_mode", "round_prefer_floor") if mode == "nearest" else None)
    scales = _consts(node.inputs[2], consts)
    sizes = node.inputs[3] if len(node.inputs) > 3 else ""
    if (key not in _RESIZE or not scales or len(scales) != 4 or scales[:2] != [1.0, 1.0]
            or sizes or set(a) - {"mode", "coordinate_transformation_mode", "nearest_mode",
                                  "cubic_coeff_a"}):
        return None
    return template(f"F.interpolate(P_x, scale_factor=P_s, {_RESIZE[key]})", x=x,
                    s=lit((f32(scales[2]), f32(scales[3]))))


def _dequantize(node: Node, x, consts: dict):
    """Per-tensor DequantizeLinear: ``(x.float() - zero_point) * scale``."""
    scale = consts.get(node.inputs[1])
    zp = consts.get(node.inputs[2]) if len(node.inputs) > 2 and node.inputs[2] else None
    if (scale is None or scale.numel() != 1 or scale.dtype.name != "float32"
            or (len(node.inputs) > 2 and node.inputs[2] and zp is None)
            or (zp is not None and zp.numel() != 1) or set(node.attrs) - {"axis"}):
        return None
    codes = template("P_x.float()", x=x)
    if zp is not None and zp.reshape(-1).tolist()[0] != 0:
        codes = ast.BinOp(codes, ast.Sub(), lit(zp.reshape(-1).tolist()[0]))
    return ast.BinOp(codes, ast.Mult(), lit(_number(scale.reshape(()))))


def _full(node: Node, consts: dict):
    """ConstantOfShape of a constant shape: ``ember.full((4096, 25088), 0.02, dtype=...)``
    (computed when it runs, where folding it would store a large tensor). Its shape is
    checked as a declared tensor's is (``ember.limits``: rank, dims, ``max_tensor_bytes``):
    a constant past them is refused here with a ShapeError naming the limit, not written
    into a module that could never run it."""
    import numpy as np

    shape = consts[node.inputs[0]].reshape(-1).tolist()
    v = node.attrs.get("value")
    v = np.zeros(1, np.float32) if v is None else v
    if type(v).__module__ != "numpy" or v.size != 1 or v.dtype.name not in (
            "float32", "float64", "int64", "int32", "bool"):
        return None
    what = f"onnx convert: node '{safe_text(node.name)}' (ConstantOfShape)"
    if any(d < 0 for d in shape):
        raise ShapeError(f"{what}: shape {shape[:8]} has a negative dim (dims are >= 0)")
    limits.check_shape(ShapeError, what, shape)
    limits.check(ShapeError, f"{what}: the bytes of its constant of shape {shape}",
                 math.prod(shape) * v.itemsize, "max_tensor_bytes")
    fill = f32(v.item()) if v.dtype.name == "float32" else v.item()
    dtype = "bool_" if v.dtype.name == "bool" else v.dtype.name
    return template(f"ember.full(P_s, P_v, dtype=ember.{dtype})", s=lit(tuple(shape)),
                    v=lit(fill))


def _conv_transpose(node: Node, ins: list, consts: dict):
    a = node.attrs
    w = consts[node.inputs[1]]
    pads = a.get("pads", [0] * 4)
    if (w.ndim != 4 or a.get("auto_pad", "NOTSET") != "NOTSET" or "output_shape" in a
            or pads[:2] != pads[2:]):
        return None
    return template(
        "F.conv_transpose2d(P_x, P_w, P_b, stride=P_s, padding=P_p, output_padding=P_o, "
        "groups=P_g, dilation=P_d)", x=ins[0], w=ins[1],
        b=ins[2] if len(ins) > 2 and ins[2] is not None else ast.Constant(None),
        s=lit(tuple(a.get("strides", [1, 1]))), p=lit(tuple(pads[:2])),
        o=lit(tuple(a.get("output_padding", [0, 0]))), g=lit(int(a.get("group", 1))),
        d=lit(tuple(a.get("dilations", [1, 1]))))


def _number(t):
    """A 0-d constant's value as a Python number (float32 ones as their shortest decimal)."""
    v = t.reshape(-1).tolist()[0]
    return f32(v) if t.dtype.name == "float32" else v


def _cast(node: Node, x, info: dict):
    to = node.attrs.get("to")
    src = info.get(node.inputs[0], (None, None))[0]
    if src is None or type(to) is not int or (to not in _CASTS and to not in _CAST_TO):
        return None
    if src in _FLOATS and to not in _FLOATS and to != BOOL:
        x = template("ember.trunc(P_x)", x=x)  # ONNX casts float to int toward zero
    if to in _CASTS:
        return template(f"P_x.{_CASTS[to]}()", x=x)
    return template(f"P_x.to(ember.{_CAST_TO[to]})", x=x)


def _slice(node: Node, x, consts: dict, info: dict):
    starts, ends = (_consts(k, consts) for k in node.inputs[1:3])
    axes = _consts(node.inputs[3], consts) if len(node.inputs) > 3 and node.inputs[3] else None
    steps = _consts(node.inputs[4], consts) if len(node.inputs) > 4 and node.inputs[4] else None
    if starts is None or ends is None or (len(node.inputs) > 3 and node.inputs[3]
                                          and axes is None) or (
            len(node.inputs) > 4 and node.inputs[4] and steps is None):
        return None
    axes = axes if axes is not None else list(range(len(starts)))
    steps = steps if steps is not None else [1] * len(starts)
    rank = _rank(node.inputs[0], info)
    if rank is not None and min(axes) < 0 <= max(axes):  # mixed: count all from the start
        axes = [ax + rank if ax < 0 else ax for ax in axes]
    if len(set(axes)) != len(axes) or 0 in steps or not (
            all(ax >= 0 for ax in axes) or all(ax < 0 for ax in axes)):
        return None
    per = {ax: (s, e, st) for ax, s, e, st in zip(axes, starts, ends, steps)}
    if any(st < 0 and (s not in (-1,) and s < _BIG or e > -_BIG) for s, e, st in per.values()):
        return None  # backwards to a given point: ONNX clamps it unlike Python
    index = []
    span = range(min(axes), 0) if axes[0] < 0 else range(max(axes) + 1)
    for ax in span:
        s, e, st = per.get(ax, (0, _BIG, 1))
        whole = (0 if st > 0 else -1, _BIG if st > 0 else -_BIG)  # "from the start/to the end"
        index.append(ast.Slice(None if s == whole[0] or abs(s) >= _BIG else lit(s),
                               None if (e >= _BIG if st > 0 else e <= -_BIG) else lit(e),
                               None if st == 1 else lit(st)))
    if axes[0] < 0:
        index.insert(0, ast.Constant(Ellipsis))
    return ast.Subscript(x, ast.Tuple(index, ast.Load()) if len(index) > 1 else index[0],
                         ast.Load())


def _bound(node: Node, slot: int, key: str, consts: dict):
    """A Clip bound: a constant input, or (before opset 11) an attribute; ``...`` when
    neither is a plain number."""
    if len(node.inputs) > slot and node.inputs[slot]:
        t = consts.get(node.inputs[slot])
        return _number(t) if t is not None and t.numel() == 1 else ...  # the input's type
    v = node.attrs.get(key)
    return f32(v) if isinstance(v, (int, float)) else None


def _clip(node: Node, x, consts: dict):
    lo, hi = _bound(node, 1, "min", consts), _bound(node, 2, "max", consts)
    if lo is ... or hi is ... or set(node.attrs) - {"min", "max"}:
        return None
    if lo is None and hi is None:
        return x
    if lo == 0.0 and hi == 6.0:
        return template("F.relu6(P_x)", x=x)
    if lo == 0.0 and hi is None:
        return template("F.relu(P_x)", x=x)
    return template("P_x.clamp(P_lo, P_hi)", x=x, lo=lit(lo), hi=lit(hi))


def _pad(node: Node, x, consts: dict):
    mode = node.attrs.get("mode", "constant")
    pads = _consts(node.inputs[1], consts)
    t = consts.get(node.inputs[2]) if len(node.inputs) > 2 and node.inputs[2] else None
    value = [0] if len(node.inputs) < 3 or not node.inputs[2] else (
        [_number(t)] if t is not None and t.numel() == 1 else None)
    if (pads is None or value is None or mode not in ("constant", "reflect", "edge")
            or (len(node.inputs) > 3 and node.inputs[3]) or any(p < 0 for p in pads)):
        return None
    n = len(pads) // 2
    flat = []
    for ax in reversed(range(n)):  # F.pad: the last dim first
        flat += [int(pads[ax]), int(pads[n + ax])]
    while len(flat) > 2 and flat[-2:] == [0, 0]:
        flat = flat[:-2]
    if mode != "constant":
        return template("F.pad(P_x, P_p, mode=P_m)", x=x, p=lit(tuple(flat)),
                        m=lit("replicate" if mode == "edge" else mode))
    if value[0] == 0:
        return template("F.pad(P_x, P_p)", x=x, p=lit(tuple(flat)))
    return template("F.pad(P_x, P_p, value=P_v)", x=x, p=lit(tuple(flat)), v=lit(value[0]))


def _pool(node: Node, x):
    a = node.attrs
    k = a.get("kernel_shape")
    if (not isinstance(k, list) or len(k) != 2 or a.get("auto_pad", "NOTSET") != "NOTSET"
            or a.get("ceil_mode", 0) or a.get("storage_order", 0)):
        return None
    pads = a.get("pads", [0] * 4)
    strides = a.get("strides", [1, 1])
    dil = a.get("dilations", [1, 1])
    if node.op_type == "AveragePool":
        if pads[:2] != pads[2:] or dil != [1, 1] or any(p > s // 2 for p, s in zip(pads, k)):
            return None
        extra = {"count_include_pad": lit(bool(a.get("count_include_pad", 0)))}
        return template("F.avg_pool2d(P_x, P_k, P_s, P_p, count_include_pad=P_c)", x=x,
                        k=lit(tuple(k)), s=lit(tuple(strides)), p=lit(tuple(pads[:2])),
                        c=extra["count_include_pad"])
    if pads[:2] == pads[2:] and all(p <= s // 2 for p, s in zip(pads, k)):
        return template("F.max_pool2d(P_x, P_k, P_s, P_p, P_d)", x=x, k=lit(tuple(k)),
                        s=lit(tuple(strides)), p=lit(tuple(pads[:2])), d=lit(tuple(dil)))
    # asymmetric ("SAME") padding: pad with -inf first
    padded = template("F.pad(P_x, P_p, value=float('-inf'))", x=x,
                      p=lit((pads[1], pads[3], pads[0], pads[2])))
    return template("F.max_pool2d(P_x, P_k, P_s, 0, P_d)", x=padded, k=lit(tuple(k)),
                    s=lit(tuple(strides)), d=lit(tuple(dil)))


def _reduce(node: Node, ins: list, consts: dict):
    a = node.attrs
    if len(ins) == 2:
        axes = _consts(node.inputs[1], consts)
    elif len(ins) == 1 and "axes" in a:
        axes = a["axes"]
    else:
        return None
    if not axes or not isinstance(axes, list) or a.get("noop_with_empty_axes") or set(a) - {
            "axes", "keepdims"}:
        return None
    d = lit(int(axes[0])) if len(axes) == 1 else lit(tuple(int(v) for v in axes))
    return template(f"P_x.{_REDUCE[node.op_type]}(P_d, keepdim=P_k)", x=ins[0], d=d,
                    k=lit(bool(a.get("keepdims", 1))))
