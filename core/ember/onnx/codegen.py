"""``ember onnx convert``: an ONNX model as a readable Python module plus safetensors weights.

Burn's approach: the generated ``model.py`` is plain ember code a user can read and edit. The
common layers become ``ember.nn.functional`` calls and operators; the rest call the same op
functions ``ember.onnx.load`` runs (``ember.onnx.ops.call("Op", ...)``), so both paths agree.
Constants are folded first; the weights file holds every remaining constant.
"""

from __future__ import annotations

import keyword
import os
import re

from ..errors import UnsupportedOpError
from ..tensor import Tensor
from ._proto import Graph, Node
from .ops import REGISTRY
from .runtime import OnnxModule, load


class _Names:
    def __init__(self):
        self.map: dict[str, str] = {}
        self.used: set[str] = set()

    def __call__(self, onnx_name: str, prefix: str = "t_") -> str:
        if onnx_name in self.map:
            return self.map[onnx_name]
        base = re.sub(r"\W", "_", onnx_name).strip("_").lower() or "v"
        if not base[0].isalpha() or keyword.iskeyword(base) or base in ("self", "ember", "F",
                                                                         "nn", "call"):
            base = prefix + base
        name, i = base, 1
        while name in self.used:
            name, i = f"{base}_{i}", i + 1
        self.used.add(name)
        self.map[onnx_name] = name
        return name


def _lit(v) -> str:
    if isinstance(v, float):
        return repr(float(f"{v:.8g}"))  # float32 attributes without float64 noise
    if isinstance(v, (list, tuple)):
        body = ", ".join(_lit(x) for x in v)
        return f"[{body}]" if isinstance(v, list) else f"({body}{',' if len(v) == 1 else ''})"
    return repr(v)


def _wrap(line: str, width: int = 100, indent: str = " " * 12) -> str:
    """Break a long call at ', ' boundaries (inside brackets, so no backslashes needed)."""
    if len(line) <= width:
        return line
    pieces = line.split(", ")
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


def _emit(node: Node, ins: list[str], consts: dict, opset: int) -> str | None:
    """A direct ember spelling of a common node, or None to use ``call``."""
    a, op = node.attrs, node.op_type
    if op in ("Add", "Sub", "Mul") and len(ins) == 2 and "broadcast" not in a:
        return f"{ins[0]} {_INFIX[op]} {ins[1]}"
    if op == "BatchNormalization" and len(ins) == 5 and not a.get("training_mode"):
        x, scale, b, mean, var = ins
        return (f"F.batch_norm({x}, {mean}, {var}, {scale}, {b}, False, 0.0, "
                f"{_lit(a.get('epsilon', 1e-5))})")
    if op == "Relu":
        return f"F.relu({ins[0]})"
    if op in ("Sigmoid", "Tanh", "Exp", "Sqrt", "Log"):
        return f"ember.{op.lower()}({ins[0]})"
    if op == "MatMul":
        return f"ember.matmul({ins[0]}, {ins[1]})"
    if op == "Identity":
        return ins[0]
    if op == "Transpose" and "perm" in a:
        return f"{ins[0]}.permute({_lit(tuple(a['perm']))})"
    if op == "Concat":
        return f"ember.cat([{', '.join(i for i in ins if i != 'None')}], dim={a.get('axis', 0)})"
    if op == "Softmax" and opset >= 13:
        return f"F.softmax({ins[0]}, dim={a.get('axis', -1)})"
    if op == "Conv" and node.inputs[1] in consts:
        w = consts[node.inputs[1]]
        nd = w.ndim - 2
        pads = a.get("pads", [0] * 2 * nd)
        if nd == 2 and a.get("auto_pad", "NOTSET") == "NOTSET" and pads[:nd] == pads[nd:]:
            bias = ins[2] if len(ins) > 2 else "None"
            stride = _lit(tuple(a.get("strides", [1, 1])))
            return (f"F.conv2d({ins[0]}, {ins[1]}, {bias}, stride={stride}, "
                    f"padding={_lit(tuple(pads[:nd]))}, dilation="
                    f"{_lit(tuple(a.get('dilations', [1, 1])))}, groups={a.get('group', 1)})")
    if (op == "Gemm" and a.get("transB") == 1 and not a.get("transA") and a.get("alpha", 1.0)
            == 1.0 and a.get("beta", 1.0) == 1.0):
        bias = ins[2] if len(ins) > 2 else "None"
        return f"F.linear({ins[0]}, {ins[1]}, {bias})"
    return None


def generate(module: OnnxModule, class_name: str = "Model", weights_file: str = "model.safetensors",
             source: str = "model.onnx") -> str:
    graph: Graph = module.graph
    sub = [n.op_type for n in graph.walk() if any(isinstance(v, Graph) for v in n.attrs.values())]
    missing = sorted({n.op_type for n in graph.nodes if n.op_type not in REGISTRY})
    if sub or missing:
        raise UnsupportedOpError(
            "onnx convert: the code generator handles straight-line graphs of ember's own ops; "
            f"this model has control flow {sorted(set(sub))} / function-defined ops {missing}. "
            "Use ember.onnx.load(...) to run it instead")
    names = _Names()
    consts = {k: getattr(module, v) for k, v in module._consts.get(id(graph), {}).items()}
    const_attr = module._consts.get(id(graph), {})
    opset = module._model.opset
    lines = [
        (f'"""{class_name}: generated by `ember onnx convert` from {os.path.basename(source)} '
         f'(opset {opset}).'),
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
        "from ember.store import load_file",
        "",
        f'WEIGHTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "{weights_file}")',
        "",
        "",
        f"class {class_name}(nn.Module):",
        f'    """Inputs: {", ".join(graph.inputs)}; outputs: {", ".join(graph.outputs)}."""',
        "",
        "    def __init__(self, weights: str = WEIGHTS, backend=None):",
        "        super().__init__()",
        "        w = load_file(weights, backend=backend)",
    ]
    used = {i for n in graph.nodes for i in n.inputs} | set(graph.outputs)
    for onnx_name, attr in const_attr.items():
        if onnx_name not in used:
            continue
        t: Tensor = getattr(module, attr)
        line = f'        self.register_buffer("{attr}", w["{attr}"])'
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
        expr = _emit(node, ins, consts, opset)
        if expr is None:
            parts = [repr(node.op_type), *ins]
            if len(node.outputs) > 1:
                parts.append(f"n_outputs={len(node.outputs)}")
            if opset != 21:
                parts.append(f"opset={opset}")
            parts += [f"{k}={_lit(v)}" for k, v in node.attrs.items()]
            expr = f"call({', '.join(parts)})"
        target = ", ".join(outs) if len(outs) > 1 else outs[0]
        lines.append(_wrap(f"        {target} = {expr}"))
    rets = [names.map.get(o, "None") for o in graph.outputs]
    lines.append(f"        return {', '.join(rets)}")
    lines += ["", "", f"def load(weights: str = WEIGHTS, backend=None) -> {class_name}:",
              f"    return {class_name}(weights, backend)", ""]
    return "\n".join(lines)


def convert(source, out_dir, class_name: str = "Model") -> tuple[str, str]:
    from ..store import save_file

    module = load(source, backend="numpy" if _has_numpy() else "python")
    os.makedirs(out_dir, exist_ok=True)
    py_path = os.path.join(out_dir, "model.py")
    w_path = os.path.join(out_dir, "model.safetensors")
    src = source if isinstance(source, (str, os.PathLike)) else "model.onnx"
    code = generate(module, class_name, os.path.basename(w_path), str(src))
    used = {i for n in module.graph.nodes for i in n.inputs} | set(module.graph.outputs)
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
