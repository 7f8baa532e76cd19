"""Numpy fast-plan steps for convolution, pooling and normalization (a mixin of
``_fastnp._Builder``; Conv picks up the weight/bias ``_fastfuse`` folded for it)."""

from __future__ import annotations

import numpy as np

from ..backends.numpy.nn import _pad
from ..contract.batchnorm_fold import batchnorm_affine
from ._fastbase import ARITH, FLOATS, Unplanned
from .ops.nn_conv import _pool_geometry, resolve_pads


class NNSteps:
    # ------------------------------------------------------------------ convolution, pooling
    def _op_Conv(self, node, opset):
        x, w = node.inputs[:2]
        bname = node.inputs[2] if len(node.inputs) > 2 else ""
        dt = self.dtype(x)
        wc = self.const(w)
        if dt not in FLOATS or wc is None or wc.dtype != dt or wc.ndim not in (3, 4):
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
                    y = ARITH[op](y, c)
            return y

        return f

    def _op_MaxPool(self, node, opset):
        x = node.inputs[0]
        at = node.attrs
        kernel = at.get("kernel_shape")
        if (self.dtype(x) not in FLOATS or len(node.outputs) != 1 or not kernel
                or len(kernel) != 2):
            return None
        max_pool = self.backend.max_pool

        def plan(v):
            strides, dil, begins, ends, _, extra = _geometry_of(v, kernel, at)
            return tuple(strides), tuple(dil), [(b, e + x_) for b, e, x_ in
                                                zip(begins, ends, extra)]

        plan = _per_shape(plan)

        def f(v):
            strides, dil, pairs = plan(v)
            return max_pool(_pad(v, pairs, -np.inf), tuple(kernel), strides, (0, 0), dil, False)

        return f

    def _op_AveragePool(self, node, opset):
        at = node.attrs
        kernel = at.get("kernel_shape")
        if self.dtype(node.inputs[0]) not in FLOATS or not kernel or len(kernel) != 2:
            return None
        avg_pool, include = self.backend.avg_pool, bool(at.get("count_include_pad", 0))

        def plan(v):
            strides, dil, begins, ends, _, extra = _geometry_of(v, kernel, at)
            return (tuple(strides), tuple(begins)) if (
                begins == ends and not any(extra) and list(dil) == [1, 1]
                and all(b <= k // 2 for b, k in zip(begins, kernel))) else False

        plan = _per_shape(plan)

        def f(v):
            g = plan(v)
            if g is False:  # the generic path's windowed sum and counts
                raise Unplanned
            return avg_pool(v, tuple(kernel), g[0], g[1], False, include)

        return self._or_generic(f, node)

    def _op_BatchNormalization(self, node, opset):
        x = node.inputs[0]
        dt = self.dtype(x)
        params = [self.const(i) for i in node.inputs[1:5]]
        if (dt not in FLOATS or node.attrs.get("training_mode") or len(node.outputs) != 1
                or any(p is None or p.dtype != dt or p.ndim != 1 or p.shape != params[0].shape
                       for p in params)):
            return None
        scale, b, mean, var = params
        affine = batchnorm_affine(mean, var, node.attrs.get("epsilon", 1e-5), scale, b)
        inv, shift = (v.astype(dt) for v in affine)
        reuse = self.reusable(x)

        def f(v, *_params):
            shape = (-1,) + (1,) * (v.ndim - 2)
            y = np.multiply(v, inv.reshape(shape), out=v if reuse else None)
            y += shift.reshape(shape)
            return y

        return f

    def _op_Sum(self, node, opset):
        dts = {self.dtype(i) for i in node.inputs}
        if len(dts) != 1 or next(iter(dts)) not in FLOATS:
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
        if self.dtype(node.inputs[0]) not in FLOATS:
            return None

        def f(v):
            return np.mean(v, axis=tuple(range(2, v.ndim)), keepdims=True).astype(
                v.dtype, copy=False)

        return f

    def _op_LayerNormalization(self, node, opset):
        x, scale = node.inputs[:2]
        dt = self.dtype(x)
        if dt not in FLOATS or len(node.outputs) != 1 or self.dtype(scale) != dt:
            return None
        axis, eps = node.attrs.get("axis", -1), dt.type(node.attrs.get("epsilon", 1e-5))
        layer_norm = self.backend.layer_norm
        reuse = self.reusable(x)

        def f(v, s, b=None):
            a = axis % v.ndim
            if s.shape != v.shape[a:] or (b is not None and b.shape != v.shape[a:]):
                raise Unplanned
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


def _geometry_of(v, kernel, at):
    """A pooling node's geometry for input ``v`` (``_pool_geometry`` with the node's attributes)."""
    return _pool_geometry(v, kernel, at.get("strides"), at.get("pads"), at.get("dilations"),
                          at.get("ceil_mode", 0), at.get("auto_pad", "NOTSET"))


def _per_shape(plan):
    """``plan(v)`` computed once per input shape."""
    cache: dict = {}

    def planned(v):
        found = cache.get(v.shape)
        if found is None:
            found = cache[v.shape] = plan(v)
        return found

    return planned
