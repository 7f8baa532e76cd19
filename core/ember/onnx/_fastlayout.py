"""Numpy fast-plan steps for shape and layout ops (a mixin of ``_fastnp._Builder``): views
where numpy gives them, shapes read at run time."""

from __future__ import annotations

import math

import numpy as np


class LayoutSteps:
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
