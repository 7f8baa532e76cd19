"""``ember onnx convert``: an ONNX model as a readable ember Python module + safetensors.

The module is built as a Python syntax tree and printed with ``ast.unparse``, so it always
parses. Common nodes get direct spellings (``F.conv2d``, ``F.linear``, ``F.layer_norm``,
``x + y``...; see ``_spell``); others are ``call("Op", ...)`` with exactly the outputs the
node declares; ops the ONNX standard defines as functions are written out inline; ``If``,
``Loop`` and ``Scan`` become Python ``if``/``while``/``for``. Shape arithmetic on static
shapes is folded before the code is written (``_static``), so it leaves only constants.

:func:`convert` then imports the written module and runs it on the model's declared input
shapes next to the runtime path (``ember.onnx.load``); a difference raises
:class:`ConvertMismatchError`.

Security: text from the ONNX file reaches the code only as ``ast.Constant`` values (printed
with ``repr``) or as identifiers made of ``[a-z0-9_]``; docstrings hold only a conservative
ASCII subset. ``tests/onnx/test_onnx_security.py`` holds the attacks.
"""

from __future__ import annotations

import ast
import importlib.util
import keyword
import os

from ..errors import UnsupportedOpError, malformed_file
from ..tensor import Tensor
from ._graph import Function, Graph, Node, OnnxLoadError, _AttrRef
from ._intwrap import check_convertible
from ._flow import FlowWriter, safe_text
from ._patterns import gelu_at, readers
from ._pyast import (RESERVED, Names, assign, fill, funcdef, lit, name, template,
                      tensor_literal)
from ._repeats import find as find_repeat
from ._weightnames import meaningful, weight_roles
from ._spell import NoSpelling, spell
from ._types import BFLOAT16
from ._verify import ConvertCheckError, ConvertMismatchError, verify  # noqa: F401 (raised)
from .runtime import OnnxModule, load

# keyword arguments of ``call`` itself: attributes named so go through ``**{...}``
_CALL_PARAMS = frozenset({"op_type", "opset", "n_outputs"})
_INLINE_TENSOR = 16  # tensor attributes up to this many elements are written as literals
_HEADER = '''
from __future__ import annotations

import os

import ember
from ember import nn
from ember.io import load_file
from ember.nn import functional as F
from ember.onnx.ops import call, stack_outputs

WEIGHTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), P_WEIGHTS)


class Model(nn.Module):

    def __init__(self, weights: str = WEIGHTS, backend=None):
        super().__init__()
        w = load_file(weights, backend=backend)


def load(weights: str = WEIGHTS, backend=None):
    """The model in eval mode, as ONNX runs it; .train() before fine-tuning."""
    return Model(weights, backend).eval()
'''


def _uses(nodes: list[Node]) -> dict[str, int]:
    """How often each value is read by ``nodes`` and the subgraphs they hold."""
    count: dict[str, int] = {}
    for n in nodes:
        for i in n.inputs:
            count[i] = count.get(i, 0) + 1
        for g in n.subgraphs():
            for k, v in _uses(g.nodes).items():
                count[k] = count.get(k, 0) + v
            for o in g.outputs:
                count[o] = count.get(o, 0) + 1
    return count


class _Weight:
    """A constant of the graph, given an attribute of the Model when code first reads it."""

    def __init__(self, onnx_name: str, value: Tensor, base: str | None, buffer: bool):
        self.onnx_name, self.value, self.base, self.buffer = onnx_name, value, base, buffer


class _Gen(FlowWriter):
    """Writes the statements of a graph (and the subgraphs and function bodies it holds)."""

    def __init__(self, module: OnnxModule, info: dict):
        self.m = module
        self.info = info  # ONNX name -> (element type, static dims), from shape inference
        self.model = module._model
        self.weights: dict[str, Tensor] = {}  # attribute of the generated Model -> tensor
        self.buffers: set[str] = set()  # the attributes that are buffers, not parameters
        self.attrs: dict[int, ast.expr] = {}  # id(tensor) -> self.<attr>
        self.names = Names()

    # ------------------------------------------------------------------ values
    def weight(self, hint: str, value: Tensor, base: str | None = None,
               buffer: bool = False) -> ast.expr:
        """``self.<attr>`` for a constant tensor, stored once in the weights file; named
        ``base`` when given, else after ``hint`` (an ONNX name). Float tensors are parameters
        unless ``buffer``."""
        if id(value) not in self.attrs:
            ident = self.names.unique(base, "c_") if base else self.names.fresh(hint, "c_")
            self.weights[ident] = value
            if buffer or not value.dtype.is_float:
                self.buffers.add(ident)
            self.attrs[id(value)] = template(f"self.{ident}")
        return self.attrs[id(value)]

    def consts(self, graph: Graph) -> dict[str, Tensor]:
        return {k: getattr(self.m, v) for k, v in self.m._consts.get(id(graph), {}).items()}

    def value(self, scope: Names, onnx_name: str, where: str) -> ast.expr | None:
        if not onnx_name:
            return None
        expr = scope.get(onnx_name)
        if expr is None:
            raise UnsupportedOpError(f"onnx convert: {where} reads {onnx_name!r}, which no "
                                     "earlier node produces")
        if isinstance(expr, _Weight):
            if _index_data(expr.value):
                v = expr.value
                return tensor_literal(v.tolist(), v.dtype.name, tuple(v.shape))
            return self.weight(expr.onnx_name, expr.value, expr.base, expr.buffer)
        return expr

    def attr_value(self, v, hint: str) -> ast.expr:
        if type(v).__module__ == "numpy" and getattr(v, "size", 0) > _INLINE_TENSOR:
            from ._types import numpy_to_tensor

            return self.weight(hint, numpy_to_tensor(v, self.m.backend, hint))
        return lit(v)

    # ------------------------------------------------------------------ graphs
    def block(self, graph: Graph, scope: Names) -> list[ast.stmt]:
        """The statements computing ``graph``'s nodes; ``scope`` already binds its inputs."""
        consts = self.consts(graph)
        roles = weight_roles(list(graph.walk()))  # a Loop body's MatMul names an outer weight
        for onnx_name, value in consts.items():
            base, buffer = roles.get(onnx_name, (meaningful(onnx_name), True))
            scope.bind(onnx_name, _Weight(onnx_name, value, base, buffer))
        visible = {**(scope.parent.consts if scope.parent else {}), **consts}
        scope.consts = visible
        uses = _uses(graph.nodes)
        for o in graph.outputs:
            uses[o] = uses.get(o, 0) + 1
        body: list[ast.stmt] = []
        skip: set[int] = set()
        read = readers(graph.nodes)
        for k, node in enumerate(graph.nodes):
            if k in skip:
                continue
            gelu = gelu_at(graph.nodes, k, visible, read, uses)
            if gelu is not None and all(j > k and j not in skip for j in gelu[1]):
                node = gelu[0]
                skip |= gelu[1]
            node = self._linear(graph.nodes, k, node, visible, uses, skip, scope)
            if len(node.outputs) > 1 and node.op_type not in ("If", "Loop", "Scan"):
                # an output nothing reads (Dropout's mask) is not asked for
                outs = [node.outputs[0], *(o if uses.get(o) else "" for o in node.outputs[1:])]
                while outs[-1] == "":
                    outs.pop()
                node = Node(node.op_type, node.inputs, outs, node.attrs, node.domain, node.name)
            body += self.node(node, scope, visible)
        return body

    def _linear(self, nodes, k, node, consts, uses, skip, scope) -> Node:
        """MatMul by a constant 2-D weight (and the Add of a bias right after it, when that
        Add is the product's only reader) as one ``F.linear`` with the weight transposed."""
        if (node.op_type != "MatMul" or len(node.inputs) != 2 or len(node.outputs) != 1
                or node.inputs[1] not in consts or node.domain not in ("", "ai.onnx")):
            return node
        w = consts[node.inputs[1]]
        if w.ndim != 2 or w.dtype.name not in ("float32", "float64"):
            return node
        wt = w.permute((1, 0)).contiguous()
        key = ("transposed", node.inputs[1])  # not a string: never an ONNX name
        if scope.get(key) is None:
            original = scope.get(node.inputs[1])
            base = original.base if isinstance(original, _Weight) else None
            scope.bind(key, self.weight(node.inputs[1], wt, base))
        ins, out = [node.inputs[0], key], node.outputs[0]
        if uses.get(out) == 1:
            for j in range(k + 1, len(nodes)):
                nxt = nodes[j]
                if out not in nxt.inputs:
                    continue
                other = [i for i in nxt.inputs if i != out]
                if (nxt.op_type == "Add" and len(nxt.inputs) == 2 and len(other) == 1
                        and other[0] in consts and tuple(consts[other[0]].shape)
                        == (w.shape[1],)):
                    skip.add(j)
                    ins, out = [*ins, other[0]], nxt.outputs[0]
                break
        return Node("Linear", ins, [out], {}, "", node.name)

    def node(self, node: Node, scope: Names, consts: dict) -> list[ast.stmt]:
        where = f"node '{safe_text(node.name)}' ({safe_text(node.op_type)})"
        last = max((i for i, o in enumerate(node.outputs) if o), default=-1)
        if last < 0:
            return []  # ops are pure: a node without outputs does nothing
        if node.op_type in ("If", "Loop", "Scan", "SequenceMap") and node.domain in ("",
                                                                               "ai.onnx"):
            return getattr(self, "_" + node.op_type.lower())(node, scope)
        pre, graphs = self._graph_functions(node, scope, where)
        fn = self.m._resolve(node) if node.op_type != "Linear" else None
        ins = [self.value(scope, i, where) for i in node.inputs]
        if isinstance(fn, Function):
            return self._inline(fn, node, ins, scope)
        while ins and ins[-1] is None:
            ins.pop()
        outs = node.outputs[:last + 1]
        opset = int(self.model.opsets.get(node.domain, self.model.opset))
        try:
            expr = spell(node, ins, consts, opset, self.info) if len(outs) == 1 else None
        except NoSpelling:
            expr = None
        if expr is None:
            expr = self._call(node, ins, len(outs), opset, graphs)
        idents = [scope.define(o) if o else "_" for o in outs]
        return [*pre, assign(idents, expr)]

    def _graph_functions(self, node: Node, scope: Names, where: str):
        """Graph attributes of other ops (FlexAttention's score_mod...) as nested functions:
        ``call`` hands the function to the op in their place."""
        pre, graphs = [], {}
        for key, sub in node.attrs.items():
            if isinstance(sub, list) and any(isinstance(g, Graph) for g in sub):
                raise UnsupportedOpError(f"onnx convert: {where} holds a list of graphs; "
                                         "use ember.onnx.load")
            if not isinstance(sub, Graph):
                continue
            ident = scope.fresh(key)
            inner = scope.child()
            params = [inner.define(i) for i in sub.inputs]
            body = self.block(sub, inner)
            rets = [self.value(inner, o, f"graph '{safe_text(sub.name)}'") or ast.Constant(
                None) for o in sub.outputs]
            body.append(ast.Return(rets[0] if len(rets) == 1 else ast.Tuple(rets, ast.Load())))
            pre.append(funcdef(ident, params, body))
            graphs[key] = name(ident)
        return pre, graphs

    def _call(self, node: Node, ins: list, n_outputs: int, opset: int,
              graphs: dict | None = None) -> ast.Call:
        op_name = node.op_type if node.domain in ("", "ai.onnx") else (
            f"{node.domain}.{node.op_type}")
        args = [ast.Constant(op_name), *(i if i is not None else ast.Constant(None)
                                         for i in ins)]
        kws = []
        if n_outputs > 1:
            kws.append(ast.keyword("n_outputs", lit(n_outputs)))
        if opset != 21:
            kws.append(ast.keyword("opset", lit(opset)))
        odd_k, odd_v = [], []
        for k, v in node.attrs.items():
            value = (graphs or {}).get(k) or self.attr_value(v, f"{node.name or node.op_type}_{k}")
            if k.isidentifier() and k.isascii() and k not in _CALL_PARAMS and k not in (
                    "True", "False", "None") and not keyword.iskeyword(k):
                kws.append(ast.keyword(k, value))
            else:
                odd_k.append(ast.Constant(k))
                odd_v.append(value)
        if odd_k:
            kws.append(ast.keyword(None, ast.Dict(odd_k, odd_v)))
        return ast.Call(name("call"), args, kws)

    def _inline(self, fn: Function, node: Node, ins: list, scope: Names) -> list[ast.stmt]:
        """An op defined as a function, written out: its body with the caller's attributes."""
        attrs = {**fn.defaults, **node.attrs}
        inner = scope.child()
        for formal, actual in zip(fn.inputs, ins):
            if formal:
                inner.bind(formal, actual if actual is not None else ast.Constant(None))
        for formal in fn.inputs[len(ins):]:
            inner.bind(formal, ast.Constant(None))
        body = []
        for n in fn.nodes:
            resolved = {k: (attrs[v.name] if isinstance(v, _AttrRef) else v)
                        for k, v in n.attrs.items()
                        if not isinstance(v, _AttrRef) or v.name in attrs}
            body += self.node(Node(n.op_type, n.inputs, n.outputs, resolved, n.domain,
                                   n.name), inner, scope.consts)
        for actual, formal in zip(node.outputs, fn.outputs):
            if actual:
                scope.bind(actual, self.value(inner, formal, f"function {node.op_type}"))
        return body


def _index_data(t: Tensor) -> bool:
    """Whether a constant is a small int32/int64 tensor (ONNX's shape, axis, index and trip
    count types), written in the code as a literal: a traced call (``ember.jit``,
    ``ember.onnx.export``) may read a literal's values, never a buffer's, which can change."""
    return t.dtype.name in ("int32", "int64") and t.numel() <= _INLINE_TENSOR


def generate_tree(module: OnnxModule, class_name: str = "Model",
                  weights_file: str = "model.safetensors",
                  source: str = "model.onnx", info: dict | None = None
                  ) -> tuple[ast.Module, dict[str, Tensor]]:
    """The syntax tree of ``model.py`` and the tensors its weights file must hold. ``info``
    (ONNX name -> (element type, static dims), see ``_static``) lets more nodes read as
    ember code."""
    if not class_name.isidentifier() or keyword.iskeyword(class_name) or (
            class_name in RESERVED):
        raise ValueError(f"onnx convert: class name {class_name!r} is not a Python identifier "
                         "(or is a name the generated module uses); try 'Model'")
    check_convertible(module._narrow)
    gen = _Gen(module, info or {})
    graph: Graph = module.graph
    scope = gen.names
    args = [scope.define(i, "in_") for i in graph.inputs]
    body = gen.block(graph, scope)
    rets = [gen.value(scope, o, "the graph output") or ast.Constant(None) for o in graph.outputs]
    # bfloat16 outputs run widened: put them back on bfloat16's grid, as ember.onnx.load does
    rets = [template("call('Cast', P_v, to=16)", v=r)
            if graph.output_info.get(o, (None,))[0] == BFLOAT16 else r
            for o, r in zip(graph.outputs, rets)]
    read = {n.id for r in rets for n in ast.walk(r) if isinstance(n, ast.Name)}
    repeat = find_repeat(body, args, read, gen.weights, gen.buffers, gen.names.taken | {
        class_name})
    if repeat is not None:
        body = repeat.body
    body.append(ast.Return(rets[0] if len(rets) == 1 else ast.Tuple(rets, ast.Load())))
    opset = int(module._model.opset)
    tree = ast.parse(_HEADER)
    tree.body[0:0] = [ast.Expr(ast.Constant(
        f"{class_name}: generated by `ember onnx convert` from "
        f"{safe_text(os.path.basename(source))} (opset {opset}).\n\n"
        "Plain ember code: read it, edit it. Weights live in the safetensors file next to "
        "it.\n"))]
    tree = fill(tree, WEIGHTS=ast.Constant(weights_file))
    cls = next(s for s in tree.body if isinstance(s, ast.ClassDef))
    cls.name = class_name
    init = cls.body[0]
    cls.body.insert(0, ast.Expr(ast.Constant(
        f"Inputs: {', '.join(args)}; outputs: {', '.join(ast.unparse(r) for r in rets)}.")))
    cls.body.append(funcdef("forward", ["self", *args], body))
    used = {n.attr for n in ast.walk(cls) if isinstance(n, ast.Attribute)
            and isinstance(n.value, ast.Name) and n.value.id == "self"}
    weights = {k: v for k, v in gen.weights.items() if k in used}  # inlined ones are not
    for attr in weights:
        key = ast.Constant(attr)
        init.body.append(ast.Expr(template("self.register_buffer(P_k, w[P_k])", k=key))
                         if attr in gen.buffers else ast.Assign(
                             [ast.Attribute(name("self"), attr, ast.Store())],
                             template("nn.Parameter(w[P_k])", k=key), lineno=0))
    if repeat is not None:  # the block class before the Model, its ModuleList in __init__
        init.body.append(repeat.init)
        tree.body.insert(tree.body.index(cls), repeat.classdef)
        weights.update({key: gen.weights[old] for key, old in repeat.weights.items()})
    loader = tree.body[-1]
    loader.body[1].value.func.value.func = name(class_name)  # Model(...).eval()
    return ast.fix_missing_locations(tree), weights


def generate(module: OnnxModule, class_name: str = "Model", weights_file: str = "model.safetensors",
             source: str = "model.onnx") -> str:
    """The source of ``model.py`` for a loaded model (see :func:`generate_tree`)."""
    tree, _ = generate_tree(module, class_name, weights_file, source)
    return source_text(tree)


def source_text(tree: ast.Module) -> str:
    """The module's text: each line that runs an op through ``call`` (no ember spelling)
    ends with a comment naming the ONNX op."""
    lines = ast.unparse(tree).split("\n")
    ops: dict[int, list[str]] = {}
    for n in ast.walk(ast.parse("\n".join(lines))):
        if (isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "call"
                and n.args and isinstance(n.args[0], ast.Constant)):
            ops.setdefault(n.end_lineno, []).append(safe_text(str(n.args[0].value)))
    for line, names in ops.items():
        lines[line - 1] += f"  # ONNX {', '.join(dict.fromkeys(names))}: no ember spelling"
    return "\n".join(lines) + "\n"


def convert(source, out_dir, class_name: str = "Model", shapes: dict | None = None,
            check: bool = True, force: bool = False) -> tuple[str, str]:
    """Write ``model.py`` and ``model.safetensors`` into ``out_dir``, then check the module
    against the runtime path (``check``). ``shapes`` fixes dynamic input dims (name -> dims)
    so more shape arithmetic folds. Returns both paths. ``out_dir`` must be missing, empty or
    an earlier convert's (``force``: any folder; see :mod:`ember.io.output_folder`).
    """
    from ..io import save_file
    from ..io.output_folder import mark_output_folder, prepare_output_folder
    from ._static import fix_input_shapes, fold_static

    prepare_output_folder(out_dir, "onnx convert", force)  # before the work, not after
    mark_output_folder(out_dir, "onnx convert")
    module = load(source, backend="numpy" if _has_numpy() else "python", fold=False)
    fix_input_shapes(module, shapes or {})
    with malformed_file(OnnxLoadError, "onnx convert: the model cannot be set up"):
        info = fold_static(module, source, shapes or {})
    py_path = os.path.join(out_dir, "model.py")
    w_path = os.path.join(out_dir, "model.safetensors")
    src = source if isinstance(source, (str, os.PathLike)) else "model.onnx"
    tree, weights = generate_tree(module, class_name, os.path.basename(w_path), str(src), info)
    code = source_text(tree)
    save_file(weights, w_path, metadata={"source": safe_text(os.path.basename(str(src))),
                                         "generator": "ember onnx convert"})
    with open(py_path, "w") as f:
        f.write(code)
    if check:
        verify(module, py_path)
    return py_path, w_path


def _has_numpy() -> bool:
    return importlib.util.find_spec("numpy") is not None
