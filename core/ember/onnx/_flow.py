"""Control flow for ``ember onnx convert``: If, Loop, Scan and SequenceMap nodes written as
Python ``if``/``while``/``for`` statements whose bodies are the subgraphs' statements.

Subgraph values get names in a child scope (:class:`~._pyast.Names`), so a body's names never
shadow the enclosing graph's; outer values are read by name, as ONNX lets bodies do. Malformed
nodes (a missing or ill-shaped body) raise a typed ``UnsupportedOpError``.
"""

from __future__ import annotations

import ast
import re

from ..errors import UnsupportedOpError
from ._graph import Graph, Node
from ._pyast import Names, assign, lit, name, store, template


def safe_text(s: str) -> str:
    """File-derived text for messages and docstrings: a conservative ASCII subset, nothing
    that quotes."""
    return re.sub(r"[^0-9A-Za-z_.\- ]", "_", s)[:80]


def malformed_node(node: Node, why: str) -> UnsupportedOpError:
    return UnsupportedOpError(f"onnx convert: node '{safe_text(node.name)}' "
                              f"({safe_text(node.op_type)}) {why}")


def _body(node: Node, key: str, n_in: int | None = None, n_out: int | None = None) -> Graph:
    """The graph attribute ``key``, checked: exactly ``n_in`` inputs, at least ``n_out``
    outputs (a malformed file gets a typed error, not a KeyError)."""
    g = node.attrs.get(key)
    if not isinstance(g, Graph):
        raise malformed_node(node, f"has no graph attribute '{key}'")
    if n_in is not None and len(g.inputs) != n_in:
        raise malformed_node(node, f"attribute '{key}' takes {len(g.inputs)} inputs, not {n_in}")
    if n_out is not None and len(g.outputs) < n_out:
        raise malformed_node(node, f"attribute '{key}' gives {len(g.outputs)} outputs, fewer "
                         f"than {n_out}")
    return g


def _ints(node: Node, key: str, n: int) -> list[int]:
    """An optional list-of-ints attribute with one entry per scanned value (zeros if absent)."""
    v = node.attrs.get(key) or [0] * n
    if not isinstance(v, list) or len(v) < n or any(type(x) is not int for x in v):
        raise malformed_node(node, f"has {key} {v!r}; expected {n} ints")
    return v


class FlowWriter:
    """The control-flow half of the code generator (mixed into it: it needs ``block`` and
    ``value`` from there)."""

    def _results(self, sub: Graph, scope: Names, idents: list[str], first: int = 0):
        """``a, b = <the subgraph's outputs from ``first`` on>``."""
        vals = [self.value(scope, o, f"graph '{safe_text(sub.name)}'") or ast.Constant(None)
                for o in sub.outputs[first:first + len(idents)]]
        if not idents:
            return []
        value = vals[0] if len(vals) == 1 else ast.Tuple(vals, ast.Load())
        return [assign(idents, value)]

    def _outs(self, node: Node, scope: Names) -> list[str]:
        return [scope.define(o) if o else scope.fresh("unused") for o in node.outputs]

    def _if(self, node: Node, scope: Names) -> list[ast.stmt]:
        if len(node.inputs) != 1 or not node.inputs[0]:
            raise malformed_node(node, f"has {len(node.inputs)} inputs; If takes one condition")
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
            raise malformed_node(node, "declares more outputs than its body gives")
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
            fixed = scope.consts.get(node.inputs[0])  # a constant trip count: a Python int
            bound = lit(int(fixed.item())) if fixed is not None and fixed.numel() == 1 else (
                template("int(P_m.item())", m=trip))
            test = ast.BoolOp(ast.And(), [test, template("P_i < P_m", i=name(i), m=bound)])
        post = [assign([s], template("stack_outputs(P_a)", a=name(a)))
                for s, a in zip(scans, accs)]
        return pre + [ast.While(test, step, [])] + post

    def _scan(self, node: Node, scope: Names) -> list[ast.stmt]:
        if int(self.model.opsets.get(node.domain, self.model.opset)) < 9:
            raise UnsupportedOpError(
                f"onnx convert: node '{safe_text(node.name)}' is a Scan of opset 8 (batched, "
                "after sequence_lens), which convert does not write; ember.onnx.load runs it")
        a = node.attrs
        n_scan = a.get("num_scan_inputs")
        if type(n_scan) is not int or not 0 < n_scan <= len(node.inputs):
            raise malformed_node(node, f"has num_scan_inputs {n_scan!r}; 1 to {len(node.inputs)}")
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
