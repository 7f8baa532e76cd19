"""A lower-overhead plan for running a graph on the numpy backend.

The generic path (``OnnxModule._run``) calls each node's op function with ember tensors; every
call re-checks dtypes and shapes and goes through the op dispatcher: 5-20 us a node, against
onnxruntime's ~1 us. Here each node is resolved once to a closure over raw numpy arrays,
specialised on the dtypes the generic path saw on a first run with inputs of the same dtypes
(``seen``); what a closure needs from attributes and constant inputs is worked out when it is
built. A value that a producer made fresh (Conv, MatMul, an arithmetic result, ...) and that
exactly one node reads is overwritten in place by that node (Conv -> Relu, MatMul -> Add
bias, Sigmoid -> Mul), so a chain allocates once. Nodes without a closure here run their
generic op function on tensors wrapped around the arrays, so the plan covers every graph the
generic path runs; If and Loop bodies are compiled the same way, once.

Here: the plan, its compilation (after ``_fastfuse``'s rewrites) and If/Loop; the per-op
closures are in ``_fastmath`` (elementwise, activations, matrix products), ``_fastnn``
(convolution, pooling, normalization) and ``_fastlayout`` (shapes and views), on top of
``_fastbase``. The generic path stays the reference: ``tests/onnx/test_onnx_fastplan.py`` runs
both on the node suite and the real models.
"""

from __future__ import annotations

import numpy as np

from ._fastbase import BuilderBase
from ._fastfuse import fuse_activations, fuse_convs
from ._fastlayout import LayoutSteps
from ._fastmath import MathSteps
from ._fastnn import NNSteps
from ._graph import Function

# the ops with a closure whose output is a new array no input aliases (so it may be reused)
_FRESH = {"Swish", "BatchNormalization", "Sum", "AveragePool", "Conv", "MatMul", "Gemm", "Add",
          "Sub", "Mul", "Div", "Relu", "Sigmoid", "Tanh", "Exp", "Sqrt", "Erf", "Gelu", "Clip",
          "HardSigmoid", "HardSwish", "Softmax", "LayerNormalization", "GlobalAveragePool",
          "MaxPool", "Concat", "LeakyRelu", "Neg", "Abs", "Reciprocal", "Pow", "Log", "Where"}
# the input name under which a step receives the running plan's environment (If and Loop
# bodies read outer values by name)
ENV = "\0env"


class FastPlan:
    """A graph's steps as ``(function, input names, output name or names, names read for
    the last time)``, and the node each one runs (after the fusions)."""

    __slots__ = ("steps", "nodes", "consts", "free", "inputs", "outputs")

    def __init__(self, steps, nodes, consts, free, inputs, outputs):
        self.steps, self.nodes, self.consts, self.free = steps, nodes, consts, free
        self.inputs, self.outputs = inputs, outputs

    def run(self, inputs: list, outer: dict | None = None) -> list:
        env = dict(self.consts)
        if outer is not None:
            for name in self.free:
                if name in outer:
                    env[name] = outer[name]
        env.update(zip(self.inputs, inputs))
        env[ENV] = env
        for fn, ins, out, dead in self.steps:
            r = fn(*[env[i] for i in ins])
            if out.__class__ is str:
                env[out] = r
            else:
                for name, v in zip(out, r):
                    if name:
                        env[name] = v
            for name in dead:  # last read: its memory goes back while it is still in cache
                del env[name]
        return [env[n] if n else None for n in self.outputs]


def compile_graph(module, graph, seen: dict) -> FastPlan | None:
    """``graph``'s fast plan, or None when it holds a node this plan cannot run (a subgraph
    op other than If/Loop). ``seen``: id(graph) -> {value name: numpy dtype} from a generic
    run."""
    def plan_of(g):
        return module._plans.get(id(g)) or module._plan(g)

    plan = plan_of(graph)
    types = seen.get(id(graph), {})
    consts = {name: getattr(module, attr)._prim for name, attr in plan.consts}
    uses: dict[str, int] = {}
    for node in graph.nodes:
        for i in node.inputs:
            uses[i] = uses.get(i, 0) + 1
        for sub in node.subgraphs():
            for f in plan_of(sub).free:
                uses[f] = uses.get(f, 0) + 2
    for o in graph.outputs:
        uses[o] = uses.get(o, 0) + 2
    fresh: set[str] = set()
    resolved, chains = fuse_convs(plan.steps, consts, types, uses)
    resolved = fuse_activations(resolved, consts, types, uses)
    b = _Builder(module, types, consts, fresh, uses, seen)
    b.chains = chains
    steps = []
    for node, fn, opset in resolved:
        step = b.build(node, fn, opset)
        if step is None:
            return None
        steps.append(step)
    # each intermediate is dropped after the step that reads it last (subgraph steps read
    # their bodies' outer names); graph outputs stay
    last: dict[str, int] = {}
    made = {o for n, _, _ in resolved for o in n.outputs if o} - set(graph.outputs)
    for k, (node, _, _) in enumerate(resolved):
        for name in [*node.inputs, *(f for g in node.subgraphs() for f in plan_of(g).free)]:
            if name in made:
                last[name] = k
    dead: list[list[str]] = [[] for _ in steps]
    for name, k in last.items():
        dead[k].append(name)
    steps = [(*step, tuple(d)) for step, d in zip(steps, dead)]
    consts[""] = None
    return FastPlan(steps, [n for n, _, _ in resolved], consts, plan.free, list(graph.inputs),
                    list(graph.outputs))


class _Builder(BuilderBase, MathSteps, NNSteps, LayoutSteps):
    def __init__(self, module, types, consts, fresh, uses, seen):
        self.module, self.types, self.consts = module, types, consts
        self.fresh, self.uses, self.seen = fresh, uses, seen
        self.backend = module.backend
        self.chains: dict = {}  # id(fused Conv node) -> (weight, bias, chain): _fastfuse

    def build(self, node, fn, opset):
        """One node's step; None when the node cannot run in a fast plan at all."""
        out = node.outputs[0] if len(node.outputs) == 1 else tuple(node.outputs)
        ins = tuple(node.inputs)
        if node.subgraphs():
            if node.op_type not in ("If", "Loop") or isinstance(fn, Function):
                return None
            f = (self._if if node.op_type == "If" else self._loop)(node)
            return None if f is None else (f, (*ins, ENV), tuple(node.outputs))
        f = None
        self._cur = (node, fn, opset)
        if not isinstance(fn, Function) and node.domain in ("", "ai.onnx"):
            maker = getattr(self, "_op_" + node.op_type, None)
            if maker is not None and all(i == "" or i in self.types or i in self.consts
                                         for i in ins):
                f = maker(node, opset)
        if f is None:
            return self._generic(node, fn, opset), ins, tuple(node.outputs)
        if node.op_type in _FRESH and isinstance(out, str):
            self.fresh.add(out)
        return f, ins, out

    # ------------------------------------------------------------------ control flow
    def _if(self, node):
        sub = {k: compile_graph(self.module, g, self.seen)
               for k, g in (("then", node.attrs["then_branch"]),
                            ("else", node.attrs["else_branch"]))}
        if None in sub.values():
            return None
        then_, else_ = sub["then"], sub["else"]

        def run_if(cond, outer):
            c = cond.reshape(-1)
            return (then_ if c.size and c[0] else else_).run([], outer)

        return run_if

    def _loop(self, node):
        body = node.attrs["body"]
        plan = compile_graph(self.module, body, self.seen)
        if plan is None:
            return None
        from .ops.control import _reads

        need_i, need_cond = _reads(body, body.inputs[0]), _reads(body, body.inputs[1])
        n_carried = len(node.inputs) - 2
        n_scan = len(body.outputs) - 1 - n_carried
        flags = {True: np.array(True), False: np.array(False)}

        def run_loop(m, cond, *rest):
            *carried, outer = rest
            trip = int(m.reshape(-1)[0]) if m is not None else None
            keep = bool(cond.reshape(-1)[0]) if cond is not None else True
            state = list(carried)
            scans = [[] for _ in range(n_scan)]
            i = 0
            while keep and (trip is None or i < trip):
                it = np.array(i, dtype=np.int64) if need_i else None
                outs = plan.run([it, flags[keep] if need_cond else None, *state], outer)
                c = outs[0]
                keep = bool(c.reshape(-1)[0]) if c is not None else True
                state = outs[1:1 + n_carried]
                for acc, v in zip(scans, outs[1 + n_carried:]):
                    acc.append(v)
                i += 1
            return (*state, *[_stack(acc) for acc in scans])

        return run_loop


def _stack(steps: list):
    if not steps:
        return np.zeros(0, dtype=np.float32)
    if isinstance(steps[0], list):
        return steps
    return np.stack(steps)

