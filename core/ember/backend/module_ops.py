"""Module ops: convolution, pooling, interpolation, normalisation (float tensors).

Every method here is a composite with a default body written with backend primitives (slice,
slice_assign, cat, reshape, expand, float_matmul, ...), so any backend that implements the
required primitives gets them, and Autodiff gets their gradients from the primitives' rules.
Backends override them for speed (see ``ember.backends.numpy_nn``); an override must keep
these exact semantics.

Spatial ops take ``x`` as (N, C, *spatial) with any number of spatial dims (1 and 2 are the
tested ones). Sizes, strides, paddings and dilations are tuples with one entry per spatial dim,
already validated by ``ember.nn.functional``.
"""

from __future__ import annotations

import itertools
import math
import struct

from .. import dtype as dt
from ..data import TensorData
from ..shape import conv_output_size, numel, pool_geometry
from .prim_helpers import scalar

# Re-exported (``as``) for nn/ and backends/ until they import them from ember.shape.
from ..shape import conv_transpose_output_size as conv_transpose_output_size
from ..shape import pool_output_size as pool_output_size


def _f32(v: float) -> float:
    """``v`` rounded to float32 (PyTorch computes nearest-neighbour indices in float32)."""
    return struct.unpack("<f", struct.pack("<f", v))[0]


def avg_pool_divisors(
    size: int, out: int, kernel: int, stride: int, pad: int, count_include_pad: bool
) -> list[int]:
    """Per output position along one dim, how many elements its window averages
    (PyTorch: windows are clipped to the padded input, padding counts if asked)."""
    divs = []
    for i in range(out):
        start = i * stride - pad
        end = min(start + kernel, size + pad)
        if count_include_pad:
            divs.append(end - start)
        else:
            divs.append(min(end, size) - max(start, 0))
    return divs


def adaptive_ranges(size: int, out: int) -> list[tuple[int, int]]:
    """PyTorch's adaptive pooling windows: [floor(i*size/out), ceil((i+1)*size/out))."""
    return [((i * size) // out, -(-((i + 1) * size) // out)) for i in range(out)]


def nearest_indices(size: int, out: int, scale_factor: float | None, exact: bool) -> list[int]:
    """Source index per output index for 'nearest' / 'nearest-exact' (PyTorch's float32
    arithmetic, so ties round the same way)."""
    if out == size and not exact:
        return list(range(out))
    scale = _f32(1.0 / scale_factor if scale_factor else size / out)
    shift = 0.5 if exact else 0.0
    return [min(math.floor(_f32((i + shift) * scale)), size - 1) for i in range(out)]


def linear_indices(
    size: int, out: int, scale_factor: float | None, align_corners: bool
) -> tuple[list[int], list[int], list[float], list[float]]:
    """``(i0, i1, w0, w1)`` per output index for linear interpolation along one dim:
    ``y = x[i0] * w0 + x[i1] * w1`` (PyTorch's source-index convention)."""
    if align_corners:
        scale = (size - 1) / (out - 1) if out > 1 else 0.0
    else:
        scale = 1.0 / scale_factor if scale_factor else size / out
    i0s, i1s, w0s, w1s = [], [], [], []
    for i in range(out):
        src = scale * i if align_corners else max(scale * (i + 0.5) - 0.5, 0.0)
        i0 = min(int(src), size - 1)
        lam = min(max(src - i0, 0.0), 1.0)
        i0s.append(i0)
        i1s.append(i0 + (1 if i0 < size - 1 else 0))
        w0s.append(1.0 - lam)
        w1s.append(lam)
    return i0s, i1s, w0s, w1s


# ---------------------------------------------------------------------- primitive helpers
def _along(b, values, shape: tuple[int, ...], axis: int, dtype: dt.DType):
    """A 1-d list (or primitive) of length ``shape[axis]`` broadcast to ``shape`` along ``axis``."""
    if isinstance(values, list):
        values = b.from_data(TensorData.from_values(values, (len(values),), dtype))
    view = [1] * len(shape)
    view[axis] = shape[axis]
    return b.expand(b.reshape(values, tuple(view)), tuple(shape))


def _trailing(b, v, shape: tuple[int, ...]):
    """``v`` (shaped like the trailing dims of ``shape``) broadcast to ``shape``."""
    vshape = tuple(b.shape(v))
    view = (1,) * (len(shape) - len(vshape)) + vshape
    return b.expand(b.reshape(v, view), tuple(shape))


def _int64(b, values: list[int]):
    return b.from_data(TensorData.from_values(values, (len(values),), dt.int64))


def _channels(b, x, start: int, n: int):
    """Channels ``start:start+n`` of ``x`` (no slice when that is all of them)."""
    shape = tuple(b.shape(x))
    if start == 0 and n == shape[1]:
        return x
    return b.slice(
        x, tuple((start, start + n, 1) if d == 1 else (0, s, 1) for d, s in enumerate(shape))
    )


def pad_spatial(b, x, pairs, value):
    """Pad the trailing ``len(pairs)`` dims by ``(before, after)`` with ``value``; negative
    amounts crop instead."""
    shape = tuple(b.shape(x))
    lead = len(shape) - len(pairs)
    if any(p < 0 for pair in pairs for p in pair):
        ranges = [(0, s, 1) for s in shape[:lead]]
        ranges += [(max(-lo, 0), s - max(-hi, 0), 1) for s, (lo, hi) in zip(shape[lead:], pairs)]
        x = b.slice(x, tuple(ranges))
        shape = tuple(b.shape(x))
        pairs = [(max(lo, 0), max(hi, 0)) for lo, hi in pairs]
    if not any(p for pair in pairs for p in pair):
        return x
    out_shape = shape[:lead] + tuple(s + lo + hi for s, (lo, hi) in zip(shape[lead:], pairs))
    ranges = [(0, s, 1) for s in shape[:lead]]
    ranges += [(lo, lo + s, 1) for s, (lo, _) in zip(shape[lead:], pairs)]
    return b.slice_assign(b.full(out_shape, value, b.dtype(x)), tuple(ranges), x)


def window_slices(b, x, out_size, kernel, stride, dilation):
    """For each kernel offset (row-major), the strided slice of ``x``'s trailing dims holding
    that offset's element of every output window: shape (*lead, *out_size)."""
    shape = tuple(b.shape(x))
    lead = [(0, s, 1) for s in shape[: len(shape) - len(kernel)]]
    for offsets in itertools.product(*(range(k) for k in kernel)):
        ranges = list(lead)
        for k, n, s, d in zip(offsets, out_size, stride, dilation):
            ranges.append((k * d, k * d + (n - 1) * s + 1, s))
        yield b.slice(x, tuple(ranges))


class ModuleOps:
    def conv(self, x, weight, bias, stride: tuple, padding: tuple, dilation: tuple, groups: int):
        """Cross-correlation (PyTorch's conv). ``weight`` is (C_out, C_in / groups, *kernel);
        ``bias`` (C_out,) or None; ``padding`` is one ``(before, after)`` pair per spatial dim
        (zeros)."""
        n, c = self.shape(x)[:2]
        wshape = tuple(self.shape(weight))
        c_out, kernel = wshape[0], wshape[2:]
        xp = pad_spatial(self, x, padding, 0)
        spatial = tuple(self.shape(x))[2:]
        out = tuple(conv_output_size(*a) for a in zip(spatial, kernel, stride, padding, dilation))
        positions, taps, cg = numel(out), numel(kernel), c // groups
        # im2col: (N, C, taps, positions), ordered like the weight's (C_in, *kernel) flattening
        cols = [
            self.reshape(w, (n, c, 1, positions))
            for w in window_slices(self, xp, out, kernel, stride, dilation)
        ]
        cols = self.cat(cols, 2) if len(cols) > 1 else cols[0]
        cols = self.reshape(cols, (n, groups, cg * taps, positions))
        w = self.reshape(weight, (1, groups, c_out // groups, cg * taps))
        w = self.expand(w, (n, groups, c_out // groups, cg * taps))
        y = self.reshape(self.float_matmul(w, cols), (n, c_out) + out)
        if bias is not None:
            y = self.float_add(y, _along(self, bias, tuple(self.shape(y)), 1, self.dtype(y)))
        return y

    def conv_weight_grad(
        self,
        x,
        grad,
        weight_shape: tuple,
        stride: tuple,
        padding: tuple,
        dilation: tuple,
        groups: int,
    ):
        """The gradient of ``conv(x, weight, ...)`` with respect to ``weight`` (of shape
        ``weight_shape``), given the output's gradient ``grad``; Autodiff's conv rule calls it.
        The default is a conv over the batch: ``dW[o, i, k] = sum_n,p grad[n, o, p] *
        xpad[n, i, p*stride + k*dilation]``; backends override it with one GEMM on the
        im2col columns."""
        nd = len(stride)
        xshape = tuple(self.shape(x))
        xp = pad_spatial(self, x, padding, 0.0)
        perm = (1, 0) + tuple(range(2, 2 + nd))
        cg, og = xshape[1] // groups, weight_shape[0] // groups
        parts = []
        for gi in range(groups):
            xs = _channels(self, xp, gi * cg, cg)
            gs = _channels(self, grad, gi * og, og)
            dw = self.conv(
                self.permute(xs, perm),
                self.permute(gs, perm),
                None,
                dilation,
                ((0, 0),) * nd,
                stride,
                1,
            )  # (C_in/g, C_out/g, *K'), K' >= kernel
            ranges = tuple((0, s, 1) for s in tuple(self.shape(dw))[:2])
            dw = self.slice(dw, ranges + tuple((0, k, 1) for k in weight_shape[2:]))
            parts.append(self.permute(dw, perm))
        return self.cat(parts, 0) if len(parts) > 1 else parts[0]

    def conv_transpose(
        self,
        x,
        weight,
        bias,
        stride: tuple,
        padding: tuple,
        output_padding: tuple,
        dilation: tuple,
        groups: int,
    ):
        """Transposed convolution (PyTorch's conv_transposeNd); ``weight`` is
        (C_in, C_out / groups, *kernel); ``padding`` one int per spatial dim."""
        # A conv over the zero-dilated input with the flipped, transposed kernel.
        n, c_in = self.shape(x)[:2]
        spatial = tuple(self.shape(x))[2:]
        wshape = tuple(self.shape(weight))
        c_out_g, kernel = wshape[1], wshape[2:]
        nd = len(kernel)
        if any(s > 1 for s in stride):
            grown = tuple((size - 1) * s + 1 for size, s in zip(spatial, stride))
            ranges = ((0, n, 1), (0, c_in, 1)) + tuple((0, g, s) for g, s in zip(grown, stride))
            x = self.slice_assign(self.full((n, c_in) + grown, 0, self.dtype(x)), ranges, x)
        pairs = tuple(
            (d * (k - 1) - p, d * (k - 1) - p + op)
            for k, p, op, d in zip(kernel, padding, output_padding, dilation)
        )
        w = self.reshape(weight, (groups, c_in // groups, c_out_g) + kernel)
        w = self.permute(w, (0, 2, 1) + tuple(range(3, 3 + nd)))
        w = self.reshape(w, (groups * c_out_g, c_in // groups) + kernel)
        w = self.flip(w, tuple(range(2, 2 + nd)))
        return self.conv(x, w, bias, (1,) * nd, pairs, dilation, groups)

    def max_pool(
        self, x, kernel: tuple, stride: tuple, padding: tuple, dilation: tuple, ceil_mode: bool
    ):
        """Max over windows; ``padding`` one int per spatial dim, counting as -inf; NaN
        propagates."""
        spatial = tuple(self.shape(x))[2:]
        out, pairs = pool_geometry(spatial, kernel, stride, padding, dilation, ceil_mode)
        xp = pad_spatial(self, x, pairs, -math.inf)
        acc = None
        for w in window_slices(self, xp, out, kernel, stride, dilation):
            acc = w if acc is None else self.float_maximum(acc, w)
        return acc

    def max_pool_grad(
        self,
        x,
        out,
        grad,
        kernel: tuple,
        stride: tuple,
        padding: tuple,
        dilation: tuple,
        ceil_mode: bool,
    ):
        """The gradient of ``out = max_pool(x, ...)`` with respect to ``x``, given ``out``'s
        gradient ``grad``: as in PyTorch, each window's gradient goes to its first maximum
        (windows whose maximum is NaN pass none); Autodiff's max_pool rule calls it."""
        spatial = tuple(self.shape(x))[2:]
        out_size, pairs = pool_geometry(spatial, kernel, stride, padding, dilation, ceil_mode)
        xp = pad_spatial(self, x, pairs, -math.inf)
        zero = scalar(self, grad, 0.0)
        taken = self.float_lt(out, out)  # all False
        gxp = self.full(tuple(self.shape(xp)), 0.0, self.dtype(grad))
        lead = [(0, s, 1) for s in tuple(self.shape(xp))[:2]]
        taps = itertools.product(*(range(k) for k in kernel))
        for offsets, w in zip(taps, window_slices(self, xp, out_size, kernel, stride, dilation)):
            hit = self.bool_and(self.float_eq(w, out), self.bool_not(taken))
            taken = self.bool_or(taken, hit)
            ranges = tuple(lead) + tuple(
                (k * d, k * d + (n - 1) * s + 1, s)
                for k, n, s, d in zip(offsets, out_size, stride, dilation)
            )
            added = self.float_add(self.slice(gxp, ranges), self.where(hit, grad, zero))
            gxp = self.slice_assign(gxp, ranges, added)
        return pad_spatial(self, gxp, [(-lo, -hi) for lo, hi in pairs], 0.0)

    def avg_pool(
        self,
        x,
        kernel: tuple,
        stride: tuple,
        padding: tuple,
        ceil_mode: bool,
        count_include_pad: bool,
        divisor_override: int | None = None,
    ):
        """Mean over windows (PyTorch's divisor rules; ``divisor_override`` replaces them)."""
        spatial = tuple(self.shape(x))[2:]
        ones = (1,) * len(kernel)
        out, pairs = pool_geometry(spatial, kernel, stride, padding, ones, ceil_mode)
        xp = pad_spatial(self, x, pairs, 0)
        acc = None
        for w in window_slices(self, xp, out, kernel, stride, ones):
            acc = w if acc is None else self.float_add(acc, w)
        if divisor_override:
            return self.float_div(acc, scalar(self, acc, divisor_override))
        per_dim = [
            avg_pool_divisors(*a, count_include_pad)
            for a in zip(spatial, out, kernel, stride, padding)
        ]
        if all(len(set(d)) == 1 for d in per_dim):
            return self.float_div(acc, scalar(self, acc, numel(d[0] for d in per_dim)))
        values = [numel(combo) for combo in itertools.product(*per_dim)]
        div = self.from_data(TensorData.from_values(values, out, self.dtype(acc)))
        return self.float_div(acc, _trailing(self, div, tuple(self.shape(acc))))

    def adaptive_avg_pool(self, x, output_size: tuple):
        """Mean over PyTorch's adaptive windows, one spatial dim at a time (box means are
        separable)."""
        for i, out in enumerate(output_size):
            axis = 2 + i
            shape = tuple(self.shape(x))
            if shape[axis] == out:
                continue
            parts = []
            for start, end in adaptive_ranges(shape[axis], out):
                ranges = tuple(
                    (start, end, 1) if d == axis else (0, s, 1) for d, s in enumerate(shape)
                )
                parts.append(self.float_mean(self.slice(x, ranges), (axis,)))
            x = self.cat(parts, axis) if len(parts) > 1 else parts[0]
        return x

    def interpolate(
        self,
        x,
        size: tuple,
        mode: str,
        align_corners: bool | None,
        scale_factors: tuple | None = None,
    ):
        """Resize spatial dims to ``size``; mode 'nearest', 'nearest-exact', 'linear' or
        'bilinear' (linear along every spatial dim). ``scale_factors`` (the user's, per dim)
        set the coordinate mapping as in PyTorch; None derives it from the sizes."""
        dtype = self.dtype(x)
        for i, out in enumerate(size):
            axis = 2 + i
            in_size = tuple(self.shape(x))[axis]
            sf = scale_factors[i] if scale_factors else None
            if mode in ("nearest", "nearest-exact"):
                idx = nearest_indices(in_size, out, sf, mode == "nearest-exact")
                if idx != list(range(in_size)):
                    x = self.index_select(x, axis, _int64(self, idx))
                continue
            i0, i1, w0, w1 = linear_indices(in_size, out, sf, bool(align_corners))
            a = self.index_select(x, axis, _int64(self, i0))
            c = self.index_select(x, axis, _int64(self, i1))
            shape = tuple(self.shape(a))
            x = self.float_add(
                self.float_mul(a, _along(self, w0, shape, axis, dtype)),
                self.float_mul(c, _along(self, w1, shape, axis, dtype)),
            )
        return x

    def layer_norm(self, x, normalized_ndim: int, weight, bias, eps: float):
        """Normalise over the last ``normalized_ndim`` dims (biased variance); ``weight`` and
        ``bias`` have those dims' shape, or are None."""
        shape = tuple(self.shape(x))
        dims = tuple(range(len(shape) - normalized_ndim, len(shape)))
        mean = self.expand(self.float_mean(x, dims), shape)
        var = self.float_var(x, dims, 0)
        inv = self.float_rsqrt(self.float_add(var, scalar(self, var, eps)))
        y = self.float_mul(self.float_sub(x, mean), self.expand(inv, shape))
        if weight is not None:
            y = self.float_mul(y, _trailing(self, weight, shape))
        if bias is not None:
            y = self.float_add(y, _trailing(self, bias, shape))
        return y

    def batch_norm(self, x, mean, var, weight, bias, eps: float):
        """Inference-form batch norm over dim 1 with given (C,) statistics."""
        shape, dtype = tuple(self.shape(x)), self.dtype(x)
        inv = self.float_rsqrt(self.float_add(var, scalar(self, var, eps)))
        y = self.float_sub(x, _along(self, mean, shape, 1, dtype))
        y = self.float_mul(y, _along(self, inv, shape, 1, dtype))
        if weight is not None:
            y = self.float_mul(y, _along(self, weight, shape, 1, dtype))
        if bias is not None:
            y = self.float_add(y, _along(self, bias, shape, 1, dtype))
        return y
