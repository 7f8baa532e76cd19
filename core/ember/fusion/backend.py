"""``Fusion(inner)``: a backend that records elementwise ops lazily and runs each chain as one
fused program on the inner backend (Burn's ``Fusion<B>``).

A Fusion primitive (:class:`FusionPrim`) knows its shape and dtype (from the op's registry
``infer`` rule) and is either *materialised* (it holds an inner primitive) or *pending* (an
elementwise node: op, input handles, params). Elementwise ops the inner backend's compiler
can fuse (see :mod:`ember.fusion.program`) and scalar ``full`` constants are recorded;
everything else materialises its inputs and runs on the inner backend. A pending handle is
materialised when it is read (``to_data``), when a non-fusable op or a movement op needs it,
or when recording one more node would pass the compiler's limits; it then keeps its result.

Where the compiler can, a reduction of a pending handle runs with its graph as one program
(the handle stays pending), and a matmul is recorded as a pending contraction node whose
elementwise users the compiler applies in the matmul's store (an epilogue).
"""

from __future__ import annotations

import dataclasses
import itertools
import operator
import sys

from ..contract import Backend, registry
from ..contract.registry import Kind, Spec
from ..errors import EmberError
from ..shape import numel
from .program import CONTRACTIONS, Program, _name

E = Kind.ELEMENTWISE
_FULL = "full"
_NONE: frozenset = frozenset()
_COUNTER = itertools.count()
_SERIAL = operator.attrgetter("serial")
_DTYPE = operator.attrgetter("dtype")
_BROADCAST_NODES = 8  # a pending graph up to this size is broadcast, not materialised first


class FusionPrim:
    """A Fusion primitive: shape, dtype, element count, and the inner primitive (``value``)
    or the pending ``node`` ``(op, inputs, params)``. ``nodes`` (an upper bound: a shared
    subgraph counts once per use) and ``leaves`` bound the pending graph's size; ``heavy``
    counts the pending contractions in it (a bound too).

    >>> import ember
    >>> x = ember.tensor([0.5, 1.5], backend="fusion-numpy")
    >>> x._prim, x._prim.pending
    (FusionPrim(shape=(2,), dtype=float32, materialised), False)
    """

    __slots__ = ("__weakref__", "dtype", "heavy", "inlined", "leaves", "node", "nodes", "serial",
                 "shape", "size", "value")

    def __init__(self, shape: tuple, dtype, size: int, value=None, node=None, nodes=0,
                 leaves=_NONE, heavy=0):
        self.shape, self.dtype, self.size = shape, dtype, size
        self.value, self.node = value, node
        self.nodes, self.leaves = nodes, leaves
        self.heavy = heavy  # pending contractions (matmuls) in the graph: an upper bound
        self.serial = next(_COUNTER)  # creation order: the topological order of a graph
        self.inlined = False  # computed inside another handle's program, not kept

    @property
    def pending(self) -> bool:
        """Whether the value is still a recorded node (not yet computed on the inner backend)."""
        return self.node is not None

    def __repr__(self) -> str:
        state = f"pending {self.node[0]}" if self.node is not None else "materialised"
        return f"FusionPrim(shape={self.shape}, dtype={self.dtype.name}, {state})"


class Fusion(Backend):
    """Lazy elementwise fusion over a backend that can compile fused programs (numpy, wgpu).

    Over a backend without a ``fusion_compiler()`` (python, or another decorator) every op
    simply runs on the inner backend.

    >>> import ember
    >>> b = ember.Fusion(ember.get_backend("numpy"))
    >>> x = ember.ones((500, 300), backend=b)
    >>> y = ((x * 2 + 1) * 3 - 1).abs()      # recorded, not run yet
    >>> y._prim.pending
    True
    >>> y[0, :3].tolist()                    # a read: the chain runs as one program
    [8.0, 8.0, 8.0]
    >>> b.programs
    1
    """

    def __init__(self, inner: Backend | str):
        from ..backends import get_backend

        self.inner = get_backend(inner)
        if self.inner.caps.gradients:
            raise EmberError(
                f"Fusion({self.inner.name}): put Autodiff outside Fusion, "
                f"Autodiff(Fusion({self.inner.inner.name})), so gradient ops fuse too"
            )
        self.name = f"fusion-{self.inner.name}"
        # the lazy graph is shared by every op: one thread at a time
        self.caps = dataclasses.replace(self.inner.caps, threadsafe=False)
        self.device = self.inner.device
        make = getattr(self.inner, "fusion_compiler", None)
        self.compiler = compiler = make() if make is not None else None
        # the optional parts of the protocol (ember.fusion.program)
        self._reduces = getattr(compiler, "can_reduce", None)
        self._contracts = getattr(compiler, "can_contract", None)
        self.programs = 0  # fused programs run, for tests and benchmarks

    # ------------------------------------------------------------------ plumbing
    def from_inner(self, value) -> FusionPrim:
        """Lift an inner-backend primitive (a materialised handle, no copy)."""
        inner = self.inner
        shape = tuple(inner.shape(value))
        return FusionPrim(shape, inner.dtype(value), numel(shape), value)

    def materialise(self, x: FusionPrim):
        """The inner primitive of ``x``, computing its pending graph first (once)."""
        if x.node is None:
            return x.value
        name, inputs, params = x.node
        if name == _FULL:
            x.value = self.inner.full(x.shape, params[0], x.dtype)
            x.node = None
            return x.value
        if name in CONTRACTIONS:  # alone: the inner backend's own kernel
            _done(x, getattr(self.inner, name)(*(i.value for i in inputs)))
            return x.value
        if x.heavy:
            self._settle(x, keep=True)
        program, handles, mm = _program(x, self.compiler)
        if mm is not None and not self.compiler.can_epilogue(program):
            program = handles = None
            self.materialise(mm)
            program, handles, mm = _program(x, self.compiler)
        values = self.compiler.run(program)
        self.programs += 1
        for h, value in zip(handles, values):
            _done(h, value)
        return x.value

    def _settle(self, root: FusionPrim, keep: bool) -> None:
        """Compute the contractions of ``root``'s pending graph first: all of them, or (with
        ``keep``) all but the newest that nothing outside the graph holds; the graph's other
        nodes can be that one's epilogue, since its raw product is needed nowhere else."""
        found, uses = _contractions(root)
        count = getattr(sys, "getrefcount", None)
        kept = -1
        if keep and count is not None:
            for j in range(len(found) - 1, -1, -1):
                # the references here: the list, getrefcount's argument
                if count(found[j]) <= 2 + uses[j]:
                    kept = j
                    break
        for j in range(len(found)):
            if j != kept:
                self.materialise(found[j])

    def _reduce(self, name: str, x: FusionPrim, dims: tuple):
        """The reduction of ``x``'s pending graph as one program (the graph's result is not
        stored: ``x`` stays pending, and is computed again where something else uses it;
        intermediate values held elsewhere are written, as in an elementwise program)."""
        if x.node[0] in CONTRACTIONS:
            return self._eager(name, (x, dims), {})
        if x.heavy:
            self._settle(x, keep=False)
        program, handles, _ = _program(x, self.compiler, (name, dims))
        values = self.compiler.run(program)
        self.programs += 1
        for h, value in zip(handles, values):
            _done(h, value)
        return self.from_inner(values[-1])

    def float_matmul(self, a, b):
        """Recorded (pending) when the compiler can fuse contractions, so the elementwise ops
        applied to the product can run in the matmul's store; its operands are computed now."""
        if (self._contracts is not None and a.size >= self.compiler.min_elements
                and self._contracts("float_matmul", (a.dtype, b.dtype))):
            spec = registry.REGISTRY["float_matmul"].infer(a, b)
            self.materialise(a)
            self.materialise(b)
            return FusionPrim(spec.shape, spec.dtype, numel(spec.shape), None,
                              ("float_matmul", (a, b), ()), 1, frozenset((a, b)), 1)
        return self._eager("float_matmul", (a, b), {})

    def _unwrap(self, v):
        if isinstance(v, FusionPrim):
            return self.materialise(v)
        if isinstance(v, (list, tuple)):
            return type(v)(self._unwrap(x) for x in v)
        return v

    def _eager(self, name: str, args, kwargs):
        if kwargs:
            kwargs = {k: self._unwrap(v) for k, v in kwargs.items()}
        out = getattr(self.inner, name)(*self._unwrap(args), **kwargs)
        if isinstance(out, tuple):
            return tuple(self.from_inner(o) for o in out)
        return self.from_inner(out)

    def _record(self, name: str, xs: tuple, params: tuple, spec) -> FusionPrim:
        """A pending node over ``xs`` (of one shape); inputs are materialised first when the
        node would pass the compiler's limits."""
        compiler = self.compiler
        nodes, leaves, heavy = 1, None, 0
        for x in xs if len(xs) != 2 or xs[0] is not xs[1] else xs[:1]:
            if x.inlined and x.node is not None:
                # used again after a program computed it in passing: compute and keep it now,
                # or chains that carry state (optimizer moments) would grow step after step
                self.materialise(x)
            if x.node is None:
                mine = frozenset((x,))
            else:
                nodes += x.nodes
                heavy += x.heavy
                mine = x.leaves
            leaves = mine if leaves is None else leaves | mine
        if nodes > compiler.max_nodes or len(leaves) > compiler.max_leaves:
            for x in xs:
                self.materialise(x)
            nodes, leaves, heavy = 1, frozenset(xs), 0
        return FusionPrim(spec.shape, spec.dtype, xs[0].size, None, (name, xs, params), nodes,
                          leaves, heavy)

    # ------------------------------------------------------------------ data
    def from_data(self, data):
        return self.from_inner(self.inner.from_data(data))

    def to_data(self, x):
        return self.inner.to_data(self.materialise(x))

    async def to_data_async(self, x):
        return await self.inner.to_data_async(self.materialise(x))

    def shape(self, x):
        return x.shape

    def dtype(self, x):
        return x.dtype

    def full(self, shape, value, dtype):
        compiler = self.compiler
        shape = tuple(shape)
        size = numel(shape)
        if compiler is None or size < compiler.min_elements or not compiler.holds(value, dtype):
            return FusionPrim(shape, dtype, size, self.inner.full(shape, value, dtype))
        return FusionPrim(shape, dtype, size, None, (_FULL, (), (value,)), 1)

    def cast(self, x, dtype):
        if dtype == x.dtype:
            return x
        compiler = self.compiler
        if (compiler is not None and x.size >= compiler.min_elements
                and compiler.can_fuse("cast", (x.dtype, dtype))):
            return self._record("cast", (x,), (dtype,), Spec(x.shape, dtype))
        return self._eager("cast", (x, dtype), {})

    # ------------------------------------------------------------------ movement: views
    def _move(self, name: str, x: FusionPrim, arg, shape) -> FusionPrim:
        """A constant stays a constant of the new shape; anything else is materialised and
        viewed by the inner backend (views are free there)."""
        if x.node is not None and x.node[0] == _FULL:
            shape = tuple(shape)
            return FusionPrim(shape, x.dtype, numel(shape), None, x.node, 1)
        return self.from_inner(getattr(self.inner, name)(self.materialise(x), arg))

    def reshape(self, x, shape):
        shape = tuple(shape)
        if shape == x.shape:  # nothing to view: a pending value stays pending
            return x
        return self._move("reshape", x, shape, shape)

    def expand(self, x, shape):
        shape = tuple(shape)
        if x.node is not None and x.node[0] != _FULL and x.nodes <= _BROADCAST_NODES:
            return self._broadcast(x, shape, {})
        return self._move("expand", x, shape, shape)

    def _broadcast(self, h: FusionPrim, shape: tuple, done: dict) -> FusionPrim:
        """``h``'s small pending graph again, at the broadcast ``shape``: its leaves are
        expanded views, so the few ops run per element of the larger tensor, in the program
        of whatever uses it (a mean's division broadcast against its input, say)."""
        out = done.get(id(h))
        if out is None:
            if h.node is None or h.node[0] in CONTRACTIONS:
                out = self.from_inner(self.inner.expand(self.materialise(h), shape))
            elif h.node[0] == _FULL:
                out = FusionPrim(shape, h.dtype, numel(shape), None, h.node, 1)
            else:
                name, inputs, params = h.node
                xs = tuple(self._broadcast(i, shape, done) for i in inputs)
                out = self._record(name, xs, params, Spec(shape, h.dtype))
            done[id(h)] = out
        return out

    def permute(self, x, axes):
        return self._move("permute", x, tuple(axes), tuple(x.shape[a] for a in axes))

    def slice(self, x, ranges):
        return self._move("slice", x, ranges, tuple(len(range(*r)) for r in ranges))


def _program(root: FusionPrim, compiler, reduction: tuple | None = None):
    """The pending graph under ``root`` as a :class:`Program`, the handles its outputs are
    for (``root`` and the intermediate values something outside the graph still holds), and
    the handle of its contraction node (or None). A program with a ``reduction`` writes the
    values held elsewhere that the compiler ``reduce_keeps``, then the reduced value (whose
    handle the caller makes: ``root`` stays pending).

    Nodes are ordered by creation (an input is always older than its user); leaves and
    constants are numbered by first use, so one graph shape always gives one signature."""
    # handles key these (identity hashing); both are dropped before references are counted
    seen = {root}
    refs: dict[FusionPrim, tuple[str, int]] = {}
    stack, pending = [root], []
    while stack:  # no recursion: chains are far deeper than Python's recursion limit
        h = stack.pop()
        pending.append(h)
        for i in h.node[1]:
            node = i.node
            if node is not None and node[0] != _FULL and i not in seen:
                seen.add(i)
                stack.append(i)
    pending.sort(key=_SERIAL)
    uses = [0] * len(pending)  # references to each node from the graph's own input tuples
    nodes, sig, leaves, leaf_dtypes, consts = [], [], [], [], []
    contraction = None
    for h in pending:
        name, inputs, params = h.node
        if name in CONTRACTIONS:
            contraction = len(nodes)
        args = []
        for i in inputs:
            ref = refs.get(i)
            if ref is None:
                if i.node is None:
                    ref = refs[i] = ("l", len(leaves))
                    leaves.append(i.value)
                    leaf_dtypes.append(i.dtype)
                else:  # a constant
                    ref = refs[i] = ("c", len(consts))
                    consts.append((i.node[2][0], i.dtype))
            elif ref[0] == "t":
                uses[ref[1]] += 1
            args.append(ref)
        refs[h] = ("t", len(nodes))
        args = tuple(args)
        nodes.append((name, args, params, h.dtype))
        sig.append((name, args, tuple(map(_name, params)) if params else (), h.dtype.name))
    h = i = seen = refs = None  # hold no handle here: _held_elsewhere counts references
    room = compiler.max_buffers - len(leaves) - 1
    outputs = [m for m in _held_elsewhere(pending, uses, room) if m != contraction
               and (not reduction or compiler.reduce_keeps(nodes[m][3]))]
    outputs.append(len(nodes) - 1)
    for m in range(len(pending) - 1):
        pending[m].inlined = True  # those not among the outputs are computed in passing
    signature = (tuple(sig), tuple(d.name for d in leaf_dtypes),
                 tuple(d.name for _, d in consts), tuple(outputs), reduction and reduction[0])
    program = Program(root.shape, root.dtype, nodes, leaves, consts, leaf_dtypes, signature,
                      outputs, reduction, contraction)
    handles = [pending[m] for m in (outputs[:-1] if reduction else outputs)]
    return program, handles, None if contraction is None else pending[contraction]


def _contractions(root: FusionPrim) -> tuple[list[FusionPrim], list[int]]:
    """The pending contraction nodes of ``root``'s graph, and how often the graph's input
    tuples name each."""
    seen, stack, found, uses = {root}, [root], [], []
    while stack:
        for i in stack.pop().node[1]:
            node = i.node
            if node is None or node[0] == _FULL:
                continue
            if node[0] in CONTRACTIONS:
                if i in found:
                    uses[found.index(i)] += 1
                else:
                    found.append(i)
                    uses.append(1)
            elif i not in seen:
                seen.add(i)
                stack.append(i)
    return found, uses


def _done(h: FusionPrim, value) -> None:
    """``h`` holds its computed ``value`` from now on."""
    h.value, h.node, h.leaves, h.nodes, h.inlined, h.heavy = value, None, _NONE, 0, False, 0


def _held_elsewhere(pending: list, uses: list[int], room: int) -> list[int]:
    """Indices of the intermediate nodes (not the last) that something besides the graph
    holds (a Tensor, a saved value of Autodiff, another pending graph): they will be needed
    again, so the program writes them out too instead of leaving them to be recomputed.
    CPython's reference counts tell (elsewhere: none are chosen, and a value computed in
    passing is computed again by itself when it is used again)."""
    count = getattr(sys, "getrefcount", None)
    if count is None or room <= 0:
        return []
    out = []
    for m in range(len(pending) - 1):
        h = pending[m]
        # the references here: the list, the name h, getrefcount's argument
        if count(h) > 3 + uses[m]:
            out.append(m)
            if len(out) == room:
                break
    return out


# ---------------------------------------------------------------------- installed methods
def _overrides(inner: Backend, op: registry.Op) -> bool:
    """Whether ``inner`` has its own implementation of the composite ``op``."""
    return getattr(type(inner), op.name) is not op.default


def _elementwise(op: registry.Op):
    """Record the op when the inner compiler can fuse it (on tensors of at least its
    ``min_elements``); else see :func:`_unfused`."""
    name, infer = op.name, op.infer
    nparams = len(op.args) - len(op.tensors)

    if nparams == 0:  # tensors only (arithmetic, comparisons, where): the hot path

        def method(self, *xs):
            compiler = self.compiler
            if (compiler is not None and xs[0].size >= compiler.min_elements
                    and compiler.can_fuse(name, tuple(map(_DTYPE, xs)))):
                # a FusionPrim has a Spec's shape and dtype: infer reads them directly
                return self._record(name, xs, (), infer(*xs))
            return _unfused(self, op, xs, ())

    else:

        def method(self, *args, **kwargs):
            if kwargs or len(args) < len(op.args):
                args = op.bind(args, kwargs)
            xs, params = args[:-nparams], args[-nparams:]
            compiler = self.compiler
            if (compiler is not None and xs[0].size >= compiler.min_elements
                    and compiler.can_fuse(name, tuple(map(_DTYPE, xs)))):
                return self._record(name, xs, params, infer(*xs, *params))
            return _unfused(self, op, xs, params)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = op.doc
    return method


def _unfused(self: Fusion, op: registry.Op, xs: tuple, params: tuple) -> FusionPrim:
    """An elementwise op that is not recorded: a composite runs its default body on Fusion
    (its parts may fuse; for tensors under ``min_elements`` only when the inner backend has no
    override of its own); anything else runs on the inner backend."""
    default, compiler, x0 = op.default, self.compiler, xs[0]
    if default is not None and (
        (compiler is not None and x0.size >= compiler.min_elements)
        or not _overrides(self.inner, op)
    ):
        return default(self, *xs, *params)
    out = getattr(self.inner, op.name)(
        *[x.value if x.node is None else self.materialise(x) for x in xs], *params)
    return FusionPrim(x0.shape, self.inner.dtype(out), x0.size, out)


def _composite(op: registry.Op):
    """A composite the inner backend overrides runs there; else its default body runs on
    Fusion, so its elementwise parts fuse."""
    name, default = op.name, op.default

    def method(self, *args, **kwargs):
        if _overrides(self.inner, op):
            return self._eager(name, args, kwargs)
        return default(self, *args, **kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = op.doc
    return method


def _reduction(op: registry.Op):
    """A reduction of a pending graph runs as one program when the compiler can fuse it (the
    graph is evaluated where it is reduced); anything else runs on the inner backend."""
    name = op.name

    def method(self, x, dims):
        node = x.node
        if (node is not None and node[0] != _FULL and self._reduces is not None
                and self._reduces(name, x.dtype)):
            return self._reduce(name, x, tuple(dims))
        return self._eager(name, (x, dims), {})

    method.__name__ = method.__qualname__ = name
    method.__doc__ = op.doc
    return method


def _forwarded(op: registry.Op):
    """Materialise the inputs and run the op on the inner backend."""
    name = op.name

    def method(self, *args, **kwargs):
        return self._eager(name, args, kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = op.doc
    return method


def _install() -> None:
    own = set(vars(Fusion))
    for op in registry.ops():
        if op.name in own:
            continue
        if op.kind is E and all(a in op.tensors for a in op.args[:len(op.tensors)]):
            setattr(Fusion, op.name, _elementwise(op))
        elif op.default is not None:
            setattr(Fusion, op.name, _composite(op))
        elif op.kind is Kind.REDUCTION and op.args == ("x", "dims"):
            setattr(Fusion, op.name, _reduction(op))
        else:
            setattr(Fusion, op.name, _forwarded(op))


_install()
