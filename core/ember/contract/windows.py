"""Sliding-window and resampling geometry, and the primitive helpers the module ops share.

The pure geometry (divisors, adaptive windows, resampling indices) serves backends' own
kernels too; the helpers build padded inputs and window views from backend primitives.
"""

from __future__ import annotations

import itertools
import math
import struct

from .. import dtype as dt
from ..tensordata import TensorData


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


def along(b, values, shape: tuple[int, ...], axis: int, dtype: dt.DType):
    """A 1-d list (or primitive) of length ``shape[axis]`` broadcast to ``shape`` along ``axis``."""
    if isinstance(values, list):
        values = b.from_data(TensorData.from_values(values, (len(values),), dtype))
    view = [1] * len(shape)
    view[axis] = shape[axis]
    return b.expand(b.reshape(values, tuple(view)), tuple(shape))


def trailing(b, v, shape: tuple[int, ...]):
    """``v`` (shaped like the trailing dims of ``shape``) broadcast to ``shape``."""
    vshape = tuple(b.shape(v))
    view = (1,) * (len(shape) - len(vshape)) + vshape
    return b.expand(b.reshape(v, view), tuple(shape))


def int64_vector(b, values: list[int]):
    return b.from_data(TensorData.from_values(values, (len(values),), dt.int64))


def channels(b, x, start: int, n: int):
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
