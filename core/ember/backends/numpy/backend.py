"""The numpy backend: Ember's CPU default. Primitives are ``numpy.ndarray``s."""

from __future__ import annotations

try:
    import numpy as np
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError("the numpy backend needs numpy: pip install 'ember[numpy]'") from e

import ctypes
import os
import sys

from .quiet import quiet
from ... import dtype as dt
from ...contract import Caps
from ...tensordata import TensorData
from ...errors import TensorIndexError
from .nn import NumpyNNOps
from .ops import NumpyOps
from .quant import NumpyQuantOps

_NP = {d: np.dtype(d.name) for d in dt.ALL}
_EMBER = {v: k for k, v in _NP.items()}
_MALLOC_CHECKED = False


def tune_malloc() -> bool:
    """A speed tip for CPU training: let glibc keep large freed blocks for reuse instead of
    returning them to the OS. Returns True when applied (glibc), False elsewhere.

    By default every array over ~128 KiB (or, after glibc's dynamic adjustment, the freed
    top of the heap beyond 2x the largest block) goes back to the kernel when freed, and the
    next array of that size page-faults on first touch: measured as 35% of an MNIST CNN
    training step (a fresh 3-7 MB array per conv/ReLU/pool op). After this call blocks of up
    to 32 MB come from the heap and 128 MB of free heap is kept.

    It changes malloc for the whole process (the host program, torch, every library), so a
    library must not do it uninvited: ember never calls it by itself. Call it from your
    program, or set ``EMBER_MALLOPT=1`` to have the numpy backend call it when it is first
    created (unless a ``MALLOC_*``/``GLIBC_TUNABLES`` setting is in the environment). The
    ``ember demo mnist`` command opts in.

    >>> from ember.backends.numpy import tune_malloc
    >>> tune_malloc() in (True, False)
    True
    """
    if sys.platform != "linux":
        return False
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018 - glibc only (musl's malloc has no tunables)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    m_trim_threshold, m_mmap_threshold = -1, -3
    mallopt(m_mmap_threshold, 32 << 20)
    mallopt(m_trim_threshold, 128 << 20)
    return True


def _tune_malloc_if_asked() -> None:
    """``EMBER_MALLOPT=1``: :func:`tune_malloc` when the first numpy backend is created, unless
    the user tuned malloc in the environment already."""
    if os.environ.get("EMBER_MALLOPT") != "1":
        return
    if any(k.startswith(("MALLOC_", "GLIBC_TUNABLES")) for k in os.environ):
        return
    tune_malloc()


class NumpyBackend(NumpyQuantOps, NumpyNNOps, NumpyOps):
    """Data, layout, indexing and creation on ``numpy.ndarray``s; the math is inherited from
    :class:`~ember.backends.numpy.ops.NumpyOps`, the module ops from
    :class:`~ember.backends.numpy.nn.NumpyNNOps`."""

    name = "numpy"
    caps = Caps(threadsafe=True, replays_per_op=True)

    def __init__(self):
        global _MALLOC_CHECKED
        if not _MALLOC_CHECKED:
            _MALLOC_CHECKED = True
            _tune_malloc_if_asked()

    # ------------------------------------------------------------------ data
    def from_data(self, data: TensorData):
        arr = np.frombuffer(data.buffer, dtype=_NP[data.dtype].newbyteorder("<"))
        return arr.astype(_NP[data.dtype]).reshape(data.shape)

    def to_data(self, x) -> TensorData:
        shape = x.shape  # ascontiguousarray turns 0-d arrays into 1-d ones
        x = np.ascontiguousarray(x)
        return TensorData(x.astype(x.dtype.newbyteorder("<"), copy=False).tobytes(), shape,
                          _EMBER[x.dtype])

    def copy_into(self, dst, src) -> None:
        """Write ``src``'s values into ``dst``'s array, in place (``ember.jit``'s state
        updates: primitives are otherwise never written)."""
        np.copyto(dst, src)

    def shape(self, x):
        return x.shape

    def dtype(self, x):
        return _EMBER[x.dtype]

    def cast(self, x, dtype):
        with quiet():
            if dtype.is_bool:
                return x != 0
            return x.astype(_NP[dtype])

    def full(self, shape, value, dtype):
        # one element seen through zero strides: scalar operands cost nothing at any size
        # (a third of np.broadcast_to's time); read-only, as primitives are never written
        one = np.array(value, dtype=_NP[dtype])
        out = np.ndarray(shape, one.dtype, one, 0, (0,) * len(shape))
        out.flags.writeable = False
        return out

    def compile_tape(self, tape):
        """An ``ember.jit`` tape as closures over raw arrays, reusing single-use fresh
        values in place (:mod:`.compile`)."""
        from .compile import compile_tape

        return compile_tape(self, tape)

    def fusion_compiler(self):
        """What :class:`~ember.fusion.Fusion` runs fused elementwise chains with."""
        from .fused import NumpyFusion

        return NumpyFusion(_NP)

    def arange(self, n, dtype):
        return np.arange(n, dtype=_NP[dtype])

    # ------------------------------------------------------------------ layout
    def reshape(self, x, shape):
        return x.reshape(shape)

    def permute(self, x, axes):
        return x.transpose(axes)

    def expand(self, x, shape):
        return np.broadcast_to(x, shape)

    def slice(self, x, ranges):
        return x[_slices(ranges)]

    def slice_assign(self, x, ranges, value):
        out = np.array(x, copy=True)
        out[_slices(ranges)] = value
        return out

    def cat(self, xs, dim):
        return np.concatenate(xs, axis=dim)

    def gather(self, x, dim, index):
        self._check_index("gather", index, x.shape[dim])
        # the contract lets index be smaller than x in the other dims; numpy wants them equal
        x = x[tuple(slice(0, None if d == dim else s) for d, s in enumerate(index.shape))]
        return np.take_along_axis(x, index, axis=dim)

    def scatter(self, x, dim, index, src, reduce="none"):
        self._check_index("scatter", index, x.shape[dim])
        out = np.array(x, copy=True)
        idx = list(np.indices(index.shape, sparse=True))
        idx[dim] = index
        if reduce == "add":
            np.add.at(out, tuple(idx), src)
        else:
            out[tuple(idx)] = src
        return out

    def index_select(self, x, dim, index):
        self._check_index("index_select", index, x.shape[dim])
        return np.take(x, index, axis=dim)

    def where(self, cond, a, b):
        bits = _BITS.get(a.dtype.itemsize)
        if (
            cond.size < 1024
            or bits is None
            or cond.dtype != np.bool_
            or a.dtype != b.dtype
            or not cond.shape == a.shape == b.shape
        ):
            return np.where(cond, a, b)
        # np.where branches per element: ~20x slower than a bit select on unpredictable masks
        # (ReLU / max-pool backward). Exact: each result keeps a's or b's bits.
        m = np.negative(cond.view(np.int8), dtype=bits)  # all ones where cond
        ab, bb = a.view(bits), b.view(bits)
        if _is_zero_fill(b):
            return np.bitwise_and(ab, m, out=m).view(a.dtype)
        if _is_zero_fill(a):
            return np.bitwise_and(bb, np.invert(m, out=m), out=m).view(a.dtype)
        out = np.bitwise_xor(ab, bb)
        out &= m
        out ^= bb
        return out.view(a.dtype)

    @staticmethod
    def _check_index(op, index, size):
        if index.size and (index.min() < 0 or index.max() >= size):
            raise TensorIndexError(
                f"{op}: index {int(index.max() if index.max() >= size else index.min())} is out "
                f"of range for a dim of size {size} (valid: 0 to {size - 1})"
            )

    def random_uniform(self, shape, dtype, seed, offset):
        from .philox import philox_uniform

        return philox_uniform(shape, seed, offset).astype(_NP[dtype])


_BITS = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}


def _is_zero_fill(x) -> bool:
    """A broadcast scalar (``full``) whose bits are all zero (+0.0, 0, False)."""
    return not any(x.strides) and not x.view(_BITS[x.dtype.itemsize]).flat[0]


def _slices(ranges) -> tuple:
    """Normalised (start, stop, step) triples as numpy slices (a stop of -1 with a negative
    step means "past index 0", which numpy would read as the last element)."""
    out = []
    for start, stop, step in ranges:
        n = len(range(start, stop, step))
        if n == 0:
            out.append(slice(0, 0))
        else:
            end = start + step * n
            out.append(slice(start, None if end < 0 else end, step))
    return tuple(out)
