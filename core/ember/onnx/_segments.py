"""A graph run through the backend's tape compiler: compiled segments between host nodes.

On a backend that compiles a traced program (``ember.jit.compiles``: numpy, wasm, wgpu) a
graph's nodes are cut into *segments*, runs of consecutive nodes traced together (each an
:func:`ember.jit` function, traced per input signature and replayed by the backend's
``compile_tape``), and *host nodes*, run eagerly between them. A host node is one whose
trace needs a value the trace can't fix: a shape or count read from data (NonZero, Unique,
TopK with a computed k, Reshape to a computed shape, a Loop whose trip count is data). They
are found on the first call: a segment whose trace fails in node ``k`` becomes the nodes
before ``k`` (traced again), ``k`` on the host, and the nodes after (traced in turn). An
If/Loop/Scan host node runs its bodies the same way (each body graph has its segments).

A segment reads the graph's constants (and an enclosing graph's, in a body) inside its
trace, so shape arithmetic on them stays static; everything else it reads is an argument.
Before a node goes to the host, the small arguments its read depends on (at most
:data:`GUARD_ELEMENTS` elements: a Loop's trip count, TopK's k, a Reshape's shape, Clip's
bounds fed as graph inputs) become *guards*: their values join the segment's signature and
its trace reads them as constants, so the node compiles, and other values trace again. A segment fed a new
signature traces again; past :data:`MAX_SIGNATURES` (shapes that change with the data, after
a NonZero) it runs further new signatures eagerly.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import DTypeError
from ..jit import JitError, jit, tracing
from ..jit.tree import flatten
from ..tensor import Tensor
from ._graph import Graph

#: traced signatures per segment; a new one past this runs eagerly (shapes from data)
MAX_SIGNATURES = 8
#: the most elements of an argument whose value may become part of a signature
GUARD_ELEMENTS = 16


@dataclass(frozen=True)
class _Guard:
    """A guarded argument's value, compared by value in the signature: floats by their bits
    (``float.hex``: NaN equals NaN, -0.0 differs from 0.0)."""

    shape: tuple
    dtype: object
    values: tuple

    @staticmethod
    def of(t: Tensor) -> _Guard:
        flat = t.reshape(-1).tolist() if t.shape else [t.item()]
        if t.dtype.is_float:
            flat = [float.hex(v) for v in flat]
        return _Guard(tuple(t.shape), t.dtype, tuple(flat))

    def tensor(self, backend) -> Tensor:
        """The value as a tensor made inside the trace: a literal, static to it."""
        from ..ops.conversion import tensor

        flat = [float.fromhex(v) for v in self.values] if self.dtype.is_float else self.values
        return tensor(list(flat), dtype=self.dtype, backend=backend).reshape(self.shape)


def _guardable(value, backend) -> bool:
    return (isinstance(value, Tensor) and value.backend is backend
            and value.numel() <= GUARD_ELEMENTS)


class _NodeFailed(Exception):
    """A segment's trace failed in its node ``index`` (None: not in a node)."""

    def __init__(self, index: int | None, error: Exception):
        super().__init__(str(error))
        self.index, self.error = index, error


class _Segment:
    """Steps ``[start, stop)`` of a graph's plan, traced together."""

    def __init__(self, driver: GraphSegments, start: int, stop: int,
                 guarded: frozenset = frozenset()):
        self.driver, self.start, self.stop = driver, start, stop
        steps = driver.steps[start:stop]
        defined: set[str] = set()
        reads: list[str] = []
        for node, _, _ in steps:
            reads += [i for i in driver.reads[id(node)] if i not in defined and i not in reads]
            defined.update(node.outputs)
        consts = driver.consts
        self.consts = [(n, consts[n]) for n in reads if n in consts]
        self.args = [n for n in reads if n not in consts]
        self.guarded = guarded & set(self.args)
        later = set(driver.graph.outputs)
        for node, _, _ in driver.steps[stop:]:
            later.update(driver.reads[id(node)])
        self.writes = [o for node, _, _ in steps for o in node.outputs if o and o in later]
        self.fn = jit(self._body, warmup=0)
        self.fn.__name__ = f"onnx nodes {start}-{stop - 1} of graph '{driver.graph.name}'"

    def _body(self, *values):
        module = self.driver.module
        env = {n: getattr(module, a) for n, a in self.consts}
        env.update(zip(self.args, values))
        for n in self.guarded:
            env[n] = env[n].tensor(module.backend)
        ctx = module._context()
        ctx.env = env
        for k, (node, fn, opset) in enumerate(self.driver.steps[self.start:self.stop]):
            try:
                module._step(ctx, node, fn, opset, env)
            except (JitError, DTypeError) as e:
                # a value the trace can't fix, or (wgpu) an int64 cast it can't bound for
                # every replay: the node runs on the host
                if tracing():
                    raise _NodeFailed(k, e) from e
                raise
        return tuple(env.get(n) for n in self.writes)

    def read_by(self, error: Exception, env: dict) -> set[str]:
        """The arguments (not guarded) that the value whose read failed the trace with
        ``error`` was computed from (``error.sources``: positions of the traced function's
        input tensors)."""
        names = [n for n in self.args if n not in self.guarded
                 for _ in flatten(env[n])[0]]
        return {names[i] for i in getattr(error, "sources", ()) if i < len(names)}

    def run(self, env: dict) -> None:
        values = [_Guard.of(env[n]) if n in self.guarded else env[n] for n in self.args]
        fn = self.fn
        if len(fn.entries) >= MAX_SIGNATURES and flatten((tuple(values), {}))[1] not in (
                fn.entries):
            outs = self._body(*values)  # eagerly: shapes that change with the data
        else:
            try:
                outs = fn(*values)
            # not in a node (the segment as a whole), or (wgpu) the capture can't bound an
            # int64 range for every replay: the segment's nodes run on the host
            except (JitError, DTypeError) as e:
                raise _NodeFailed(None, e) from e
        env.update(zip(self.writes, outs))


class _Host:
    """Step ``index`` of a graph's plan, run eagerly."""

    def __init__(self, driver: GraphSegments, index: int):
        self.driver, self.index = driver, index
        node = driver.steps[index][0]
        self.consts = [(n, driver.consts[n]) for n in driver.reads[id(node)]
                       if n in driver.consts]

    def run(self, env: dict) -> None:
        module = self.driver.module
        for n, a in self.consts:
            env[n] = getattr(module, a)
        ctx = module._context()
        ctx.env = env
        node, fn, opset = self.driver.steps[self.index]
        module._step(ctx, node, fn, opset, env)


class GraphSegments:
    """One graph of an :class:`~ember.onnx.runtime.OnnxModule` as segments and host nodes
    (see the module docstring); ``consts``: the constants it may read, its own and its
    enclosing graphs' (ONNX name -> module attribute)."""

    def __init__(self, module, graph: Graph, steps: list, consts: dict[str, str]):
        self.module, self.graph, self.steps = module, graph, steps
        self.consts = consts
        #: id(node) -> the names it reads: its inputs and its bodies' outer names
        self.reads = {id(n): [i for i in [*n.inputs, *(f for g in n.subgraphs()
                                                         for f in outer_reads(module, g))] if i]
                      for n, _, _ in steps}
        self.free = outer_reads(module, graph)
        self.items: list = [_Segment(self, 0, len(steps))] if steps else []
        #: why each host node runs on the host: "node 'name' (Op): reason"
        self.host_reasons: list[str] = []
        self.outs = [(n, consts[n]) for n in graph.outputs if n in consts]

    def run(self, inputs: list, outer: dict | None) -> list:
        env: dict = {}
        if outer is not None:
            for name in self.free:
                if name in outer and name not in self.consts:
                    env[name] = outer[name]
        env.update(zip(self.graph.inputs, inputs))
        k = 0
        while k < len(self.items):
            item = self.items[k]
            try:
                item.run(env)
            except _NodeFailed as e:
                if self.items[k] is item:  # another thread may have cut it already
                    self.items[k:k + 1] = self._cut(item, e, env)
                continue  # the replacements run from the first (the nodes before the cut)
            k += 1
        module = self.module
        for n, a in self.outs:
            env[n] = getattr(module, a)
        return [env[n] if n else None for n in self.graph.outputs]

    def _cut(self, segment: _Segment, failed: _NodeFailed, env: dict) -> list:
        """``segment`` with more guards, where the node its trace failed in depends on small
        arguments not yet guarded; else without that node (on the host; every node
        of it when the failure was not in a node)."""
        if failed.index is not None:
            more = {n for n in segment.read_by(failed.error, env)
                    if _guardable(env[n], self.module.backend)}
            if more:
                return [_Segment(self, segment.start, segment.stop, segment.guarded | more)]
        if failed.index is None:
            hosts = range(segment.start, segment.stop)
            self.host_reasons += [f"{_name(self.steps[i][0])}: {failed}" for i in hosts]
            return [_Host(self, i) for i in hosts]
        k = segment.start + failed.index
        reason = "; ".join([str(failed.error), *getattr(failed.error, "__notes__", ())])
        self.host_reasons.append(f"{_name(self.steps[k][0])}: {reason}")
        cut = [_Segment(self, segment.start, k, segment.guarded)] if k > segment.start else []
        cut.append(_Host(self, k))
        if k + 1 < segment.stop:
            cut.append(_Segment(self, k + 1, segment.stop))
        return cut

    def segments(self) -> list[_Segment]:
        return [i for i in self.items if isinstance(i, _Segment)]


class SegmentCache(dict):
    """``id(graph) -> GraphSegments`` of the module ``owner`` (an id): a copy or an unpickled
    module starts with an empty one (segments read the module they were built for)."""

    def __init__(self, owner: int | None = None):
        super().__init__()
        self.owner = owner

    def __deepcopy__(self, memo) -> SegmentCache:
        return SegmentCache()

    def __reduce__(self):
        return SegmentCache, ()


def _name(node) -> str:
    return f"node '{node.name}' ({node.op_type})"


def outer_reads(module, graph: Graph) -> list[str]:
    """The names ``graph`` (and its bodies) read from enclosing graphs: not its inputs, its
    constants (initialisers and what was folded) or what its nodes compute."""
    defined = {*graph.inputs, *graph.initializers, *module._consts.get(id(graph), {})}
    out: list[str] = []
    for n in graph.nodes:
        reads = [*n.inputs, *(f for g in n.subgraphs() for f in outer_reads(module, g))]
        out += [i for i in reads if i and i not in defined and i not in out]
        defined.update(n.outputs)
    return out + [o for o in graph.outputs if o and o not in defined and o not in out]
