"""Shape ops: reshape, squeeze, permute, expand, repeat, cat/stack/split, flip, roll, pad.

These only move data; they never change values, so they work for every dtype.

>>> import ember
>>> x = ember.tensor([[1, 2, 3], [4, 5, 6]])
>>> x.reshape(3, -1).T.shape
(2, 3)
"""

from __future__ import annotations

from collections.abc import Sequence

from .. import dtype as dt
from ..tensordata import TensorData
from ..errors import DimensionError, ShapeError
from ..shape import broadcast_shapes, infer_reshape, normalize_dim, numel
from ..tensor import Tensor, check_same_backend
from ._dispatch import as_tensor, result_dtype, wrap
from ._dispatch import broadcast_to as _broadcast_to


def size_args(sizes: tuple, op: str) -> tuple[int, ...]:
    """Accept ``f(2, 3)`` and ``f((2, 3))`` (and a torch-style ``Size``/list)."""
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    try:
        return tuple(int(s) for s in sizes)
    except (TypeError, ValueError):
        raise ShapeError(f"{op}: sizes must be ints, got {sizes!r}") from None


def dims_arg(dims: tuple, ndim: int, op: str) -> tuple[int, ...]:
    """Normalise a dim list given as ``f(0, 1)`` or ``f((0, 1))``, keeping its order."""
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = tuple(dims[0])
    return tuple(normalize_dim(d, ndim, op) for d in dims)


def int_tensor(values: Sequence[int], like: Tensor) -> Tensor:
    """A 1-d int64 tensor on ``like``'s backend from Python ints."""
    b = like.backend
    return Tensor(b.from_data(TensorData.from_values(list(values), (len(values),), dt.int64)), b)


# ---------------------------------------------------------------------- reshape family
def reshape(self: Tensor, *shape) -> Tensor:
    """Same values in a new shape (one dim may be -1); ``reshape(2, 3)`` or ``reshape((2, 3))``.

    >>> import ember
    >>> ember.tensor([1, 2, 3, 4]).reshape(2, -1).tolist()
    [[1, 2], [3, 4]]
    """
    target = infer_reshape(size_args(shape, "reshape"), self.numel(), "reshape", self.shape)
    if target == self.shape:
        return self
    return wrap(self, self.backend.reshape(self._prim, target))


view = reshape


def flatten(self: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merge dims ``start_dim..end_dim`` into one (a 0-d tensor becomes shape (1,)).

    >>> import ember
    >>> ember.zeros(2, 3, 4).flatten(1).shape
    (2, 12)
    """
    if self.ndim == 0:
        return reshape(self, 1)
    s = normalize_dim(start_dim, self.ndim, "flatten")
    e = normalize_dim(end_dim, self.ndim, "flatten")
    if s > e:
        raise DimensionError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim}")
    shape = self.shape
    return reshape(self, shape[:s] + (numel(shape[s : e + 1]),) + shape[e + 1 :])


def ravel(input: Tensor) -> Tensor:
    """The tensor as 1-d (numpy's ``ravel``; ``flatten`` with no arguments).

    >>> import ember
    >>> ember.tensor([[1, 2], [3, 4]]).ravel().tolist()
    [1, 2, 3, 4]
    """
    return flatten(input)


def unflatten(self: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:
    """Split dim ``dim`` into ``sizes`` (one may be -1).

    >>> import ember
    >>> ember.zeros(2, 12).unflatten(1, (3, -1)).shape
    (2, 3, 4)
    """
    d = normalize_dim(dim, self.ndim, "unflatten")
    inner = infer_reshape(sizes, self.shape[d], "unflatten")
    return reshape(self, self.shape[:d] + inner + self.shape[d + 1 :])


def squeeze(self: Tensor, dim: int | Sequence[int] | None = None) -> Tensor:
    """Drop size-1 dims (all, or those of ``dim`` that have size 1, like PyTorch).

    >>> import ember
    >>> ember.zeros(1, 3, 1).squeeze().shape
    (3,)
    """
    if dim is None:
        dims = set(range(self.ndim))
    else:
        dims = set(dims_arg((dim,) if isinstance(dim, int) else tuple(dim), self.ndim, "squeeze"))
    shape = tuple(s for i, s in enumerate(self.shape) if not (i in dims and s == 1))
    return reshape(self, shape)


def unsqueeze(self: Tensor, dim: int) -> Tensor:
    """Insert a size-1 dim at ``dim`` (valid: -ndim-1 to ndim).

    >>> import ember
    >>> ember.zeros(3).unsqueeze(-1).shape
    (3, 1)
    """
    d = normalize_dim(dim, self.ndim + 1, "unsqueeze")
    return reshape(self, self.shape[:d] + (1,) + self.shape[d:])


def atleast_1d(x: Tensor) -> Tensor:
    """``x`` with at least one dim: a 0-d tensor becomes shape (1,).

    >>> import ember
    >>> ember.atleast_1d(ember.tensor(5)).tolist()
    [5]
    """
    return reshape(x, 1) if x.ndim == 0 else x


def atleast_2d(x: Tensor) -> Tensor:
    """``x`` with at least two dims: leading dims of size 1 are added.

    >>> import ember
    >>> ember.atleast_2d(ember.tensor([1, 2])).shape
    (1, 2)
    """
    return reshape(x, (1,) * (2 - x.ndim) + x.shape) if x.ndim < 2 else x


# ---------------------------------------------------------------------- dim order
def permute(self: Tensor, *dims) -> Tensor:
    """Reorder dims: output dim i is input dim ``dims[i]``.

    >>> import ember
    >>> ember.zeros(2, 3, 4).permute(2, 0, 1).shape
    (4, 2, 3)
    """
    axes = dims_arg(dims, self.ndim, "permute")
    if sorted(axes) != list(range(self.ndim)):
        raise DimensionError(
            f"permute: dims {tuple(dims[0] if len(dims) == 1 else dims)} are not a permutation "
            f"of the {self.ndim} dims of shape {self.shape}"
        )
    if axes == tuple(range(self.ndim)):
        return self
    return wrap(self, self.backend.permute(self._prim, axes))


def transpose(self: Tensor, dim0: int, dim1: int) -> Tensor:
    """Swap two dims.

    >>> import ember
    >>> ember.zeros(2, 3, 4).transpose(0, -1).shape
    (4, 3, 2)
    """
    a = normalize_dim(dim0, self.ndim, "transpose")
    b = normalize_dim(dim1, self.ndim, "transpose")
    if self.ndim == 0:
        return self
    axes = list(range(self.ndim))
    axes[a], axes[b] = axes[b], axes[a]
    return permute(self, axes)


swapaxes = transpose
swapdims = transpose


def t(self: Tensor) -> Tensor:
    """PyTorch's ``t()``: transpose of a tensor with at most 2 dims.

    >>> import ember
    >>> ember.tensor([[1, 2, 3]]).t().tolist()
    [[1], [2], [3]]
    """
    if self.ndim > 2:
        raise DimensionError(f"t: expects a tensor with <= 2 dims, got shape {self.shape}")
    return transpose(self, 0, -1) if self.ndim == 2 else self


def T(self: Tensor) -> Tensor:
    """All dims reversed (numpy's ``.T``).

    >>> import ember
    >>> ember.zeros(2, 3, 4).T.shape
    (4, 3, 2)
    """
    return permute(self, tuple(reversed(range(self.ndim))))


def mT(self: Tensor) -> Tensor:
    """The last two dims swapped (a batch of matrix transposes).

    >>> import ember
    >>> ember.zeros(5, 2, 3).mT.shape
    (5, 3, 2)
    """
    if self.ndim < 2:
        raise DimensionError(f"mT: needs at least 2 dims, got shape {self.shape}")
    return transpose(self, -2, -1)




def movedim(self: Tensor, source, destination) -> Tensor:
    """Move dims ``source`` to positions ``destination`` (ints or sequences), others keep order.

    >>> import ember
    >>> ember.zeros(2, 3, 4).movedim(0, -1).shape
    (3, 4, 2)
    """
    src = dims_arg((source,) if isinstance(source, int) else tuple(source), self.ndim, "movedim")
    dst = dims_arg(
        (destination,) if isinstance(destination, int) else tuple(destination), self.ndim,
        "movedim",
    )
    if len(src) != len(dst):
        raise DimensionError(
            f"movedim: source {source} and destination {destination} differ in length"
        )
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise DimensionError(
            f"movedim: repeated dim in source {source} or destination {destination}"
        )
    order = [None] * self.ndim
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(i for i in range(self.ndim) if i not in src)
    return permute(self, tuple(o if o is not None else next(rest) for o in order))


moveaxis = movedim


# ---------------------------------------------------------------------- broadcasting
def expand(self: Tensor, *sizes) -> Tensor:
    """Broadcast to ``sizes`` (-1 keeps a dim); new dims may be added in front. A view-like
    result: do not write to it.

    >>> import ember
    >>> ember.tensor([[1], [2]]).expand(2, 3).tolist()
    [[1, 1, 1], [2, 2, 2]]
    """
    sizes = size_args(sizes, "expand")
    if len(sizes) < self.ndim:
        raise ShapeError(
            f"expand: the number of sizes ({len(sizes)}) must be >= the tensor's dims "
            f"({self.ndim}); shape {self.shape} to {sizes}"
        )
    lead = len(sizes) - self.ndim
    target = []
    for i, s in enumerate(sizes):
        own = self.shape[i - lead] if i >= lead else None
        if s == -1:
            if own is None:
                raise ShapeError(f"expand: -1 is not allowed for the new leading dim {i}")
            s = own
        elif s < 0:
            raise ShapeError(f"expand: negative size {s} in {sizes}")
        if own is not None and own != 1 and own != s:
            raise ShapeError(
                f"expand: shape {self.shape} can't expand to {sizes}: dim {i} has size {own} "
                f"(only size-1 dims can grow)"
            )
        target.append(s)
    return _broadcast_to(self, tuple(target), "expand")


def expand_as(self: Tensor, other: Tensor) -> Tensor:
    """``self`` broadcast (without copying) to ``other``'s shape.

    >>> import ember
    >>> ember.tensor([[1], [2]]).expand_as(ember.zeros(2, 3)).tolist()
    [[1, 1, 1], [2, 2, 2]]
    """
    return expand(self, other.shape)


def broadcast_to(self: Tensor, shape) -> Tensor:
    """numpy's ``broadcast_to``.

    >>> import ember
    >>> ember.broadcast_to(ember.tensor([1, 2]), (2, 2)).tolist()
    [[1, 2], [1, 2]]
    """
    x = as_tensor(self)
    shape = size_args((shape,), "broadcast_to")
    if len(shape) < x.ndim or broadcast_shapes(x.shape, shape, op="broadcast_to") != shape:
        raise ShapeError(f"broadcast_to: shape {x.shape} can't be broadcast to {shape}")
    return _broadcast_to(x, shape, "broadcast_to")


def broadcast_tensors(*tensors: Tensor) -> tuple[Tensor, ...]:
    """All tensors broadcast to their common shape.

    >>> import ember
    >>> a, b = ember.broadcast_tensors(ember.tensor([1, 2]), ember.tensor([[10], [20]]))
    >>> a.tolist(), b.tolist()
    ([[1, 2], [1, 2]], [[10, 10], [20, 20]])
    """
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    shape = broadcast_shapes(*(t.shape for t in tensors), op="broadcast_tensors")
    return tuple(_broadcast_to(t, shape, "broadcast_tensors") for t in tensors)


def repeat(self: Tensor, *repeats) -> Tensor:
    """Tile the whole tensor (PyTorch's ``repeat``; numpy's ``tile``): ``len(repeats)`` must
    be >= ndim, extra repeats add leading dims.

    >>> import ember
    >>> ember.tensor([1, 2]).repeat(2, 2).tolist()
    [[1, 2, 1, 2], [1, 2, 1, 2]]
    """
    reps = size_args(repeats, "repeat")
    if len(reps) < self.ndim:
        raise ShapeError(
            f"repeat: number of repeats ({len(reps)}) can't be smaller than the tensor's dims "
            f"({self.ndim})"
        )
    if any(r < 0 for r in reps):
        raise ShapeError(f"repeat: negative repeat count in {reps}")
    shape = (1,) * (len(reps) - self.ndim) + self.shape
    # (1, s0, 1, s1, ...) expanded to (r0, s0, r1, s1, ...): the outer index walks the copies
    inter = tuple(v for s in shape for v in (1, s))
    big = tuple(v for r, s in zip(reps, shape) for v in (r, s))
    x = reshape(self, inter)
    x = _broadcast_to(x, big, "repeat")
    return reshape(x, tuple(r * s for r, s in zip(reps, shape)))


def tile(self: Tensor, *reps) -> Tensor:
    """numpy/PyTorch ``tile``: like ``repeat`` but fewer reps than dims pad with 1s in front.

    >>> import ember
    >>> ember.tensor([[1, 2]]).tile(2).tolist()
    [[1, 2, 1, 2]]
    >>> ember.tensor([1, 2]).tile(2, 1).tolist()
    [[1, 2], [1, 2]]
    """
    reps = size_args(reps, "tile")
    return repeat(self, (1,) * (self.ndim - len(reps)) + reps)


# ---------------------------------------------------------------------- joining
def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Concatenate along an existing dim; dtypes promote (PyTorch rules).

    >>> import ember
    >>> ember.cat([ember.tensor([1, 2]), ember.tensor([3.5])]).tolist()
    [1.0, 2.0, 3.5]
    """
    tensors = [as_tensor(t) for t in tensors]
    if not tensors:
        raise ShapeError("cat: expected a non-empty sequence of tensors")
    check_same_backend("cat", *tensors)
    # PyTorch's legacy rule: 1-d empty tensors are skipped when joining higher-rank tensors
    ranks = {t.ndim for t in tensors if not (t.ndim == 1 and t.shape[0] == 0)}
    if ranks and max(ranks) > 1:
        kept = [t for t in tensors if not (t.ndim == 1 and t.shape[0] == 0)]
    else:
        kept = tensors
    target = result_dtype("cat", *tensors)
    first = kept[0]
    if first.ndim == 0:
        raise ShapeError("cat: zero-dimensional tensors can't be concatenated; use stack")
    d = normalize_dim(dim, first.ndim, "cat")
    for i, t in enumerate(kept):
        if t.ndim != first.ndim or any(
            a != b for j, (a, b) in enumerate(zip(t.shape, first.shape)) if j != d
        ):
            raise ShapeError(
                f"cat: tensor {i} has shape {t.shape}, expected {first.shape} except along "
                f"dim {d}"
            )
    kept = [t.astype(target) for t in kept]
    if len(kept) == 1:
        return kept[0]
    b = first.backend
    return Tensor(b.cat([t._prim for t in kept], d), b)


def concatenate(tensors: Sequence[Tensor], axis: int = 0) -> Tensor:
    """numpy's name for :func:`cat`.

    >>> import ember
    >>> ember.concatenate([ember.tensor([1]), ember.tensor([2, 3])]).tolist()
    [1, 2, 3]
    """
    return cat(tensors, axis)


concat = cat


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Join same-shape tensors along a new dim.

    >>> import ember
    >>> ember.stack([ember.tensor([1, 2]), ember.tensor([3, 4])], dim=1).tolist()
    [[1, 3], [2, 4]]
    """
    tensors = [as_tensor(t) for t in tensors]
    if not tensors:
        raise ShapeError("stack: expected a non-empty sequence of tensors")
    for i, t in enumerate(tensors):
        if t.shape != tensors[0].shape:
            raise ShapeError(
                f"stack: all tensors need one shape; tensor 0 is {tensors[0].shape}, "
                f"tensor {i} is {t.shape}"
            )
    d = normalize_dim(dim, tensors[0].ndim + 1, "stack")
    return cat([unsqueeze(t, d) for t in tensors], d)


def hstack(tensors: Sequence[Tensor]) -> Tensor:
    """Join along dim 1 (dim 0 for 1-d tensors).

    >>> import ember
    >>> ember.hstack([ember.tensor([[1], [2]]), ember.tensor([[3], [4]])]).tolist()
    [[1, 3], [2, 4]]
    """
    tensors = [atleast_1d(as_tensor(t)) for t in tensors]
    return cat(tensors, 0 if tensors[0].ndim == 1 else 1)


def vstack(tensors: Sequence[Tensor]) -> Tensor:
    """Join along dim 0, 1-d tensors becoming rows.

    >>> import ember
    >>> ember.vstack([ember.tensor([1, 2]), ember.tensor([3, 4])]).tolist()
    [[1, 2], [3, 4]]
    """
    return cat([atleast_2d(as_tensor(t)) for t in tensors], 0)


# ---------------------------------------------------------------------- splitting
def _slice_dim(x: Tensor, d: int, start: int, stop: int, step: int = 1) -> Tensor:
    ranges = tuple((start, stop, step) if i == d else (0, s, 1) for i, s in enumerate(x.shape))
    return wrap(x, x.backend.slice(x._prim, ranges))


def split(self: Tensor, split_size_or_sections, dim: int = 0) -> tuple[Tensor, ...]:
    """Pieces of size ``split_size`` (the last may be smaller) or of the listed sizes.

    >>> import ember
    >>> [p.tolist() for p in ember.tensor([1, 2, 3, 4, 5]).split([2, 3])]
    [[1, 2], [3, 4, 5]]
    """
    d = normalize_dim(dim, self.ndim, "split")
    if self.ndim == 0:
        raise DimensionError("split: can't split a 0-d tensor")
    n = self.shape[d]
    if isinstance(split_size_or_sections, int):
        size = split_size_or_sections
        if size <= 0 and not (size == 0 and n == 0):
            raise ShapeError(f"split: split_size must be positive, got {size}")
        sizes = [min(size, n - i) for i in range(0, n, size)] if n else [0]
    else:
        sizes = [int(s) for s in split_size_or_sections]
        if sum(sizes) != n or any(s < 0 for s in sizes):
            raise ShapeError(
                f"split: sections {sizes} must be non-negative and sum to the size of dim {d} "
                f"({n})"
            )
    out, start = [], 0
    for s in sizes:
        out.append(_slice_dim(self, d, start, start + s))
        start += s
    return tuple(out)


def chunk(self: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    """Up to ``chunks`` pieces of equal size (``ceil(n / chunks)``; the last may be smaller).

    >>> import ember
    >>> [c.tolist() for c in ember.arange(5).chunk(3)]
    [[0, 1], [2, 3], [4]]
    """
    if chunks <= 0:
        raise ShapeError(f"chunk: chunks must be positive, got {chunks}")
    d = normalize_dim(dim, self.ndim, "chunk")
    n = self.shape[d] if self.ndim else 0
    return split(self, -(-n // chunks), d) if n else split(self, [0], d)


def unbind(self: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    """The slices along ``dim``, that dim removed.

    >>> import ember
    >>> [r.tolist() for r in ember.tensor([[1, 2], [3, 4]]).unbind(dim=1)]
    [[1, 3], [2, 4]]
    """
    d = normalize_dim(dim, self.ndim, "unbind")
    shape = self.shape[:d] + self.shape[d + 1 :]
    return tuple(reshape(_slice_dim(self, d, i, i + 1), shape) for i in range(self.shape[d]))


# ---------------------------------------------------------------------- reordering
def flip(self: Tensor, *dims) -> Tensor:
    """Reverse the order of elements along ``dims``.

    >>> import ember
    >>> ember.tensor([[1, 2], [3, 4]]).flip(1).tolist()
    [[2, 1], [4, 3]]
    """
    axes = tuple(sorted(set(dims_arg(dims, self.ndim, "flip"))))
    if self.ndim == 0 or not axes:
        return self
    return wrap(self, self.backend.flip(self._prim, axes))


def fliplr(self: Tensor) -> Tensor:
    """Reverse the columns (dim 1) of a tensor with at least 2 dims.

    >>> import ember
    >>> ember.tensor([[1, 2], [3, 4]]).fliplr().tolist()
    [[2, 1], [4, 3]]
    """
    if self.ndim < 2:
        raise DimensionError(f"fliplr: needs at least 2 dims, got shape {self.shape}")
    return flip(self, 1)


def flipud(self: Tensor) -> Tensor:
    """Reverse the rows (dim 0) of a tensor with at least 1 dim.

    >>> import ember
    >>> ember.tensor([[1, 2], [3, 4]]).flipud().tolist()
    [[3, 4], [1, 2]]
    """
    if self.ndim < 1:
        raise DimensionError("flipud: needs at least 1 dim, got a 0-d tensor")
    return flip(self, 0)


def roll(self: Tensor, shifts, dims=None) -> Tensor:
    """Rotate elements along ``dims`` by ``shifts`` (flattened first when ``dims`` is None).

    >>> import ember
    >>> ember.tensor([1, 2, 3, 4]).roll(1).tolist()
    [4, 1, 2, 3]
    """
    if dims is None:
        if not isinstance(shifts, int):
            raise ShapeError(f"roll: with dims=None, shifts must be one int, got {shifts!r}")
        return reshape(roll(flatten(self), shifts, 0), self.shape)
    shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(shifts) != len(dims):
        raise ShapeError(f"roll: shifts {shifts} and dims {dims} differ in length")
    out = self
    for s, dim in zip(shifts, dims):
        d = normalize_dim(dim, self.ndim, "roll")
        n = out.shape[d] if out.ndim else 1
        if n == 0 or s % n == 0 or out.ndim == 0:
            continue
        s %= n
        out = cat([_slice_dim(out, d, n - s, n), _slice_dim(out, d, 0, n - s)], d)
    return out
