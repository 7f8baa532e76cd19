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
import re
import warnings

from .. import limits
from ..errors import EmberError, UnsupportedOpError, malformed_file
from ..tensor import Tensor
from ._graph import Function, Graph, Node, OnnxLoadError, _AttrRef
from ._pyast import RESERVED, Names, assign, fill, funcdef, lit, name, store, template
from ._spell import NoSpelling, spell
from ._types import BFLOAT16
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
    return Model(weights, backend)
'''


class ConvertMismatchError(EmberError, ValueError):
    """The generated module does not reproduce the runtime path (``ember.onnx.load``)."""


def _safe_text(s: str) -> str:
    """File-derived text for a docstring: a conservative ASCII subset, nothing that quotes."""
    return re.sub(r"[^0-9A-Za-z_.\- ]", "_", s)[:80]


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


def _malformed(node: Node, why: str) -> UnsupportedOpError:
    return UnsupportedOpError(f"onnx convert: node '{_safe_text(node.name)}' "
                              f"({_safe_text(node.op_type)}) {why}")


def _body(node: Node, key: str, n_in: int | None = None, n_out: int | None = None) -> Graph:
    """The graph attribute ``key``, checked: exactly ``n_in`` inputs, at least ``n_out``
    outputs (a malformed file gets a typed error, not a KeyError)."""
    g = node.attrs.get(key)
    if not isinstance(g, Graph):
        raise _malformed(node, f"has no graph attribute '{key}'")
    if n_in is not None and len(g.inputs) != n_in:
        raise _malformed(node, f"attribute '{key}' takes {len(g.inputs)} inputs, not {n_in}")
    if n_out is not None and len(g.outputs) < n_out:
        raise _malformed(node, f"attribute '{key}' gives {len(g.outputs)} outputs, fewer "
                         f"than {n_out}")
    return g


def _ints(node: Node, key: str, n: int) -> list[int]:
    """An optional list-of-ints attribute with one entry per scanned value (zeros if absent)."""
    v = node.attrs.get(key) or [0] * n
    if not isinstance(v, list) or len(v) < n or any(type(x) is not int for x in v):
        raise _malformed(node, f"has {key} {v!r}; expected {n} ints")
    return v


class _Gen:
    """Writes the statements of a graph (and the subgraphs and function bodies it holds)."""

    def __init__(self, module: OnnxModule):
        self.m = module
        self.model = module._model
        self.weights: dict[str, Tensor] = {}  # attribute of the generated Model -> tensor
        self.attrs: dict[int, ast.expr] = {}  # id(tensor) -> self.<attr>
        self.names = Names()

    # ------------------------------------------------------------------ values
    def weight(self, hint: str, value: Tensor) -> ast.expr:
        """``self.<attr>`` for a constant tensor, stored once in the weights file."""
        if id(value) not in self.attrs:
            ident = self.names.fresh(hint, "c_")
            self.weights[ident] = value
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
        for onnx_name, value in consts.items():
            scope.bind(onnx_name, self.weight(onnx_name, value))
        visible = {**(scope.parent.consts if scope.parent else {}), **consts}
        scope.consts = visible
        uses = _uses(graph.nodes)
        for o in graph.outputs:
            uses[o] = uses.get(o, 0) + 1
        body: list[ast.stmt] = []
        skip: set[int] = set()
        for k, node in enumerate(graph.nodes):
            if k in skip:
                continue
            node = self._linear(graph.nodes, k, node, visible, uses, skip, scope)
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
        hint = re.sub(r"(MatMul|Gemm|Add)(_\d+)?(_output_\d+)?$", "", node.outputs[0])
        if scope.get(key) is None:  # named after the layer: exporters number the weight
            scope.bind(key, self.weight(f"{hint}/weight", wt))
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
        where = f"node '{_safe_text(node.name)}' ({_safe_text(node.op_type)})"
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
            expr = spell(node, ins, consts, opset) if len(outs) == 1 else None
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
            rets = [self.value(inner, o, f"graph '{_safe_text(sub.name)}'") or ast.Constant(
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

    # ------------------------------------------------------------------ control flow
    def _results(self, sub: Graph, scope: Names, idents: list[str], first: int = 0):
        """``a, b = <the subgraph's outputs from ``first`` on>``."""
        vals = [self.value(scope, o, f"graph '{_safe_text(sub.name)}'") or ast.Constant(None)
                for o in sub.outputs[first:first + len(idents)]]
        if not idents:
            return []
        value = vals[0] if len(vals) == 1 else ast.Tuple(vals, ast.Load())
        return [assign(idents, value)]

    def _outs(self, node: Node, scope: Names) -> list[str]:
        return [scope.define(o) if o else scope.fresh("unused") for o in node.outputs]

    def _if(self, node: Node, scope: Names) -> list[ast.stmt]:
        if len(node.inputs) != 1 or not node.inputs[0]:
            raise _malformed(node, f"has {len(node.inputs)} inputs; If takes one condition")
        cond = self.value(scope, node.inputs[0], "If")
        idents = self._outs(node, scope)
        branches = []
        for key in ("then_branch", "else_branch"):
            sub = _body(node, key, 0, len(node.outputs))
            inner = scope.child()
            branches.append(self.block(sub, inner) + self._results(sub, inner, idents)
                            or [ast.Pass()])
        test = template("bool(P_c.item())", c=cond)
        return [ast.If(test, branches[0], branches[1])]

    def _loop(self, node: Node, scope: Names) -> list[ast.stmt]:
        n_c = max(len(node.inputs) - 2, 0)
        body = _body(node, "body", 2 + n_c, 1 + n_c)
        if len(node.outputs) > len(body.outputs) - 1:
            raise _malformed(node, "declares more outputs than its body gives")
        trip = self.value(scope, node.inputs[0], "Loop") if node.inputs else None
        cond = self.value(scope, node.inputs[1], "Loop") if len(node.inputs) > 1 else None
        carried = [self.value(scope, i, "Loop") for i in node.inputs[2:]]
        outs = self._outs(node, scope)
        state, scans = outs[:n_c], outs[n_c:]
        i, keep = scope.fresh("i"), scope.fresh("keep")
        accs = [scope.fresh(f"{s}_steps") for s in scans]
        pre: list[ast.stmt] = [assign([i], lit(0)), assign([keep], template(
            "bool(P_c.item())", c=cond) if cond is not None else lit(True))]
        if state:
            pre.append(assign(state, ast.Tuple(carried, ast.Load()) if n_c > 1 else carried[0]))
        pre += [assign([a], ast.List([], ast.Load())) for a in accs]
        inner = scope.child()
        iter_in, cond_in, *state_in = body.inputs
        step: list[ast.stmt] = []
        if iter_in:
            step.append(assign([inner.define(iter_in)], template(
                "ember.tensor(P_i, dtype=ember.int64)", i=name(i))))
        if cond_in:
            step.append(assign([inner.define(cond_in)], template(
                "ember.tensor(P_k, dtype=ember.bool_)", k=name(keep))))
        for formal, current in zip(state_in, state):
            inner.bind(formal, name(current))
        step += self.block(body, inner)
        cond_out = body.outputs[0]
        if cond_out:
            step.append(assign([keep], template("bool(P_c.item())", c=self.value(
                inner, cond_out, "Loop body"))))
        step += self._results(body, inner, state, 1)
        for acc, o in zip(accs, body.outputs[1 + n_c:]):
            step.append(ast.Expr(template("P_a.append(P_v)", a=name(acc), v=self.value(
                inner, o, "Loop body"))))
        step.append(ast.AugAssign(store(i), ast.Add(), lit(1)))
        test = name(keep)
        if trip is not None:
            test = ast.BoolOp(ast.And(), [test, template("P_i < int(P_m.item())", i=name(i),
                                                         m=trip)])
        post = [assign([s], template("stack_outputs(P_a)", a=name(a)))
                for s, a in zip(scans, accs)]
        return pre + [ast.While(test, step, [])] + post

    def _scan(self, node: Node, scope: Names) -> list[ast.stmt]:
        a = node.attrs
        n_scan = a.get("num_scan_inputs")
        if type(n_scan) is not int or not 0 < n_scan <= len(node.inputs):
            raise _malformed(node, f"has num_scan_inputs {n_scan!r}; 1 to {len(node.inputs)}")
        body = _body(node, "body", len(node.inputs), len(node.outputs))
        ins = [self.value(scope, i, "Scan") for i in node.inputs]
        n_state = len(ins) - n_scan
        xs = ins[n_state:]
        outs = self._outs(node, scope)
        state, ys = outs[:n_state], outs[n_state:]
        in_axes = _ints(node, "scan_input_axes", n_scan)
        in_dirs = _ints(node, "scan_input_directions", n_scan)
        out_axes = _ints(node, "scan_output_axes", len(ys))
        out_dirs = _ints(node, "scan_output_directions", len(ys))
        t, steps = scope.fresh("t"), scope.fresh("steps")
        accs = [scope.fresh(f"{y}_steps") for y in ys]
        pre: list[ast.stmt] = []
        if state:
            pre.append(assign(state, ast.Tuple(ins[:n_state], ast.Load()) if n_state > 1
                              else ins[0]))
        pre += [assign([acc], ast.List([], ast.Load())) for acc in accs]
        pre.append(assign([steps], template("P_x.shape[P_a]", x=xs[0], a=lit(in_axes[0]))))
        inner = scope.child()
        for formal, current in zip(body.inputs, state):
            inner.bind(formal, name(current))
        step: list[ast.stmt] = []
        for formal, x, ax, d in zip(body.inputs[n_state:], xs, in_axes, in_dirs):
            index = template("P_n - 1 - P_t" if d else "P_t", n=name(steps), t=name(t))
            step.append(assign([inner.define(formal)], template(
                "P_x.select(P_a, P_i)", x=x, a=lit(ax), i=index)))
        step += self.block(body, inner)
        step += self._results(body, inner, state)
        for acc, o in zip(accs, body.outputs[n_state:]):
            step.append(ast.Expr(template("P_a.append(P_v)", a=name(acc), v=self.value(
                inner, o, "Scan body"))))
        loop = ast.For(store(t), template("range(P_n)", n=name(steps)), step, [])
        post = [assign([y], template("stack_outputs(P_a, axis=P_x, reverse=P_r)", a=name(acc),
                                     x=lit(ax), r=lit(bool(d))))
                for y, acc, ax, d in zip(ys, accs, out_axes, out_dirs)]
        return pre + [loop] + post

    def _sequencemap(self, node: Node, scope: Names) -> list[ast.stmt]:
        body = _body(node, "body", len(node.inputs), len(node.outputs))
        ins = [self.value(scope, i, "SequenceMap") for i in node.inputs]
        outs = self._outs(node, scope)
        k = scope.fresh("k")
        inner = scope.child()
        step: list[ast.stmt] = []
        for j, (formal, actual) in enumerate(zip(body.inputs, ins)):
            src = "P_s[P_k]" if j == 0 else "P_s[P_k] if isinstance(P_s, list) else P_s"
            step.append(assign([inner.define(formal)], template(src, s=actual, k=name(k))))
        step += self.block(body, inner)
        for o, res in zip(outs, body.outputs):
            step.append(ast.Expr(template("P_a.append(P_v)", a=name(o), v=self.value(
                inner, res, "SequenceMap body"))))
        pre = [assign([o], ast.List([], ast.Load())) for o in outs]
        return pre + [ast.For(store(k), template("range(len(P_s))", s=ins[0]), step, [])]


def generate_tree(module: OnnxModule, class_name: str = "Model",
                  weights_file: str = "model.safetensors",
                  source: str = "model.onnx") -> tuple[ast.Module, dict[str, Tensor]]:
    """The syntax tree of ``model.py`` and the tensors its weights file must hold."""
    if not class_name.isidentifier() or keyword.iskeyword(class_name) or (
            class_name in RESERVED):
        raise ValueError(f"onnx convert: class name {class_name!r} is not a Python identifier "
                         "(or is a name the generated module uses); try 'Model'")
    gen = _Gen(module)
    graph: Graph = module.graph
    scope = gen.names
    args = [scope.define(i, "in_") for i in graph.inputs]
    body = gen.block(graph, scope)
    rets = [gen.value(scope, o, "the graph output") or ast.Constant(None) for o in graph.outputs]
    # bfloat16 outputs run widened: put them back on bfloat16's grid, as ember.onnx.load does
    rets = [template("call('Cast', P_v, to=16)", v=r)
            if graph.output_info.get(o, (None,))[0] == BFLOAT16 else r
            for o, r in zip(graph.outputs, rets)]
    body.append(ast.Return(rets[0] if len(rets) == 1 else ast.Tuple(rets, ast.Load())))
    opset = int(module._model.opset)
    tree = ast.parse(_HEADER)
    tree.body[0:0] = [ast.Expr(ast.Constant(
        f"{class_name}: generated by `ember onnx convert` from "
        f"{_safe_text(os.path.basename(source))} (opset {opset}).\n\n"
        "Plain ember code: read it, edit it. Weights live in the safetensors file next to "
        "it.\n"))]
    tree = fill(tree, WEIGHTS=ast.Constant(weights_file))
    cls = next(s for s in tree.body if isinstance(s, ast.ClassDef))
    cls.name = class_name
    init = cls.body[0]
    cls.body.insert(0, ast.Expr(ast.Constant(
        f"Inputs: {', '.join(args)}; outputs: {', '.join(ast.unparse(r) for r in rets)}.")))
    for attr in gen.weights:
        init.body.append(ast.Expr(template("self.register_buffer(P_k, w[P_k])",
                                           k=ast.Constant(attr))))
    cls.body.append(funcdef("forward", ["self", *args], body))
    loader = tree.body[-1]
    loader.body[0].value.func = name(class_name)
    return ast.fix_missing_locations(tree), gen.weights


def generate(module: OnnxModule, class_name: str = "Model", weights_file: str = "model.safetensors",
             source: str = "model.onnx") -> str:
    """The source of ``model.py`` for a loaded model (see :func:`generate_tree`)."""
    tree, _ = generate_tree(module, class_name, weights_file, source)
    return ast.unparse(tree) + "\n"


def example_inputs(module: OnnxModule, seed: int = 0) -> list | None:
    """Random inputs of the declared shapes and types, or None when an input's type is not a
    plain tensor. A dynamic dim is 1 when it leads (a batch), else 64 (an image side, a
    sequence length)."""
    import numpy as np

    from ._types import onnx_dtype

    rng = np.random.default_rng(seed)
    out = []
    for n in module.graph.inputs:
        elem, shape = module.graph.input_info.get(n, (None, None))
        if elem is None or shape is None:
            return None
        dims = [d if isinstance(d, int) and d > 0 else (64 if k else 1)
                for k, d in enumerate(shape)]
        kind = onnx_dtype(elem).name
        if kind.startswith("float"):
            a = rng.standard_normal(dims).astype(kind)
        elif kind == "bool":
            a = rng.random(dims) < 0.5
        else:
            a = rng.integers(0, 3, dims).astype(kind)
        out.append(a)
    return out


def verify(module: OnnxModule, py_path: str, rtol: float = 1e-4, atol: float = 1e-5) -> str | None:
    """Run the generated module and the runtime path on :func:`example_inputs`; raise
    :class:`ConvertMismatchError` if they differ. Returns why it could not check, or None."""
    import numpy as np

    from ._types import numpy_to_tensor

    feeds = example_inputs(module)
    if feeds is None:
        return "an input has no declared tensor shape"
    bound = limits.current()
    if sum(a.size for a in feeds) > bound.max_activation_elements:
        return ("the declared inputs hold more elements than "
                + bound.describe("max_activation_elements"))
    feeds = [numpy_to_tensor(a, module.backend) for a in feeds]
    try:
        want = module(*feeds)
    except MemoryError:
        return "running the model on its declared shapes runs out of memory"
    except Exception as e:  # noqa: BLE001 - nothing to compare with
        return f"the runtime path fails on random inputs ({type(e).__name__}: {e})"
    spec = importlib.util.spec_from_file_location("ember_onnx_generated", py_path)
    gen = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(gen)
        got = gen.load(backend=module.backend)(*feeds)
    except MemoryError:
        return "running the model on its declared shapes runs out of memory"
    except Exception as e:
        raise ConvertMismatchError(
            f"onnx convert: the generated {py_path} fails where ember.onnx.load runs: "
            f"{type(e).__name__}: {e}") from e
    want = want if isinstance(want, tuple) else (want,)
    got = got if isinstance(got, tuple) else (got,)
    if len(got) != len(want):
        raise ConvertMismatchError(f"onnx convert: the generated module returns {len(got)} "
                                   f"outputs, the model {len(want)}")
    for k, (g, w) in enumerate(zip(got, want)):
        if isinstance(w, list) or w is None:
            continue
        gn, wn = np.asarray(g.numpy()), np.asarray(w.numpy())
        if gn.shape != wn.shape or gn.dtype != wn.dtype or not _close(gn, wn, rtol, atol):
            raise ConvertMismatchError(
                f"onnx convert: output {k} of the generated module differs from "
                f"ember.onnx.load: {gn.dtype}{gn.shape} vs {wn.dtype}{wn.shape}, largest "
                f"difference {_diff(gn, wn)}")
    return None


def _close(got, want, rtol: float, atol: float) -> bool:
    """``allclose`` with ``atol`` relative to the output's magnitude, a chunk at a time (an
    output may be as large as the model makes it)."""
    import numpy as np

    g, w = got.reshape(-1), want.reshape(-1)
    scale = atol * max(1.0, float(np.abs(w).max(initial=0)))
    step = 1 << 20
    return all(np.allclose(g[i:i + step], w[i:i + step], rtol=rtol, atol=scale,
                           equal_nan=True) for i in range(0, g.size, step))


def _diff(a, b) -> str:
    import numpy as np

    if a.shape != b.shape:
        return "n/a (shapes differ)"
    return f"{float(np.nanmax(np.abs(a.astype(np.float64) - b.astype(np.float64)))):.3g}"


def convert(source, out_dir, class_name: str = "Model", shapes: dict | None = None,
            check: bool = True) -> tuple[str, str]:
    """Write ``model.py`` and ``model.safetensors`` into ``out_dir``, then check the module
    against the runtime path (``check``). ``shapes`` fixes dynamic input dims (name -> dims)
    so more shape arithmetic folds. Returns both paths.
    """
    from ..io import save_file
    from ._static import fix_input_shapes, fold_static

    module = load(source, backend="numpy" if _has_numpy() else "python", fold=False)
    fix_input_shapes(module, shapes or {})
    with malformed_file(OnnxLoadError, "onnx convert: the model cannot be set up"):
        fold_static(module, source, shapes or {})
    os.makedirs(out_dir, exist_ok=True)
    py_path = os.path.join(out_dir, "model.py")
    w_path = os.path.join(out_dir, "model.safetensors")
    src = source if isinstance(source, (str, os.PathLike)) else "model.onnx"
    tree, weights = generate_tree(module, class_name, os.path.basename(w_path), str(src))
    code = ast.unparse(tree) + "\n"
    save_file(weights, w_path, metadata={"source": _safe_text(os.path.basename(str(src))),
                                         "generator": "ember onnx convert"})
    with open(py_path, "w") as f:
        f.write(code)
    if check:
        why = verify(module, py_path)
        if why:
            warnings.warn(f"onnx convert: the generated module was not checked: {why}",
                          stacklevel=2)
    return py_path, w_path


def _has_numpy() -> bool:
    return importlib.util.find_spec("numpy") is not None
