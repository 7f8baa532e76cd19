"""A fused elementwise program, and the protocol an inner backend implements to run one.

:class:`~ember.fusion.backend.Fusion` records elementwise ops lazily; when a result is needed
it hands the pending graph to the inner backend as a :class:`Program`: a list of nodes in
evaluation order over three kinds of operands, named by :data:`Ref`\\ s:

- ``("l", k)`` — leaf ``k``: an inner-backend primitive (already computed), of the program's
  shape (broadcasts are views, e.g. zero strides);
- ``("c", k)`` — constant ``k``: a scalar ``(value, dtype)`` (a ``full`` that was never
  materialised), which a compiler passes as data, not code;
- ``("t", k)`` — the result of node ``k`` (earlier in the list).

Every node has the program's shape. :attr:`Program.outputs` lists the nodes whose values are
wanted: the last node (the result asked for) and intermediate values something else still
holds, so they are computed once. :attr:`Program.signature` is what identifies the generated
code (ops, dtypes, the graph's wiring, the outputs): it holds no values and no layouts, so a
compiler can cache its kernels by it.

A backend that can fuse has a method ``fusion_compiler()`` returning an object with:

- ``min_elements: int`` — tensors smaller than this run eagerly (where recording costs more
  than it saves);
- ``max_nodes: int`` — the most nodes one program may hold;
- ``max_leaves: int`` — the most distinct leaves (the GPU's storage bindings per stage less
  the ones the kernel needs for itself);
- ``max_buffers: int`` — the most leaves and outputs together;
- ``can_fuse(op: str, dtypes: tuple[DType, ...]) -> bool`` — whether the elementwise op (a
  registry name; ``cast`` gets ``(from, to)``) can be a node of a program;
- ``holds(value, dtype) -> bool`` — whether a ``full`` of that value and dtype can be a
  constant (else the inner backend's own ``full`` runs, with its own errors);
- ``run(program) -> list`` — compute the program: one primitive per output, each equal to what
  running the nodes one by one on the inner backend gives.

Optionally, to fuse more than elementwise chains:

- ``can_reduce(op: str, dtype) -> bool`` — whether a reduction (``float_sum``…) of a pending
  graph of that dtype can run as one program: :attr:`Program.reduction` is then
  ``(op, dims)``, and ``run`` returns the values of the outputs but the last (intermediate
  values kept for later), then the reduced result (the graph's own result is evaluated where
  it is reduced, never stored); ``reduce_keeps(dtype) -> bool`` says which dtypes such a
  program can keep;
- ``can_contract(op: str, dtypes) -> bool`` — whether a contraction (``float_matmul``) may be
  recorded as a pending node: a program may then hold one such node (its index is
  :attr:`Program.contraction`; its operands are leaves), whose elementwise users the compiler
  applies where it stores the product (an epilogue); then also
  ``can_epilogue(program) -> bool`` — whether ``run`` can do that for this program (else
  Fusion computes the contraction alone first and runs the rest as an elementwise program).

>>> p = Program((2,), "float32", [("float_add", (("l", 0), ("c", 0)), (), "float32")],
...             ["x"], [(1.0, "float32")], ["float32"])
>>> p.signature
((('float_add', (('l', 0), ('c', 0)), (), 'float32'),), ('float32',), ('float32',), (0,), None)
"""

from __future__ import annotations

from typing import Any

Ref = tuple[str, int]
#: the ops a program may hold besides elementwise ones (see ``can_contract``)
CONTRACTIONS = frozenset({"float_matmul"})


class Program:
    """One fused elementwise graph, ready for an inner backend's compiler (see the module).

    ``x + 1`` on one float32 leaf, as Fusion hands it to a compiler:

    >>> p = Program((2,), "float32", [("float_add", (("l", 0), ("c", 0)), (), "float32")],
    ...             ["x"], [(1.0, "float32")], ["float32"])
    >>> p, p.outputs, p.reduction, [op for op, *_ in p.signature[0]]
    (Program(shape=(2,), 1 nodes, 1 leaves, 1 constants), [0], None, ['float_add'])
    """

    __slots__ = ("consts", "contraction", "dtype", "leaf_dtypes", "leaves", "nodes", "outputs",
                 "reduction", "shape", "_signature")

    def __init__(self, shape: tuple[int, ...], dtype: Any, nodes: list[tuple],
                 leaves: list[Any], consts: list[tuple[Any, Any]], leaf_dtypes: list[Any],
                 signature: tuple | None = None, outputs: list[int] | None = None,
                 reduction: tuple | None = None, contraction: int | None = None):
        self.shape, self.dtype = tuple(shape), dtype
        #: ``(op name, input refs, params, result dtype)`` in evaluation order
        self.nodes = nodes
        #: the nodes whose values ``run`` returns, in this order; the last node comes last
        self.outputs = [len(nodes) - 1] if outputs is None else outputs
        self.leaves, self.leaf_dtypes = leaves, leaf_dtypes
        self.consts = consts
        #: ``(op, dims)``: the program's result is reduced (see the module), else None
        self.reduction = reduction
        #: the index of the contraction node (a matmul), if there is one
        self.contraction = contraction
        self._signature = signature  # the builder may know it already

    @property
    def signature(self) -> tuple:
        """Ops, wiring and dtypes (by name): the cache key of generated code."""
        if self._signature is None:
            nodes = tuple((op, args, tuple(_name(p) for p in params), _name(dtype))
                          for op, args, params, dtype in self.nodes)
            self._signature = (nodes, tuple(_name(d) for d in self.leaf_dtypes),
                               tuple(_name(d) for _, d in self.consts), tuple(self.outputs),
                               self.reduction and self.reduction[0])
        return self._signature

    def __repr__(self) -> str:
        return (f"Program(shape={self.shape}, {len(self.nodes)} nodes, "
                f"{len(self.leaves)} leaves, {len(self.consts)} constants)")


def _name(v: Any) -> Any:
    return getattr(v, "name", v)
