"""Running an ONNX graph with ember tensors: :class:`OnnxModule`.

The graph's constants are module buffers, so ``module.to("python")`` moves the whole model.
Nodes run in file order (ONNX graphs are topologically sorted); each calls one short function
from the op registry with its inputs and attributes. Nodes whose inputs are all constants are
folded once at load time, which also resolves most shape arithmetic (Shape -> Gather -> Concat
-> Reshape chains) before the first call; a node whose outputs could pass
``ember.limits.current().max_folded_elements`` is left to run at call time (see ``_fold``).

On a backend that compiles a traced program (``ember.jit.compiles``: numpy, wasm, wgpu) the
graph runs through :func:`ember.jit` (``_segments``): traced per input signature (the
constants and the shape arithmetic read as static values) and replayed by the backend's
``compile_tape``. A node whose trace would need a value read from data (NonZero, a shape
computed from values) runs eagerly between compiled segments, saying why in
``module.jit_fallback``. The path above stays the reference (``module.fast = False`` runs it,
and so does a backend that records gradients); the tests hold them to the same outputs.
"""

from __future__ import annotations

import keyword
import re
from typing import Any

from .. import limits
from ..errors import BackendMismatchError, DTypeError, UnsupportedOpError, malformed_file
from ..jit import compiles, freeze, tracing
from ..nn.module import Module
from ..tensor import Tensor
from ._checks import check_wiring
from ._fold import output_bound
from ._intwrap import narrow_types, wrap_outputs
from ._lowbit import retype_narrow, round_to
from ._optimize import fuse_conv_bn, fuse_gelu
from ._graph import (
    Function,
    Graph,
    Model,
    Node,
    OnnxLoadError,
    OnnxUnsupportedError,
    _AttrRef,
    walk,
)
from ._proto import Reader, read_model
from ._segments import GraphSegments, SegmentCache
from ._types import BFLOAT16, constant_onto, constant_to_tensor, numpy_to_tensor
from .ops import NOT_FOLDABLE, REGISTRY, invoke

_DOMAINS = ("", "ai.onnx")
# the graph attributes each control-flow op runs
_BODIES = {"If": ("then_branch", "else_branch"), "Loop": ("body",), "Scan": ("body",)}


class Ctx:
    """What an op function may need besides its inputs: the backend, the opset, subgraphs."""

    def __init__(self, module: OnnxModule, opset: int):
        self.module = module
        self.opset = opset
        self.backend = module.backend
        self.env: Any = None

    def run(self, graph: Graph, inputs: list, outer=None) -> list:
        """Run a subgraph (If/Loop/Scan body) with ``inputs``, seeing the enclosing scope."""
        return self.module._run(graph, inputs, outer if outer is not None else self.env)


class OnnxModule(Module):
    """An ONNX model as an ember module: call it with tensors (or numpy arrays) in graph-input
    order, or by name; returns one tensor, or a tuple for several outputs.

    >>> import os, tempfile, ember, ember.onnx
    >>> from ember import nn
    >>> path = os.path.join(tempfile.mkdtemp(), "linear.onnx")
    >>> model = nn.Linear(2, 1)
    >>> _ = ember.onnx.export(model, ember.ones(1, 2), path)
    >>> m = ember.onnx.load(path, backend="python")
    >>> x = ember.ones(1, 2, backend="python")
    >>> m.input_names, m.output_names, m(x).tolist() == model(ember.ones(1, 2)).tolist()
    (['input'], ['output'], True)
    >>> out = m.run({"input": x})
    >>> list(out), out["output"].tolist() == m(x).tolist(), len(m.graph.nodes) > 0
    (['output'], True, True)
    >>> m.load_state_dict(m.state_dict())  # the constants (initialisers) are its state
    ([], [])
    """

    def __init__(self, model: Model, backend=None, fold: bool = True):
        super().__init__()
        from ..backends import default_backend, get_backend

        object.__setattr__(self, "_model", model)
        object.__setattr__(self, "backend", get_backend(backend) if backend else default_backend())
        object.__setattr__(self, "_consts", {})  # id(graph) -> {onnx name: attribute}
        object.__setattr__(self, "_functions", {})
        object.__setattr__(self, "_plans", {})  # id(graph) -> _Plan, built on first run
        object.__setattr__(self, "_bodies", {})  # id(node) -> its function body, resolved
        # backends that compile a traced program: each graph's segments, built on first run
        # (a copy of the module, whose segments would read the original's constants, builds
        # its own)
        object.__setattr__(self, "_segments", SegmentCache())
        #: run through the backend's tape compiler where it has one (False: always the
        #: generic path, the reference it is tested against)
        self.fast = True
        g = model.graph
        check_wiring([*g.inputs, *g.initializers], g.nodes, g.outputs, f"graph '{g.name}'")
        for (domain, name), f in model.functions.items():
            check_wiring(f.inputs, f.nodes, f.outputs, f"function '{domain}.{name}'")
        self._check_supported(model)
        self._check_expansion(model)
        for g in [model.graph, *_subgraphs(model.graph)]:
            g.nodes = [n for n in g.nodes if any(n.outputs)]  # ops are pure: no output, no use
            retype_narrow(g)
            for name, array in g.initializers.items():
                self._add_const(g, name, constant_to_tensor(array, self.backend,
                                                            f"initializer {name}"))
        # node -> the int16/uint16/uint32 types its outputs are wrapped to (see _intwrap)
        object.__setattr__(self, "_narrow", narrow_types(model.graph))
        if fold:
            self._fold(model.graph)
            fuse_conv_bn(self, model.graph)
            fuse_gelu(self, model.graph)

    # ----------------------------------------------------------------- set-up
    @property
    def graph(self) -> Graph:
        """The parsed (and constant-folded) graph: nodes, inputs, outputs, initialisers."""
        return self._model.graph

    @property
    def input_names(self) -> list[str]:
        """The graph inputs' names, in call order."""
        return list(self.graph.inputs)

    @property
    def output_names(self) -> list[str]:
        """The graph outputs' names, in the order ``forward`` returns them."""
        return list(self.graph.outputs)

    def _add_const(self, graph: Graph, name: str, value: Tensor) -> None:
        # an ASCII identifier: ``ember onnx convert`` writes it as ``self.<attr>``
        attr = re.sub(r"[^0-9A-Za-z_]", "_", name)[:60] or "const"
        if not attr[0].isalpha() or keyword.iskeyword(attr):
            attr = "c_" + attr
        base, i = attr, 1
        while attr in self.__dict__ or hasattr(type(self), attr):
            attr, i = f"{base}_{i}", i + 1
        # ONNX constants never change in place: a trace may read them (shapes, axes)
        self.register_buffer(attr, freeze(value))
        self._consts.setdefault(id(graph), {})[name] = attr

    def _check_supported(self, model: Model) -> None:
        missing: dict[str, int] = {}
        for n in model.graph.walk():
            for name in _BODIES.get(n.op_type, ()) if n.domain in _DOMAINS else ():
                if not isinstance(n.attrs.get(name), Graph):
                    raise OnnxLoadError(f"onnx.load: node '{n.name}' ({n.op_type}) needs a graph "
                                        f"as its '{name}' attribute; the file holds "
                                        f"{type(n.attrs.get(name)).__name__}")
            if self._resolve(n) is None:
                key = n.op_type if n.domain in _DOMAINS else f"{n.domain}.{n.op_type}"
                missing[key] = missing.get(key, 0) + 1
        if missing:
            listed = ", ".join(f"{k} (x{v})" for k, v in sorted(missing.items()))
            raise OnnxUnsupportedError(
                f"onnx.load: the model uses {len(missing)} operator(s) ember does not support: "
                f"{listed}. Supported: {len(REGISTRY)} operators (ember.onnx.supported_ops())"
            )

    def _check_expansion(self, model: Model) -> None:
        """The nodes one run executes once function calls are expanded (each loop body
        counted once) against ``max_expanded_nodes``: a few KB of functions that call each
        other twice per level would run for hours. (Calls are acyclic and bounded in depth:
        ``check_calls``.)"""
        sizes: dict[tuple[str, str], int] = {}

        def size(nodes: list[Node]) -> int:
            total = 0
            for n in walk(nodes):
                body = self._resolve(n)
                if isinstance(body, Function):
                    key = (n.domain, n.op_type)
                    if key not in sizes:
                        sizes[key] = size(body.nodes)
                    total += sizes[key]
                else:
                    total += 1
                limits.check(OnnxLoadError, "onnx.load: nodes a run executes, functions "
                             "expanded", total, "max_expanded_nodes")
            return total

        size(model.graph.nodes)

    def _resolve(self, node: Node):
        """The op function, a model-local function body, or the ONNX schema's function body."""
        key = (node.domain, node.op_type)
        if key in self._functions:
            return self._functions[key]
        if node.domain in _DOMAINS and node.op_type in REGISTRY:
            return REGISTRY[node.op_type]
        if f"{node.domain}.{node.op_type}" in REGISTRY:  # ops of other domains, qualified
            return REGISTRY[f"{node.domain}.{node.op_type}"]
        body = self._model.functions.get(key) or _schema_function(
            node, self._model.opsets.get(node.domain, self._model.opset))
        if body is not None:
            self._functions[key] = body
            for n in body.nodes:
                if self._resolve(n) is None:
                    return None
        return body

    def _fold(self, graph: Graph, outer: dict | None = None) -> None:
        """Fold nodes whose inputs are all constants, here and in the subgraphs (a Constant
        in a Loop body would otherwise be rebuilt every iteration); ``outer``: the constants
        an enclosing graph lets this one see."""
        consts = self._consts.setdefault(id(graph), {})
        env = {k: v for k, v in (outer or {}).items() if k not in graph.inputs}
        env.update({k: getattr(self, v) for k, v in consts.items()})
        kept = []
        ctx = Ctx(self, self._model.opset)
        most = limits.current().max_folded_elements
        for node in graph.nodes:
            foldable = (
                node.op_type not in NOT_FOLDABLE
                and node.domain in _DOMAINS
                and all(i == "" or i in env for i in node.inputs)
                and not node.subgraphs()
            )
            args = [env[i] if i else None for i in node.inputs] if foldable else []
            bound = output_bound(node.op_type, args) if foldable else None
            if bound is not None and bound <= most:
                try:
                    outs = self._call(ctx, node, args, env)
                except Exception:  # noqa: BLE001 - leave it for run time, which reports it
                    outs = None
                if outs is not None and all(isinstance(o, Tensor) or o is None for o in outs):
                    for name, value in zip(node.outputs, outs):
                        if name and value is not None:
                            env[name] = value
                            self._add_const(graph, name, value)
                    continue
            kept.append(node)
        graph.nodes = kept
        self._plans.clear()
        self._drop_plans()
        for node in kept:
            for sub in node.subgraphs():
                self._fold(sub, env)

    def to(self, backend=None, dtype=None) -> OnnxModule:
        from ..backends import available, get_backend
        from ..contract import Backend

        super().to(backend, dtype)
        self._drop_plans()
        if isinstance(backend, Backend) or (isinstance(backend, str) and backend in available()):
            object.__setattr__(self, "backend", get_backend(backend))
        return self

    def _buffer_onto(self, value: Tensor, backend) -> Tensor:
        # a constant moves as load() placed it: frozen (a trace reads shapes and axes from
        # it), and an integer the backend can't store stays on the host
        return freeze(constant_onto(value, backend))

    def load_state_dict(self, state, strict: bool = True):
        """:meth:`ember.nn.Module.load_state_dict` (the constants), dropping cached plans."""
        self._drop_plans()
        return super().load_state_dict(state, strict)

    def _drop_plans(self) -> None:
        """Forget the compiled segments (they hold the constants)."""
        object.__setattr__(self, "_segments", SegmentCache())

    # ----------------------------------------------------------------- running
    def _as_tensor(self, x, name: str):
        if x is None:
            return x
        if isinstance(x, list):
            return [self._as_tensor(v, name) for v in x]
        if isinstance(x, Tensor):
            return x if x.backend is self.backend else x.to(self.backend)
        return numpy_to_tensor(x, self.backend, f"input '{name}'")

    def forward(self, *args, **kwargs):
        names = self.graph.inputs
        if len(args) > len(names):
            raise TypeError(f"OnnxModule: {len(args)} inputs given, the graph takes {len(names)}: "
                            f"{names}")
        feeds = dict(zip(names, args))
        feeds.update(kwargs)
        out = self.run(feeds)
        values = tuple(out[n] for n in self.graph.outputs)
        return values[0] if len(values) == 1 else values

    def run(self, feeds: dict) -> dict:
        """Run with ``{input name: value}``; returns ``{output name: value}``."""
        missing = [n for n in self.graph.inputs if n not in feeds]
        unknown = [n for n in feeds if n not in self.graph.inputs]
        if unknown:
            raise TypeError(f"OnnxModule: unknown inputs {unknown}; the graph takes "
                            f"{self.graph.inputs}")
        if missing:
            raise TypeError(f"OnnxModule: missing inputs {missing}")
        inputs = [self._as_tensor(feeds[n], n) for n in self.graph.inputs]
        outs = self._run(self.graph, inputs, None)
        # a bfloat16 output runs widened to float32: its values are put back on bfloat16's grid
        info = self.graph.output_info
        outs = [round_to(v, BFLOAT16) if isinstance(v, Tensor) and info.get(n, (None,))[0]
                == BFLOAT16 else v for n, v in zip(self.graph.outputs, outs)]
        return dict(zip(self.graph.outputs, outs))

    def jit_stats(self) -> dict | None:
        """:meth:`ember.jit`'s stats summed over the compiled segments of the graph and its
        bodies (traces, replays, steps per traced signature), with the number of segments
        and of host nodes (see ``jit_fallback``); None before the first call, or where the
        graph runs eagerly (no tape compiler, ``fast = False``).

        >>> import ember.onnx, onnx
        >>> from onnx import helper, TensorProto
        >>> graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
        ...     [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        ...     [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
        >>> m = ember.onnx.load(helper.make_model(graph).SerializeToString(), backend="numpy")
        >>> [m(ember.tensor([-1.0, 2.0])).tolist() for _ in range(3)][-1]
        [0.0, 2.0]
        >>> s = m.jit_stats()
        >>> s["traces"], s["replays"], s["segments"], s["host_nodes"], m.jit_fallback
        (1, 2, 1, 0, None)
        """
        drivers = self._segments.values() if self._segments.owner == id(self) else ()
        if not drivers:
            return None
        segments = [seg for d in drivers for seg in d.segments() if seg.fn.entries]
        stats = [seg.fn.stats() for seg in segments]
        return {"traces": sum(s["traces"] for s in stats),
                "replays": sum(s["replays"] for s in stats),
                "steps": [step for s in stats for step in s["steps"]],
                "segments": len(segments),
                "host_nodes": sum(len(d.host_reasons) for d in drivers)}

    @property
    def jit_fallback(self) -> str | None:
        """Why nodes run eagerly between the compiled segments (each ``node 'name' (Op):
        reason``, joined by newlines), else None. Here NonZero reads its 20 inputs' values,
        too many to be a guard (``ember.onnx._segments``).

        >>> import ember.onnx, onnx
        >>> from onnx import helper, TensorProto
        >>> graph = helper.make_graph([helper.make_node("NonZero", ["x"], ["i"], name="nz"),
        ...     helper.make_node("Neg", ["i"], ["y"])], "g",
        ...     [helper.make_tensor_value_info("x", TensorProto.FLOAT, [20])],
        ...     [helper.make_tensor_value_info("y", TensorProto.INT64, None)])
        >>> m = ember.onnx.load(helper.make_model(graph).SerializeToString(), backend="numpy")
        >>> m(ember.tensor([0.0] * 18 + [2.0, 3.0])).tolist()
        [[-18, -19]]
        >>> m.jit_fallback.split(":")[0], m.jit_stats()["host_nodes"]
        ("node 'nz' (NonZero)", 1)
        """
        drivers = self._segments.values() if self._segments.owner == id(self) else ()
        reasons = [r for d in drivers for r in d.host_reasons]
        return "\n".join(reasons) if reasons else None

    def _context(self) -> Ctx:
        """A :class:`Ctx` for running this module's nodes."""
        return Ctx(self, self._model.opset)

    def _run(self, graph: Graph, inputs: list, outer) -> list:
        if self.fast and not tracing() and compiles(self.backend) and not _records_gradients(
                self.backend):
            return self._segmented(graph).run(inputs, outer)
        plan = self._plans.get(id(graph)) or self._plan(graph)
        env = {k: getattr(self, v) for k, v in plan.consts}
        if outer is not None:  # only the outer values the graph reads: a plain dict
            for name in plan.free:
                if name in outer:
                    env[name] = outer[name]
        env.update(zip(graph.inputs, inputs))
        ctx = self._context()
        ctx.env = env
        for node, fn, opset in plan.steps:
            self._step(ctx, node, fn, opset, env)
        return [env[n] if n else None for n in graph.outputs]

    def _step(self, ctx: Ctx, node: Node, fn, opset: int, env: dict) -> None:
        """Run one node of a plan: its inputs from ``env``, its outputs into it."""
        args = _node_args(node, env)
        if isinstance(fn, Function):
            outs = self._run_function(fn, node, args, env)
        else:
            ctx.opset, ctx.n_outputs, ctx.op_type = opset, len(node.outputs), node.op_type
            outs = self._invoke(ctx, fn, node, args)
        if id(node) in self._narrow:
            outs = wrap_outputs(self._narrow[id(node)], outs)
        for name, value in zip(node.outputs, outs):
            if name:
                env[name] = value

    def _segmented(self, graph: Graph) -> GraphSegments:
        """``graph`` as compiled segments and host nodes, built on first use."""
        drivers = self._segments
        if drivers.owner != id(self):
            drivers = SegmentCache(id(self))
            object.__setattr__(self, "_segments", drivers)
        driver = drivers.get(id(graph))
        if driver is None:
            for g, consts in _visible_consts(self, self.graph, {}):
                if id(g) not in drivers:
                    plan = self._plans.get(id(g)) or self._plan(g)
                    drivers[id(g)] = GraphSegments(self, g, plan.steps, consts)
            driver = drivers.get(id(graph))
        if driver is None:  # a body inside a function: it sees the function's values only
            plan = self._plans.get(id(graph)) or self._plan(graph)
            driver = GraphSegments(self, graph, plan.steps,
                                   dict(self._consts.get(id(graph), {})))
            drivers[id(graph)] = driver
        return driver

    def _plan(self, graph: Graph) -> _Plan:
        """Each node's resolved function and opset, the graph's constants and the outer
        names it reads, worked out once (per-node dispatch dominates small tensors)."""
        steps = [(n, self._resolve(n), self._model.opsets.get(n.domain, self._model.opset))
                 for n in graph.nodes]
        consts = list(self._consts.get(id(graph), {}).items())
        plan = _Plan(steps, consts, _free_names(graph))
        self._plans[id(graph)] = plan
        return plan

    @staticmethod
    def _invoke(ctx: Ctx, fn, node: Node, args: list) -> list:
        try:
            out = invoke(fn, ctx, node.op_type, args, node.attrs)
        except BackendMismatchError as e:
            host = [n for n, a in zip(node.inputs, args)
                    if isinstance(a, Tensor) and a.backend is not ctx.backend]
            if not host:
                raise
            raise DTypeError(  # a constant the backend can't store (see constant_to_tensor)
                f"onnx node '{node.name}' ({node.op_type}) computes with constant "
                f"'{host[0]}', whose integers the {ctx.backend.name} backend cannot store; "
                "such constants serve only as shape and index values there (run the model "
                "on the numpy backend)") from e
        except Exception as e:
            e.add_note(f"in onnx node '{node.name}' ({node.op_type})")
            raise
        return list(out) if isinstance(out, tuple) else [out]

    def _exec(self, ctx: Ctx, node: Node, env) -> None:
        args = _node_args(node, env)
        ctx.env = env
        outs = self._call(ctx, node, args, env)
        for name, value in zip(node.outputs, outs):
            if name:
                env[name] = value

    def _call(self, ctx: Ctx, node: Node, args: list, env) -> list:
        fn = self._resolve(node)
        if isinstance(fn, Function):
            return self._run_function(fn, node, args, env)
        ctx.opset = self._model.opsets.get(node.domain, self._model.opset)
        ctx.n_outputs = len(node.outputs)
        ctx.op_type = node.op_type
        outs = self._invoke(ctx, fn, node, args)
        types = self._narrow.get(id(node))
        return wrap_outputs(types, outs) if types else outs

    def _run_function(self, body: Function, node: Node, args: list, env) -> list:
        nodes = self._bodies.get(id(node))
        if nodes is None:  # the body with this call's attributes, resolved once
            attrs = {**body.defaults, **node.attrs}
            nodes = []
            for n in body.nodes:
                resolved = {k: (attrs[v.name] if isinstance(v, _AttrRef) else v)
                            for k, v in n.attrs.items()
                            if not isinstance(v, _AttrRef) or v.name in attrs}
                nodes.append(Node(n.op_type, n.inputs, n.outputs, resolved, n.domain, n.name))
            self._bodies[id(node)] = nodes
        local = dict(zip(body.inputs, args))
        local[""] = None
        ctx = Ctx(self, self._model.opset)
        for n in nodes:
            self._exec(ctx, n, local)
        return [local.get(o) for o in body.outputs]


class _Plan:
    __slots__ = ("steps", "consts", "free")

    def __init__(self, steps, consts, free):
        self.steps, self.consts, self.free = steps, consts, free


def _free_names(graph: Graph) -> list[str]:
    """The names ``graph`` (and its subgraphs) read but do not define: outer-scope values."""
    defined = set(graph.inputs) | set(graph.initializers)
    free: list[str] = []
    for n in graph.nodes:
        reads = list(n.inputs) + [f for g in n.subgraphs() for f in _free_names(g)]
        free += [i for i in reads if i and i not in defined and i not in free]
        defined.update(n.outputs)
    free += [o for o in graph.outputs if o and o not in defined and o not in free]
    return free


def _records_gradients(backend) -> bool:
    """Whether a backend of the chain records gradients (a replay would record none)."""
    while backend is not None:
        if backend.caps.gradients:
            return True
        backend = backend.inner
    return False


def _visible_consts(module: OnnxModule, graph: Graph, inherited: dict):
    """``(graph, {onnx name: module attribute})`` for ``graph`` and every body inside it:
    the constants each may read, its own and those of the graphs enclosing it that its own
    names do not shadow."""
    consts = {**inherited, **module._consts.get(id(graph), {})}
    yield graph, consts
    for node in graph.nodes:
        for sub in node.subgraphs():
            shadowed = set(sub.inputs)
            yield from _visible_consts(module, sub, {k: v for k, v in consts.items()
                                                     if k not in shadowed})


def _subgraphs(graph: Graph) -> list[Graph]:
    return [g for n in graph.walk() for g in n.subgraphs()]


def _schema_function(node: Node, opset: int) -> Function | None:
    """ONNX defines many newer ops as functions of older ones; run that body when the op has
    no ember function."""
    try:
        import onnx.defs
    except ImportError:
        return None
    try:
        schema = onnx.defs.get_schema(node.op_type, opset, node.domain)
    except Exception:  # noqa: BLE001 - unknown op or domain
        return None
    if not schema.has_function:
        return None
    from onnx import FunctionProto

    raw = schema.get_function_with_opset_version(opset) if hasattr(
        schema, "get_function_with_opset_version") else None
    fn = FunctionProto()
    if isinstance(raw, (bytes, bytearray)):
        fn.ParseFromString(raw)
    elif raw is not None:
        fn = raw
    else:
        fn.ParseFromString(schema.function_body.SerializeToString())
    reader = Reader()
    body = reader.function(fn)
    body.defaults.update({k: reader.attr(a.default_value, f"{node.op_type} attribute '{k}'")
                          for k, a in schema.attributes.items() if a.default_value.name})
    return body


def load(source, backend=None, fold: bool = True) -> OnnxModule:
    """An ONNX model (path, bytes or ``onnx.ModelProto``) as a runnable ember module.

    A file that cannot be read, or passes an ``ember.limits`` bound, raises
    :class:`ember.onnx.OnnxLoadError`, and so does nothing else that goes wrong while reading
    and checking the model. Every unsupported operator is listed at once in one
    (an ``OnnxUnsupportedError``, which is also an :class:`ember.UnsupportedOpError`).

    >>> import os, tempfile, ember, ember.onnx
    >>> from ember import nn
    >>> path = os.path.join(tempfile.mkdtemp(), "relu.onnx")
    >>> _ = ember.onnx.export(nn.ReLU(), ember.zeros(1, 3), path)
    >>> m = ember.onnx.load(path, backend="numpy")
    >>> type(m).__name__, m(ember.tensor([[-1.0, 0.5, 2.0]])).tolist()
    ('OnnxModule', [[0.0, 0.5, 2.0]])
    >>> ember.onnx.load(os.path.join(tempfile.mkdtemp(), "missing.onnx"))
    Traceback (most recent call last):
    ...
    ember.onnx._graph.OnnxLoadError: ...
    """
    from ..backends import get_backend

    backend = get_backend(backend) if backend else None  # a bad argument is not a bad file
    model = read_model(source)
    with malformed_file(OnnxLoadError, "onnx.load: the model cannot be set up"):
        try:
            return OnnxModule(model, backend=backend, fold=fold)
        except OnnxLoadError:  # OnnxUnsupportedError is one, already worded
            raise
        except UnsupportedOpError as e:
            raise OnnxUnsupportedError(f"onnx.load: {e}") from e


def _node_args(node: Node, env: dict) -> list:
    """``node``'s inputs from ``env`` (None for an omitted optional one)."""
    try:
        return [env[i] if i else None for i in node.inputs]
    except KeyError as e:
        raise UnsupportedOpError(
            f"onnx node '{node.name}' ({node.op_type}): input {e} is not produced by any "
            "earlier node") from None
