"""Data movement ops, the same for every dtype (hence no kind prefix)."""

from __future__ import annotations

from .. import dtype as dt
from ..data import TensorData
from ..random import philox_uniform
from ..shape import numel
from .required import required

Range = tuple[int, int, int]  # (start, stop, step) as from slice.indices(size)


class TensorOps:
    # ---------------------------------------------------------------- required primitives
    @required
    def from_data(self, data: TensorData):
        """A primitive holding ``data`` (its dtype and shape)."""

    @required
    def to_data(self, x) -> TensorData:
        """The values of ``x`` as TensorData (synchronous; may wait for a device)."""

    @required
    def shape(self, x) -> tuple[int, ...]:
        """The shape of ``x``."""

    @required
    def dtype(self, x) -> dt.DType:
        """The dtype of ``x``."""

    @required
    def cast(self, x, dtype: dt.DType):
        """``x`` converted to ``dtype``: float→int truncates toward zero, int→int wraps around,
        anything→bool is ``!= 0``. NaN/inf → int is unspecified (numpy gives INT_MIN)."""

    @required
    def reshape(self, x, shape: tuple[int, ...]):
        """Row-major reshape; ``shape`` is fully resolved (no -1) with the same element count."""

    @required
    def permute(self, x, axes: tuple[int, ...]):
        """Reorder dims: output dim i is input dim ``axes[i]``."""

    @required
    def expand(self, x, shape: tuple[int, ...]):
        """Broadcast to ``shape`` of the same rank; only size-1 dims grow (may be a view)."""

    @required
    def slice(self, x, ranges: tuple[Range, ...]):
        """Strided slice: one ``(start, stop, step)`` per dim, normalised like
        ``slice.indices(size)`` so ``range(start, stop, step)`` lists the kept indices (steps
        may be negative)."""

    @required
    def slice_assign(self, x, ranges: tuple[Range, ...], value):
        """A copy of ``x`` with the slice ``ranges`` replaced by ``value`` (same shape/dtype as
        the slice). Functional: ``x`` is unchanged."""

    @required
    def cat(self, xs: list, dim: int):
        """Concatenate same-dtype tensors along ``dim`` (other dims equal)."""

    @required
    def gather(self, x, dim: int, index):
        """``out[i][j][k] = x[i][index[i][j][k]][k]`` for dim=1 (torch.gather). ``index`` is
        int64 with the rank of ``x``; its sizes may be smaller than ``x``'s except along dim."""

    @required
    def scatter(self, x, dim: int, index, src, reduce: str = "none"):
        """A copy of ``x`` where ``out[i][index[i][j]] = src[i][j]`` for dim=1 (torch.scatter);
        ``reduce="add"`` accumulates instead (duplicates add up). ``index`` and ``src`` have
        the same shape."""

    @required
    def where(self, cond, a, b):
        """Elementwise ``a if cond else b``; all three have one shape, ``a``/``b`` one dtype."""

    # ---------------------------------------------------------------- composites
    def full(self, shape: tuple[int, ...], value: bool | int | float, dtype: dt.DType):
        """A tensor of ``shape`` filled with ``value``."""
        one = self.from_data(TensorData.from_values([value], (), dtype))
        return self.expand(self.reshape(one, (1,) * len(shape)), tuple(shape)) if shape else one

    def arange(self, n: int, dtype: dt.DType):
        """``[0, 1, ..., n-1]`` as ``dtype``."""
        return self.from_data(TensorData.from_values(range(n), (n,), dtype))

    def index_select(self, x, dim: int, index):
        """Rows of ``x`` along ``dim`` picked by the 1-d int64 ``index``."""
        shape = self.shape(x)
        view = [1] * len(shape)
        view[dim] = self.shape(index)[0]
        target = list(shape)
        target[dim] = view[dim]
        idx = self.expand(self.reshape(index, tuple(view)), tuple(target))
        return self.gather(x, dim, idx)

    def flip(self, x, dims: tuple[int, ...]):
        """Reverse the order along ``dims``."""
        ranges = tuple(
            (s - 1, -1 if s else 0, -1) if d in dims else (0, s, 1)
            for d, s in enumerate(self.shape(x))
        )
        return self.slice(x, ranges)

    def random_uniform(self, shape: tuple[int, ...], dtype: dt.DType, seed: int, offset: int):
        """Uniform [0, 1) numbers from the counter-based Philox4x32-10 stream ``(seed, offset)``.

        Backends overriding this must produce the same numbers, so a seed gives the same
        tensor on every backend.
        """
        values = philox_uniform(numel(shape), seed, offset)
        return self.from_data(TensorData.from_values(values, shape, dtype))
