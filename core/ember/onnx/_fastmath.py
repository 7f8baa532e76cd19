"""Numpy fast-plan steps for elementwise ops, activations and matrix products (a mixin of
``_fastnp._Builder``; each ``_op_<OpType>`` returns a closure over arrays, or None to leave
the node to its generic op function)."""

from __future__ import annotations

import math

import numpy as np

from ..backends.numpy.blocks import blocked, blocked_into
from ..backends.numpy.ops import _matmul
from ._fastbase import FLOATS

_COMPARE = {"Equal": np.equal, "Less": np.less, "Greater": np.greater,
            "LessOrEqual": np.less_equal, "GreaterOrEqual": np.greater_equal}
_UNARY = {"Tanh": np.tanh, "Exp": np.exp, "Sqrt": np.sqrt, "Neg": np.negative, "Abs": np.abs,
          "Reciprocal": np.reciprocal, "Log": np.log, "Floor": np.floor, "Ceil": np.ceil,
          "Sin": np.sin, "Cos": np.cos}
# Cast targets (ONNX element types) that numpy's astype reaches exactly from the kinds listed
_CASTS = {1: (np.float32, "biuf"), 11: (np.float64, "biuf"), 7: (np.int64, "biu"),
          6: (np.int32, "bi"), 9: (np.bool_, "biuf")}


class MathSteps:
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
        if self.dtype(x) not in FLOATS:
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
        if self.dtype(x) not in FLOATS:
            return None
        zero = self.dtype(x).type(0)
        if not self.reusable(x):
            return lambda v: np.maximum(v, zero)
        return lambda v: np.maximum(v, zero, out=v) if type(v) is np.ndarray else \
            np.maximum(v, zero)

    def _op_LeakyRelu(self, node, opset):
        x = node.inputs[0]
        if self.dtype(x) not in FLOATS:
            return None
        alpha = node.attrs.get("alpha", 0.01)

        def f(v):
            return np.where(v >= 0, v, v * alpha)

        return f

    def _op_Sigmoid(self, node, opset):
        x = node.inputs[0]
        dt = self.dtype(x)
        if dt not in FLOATS:
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
        if dt not in FLOATS or node.attrs.get("alpha", 1.0) != 1.0:
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
        return self.backend.float_erf if self.dtype(node.inputs[0]) in FLOATS else None

    def _op_Gelu(self, node, opset):
        if self.dtype(node.inputs[0]) not in FLOATS:
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
        if dt not in FLOATS:
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
        if dt not in FLOATS:
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
        if dt not in FLOATS:
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
        if self.dtype(x) not in FLOATS or c is None:
            return None
        e = c.astype(self.dtype(x))
        return lambda v, _y=None: np.power(v, e)

    def _op_Softmax(self, node, opset):
        dt = self.dtype(node.inputs[0])
        if dt not in FLOATS:
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
        if self.dtype(a) not in FLOATS or self.dtype(a) != self.dtype(b):
            return None
        return _matmul

    def _op_Gemm(self, node, opset):
        a, b = node.inputs[:2]
        c = node.inputs[2] if len(node.inputs) > 2 else ""
        dt = self.dtype(a)
        if dt not in FLOATS or dt != self.dtype(b) or (c and self.dtype(c) != dt):
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
