"""``ember onnx convert``: an ONNX model as a readable Python module plus safetensors weights.

Burn's approach: the generated ``model.py`` is plain ember code a user can read and edit. The
common layers become ``ember.nn.functional`` calls and operators; the rest call the same op
functions ``ember.onnx.load`` runs (``ember.onnx.ops.call("Op", ...)``), so both paths agree.
Constants are folded first; the weights file holds every remaining constant.

The model file is untrusted input and the output is code, so nothing from the file is pasted
into it: value names become ASCII identifiers, strings and attribute values are ``repr``
literals of checked Python types, odd attribute names travel as ``**{'name': value}``, and
docstrings hold only those identifiers. ``tests/onnx/test_onnx_security.py`` holds the attacks.
"""

from __future__ import annotations

import keyword
import math
import os
import re

from ..errors import UnsupportedOpError
from ..tensor import Tensor
from ._graph import Graph, Node
from .ops import REGISTRY
from .runtime import OnnxModule, load

# names the generated module itself uses: never a variable's name
_RESERVED = frozenset({"self", "ember", "F", "nn", "call", "os", "load_file", "WEIGHTS", "load",
                       "float", "None", "True", "False"})
# keyword arguments of ``call`` itself: attributes named so go through ``**{...}``
_CALL_PARAMS = frozenset({"op_type", "opset", "n_outputs"})


def _is_name(s: str) -> bool:
    return s.isidentifier() and not keyword.iskeyword(s)


class _Names:
    """ONNX value names as ASCII Python identifiers: file text never becomes code."""

    def __init__(self):
        self.map: dict[str, str] = {}
        self.used: set[str] = set()

    def __call__(self, onnx_name: str, prefix: str = "t_") -> str:
        if onnx_name in self.map:
            return self.map[onnx_name]
        base = re.sub(r"[^0-9a-z]+", "_", onnx_name.lower())[:40].strip("_") or "v"
        if not base[0].isalpha() or keyword.iskeyword(base) or base in _RESERVED:
            base = prefix + base
        name, i = base, 1
        while name in self.used:
            name, i = f"{base}_{i}", i + 1
        self.used.add(name)
        self.map[onnx_name] = name
        return name


class _NoDirectForm(Exception):
    """An attribute whose type the direct spelling does not expect: use ``call`` instead."""


def _lit(v) -> str:
    """A Python literal for an attribute value of a checked type; anything else is refused."""
    if isinstance(v, bool) or v is None:
        return repr(v)
    if isinstance(v, int):
        return repr(int(v))
    if isinstance(v, float):
        if not math.isfinite(v):
            return f"float({str(v)!r})"
        return repr(float(f"{v:.8g}"))  # float32 attributes without float64 noise
    if isinstance(v, str):
        return repr(str(v))
    if isinstance(v, (list, tuple)):
        body = ", ".join(_lit(x) for x in v)
        return f"[{body}]" if isinstance(v, list) else f"({body}{',' if len(v) == 1 else ''})"
    raise UnsupportedOpError(
        f"onnx convert: an attribute holds a {type(v).__name__}; the code generator writes "
        "int, float, string and list attributes only. Use ember.onnx.load(...) to run it")


def _int(a: dict, key: str, default: int) -> int:
    v = a.get(key, default)
    if type(v) is not int:
        raise _NoDirectForm(key)
    return v


def _ints(a: dict, key: str, default: list[int]) -> tuple[int, ...]:
    v = a.get(key, default)
    if not isinstance(v, list) or any(type(x) is not int for x in v):
        raise _NoDirectForm(key)
    return tuple(v)


def _float(a: dict, key: str, default: float) -> float:
    v = a.get(key, default)
    if type(v) is not float:
        raise _NoDirectForm(key)
    return v


def _split_points(line: str) -> list[int]:
    """Where ``line`` has ', ' outside string literals (``repr`` writes them, so a quote
    inside one is always escaped)."""
    points, quote, i = [], None, 0
    while i < len(line):
        c = line[i]
        if quote:
            i += c == "\\"  # skip the escaped character
            quote = None if c == quote else quote
        elif c in "'\"":
            quote = c
        elif line.startswith(", ", i):
            points.append(i)
        i += 1
    return points


def _wrap(line: str, width: int = 100, indent: str = " " * 12) -> str:
    """Break a long call at ', ' boundaries (inside brackets, so no backslashes needed), never
    inside a string literal."""
    if len(line) <= width:
        return line
    cuts = [0, *(p + 2 for p in _split_points(line)), len(line) + 2]
    pieces = [line[a:b - 2] for a, b in zip(cuts, cuts[1:])]
    out, cur = [], pieces[0]
    for p in pieces[1:]:
        if len(cur) + 2 + len(p) > width:
            out.append(cur + ",")
            cur = indent + p
        else:
            cur += ", " + p
    out.append(cur)
    return "\n".join(out)


_INFIX = {"Add": "+", "Sub": "-", "Mul": "*"}
# inputs the direct spellings read; a node without them goes through ``call``, which reports it
_ARITY = {"Add": 2, "Sub": 2, "Mul": 2, "BatchNormalization": 5, "MatMul": 2, "Conv": 2,
          "Gemm": 2}


def _emit(node: Node, ins: list[str], consts: dict, opset: int) -> str | None:
    """A direct ember spelling of a common node, or None to use ``call``. Attribute values
    reach the code only through :func:`_lit` or the typed getters above."""
    a, op = node.attrs, node.op_type
    need = _ARITY.get(op, 1)
    if len(ins) < need or "None" in ins[:need]:
        return None
    if op in ("Add", "Sub", "Mul") and len(ins) == 2 and "broadcast" not in a:
        return f"{ins[0]} {_INFIX[op]} {ins[1]}"
    if op == "BatchNormalization" and len(ins) == 5 and not a.get("training_mode"):
        x, scale, b, mean, var = ins
        return (f"F.batch_norm({x}, {mean}, {var}, {scale}, {b}, False, 0.0, "
                f"{_lit(_float(a, 'epsilon', 1e-5))})")
    if op == "Relu":
        return f"F.relu({ins[0]})"
    if op in ("Sigmoid", "Tanh", "Exp", "Sqrt", "Log"):
        return f"ember.{op.lower()}({ins[0]})"
    if op == "MatMul":
        return f"ember.matmul({ins[0]}, {ins[1]})"
    if op == "Identity":
        return ins[0]
    if op == "Transpose" and "perm" in a:
        return f"{ins[0]}.permute({_lit(_ints(a, 'perm', []))})"
    if op == "Concat":
        return f"ember.cat([{', '.join(i for i in ins if i != 'None')}], dim={_int(a, 'axis', 0)})"
    if op == "Softmax" and opset >= 13:
        return f"F.softmax({ins[0]}, dim={_int(a, 'axis', -1)})"
    if op == "Conv" and node.inputs[1] in consts:
        nd = consts[node.inputs[1]].ndim - 2
        pads = _ints(a, "pads", [0] * 2 * nd)
        if nd == 2 and a.get("auto_pad", "NOTSET") == "NOTSET" and pads[:nd] == pads[nd:]:
            bias = ins[2] if len(ins) > 2 else "None"
            return (f"F.conv2d({ins[0]}, {ins[1]}, {bias}, stride="
                    f"{_lit(_ints(a, 'strides', [1, 1]))}, padding={_lit(pads[:nd])}, dilation="
                    f"{_lit(_ints(a, 'dilations', [1, 1]))}, groups={_int(a, 'group', 1)})")
    if (op == "Gemm" and a.get("transB") == 1 and not a.get("transA") and a.get("alpha", 1.0)
            == 1.0 and a.get("beta", 1.0) == 1.0):
        bias = ins[2] if len(ins) > 2 else "None"
        return f"F.linear({ins[0]}, {ins[1]}, {bias})"
    return None


def _call(node: Node, ins: list[str], opset: int) -> str:
    """``call("Op", inputs..., attr=value)``; attribute names that are not identifiers (or that
    clash with ``call``'s own parameters) are passed as ``**{'name': value}``."""
    parts = [repr(node.op_type), *ins]
    if len(node.outputs) > 1:
        parts.append(f"n_outputs={len(node.outputs)}")
    if opset != 21:
        parts.append(f"opset={int(opset)}")
    odd = {}
    for k, v in node.attrs.items():
        if _is_name(k) and k not in _CALL_PARAMS:
            parts.append(f"{k}={_lit(v)}")
        else:
            odd[k] = v
    if odd:
        parts.append("**{" + ", ".join(f"{_lit(k)}: {_lit(v)}" for k, v in odd.items()) + "}")
    return f"call({', '.join(parts)})"


def _safe_text(s: str) -> str:
    """File-derived text for a docstring: a conservative ASCII subset, nothing that quotes."""
    return re.sub(r"[^0-9A-Za-z_.\- ]", "_", s)[:80]


def generate(module: OnnxModule, class_name: str = "Model", weights_file: str = "model.safetensors",
             source: str = "model.onnx") -> str:
    """The source of ``model.py`` for a loaded model. Nothing from the ONNX file reaches the
    code except through ``repr`` or as a validated ASCII identifier."""
    if not _is_name(class_name) or class_name in _RESERVED:
        raise ValueError(f"onnx convert: class name {class_name!r} is not a Python identifier "
                         "(or is a name the generated module uses); try 'Model'")
    graph: Graph = module.graph
    sub = sorted({n.op_type for n in graph.walk() if n.subgraphs()})
    missing = sorted({n.op_type for n in graph.nodes if n.op_type not in REGISTRY})
    if sub or missing:
        raise UnsupportedOpError(
            "onnx convert: the code generator handles straight-line graphs of ember's own ops; "
            f"this model has control flow {sub} / function-defined ops {missing}. "
            "Use ember.onnx.load(...) to run it instead")
    names = _Names()
    const_attr = module._consts.get(id(graph), {})
    consts = {k: getattr(module, v) for k, v in const_attr.items()}
    opset = int(module._model.opset)
    lines = [
        (f'"""{class_name}: generated by `ember onnx convert` from '
         f'{_safe_text(os.path.basename(source))} (opset {opset}).'),
        "",
        "Plain ember code: read it, edit it. Weights live in the safetensors file next to it.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "import os",
        "",
        "import ember",
        "from ember import nn",
        "from ember.nn import functional as F",
        "from ember.onnx.ops import call",
        "from ember.io import load_file",
        "",
        f"WEIGHTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), {weights_file!r})",
        "",
        "",
        f"class {class_name}(nn.Module):",
        "",  # the docstring, once the names are known
        "",
        "    def __init__(self, weights: str = WEIGHTS, backend=None):",
        "        super().__init__()",
        "        w = load_file(weights, backend=backend)",
    ]
    doc_at = len(lines) - 5
    used = _used(graph)
    for onnx_name, attr in const_attr.items():
        if onnx_name not in used:
            continue
        if not _is_name(attr):  # OnnxModule makes ASCII identifiers; this module relies on it
            raise ValueError(f"onnx convert: constant attribute {attr!r} is not an identifier")
        t: Tensor = getattr(module, attr)
        line = f"        self.register_buffer({attr!r}, w[{attr!r}])"
        note = f"  # {tuple(t.shape)} {t.dtype}"
        lines.append(line + note if len(line + note) <= 100 else line)
        names.map[onnx_name] = f"self.{attr}"
    args = [names(i, "in_") for i in graph.inputs]
    lines += ["", f"    def forward(self, {', '.join(args)}):"]
    for node in graph.nodes:
        ins = [names.map.get(i, "None") if i else "None" for i in node.inputs]
        while ins and ins[-1] == "None":
            ins.pop()
        outs = [names(o) if o else "_" for o in node.outputs]
        try:
            expr = _emit(node, ins, consts, opset)
        except _NoDirectForm:
            expr = None
        target = ", ".join(outs) if len(outs) > 1 else (outs[0] if outs else "_")
        lines.append(_wrap(f"        {target} = {expr or _call(node, ins, opset)}"))
    rets = [names.map.get(o, "None") for o in graph.outputs]
    lines.append(f"        return {', '.join(rets)}")
    lines[doc_at] = _wrap(f'    """Inputs: {", ".join(args)}; outputs: {", ".join(rets)}."""',
                          indent="    ")
    lines += ["", "", f"def load(weights: str = WEIGHTS, backend=None) -> {class_name}:",
              f"    return {class_name}(weights, backend)", ""]
    return "\n".join(lines)


def _used(graph: Graph) -> set[str]:
    return {i for n in graph.nodes for i in n.inputs} | set(graph.outputs)


def convert(source, out_dir, class_name: str = "Model") -> tuple[str, str]:
    from ..io import save_file

    module = load(source, backend="numpy" if _has_numpy() else "python")
    os.makedirs(out_dir, exist_ok=True)
    py_path = os.path.join(out_dir, "model.py")
    w_path = os.path.join(out_dir, "model.safetensors")
    src = source if isinstance(source, (str, os.PathLike)) else "model.onnx"
    code = generate(module, class_name, os.path.basename(w_path), str(src))
    used = _used(module.graph)
    state = {attr: getattr(module, attr) for name, attr in
             module._consts.get(id(module.graph), {}).items() if name in used}
    save_file(state, w_path, metadata={"source": os.path.basename(str(src)),
                                       "generator": "ember onnx convert"})
    with open(py_path, "w") as f:
        f.write(code)
    return py_path, w_path


def _has_numpy() -> bool:
    import importlib.util

    return importlib.util.find_spec("numpy") is not None
