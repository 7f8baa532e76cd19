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

The generic path stays the reference: ``tests/onnx/test_onnx_fastplan.py`` runs both on the
node suite and the real models.
"""

from __future__ import annotations

import math

import numpy as np

from ..backends.numpy.blocks import blocked, blocked_into
from ..backends.numpy.nn import _pad
from ..backends.numpy.ops import _matmul
from ..tensor import Tensor
from ._fastfuse import fuse_activations, fuse_convs
from ._graph import Function
from .ops import CallCtx
from .ops.nn_conv import _pool_geometry, resolve_pads

# the ops with a closure whose output is a new array no input aliases (so it may be reused)
_FRESH = {"Swish", "BatchNormalization", "Sum", "AveragePool", "Conv", "MatMul", "Gemm", "Add",
          "Sub", "Mul", "Div", "Relu", "Sigmoid", "Tanh", "Exp", "Sqrt", "Erf", "Gelu", "Clip",
          "HardSigmoid", "HardSwish", "Softmax", "LayerNormalization", "GlobalAveragePool",
          "MaxPool", "Concat", "LeakyRelu", "Neg", "Abs", "Reciprocal", "Pow", "Log", "Where"}
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_ARITH = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide}
_COMPARE = {"Equal": np.equal, "Less": np.less, "Greater": np.greater,
            "LessOrEqual": np.less_equal, "GreaterOrEqual": np.greater_equal}
_UNARY = {"Tanh": np.tanh, "Exp": np.exp, "Sqrt": np.sqrt, "Neg": np.negative, "Abs": np.abs,
          "Reciprocal": np.reciprocal, "Log": np.log, "Floor": np.floor, "Ceil": np.ceil,
          "Sin": np.sin, "Cos": np.cos}
# Cast targets (ONNX element types) that numpy's astype reaches exactly from the kinds listed
# the input name under which a step receives the running plan's environment (If and Loop
# bodies read outer values by name)
ENV = "\0env"
_CASTS = {1: (np.float32, "biuf"), 11: (np.float64, "biuf"), 7: (np.int64, "biu"),
          6: (np.int32, "bi"), 9: (np.bool_, "biuf")}


class _Unplanned(Exception):
    """Raised by a closure for inputs it does not cover (see ``_Builder._or_generic``)."""


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


def wrap(a, backend):
    """An array (or a sequence of them) as ember tensors on the numpy backend."""
    if a is None or isinstance(a, Tensor):
        return a
    if isinstance(a, list):
        return [wrap(v, backend) for v in a]
    return Tensor(a if type(a) is np.ndarray else np.asarray(a), backend)


def unwrap(t):
    if isinstance(t, Tensor):
        return t._prim
    if isinstance(t, list):
        return [unwrap(v) for v in t]
    return t


class _Builder:
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

    # ------------------------------------------------------------------ helpers
    def dtype(self, name):
        if name in self.consts:
            return self.consts[name].dtype
        return self.types.get(name)

    def reusable(self, name) -> bool:
        """Whether the node reading ``name`` may overwrite it: made fresh, read once."""
        return name in self.fresh and self.uses.get(name, 0) == 1

    def const(self, name):
        return self.consts.get(name) if name else None

    def _or_generic(self, f, node):
        """``f``, or the node's generic op function for inputs ``f`` turns down at run
        time (raising ``_Unplanned``)."""
        generic = self._generic(*self._cur)
        single = len(node.outputs) == 1

        def g(*args):
            try:
                return f(*args)
            except _Unplanned:
                r = generic(*args)
                return r[0] if single else r

        return g

    def _generic(self, node, fn, opset):
        module, backend = self.module, self.backend
        if isinstance(fn, Function):
            def call(args):
                return module._run_function(fn, node, args, None)
        else:
            ctx = CallCtx(node.op_type, backend, opset, len(node.outputs))

            def call(args):
                return module._invoke(ctx, fn, node, args)

        def step(*arrays):
            return [unwrap(o) for o in call([wrap(a, backend) for a in arrays])]

        return step

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

    # ------------------------------------------------------------------ elementwise
    def _binary(self, node, ufunc, kinds):
        a, b = node.inputs[:2]
        da, db = self.dtype(a), self.dtype(b)
        if da is None or da != db or da.kind not in kinds or node.attrs.get("broadcast"):
            return None
        reuse_a, reuse_b = self.reusable(a), self.reusable(b) and a != b
        if not (reuse_a or reuse_b):
            return ufunc

        def f(x, y):
            try:  # the reused operand must already have the broadcast shape
                return ufunc(x, y, out=x if reuse_a else y)
            except (ValueError, TypeError):
                return ufunc(x, y)

        return f

    def _op_Add(self, node, opset):
        return self._binary(node, np.add, "fiu")

    def _op_Sub(self, node, opset):
        return self._binary(node, np.subtract, "fiu")

    def _op_Mul(self, node, opset):
        return self._binary(node, np.multiply, "fiu")

    def _op_Div(self, node, opset):
        return self._binary(node, np.divide, "f")

    def _op_Mod(self, node, opset):
        if node.attrs.get("fmod"):
            return None
        return self._binary(node, np.remainder, "iu")

    def _compare(self, node, opset):
        a, b = node.inputs
        da = self.dtype(a)
        if da is None or da != self.dtype(b) or da.kind not in "fiub":
            return None
        return _COMPARE[node.op_type]

    _op_Equal = _op_Less = _op_Greater = _op_LessOrEqual = _op_GreaterOrEqual = _compare

    def _op_Where(self, node, opset):
        c, x, y = node.inputs
        if self.dtype(c) != np.bool_ or self.dtype(x) is None or self.dtype(x) != self.dtype(y):
            return None
        return np.where

    def _unary(self, node, ufunc):
        x = node.inputs[0]
        if self.dtype(x) not in _FLOATS:
            return None
        if not self.reusable(x):
            return ufunc

        def f(v):
            return ufunc(v, out=v) if type(v) is np.ndarray else ufunc(v)

        return f

    def _op_unary(self, node, opset):
        return self._unary(node, _UNARY[node.op_type])

    _op_Tanh = _op_Exp = _op_Sqrt = _op_Neg = _op_Abs = _op_Reciprocal = _op_unary
    _op_Log = _op_Floor = _op_Ceil = _op_Sin = _op_Cos = _op_unary

    def _op_Relu(self, node, opset):
        x = node.inputs[0]
        if self.dtype(x) not in _FLOATS:
            return None
        zero = self.dtype(x).type(0)
        if not self.reusable(x):
            return lambda v: np.maximum(v, zero)
        return lambda v: np.maximum(v, zero, out=v) if type(v) is np.ndarray else \
            np.maximum(v, zero)

    def _op_LeakyRelu(self, node, opset):
        x = node.inputs[0]
        if self.dtype(x) not in _FLOATS:
            return None
        alpha = node.attrs.get("alpha", 0.01)

        def f(v):
            return np.where(v >= 0, v, v * alpha)

        return f

    def _op_Sigmoid(self, node, opset):
        x = node.inputs[0]
        dt = self.dtype(x)
        if dt not in _FLOATS:
            return None
        sigmoid = self.backend.float_sigmoid
        if not self.reusable(x):
            return lambda v: blocked(sigmoid, v)
        one = dt.type(1)

        def in_place(v):  # the backend's four passes, on v itself
            if type(v) is not np.ndarray:
                return sigmoid(v)
            np.negative(v, out=v)
            np.exp(v, out=v)
            v += one
            return np.reciprocal(v, out=v)

        return lambda v: blocked(in_place, v)

    def _op_Swish(self, node, opset):
        dt = self.dtype(node.inputs[0])
        if dt not in _FLOATS or node.attrs.get("alpha", 1.0) != 1.0:
            return None
        one = dt.type(1)

        def silu(x, s):  # x / (1 + exp(-x))
            np.negative(x, out=s)
            np.exp(s, out=s)
            s += one
            np.divide(x, s, out=s)

        return lambda v: blocked_into(silu, v) if type(v) is np.ndarray else v / (
            one + np.exp(-v))

    def _op_Erf(self, node, opset):
        return self.backend.float_erf if self.dtype(node.inputs[0]) in _FLOATS else None

    def _op_Gelu(self, node, opset):
        if self.dtype(node.inputs[0]) not in _FLOATS:
            return None
        approximate = node.attrs.get("approximate", "none")
        gelu = self.backend.gelu
        return lambda v: gelu(v, approximate)

    def _clamp(self, dt, lo, hi, reuse):
        lo = None if lo is None else dt.type(lo)
        hi = None if hi is None else dt.type(hi)

        if lo is None and hi is None:  # no bounds: still a fresh array (Clip is in _FRESH)
            return np.copy

        def f(v):
            out = v if reuse and type(v) is np.ndarray else None
            if lo is not None:
                v = np.maximum(v, lo, out=out)
                out = v if type(v) is np.ndarray else None
            if hi is not None:
                v = np.minimum(v, hi, out=out)
            return v

        return f

    def _op_Clip(self, node, opset):
        x = node.inputs[0]
        dt = self.dtype(x)
        if dt not in _FLOATS:
            return None
        bounds = []
        for k, name in ((1, "min"), (2, "max")):
            src = node.inputs[k] if len(node.inputs) > k else ""
            if src:
                c = self.const(src)
                if c is None or c.size != 1:
                    return None
                bounds.append(c.reshape(-1)[0].item())
            else:
                bounds.append(node.attrs.get(name))
        f = self._clamp(dt, *bounds, self.reusable(x))
        return lambda v, lo=None, hi=None: f(v)

    def _op_HardSigmoid(self, node, opset):
        dt = self.dtype(node.inputs[0])
        if dt not in _FLOATS:
            return None
        alpha, beta = dt.type(node.attrs.get("alpha", 0.2)), dt.type(node.attrs.get("beta", 0.5))
        clamp = self._clamp(dt, 0.0, 1.0, True)

        def f(v):
            y = v * alpha
            y += beta
            return clamp(y)

        return lambda v: blocked(f, v)

    def _op_HardSwish(self, node, opset):
        dt = self.dtype(node.inputs[0])
        if dt not in _FLOATS:
            return None
        six, half, zero, one = dt.type(6), dt.type(0.5), dt.type(0), dt.type(1)

        def f(x, y):  # x * clamp(x / 6 + 0.5, 0, 1)
            np.divide(x, six, out=y)
            y += half
            np.maximum(y, zero, out=y)
            np.minimum(y, one, out=y)
            y *= x

        return lambda v: blocked_into(f, v) if type(v) is np.ndarray else v * np.minimum(
            np.maximum(v / six + half, zero), one)

    def _op_Pow(self, node, opset):
        x, y = node.inputs
        c = self.const(y)
        if self.dtype(x) not in _FLOATS or c is None:
            return None
        e = c.astype(self.dtype(x))
        return lambda v, _y=None: np.power(v, e)

    def _op_Softmax(self, node, opset):
        dt = self.dtype(node.inputs[0])
        if dt not in _FLOATS:
            return None
        softmax = self.backend.softmax
        if opset >= 13:
            axis = node.attrs.get("axis", -1)
            if not self.reusable(node.inputs[0]):
                return lambda v: softmax(v, axis % v.ndim)

            def in_place(v):  # the backend's passes, on v itself
                if type(v) is not np.ndarray:
                    return softmax(v, axis % v.ndim)
                a = axis % v.ndim
                np.subtract(v, v.max(axis=a, keepdims=True), out=v)
                np.exp(v, out=v)
                v /= v.sum(axis=a, keepdims=True)
                return v

            return in_place
        axis = node.attrs.get("axis", 1)

        def flat(v):  # opsets < 13: over the dims from axis on, flattened
            a = axis % v.ndim
            return softmax(v.reshape(math.prod(v.shape[:a]), -1), 1).reshape(v.shape)

        return flat

    def _op_Cast(self, node, opset):
        target = _CASTS.get(node.attrs.get("to"))
        dt = self.dtype(node.inputs[0])
        if target is None or dt is None or dt.kind not in target[1]:
            return None
        to = np.dtype(target[0])
        return lambda v: v if v.dtype == to else v.astype(to)

    def _op_Identity(self, node, opset):
        return lambda v: v

    # ------------------------------------------------------------------ linear algebra
    def _op_MatMul(self, node, opset):
        a, b = node.inputs
        if self.dtype(a) not in _FLOATS or self.dtype(a) != self.dtype(b):
            return None
        return _matmul

    def _op_Gemm(self, node, opset):
        a, b = node.inputs[:2]
        c = node.inputs[2] if len(node.inputs) > 2 else ""
        dt = self.dtype(a)
        if dt not in _FLOATS or dt != self.dtype(b) or (c and self.dtype(c) != dt):
            return None
        at = node.attrs
        ta, tb = at.get("transA", 0), at.get("transB", 0)
        alpha, beta = at.get("alpha", 1.0), at.get("beta", 1.0)
        cc = self.const(c)
        if cc is not None and beta != 1.0:
            cc = (cc * beta).astype(dt)

        def f(x, w, bias=None):
            y = np.matmul(x.T if ta else x, w.T if tb else w)
            if alpha != 1.0:
                y *= dt.type(alpha)
            if bias is not None:
                bias = cc if cc is not None else (bias * beta if beta != 1.0 else bias)
                try:
                    y += bias
                except ValueError:  # a bias with more dims than the product
                    y = y + bias
            return y

        return f

    # ------------------------------------------------------------------ convolution, pooling
    def _op_Conv(self, node, opset):
        x, w = node.inputs[:2]
        bname = node.inputs[2] if len(node.inputs) > 2 else ""
        dt = self.dtype(x)
        wc = self.const(w)
        if dt not in _FLOATS or wc is None or wc.dtype != dt or wc.ndim not in (3, 4):
            return None
        bias = self.const(bname)
        if bname and (bias is None or bias.dtype != dt):
            return None
        w0, b0 = wc, bias
        wc, bias, chain = self.chains.get(id(node), (wc, bias, ()))
        # constants stored at full activation size must not enlarge the conv's output
        spatial = [((1,) * (wc.ndim - c.ndim) + c.shape)[2:] for _, c in chain]
        sized = [shape for shape in spatial if any(d != 1 for d in shape)]
        at = node.attrs
        nd = wc.ndim - 2
        kernel = list(wc.shape[2:])
        strides = tuple(at.get("strides") or [1] * nd)
        dil = tuple(at.get("dilations") or [1] * nd)
        group, auto_pad, pads = at.get("group", 1), at.get("auto_pad", "NOTSET"), at.get("pads")
        conv = self.backend.conv
        cache: dict = {}

        def f(v, _w=None, _b=None):
            pairs = cache.get(v.shape[2:])
            if pairs is None:
                p = resolve_pads(auto_pad, pads, v.shape[2:], kernel, strides, dil)
                pairs = cache[v.shape[2:]] = tuple(zip(p[:nd], p[nd:]))
            y = conv(v, wc, bias, strides, pairs, dil, group)
            if sized and any(any(a not in (1, b) for a, b in zip(shape, y.shape[2:]))
                             for shape in sized):
                y = conv(v, w0, b0, strides, pairs, dil, group)  # the chain as written
                for op, c in chain:
                    y = _ARITH[op](y, c)
            return y

        return f

    def _op_MaxPool(self, node, opset):
        x = node.inputs[0]
        at = node.attrs
        kernel = at.get("kernel_shape")
        if (self.dtype(x) not in _FLOATS or len(node.outputs) != 1 or not kernel
                or len(kernel) != 2):
            return None
        max_pool = self.backend.max_pool
        cache: dict = {}

        def f(v):
            g = cache.get(v.shape)
            if g is None:
                strides, dil, begins, ends, _, extra = _pool_geometry(
                    v, kernel, at.get("strides"), at.get("pads"), at.get("dilations"),
                    at.get("ceil_mode", 0), at.get("auto_pad", "NOTSET"))
                pairs = [(b, e + x_) for b, e, x_ in zip(begins, ends, extra)]
                g = cache[v.shape] = (tuple(strides), tuple(dil), pairs)
            strides, dil, pairs = g
            return max_pool(_pad(v, pairs, -np.inf), tuple(kernel), strides, (0, 0), dil, False)

        return f

    def _op_AveragePool(self, node, opset):
        at = node.attrs
        kernel = at.get("kernel_shape")
        if self.dtype(node.inputs[0]) not in _FLOATS or not kernel or len(kernel) != 2:
            return None
        avg_pool, include = self.backend.avg_pool, bool(at.get("count_include_pad", 0))
        cache: dict = {}

        def f(v):
            g = cache.get(v.shape)
            if g is None:
                strides, dil, begins, ends, _, extra = _pool_geometry(
                    v, kernel, at.get("strides"), at.get("pads"), at.get("dilations"),
                    at.get("ceil_mode", 0), at.get("auto_pad", "NOTSET"))
                g = cache[v.shape] = (tuple(strides), tuple(begins)) if (
                    begins == ends and not any(extra) and list(dil) == [1, 1]
                    and all(b <= k // 2 for b, k in zip(begins, kernel))) else False
            if g is False:  # the generic path's windowed sum and counts
                raise _Unplanned
            return avg_pool(v, tuple(kernel), g[0], g[1], False, include)

        return self._or_generic(f, node)

    def _op_BatchNormalization(self, node, opset):
        x = node.inputs[0]
        dt = self.dtype(x)
        params = [self.const(i) for i in node.inputs[1:5]]
        if (dt not in _FLOATS or node.attrs.get("training_mode") or len(node.outputs) != 1
                or any(p is None or p.dtype != dt for p in params)):
            return None
        scale, b, mean, var = params
        eps = node.attrs.get("epsilon", 1e-5)
        inv = scale / np.sqrt(var + dt.type(eps))
        shift = b - mean * inv
        reuse = self.reusable(x)

        def f(v, *_params):
            shape = (-1,) + (1,) * (v.ndim - 2)
            y = np.multiply(v, inv.reshape(shape), out=v if reuse else None)
            y += shift.reshape(shape)
            return y

        return f

    def _op_Sum(self, node, opset):
        dts = {self.dtype(i) for i in node.inputs}
        if len(dts) != 1 or next(iter(dts)) not in _FLOATS:
            return None
        first = self.reusable(node.inputs[0]) and node.inputs.count(node.inputs[0]) == 1

        def f(*xs):
            if len(xs) == 1:
                return np.copy(xs[0])  # Sum is in _FRESH: never the input itself
            acc = np.add(xs[0], xs[1], out=xs[0] if first and type(xs[0]) is np.ndarray
                         and xs[0].shape == np.broadcast_shapes(xs[0].shape, xs[1].shape)
                         else None)
            for v in xs[2:]:
                acc = np.add(acc, v, out=acc if acc.shape == np.broadcast_shapes(
                    acc.shape, v.shape) else None)
            return acc

        return f

    def _op_Dropout(self, node, opset):
        if len(node.outputs) != 1 or node.attrs.get("training_mode"):
            return None
        if len(node.inputs) > 2 and node.inputs[2]:
            return None  # training_mode as an input: the generic path reads it
        return lambda v, *_rest: v

    def _op_GlobalAveragePool(self, node, opset):
        if self.dtype(node.inputs[0]) not in _FLOATS:
            return None

        def f(v):
            return np.mean(v, axis=tuple(range(2, v.ndim)), keepdims=True).astype(
                v.dtype, copy=False)

        return f

    def _op_LayerNormalization(self, node, opset):
        x, scale = node.inputs[:2]
        dt = self.dtype(x)
        if dt not in _FLOATS or len(node.outputs) != 1 or self.dtype(scale) != dt:
            return None
        axis, eps = node.attrs.get("axis", -1), dt.type(node.attrs.get("epsilon", 1e-5))
        layer_norm = self.backend.layer_norm
        reuse = self.reusable(x)

        def f(v, s, b=None):
            a = axis % v.ndim
            if s.shape != v.shape[a:] or (b is not None and b.shape != v.shape[a:]):
                raise _Unplanned
            if a != v.ndim - 1 or type(v) is not np.ndarray:
                return layer_norm(v, v.ndim - a, s, b, eps)
            # over the last dim: the variance as one dot per row (no squared temporary), the
            # centred values scaled in place
            d = np.subtract(v, v.mean(axis=-1, keepdims=True), out=v if reuse else None)
            var = np.einsum("...i,...i->...", d, d)[..., None]
            var /= dt.type(v.shape[-1])
            var += eps
            np.sqrt(var, out=var)
            d /= var
            d *= s
            if b is not None:
                d += b
            return d

        return self._or_generic(f, node)

    # ------------------------------------------------------------------ layout
    def _op_Reshape(self, node, opset):
        allowzero = node.attrs.get("allowzero", 0)
        if len(node.inputs) < 2 or not node.inputs[1]:
            return None

        def f(v, s):
            t = s.tolist()
            if not allowzero and 0 in t:
                t = [v.shape[i] if d == 0 else d for i, d in enumerate(t)]
            return v.reshape(t)

        return f

    def _op_Flatten(self, node, opset):
        axis = node.attrs.get("axis", 1)

        def f(v):
            a = axis % v.ndim if v.ndim else 0
            return v.reshape(math.prod(v.shape[:a]), math.prod(v.shape[a:]))

        return f

    def _axes_of(self, node):
        if len(node.inputs) > 1 and node.inputs[1]:
            c = self.const(node.inputs[1])
            return None if c is None else [int(a) for a in c.reshape(-1)]
        return node.attrs.get("axes")

    def _op_Unsqueeze(self, node, opset):
        axes = self._axes_of(node)
        if axes is None:
            return None

        def f(v, _a=None):
            nd = v.ndim + len(axes)
            new = {a % nd for a in axes}
            it = iter(v.shape)
            return v.reshape([1 if i in new else next(it) for i in range(nd)])

        return f

    def _op_Squeeze(self, node, opset):
        if len(node.inputs) > 1 and node.inputs[1] and self.const(node.inputs[1]) is None:
            return None
        axes = self._axes_of(node)

        def f(v, _a=None):
            if axes is None:
                return v.reshape([s for s in v.shape if s != 1])
            drop = {a % v.ndim for a in axes}
            return v.reshape([s for i, s in enumerate(v.shape) if i not in drop])

        return f

    def _op_Transpose(self, node, opset):
        perm = node.attrs.get("perm")
        return lambda v: np.transpose(v, perm)

    def _op_Concat(self, node, opset):
        dts = {self.dtype(i) for i in node.inputs if i}
        if len(dts) != 1:
            return None
        axis = node.attrs.get("axis", 0)
        return lambda *xs: np.concatenate([x for x in xs if x is not None], axis=axis)

    def _op_Shape(self, node, opset):
        start, end = node.attrs.get("start", 0), node.attrs.get("end")
        return lambda v: np.array(v.shape[start:end], dtype=np.int64)

    def _op_Gather(self, node, opset):
        idx = self.const(node.inputs[1])
        axis = node.attrs.get("axis", 0)
        if idx is None:  # indices computed at run time (token ids into an embedding)
            if self.dtype(node.inputs[1]) is None or self.dtype(node.inputs[1]).kind not in "iu":
                return None
            return lambda v, i: np.take(v, i, axis=axis % v.ndim)
        if idx.dtype.kind not in "iu":
            return None
        if idx.ndim == 0:
            i = int(idx)

            def one(v, _i=None):
                a = axis % v.ndim
                return v[(slice(None),) * a + (i + v.shape[a] if i < 0 else i,)]

            return one
        return lambda v, _i=None: np.take(v, idx, axis=axis % v.ndim)

    def _op_Slice(self, node, opset):
        if opset < 10:
            return None
        vals = [self.const(i) for i in node.inputs[1:]]
        if any(v is None for v, i in zip(vals, node.inputs[1:]) if i):
            return None
        starts, ends = (v.reshape(-1).tolist() for v in vals[:2])
        axes = vals[2].reshape(-1).tolist() if len(vals) > 2 and vals[2] is not None else None
        steps = vals[3].reshape(-1).tolist() if len(vals) > 3 and vals[3] is not None else None
        axes = axes if axes is not None else list(range(len(starts)))
        steps = steps if steps is not None else [1] * len(starts)
        big = 1 << 62
        parts = [(a, max(min(s, big), -big), max(min(e, big), -big), st)
                 for a, s, e, st in zip(axes, starts, ends, steps)]
        if any(st < 0 for *_, st in parts):  # the generic path copies these; rare
            return None

        def f(v, *_consts):
            key = [slice(None)] * v.ndim
            for a, s, e, st in parts:
                key[a % v.ndim] = slice(s, e, st)
            return v[tuple(key)]

        return f


def _stack(steps: list):
    if not steps:
        return np.zeros(0, dtype=np.float32)
    if isinstance(steps[0], list):
        return steps
    return np.stack(steps)
