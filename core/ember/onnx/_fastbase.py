"""What the numpy fast plan's step builders share (see ``_fastnp``): the dtype/reuse
queries, the generic op function as a step, and arrays <-> ember tensors."""

from __future__ import annotations

import numpy as np

from ..tensor import Tensor
from ._graph import Function
from .ops import CallCtx

FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
ARITH = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide}


class Unplanned(Exception):
    """Raised by a closure for inputs it does not cover (see ``BuilderBase._or_generic``)."""


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


class BuilderBase:
    """Queries on the graph being compiled; the op mixins (``_fastmath``, ``_fastnn``,
    ``_fastlayout``) build one ``_op_<OpType>(node, opset)`` closure each, or None."""

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
        time (raising ``Unplanned``)."""
        generic = self._generic(*self._cur)
        single = len(node.outputs) == 1

        def g(*args):
            try:
                return f(*args)
            except Unplanned:
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
