"""Indexing: ``t[key]`` and ``t[key] = value`` with numpy semantics, gather/scatter, masks,
and ``one_hot``.

``t[key] = value`` is functional under the hood: the tensor swaps its primitive for a new one.
Index tensors reach the backend as in-range int64 (negatives wrapped here).

>>> import ember
>>> x = ember.tensor([[1, 2, 3], [4, 5, 6]])
>>> x[:, ::-1].tolist(), x[x > 3].tolist(), x[[1, 0], 0].tolist()
([[3, 2, 1], [6, 5, 4]], [4, 5, 6], [4, 1])
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field

from .. import dtype as dt
from ..errors import DimensionError, DTypeError, ShapeError, TensorIndexError
from ..shape import broadcast_shapes, normalize_dim, numel
from .state import tracing
from ..tensor import Tensor, check_same_backend, co_locate
from ._dispatch import as_tensor, broadcast_to, full_like_shape, wrap
from .where import nonzero, where
from .shape_ops import broadcast_tensors, flatten, int_tensor, permute, reshape, unsqueeze


def _check_index_dtype(idx: Tensor, op: str) -> None:
    if not (idx.dtype.is_int or idx.dtype.is_bool):
        raise DTypeError(
            f"{op}: tensors used as indices must be integer or bool, got {idx.dtype}"
        )


def wrap_index(idx: Tensor, size: int, op: str, dim: int) -> Tensor:
    """``idx`` as int64 with negatives wrapped; raises TensorIndexError when out of range
    (except inside an ``ember.jit`` trace, which can't read the indices)."""
    _check_index_dtype(idx, op)
    idx = idx.astype(dt.int64)
    n = idx.numel()
    if n == 0:
        return idx
    if tracing(idx):  # ember.jit can't read values: wrap unconditionally, no range check
        return where(idx < 0, idx + size, idx)
    b = idx.backend
    flat = b.reshape(idx._prim, (n,))
    lo_hi = b.cat([b.int_min(flat, (0,)), b.int_max(flat, (0,))], 0)
    lo, hi = b.to_data(lo_hi).values()
    for bad in (lo, hi):
        if not -size <= bad < size:
            raise TensorIndexError(
                f"{op}: index {bad} is out of range for dim {dim} with size {size} "
                f"(valid: {-size} to {size - 1})" if size else
                f"{op}: index {bad} is out of range for dim {dim} with size 0"
            )
    if lo < 0:
        idx = where(idx < 0, idx + size, idx)
    return idx


def _wrap_int(i: int, size: int, dim: int, op: str = "index") -> int:
    if not -size <= i < size:
        raise TensorIndexError(
            f"{op}: index {i} is out of range for dim {dim} with size {size}"
            + (f" (valid: {-size} to {size - 1})" if size else "")
        )
    return i % size


# ---------------------------------------------------------------------- t[key]
@dataclass
class _Plan:
    """How a key applies to a tensor: a strided slice, a reshape that drops int dims and adds
    None dims, then (optionally) one gather for the advanced indices."""

    ranges: list = field(default_factory=list)  # (start, stop, step) per input dim
    sliced: list = field(default_factory=list)  # shape after the slice (input rank)
    basic: list = field(default_factory=list)  # shape after the reshape
    adv: list = field(default_factory=list)  # (dim in `basic`, int64 index tensor)
    adv_at: int | None = None  # where the broadcast index dims go (None: in front)


def _lift_key_item(k, x: Tensor):
    if isinstance(k, (slice, type(None), type(Ellipsis), bool, Tensor)):
        return k
    if isinstance(k, int):
        return k
    if hasattr(k, "__array_interface__") or isinstance(k, (list, tuple)):
        t = as_tensor(k, x) if not isinstance(k, (list, tuple)) or len(k) else int_tensor([], x)
        return t
    try:
        return operator.index(k)  # numpy integer scalars
    except TypeError:
        raise TensorIndexError(
            f"index: only ints, slices, None, ..., bool/int tensors and lists are valid "
            f"indices, got {type(k).__name__}"
        ) from None


_GAP = object()


def _plan(x: Tensor, key) -> _Plan:
    items = key if isinstance(key, tuple) else (key,)
    items = [_lift_key_item(k, x) for k in items]
    # 0-d tensors: an int tensor acts as an int, a bool tensor as a Python bool
    items = [
        (bool(k.item()) if k.dtype.is_bool else int(k.item()))
        if isinstance(k, Tensor) and k.ndim == 0 else k
        for k in items
    ]
    for k in items:
        if isinstance(k, Tensor):
            check_same_backend("index", x, k)
            _check_index_dtype(k, "index")
    consumed = sum(
        k.ndim if isinstance(k, Tensor) and k.dtype.is_bool else
        0 if k is None or k is Ellipsis or isinstance(k, bool) else 1
        for k in items
    )
    n_ellipsis = sum(k is Ellipsis for k in items)
    if n_ellipsis > 1:
        raise TensorIndexError("index: an index can only have a single ellipsis ('...')")
    if consumed > x.ndim:
        raise TensorIndexError(
            f"index: too many indices for a tensor of {x.ndim} dims: {consumed} were indexed"
        )
    fill = [slice(None)] * (x.ndim - consumed)
    if n_ellipsis:
        at = next(i for i, k in enumerate(items) if k is Ellipsis)  # not .index: tensors have ==
        # an ellipsis that covers no dim still separates advanced indices (numpy)
        items = items[:at] + (fill or [_GAP]) + items[at + 1 :]
    else:
        items = items + fill

    p = _Plan()
    has_array = any(isinstance(k, (Tensor, bool)) for k in items)
    adv_entries, first_adv_basic = [], None
    d = 0
    for e, k in enumerate(items):
        if k is _GAP:
            continue
        if isinstance(k, bool):  # numpy: a new size-1 dim indexed by [0] (True) or [] (False)
            adv_entries.append(e)
            first_adv_basic = len(p.basic) if first_adv_basic is None else first_adv_basic
            p.adv.append((len(p.basic), int_tensor([0] if k else [], x)))
            p.basic.append(1)
        elif k is None:
            p.basic.append(1)
        elif isinstance(k, int):
            if has_array:  # numpy counts ints as advanced indices when arrays are present
                adv_entries.append(e)
                first_adv_basic = len(p.basic) if first_adv_basic is None else first_adv_basic
            i = _wrap_int(k, x.shape[d], d)
            p.ranges.append((i, i + 1, 1))
            p.sliced.append(1)
            d += 1
        elif isinstance(k, slice):
            if k.step == 0:
                raise ValueError("index: slice step cannot be zero")
            r = k.indices(x.shape[d])
            if not len(range(*r)):
                r = (0, 0, 1)  # (-1, -1, -1) is empty, but reads as "from the end" to numpy
            p.ranges.append(r)
            p.sliced.append(len(range(*r)))
            p.basic.append(p.sliced[-1])
            d += 1
        else:
            adv_entries.append(e)
            first_adv_basic = len(p.basic) if first_adv_basic is None else first_adv_basic
            if k.dtype.is_bool:
                m = k.ndim
                if k.shape != x.shape[d : d + m]:
                    raise TensorIndexError(
                        f"index: boolean index of shape {k.shape} doesn't match the indexed "
                        f"dims {d}..{d + m - 1} of shape {x.shape}"
                    )
                idxs = nonzero(k, as_tuple=True)
            else:
                m, idxs = 1, (wrap_index(k, x.shape[d], "index", d),)
            for j, idx in enumerate(idxs):
                p.ranges.append((0, x.shape[d + j], 1))
                p.sliced.append(x.shape[d + j])
                p.adv.append((len(p.basic), idx))
                p.basic.append(x.shape[d + j])
            d += m
    if p.adv:
        adjacent = adv_entries == list(range(adv_entries[0], adv_entries[-1] + 1))
        p.adv_at = first_adv_basic if adjacent else None
    return p


def _apply(x: Tensor, p: _Plan) -> Tensor:
    b = x.backend
    y = x
    if p.ranges != [(0, s, 1) for s in x.shape]:
        y = wrap(x, b.slice(x._prim, tuple(p.ranges)))
    y = reshape(y, tuple(p.basic))
    if not p.adv:
        return y
    idxs = broadcast_tensors(*(t for _, t in p.adv))
    bshape = idxs[0].shape
    adv_dims = [a for a, _ in p.adv]
    rest = [i for i in range(y.ndim) if i not in adv_dims]
    rest_shape = tuple(y.shape[i] for i in rest)
    # fold the advanced dims into one and index it with the row-major linear index
    lin = idxs[0]
    for (a, _), idx in zip(p.adv[1:], idxs[1:]):
        lin = lin * y.shape[a] + idx
    n_adv = numel(tuple(y.shape[a] for a in adv_dims))
    folded = reshape(permute(y, adv_dims + rest), (n_adv,) + rest_shape)
    flat_idx = reshape(lin, -1)
    out = wrap(y, b.index_select(folded._prim, 0, flat_idx._prim))
    out = reshape(out, bshape + rest_shape)
    if p.adv_at:
        nb, k = len(bshape), p.adv_at
        order = list(range(nb, nb + k)) + list(range(nb)) + list(range(nb + k, out.ndim))
        out = permute(out, order)
    return out


def getitem(self: Tensor, key) -> Tensor:
    """numpy indexing: ints, slices (any step), None, ``...``, bool masks and int tensors/lists
    (advanced indexing; broadcast index dims go where numpy puts them).

    >>> import ember
    >>> x = ember.tensor([[1, 2, 3], [4, 5, 6]])
    >>> x[-1, 1:].tolist(), x[None, :, 0].shape, x[:, [0, 2]].tolist()
    ([5, 6], (1, 2), [[1, 3], [4, 6]])
    """
    if key is Ellipsis:
        return self
    return _apply(self, _plan(self, key))


def setitem(self: Tensor, key, value) -> None:
    """``t[key] = value``: ``value`` (scalar or tensor) broadcast to ``t[key]``'s shape and cast
    to ``t``'s dtype. Functional: ``t`` gets a new primitive; views of ``t`` are unchanged.

    >>> import ember
    >>> x = ember.zeros(2, 3)
    >>> x[0, 1:] = 5.0
    >>> x[x == 0] = -1.0
    >>> x.tolist()
    [[-1.0, 5.0, 5.0], [-1.0, -1.0, -1.0]]
    """
    if isinstance(value, Tensor) and value.backend is not self.backend:
        # a 0-d host tensor on either side moves to the other's backend, the target included
        target, value = co_locate("setitem", self, value)
        self._prim, self.backend = target._prim, target.backend
    b = self.backend
    v = _value_tensor(value, self)
    if (isinstance(key, Tensor) and key.dtype.is_bool and key.shape == self.shape
            and v.numel() == 1 and key.backend is b):
        self._prim = where(key, reshape(v, ()), self)._prim  # x[mask] = c without a gather
        return
    p = _plan(self, key)
    if not p.adv:
        v = _fit(v, tuple(p.basic))
        v = reshape(v, tuple(p.sliced))
        self._prim = b.slice_assign(self._prim, tuple(p.ranges), v._prim)
        return
    # the flat positions of the targeted elements, by indexing an arange the same way
    positions = reshape(wrap(self, b.arange(self.numel(), dt.int64)), self.shape)
    positions = _apply(positions, p)
    v = _fit(v, positions.shape)
    flat = b.reshape(self._prim, (self.numel(),))
    n = positions.numel()
    new = b.scatter(flat, 0, b.reshape(positions._prim, (n,)), b.reshape(v._prim, (n,)))
    self._prim = b.reshape(new, self.shape)


def _value_tensor(value, like: Tensor) -> Tensor:
    if isinstance(value, Tensor):
        check_same_backend("setitem", like, value)
        return value.astype(like.dtype)
    if isinstance(value, (bool, int, float)):
        return full_like_shape(like, value, like.dtype, ())
    return as_tensor(value, like).astype(like.dtype)


def _fit(v: Tensor, shape: tuple[int, ...]) -> Tensor:
    """``v`` broadcast to ``shape`` (numpy lets leading size-1 dims of the value go)."""
    while v.ndim > len(shape) and v.shape[0] == 1:
        v = reshape(v, v.shape[1:])
    if v.ndim > len(shape) or broadcast_shapes(v.shape, shape, op="setitem") != tuple(shape):
        raise ShapeError(f"setitem: value of shape {v.shape} can't be broadcast to {shape}")
    return broadcast_to(v, tuple(shape), "setitem")




# ---------------------------------------------------------------------- gather / scatter
def _check_like(op: str, x: Tensor, index: Tensor, d: int, other: Tensor | None = None) -> None:
    if index.ndim != x.ndim:
        raise DimensionError(
            f"{op}: index must have the same number of dims as the input: index shape "
            f"{index.shape}, input shape {x.shape}"
        )
    for k, (i, s) in enumerate(zip(index.shape, x.shape)):
        if k != d and i > s:
            raise ShapeError(
                f"{op}: index shape {index.shape} is larger than input shape {x.shape} at "
                f"dim {k}"
            )
    if other is not None and any(i > s for i, s in zip(index.shape, other.shape)):
        raise ShapeError(f"{op}: index shape {index.shape} is larger than src shape {other.shape}")


def gather(self: Tensor, dim: int, index: Tensor) -> Tensor:
    """``out[i][j] = self[i][index[i][j]]`` for dim=1 (PyTorch's ``gather``).

    >>> import ember
    >>> ember.tensor([[1, 2], [3, 4]]).gather(1, ember.tensor([[1, 1], [0, 1]])).tolist()
    [[2, 2], [3, 4]]
    """
    index = as_tensor(index, self)
    check_same_backend("gather", self, index)
    d = normalize_dim(dim, self.ndim, "gather")
    _check_like("gather", self, index, d)
    if self.ndim == 0:
        return reshape(gather(reshape(self, 1), 0, reshape(index, 1)), ())
    idx = wrap_index(index, self.shape[d], "gather", d)
    x = self
    ranges = tuple((0, s if k == d else i, 1) for k, (i, s) in enumerate(zip(index.shape, x.shape)))
    if any(r[1] != s for r, s in zip(ranges, x.shape)):
        x = wrap(x, x.backend.slice(x._prim, ranges))  # a smaller index reads a corner of x
    return wrap(x, x.backend.gather(x._prim, d, idx._prim))


def scatter(self: Tensor, dim: int, index: Tensor, src=None, value=None,
            reduce: str | None = None) -> Tensor:
    """A copy of ``self`` with ``out[i][index[i][j]] = src[i][j]`` for dim=1 (PyTorch's
    ``scatter``); ``src`` may be a scalar (or pass ``value=``); ``reduce='add'`` accumulates.

    >>> import ember
    >>> ember.zeros(3).scatter(0, ember.tensor([2, 0]), ember.tensor([5.0, 7.0])).tolist()
    [7.0, 0.0, 5.0]
    """
    src = value if src is None else src
    if src is None:
        raise ValueError("scatter: needs src (a tensor or scalar) or value")
    modes = {None: "none", "none": "none", "add": "add", "sum": "add"}
    if reduce not in modes:
        raise ValueError(f"scatter: reduce must be None or 'add', got {reduce!r}")
    index = as_tensor(index, self)
    d = normalize_dim(dim, self.ndim, "scatter")
    if isinstance(src, Tensor):
        check_same_backend("scatter", self, index, src)
        _check_like("scatter", self, index, d, src)
        if src.shape != index.shape:
            src = wrap(src, src.backend.slice(src._prim, tuple((0, s, 1) for s in index.shape)))
        src = src.astype(self.dtype)
    else:
        _check_like("scatter", self, index, d)
        src = full_like_shape(self, src, self.dtype, index.shape)
    if self.ndim == 0:
        out = scatter(reshape(self, 1), 0, reshape(index, 1), reshape(src, 1), reduce=reduce)
        return reshape(out, ())
    idx = wrap_index(index, self.shape[d], "scatter", d)
    b = self.backend
    return wrap(self, b.scatter(self._prim, d, idx._prim, src._prim, modes[reduce]))


def scatter_add(self: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """``scatter`` that adds up (duplicate indices accumulate).

    >>> import ember
    >>> z = ember.zeros(3)
    >>> z.scatter_add(0, ember.tensor([0, 2, 0]), ember.tensor([1.0, 2.0, 3.0])).tolist()
    [4.0, 0.0, 2.0]
    """
    return scatter(self, dim, index, src, reduce="add")


def index_select(self: Tensor, dim: int, index) -> Tensor:
    """Slices of ``self`` along ``dim`` picked by a 1-d index.

    >>> import ember
    >>> ember.tensor([[1, 2], [3, 4]]).index_select(0, ember.tensor([1, 1, 0])).tolist()
    [[3, 4], [3, 4], [1, 2]]
    """
    index = as_tensor(index, self)
    d = normalize_dim(dim, self.ndim, "index_select")
    if index.ndim > 1:
        raise DimensionError(f"index_select: index must be 1-d, got shape {index.shape}")
    if self.ndim == 0:
        return reshape(index_select(reshape(self, 1), 0, index), ())
    idx = reshape(wrap_index(index, self.shape[d], "index_select", d), -1)
    return wrap(self, self.backend.index_select(self._prim, d, idx._prim))


def index_add(self: Tensor, dim: int, index, source: Tensor, alpha=1) -> Tensor:
    """A copy of ``self`` with ``source``'s slices added at rows ``index`` along ``dim``.

    >>> import ember
    >>> x = ember.zeros(3, 2)
    >>> x.index_add(0, ember.tensor([0, 2]), ember.ones(2, 2)).tolist()
    [[1.0, 1.0], [0.0, 0.0], [1.0, 1.0]]
    """
    index = as_tensor(index, self)
    d = normalize_dim(dim, self.ndim, "index_add")
    if index.ndim != 1 or source.ndim != self.ndim or source.shape[d] != index.shape[0]:
        raise ShapeError(
            f"index_add: need a 1-d index and source of input's rank with size len(index) "
            f"along dim {d}; got index {index.shape}, source {source.shape}, input {self.shape}"
        )
    if alpha != 1:
        source = source * alpha
    view = [1] * self.ndim
    view[d] = index.shape[0]
    idx = broadcast_to(reshape(index, tuple(view)), source.shape, "index_add")
    return scatter_add(self, d, idx, source)


def take(self: Tensor, index) -> Tensor:
    """Elements of the flattened tensor at ``index`` (result has ``index``'s shape).

    >>> import ember
    >>> ember.tensor([[1, 2], [3, 4]]).take(ember.tensor([[0, 3]])).tolist()
    [[1, 4]]
    """
    index = as_tensor(index, self)
    return reshape(index_select(flatten(self), 0, flatten(index)), index.shape)


def take_along_dim(self: Tensor, indices, dim: int | None = None) -> Tensor:
    """numpy's ``take_along_axis``: ``gather`` with the non-``dim`` dims broadcast.

    >>> import ember
    >>> x = ember.tensor([[10, 30, 20], [60, 40, 50]])
    >>> x.take_along_dim(x.argmax(dim=1, keepdim=True), dim=1).tolist()
    [[30], [60]]
    """
    indices = as_tensor(indices, self)
    if dim is None:
        return gather(flatten(self), 0, flatten(indices))
    d = normalize_dim(dim, self.ndim, "take_along_dim")
    if indices.ndim != self.ndim:
        raise DimensionError(
            f"take_along_dim: input {self.shape} and indices {indices.shape} need the same "
            f"number of dims"
        )
    xs, is_ = list(self.shape), list(indices.shape)
    xs[d] = is_[d] = 1
    common = list(broadcast_shapes(xs, is_, op="take_along_dim"))
    xt, it = common.copy(), common.copy()
    xt[d], it[d] = self.shape[d], indices.shape[d]
    return gather(broadcast_to(self, tuple(xt)), d, broadcast_to(indices, tuple(it)))


def select(self: Tensor, dim: int, index: int) -> Tensor:
    """The slice at ``index`` along ``dim``, that dim removed.

    >>> import ember
    >>> ember.tensor([[1, 2], [3, 4]]).select(1, 0).tolist()
    [1, 3]
    """
    d = normalize_dim(dim, self.ndim, "select")
    return getitem(self, (slice(None),) * d + (index,))


def narrow(self: Tensor, dim: int, start: int, length: int) -> Tensor:
    """Elements ``start .. start + length`` along ``dim``.

    >>> import ember
    >>> ember.arange(6).narrow(0, 2, 3).tolist()
    [2, 3, 4]
    """
    d = normalize_dim(dim, self.ndim, "narrow")
    n = self.shape[d]
    s = start + n if start < 0 else start
    if not 0 <= s <= n or length < 0 or s + length > n:
        raise TensorIndexError(
            f"narrow: start {start} and length {length} don't fit dim {d} of size {n}"
        )
    return getitem(self, (slice(None),) * d + (slice(s, s + length),))


# ---------------------------------------------------------------------- masks
def _as_mask(mask, like: Tensor, op: str) -> Tensor:
    mask = as_tensor(mask, like)
    if not mask.dtype.is_bool:
        raise DTypeError(f"{op}: mask must be a bool tensor, got {mask.dtype}")
    check_same_backend(op, like, mask)
    return mask


def masked_fill(self: Tensor, mask, value) -> Tensor:
    """``value`` where ``mask`` (broadcast to ``self``) is true; keeps ``self``'s dtype.

    >>> import ember
    >>> ember.tensor([1, 2, 3]).masked_fill(ember.tensor([True, False, True]), 0).tolist()
    [0, 2, 0]
    """
    mask = _as_mask(mask, self, "masked_fill")
    if broadcast_shapes(mask.shape, self.shape, op="masked_fill") != self.shape:
        raise ShapeError(f"masked_fill: mask {mask.shape} doesn't broadcast to {self.shape}")
    if isinstance(value, Tensor):
        if value.ndim:
            raise ShapeError(f"masked_fill: value must be a scalar or 0-d, got {value.shape}")
        fill = value.astype(self.dtype)
    else:
        fill = full_like_shape(self, value, self.dtype, ())
    return where(mask, fill, self)


def masked_select(self: Tensor, mask) -> Tensor:
    """The elements where ``mask`` is true, as a 1-d tensor (both broadcast first).

    >>> import ember
    >>> x = ember.tensor([[1, -2], [-3, 4]])
    >>> x.masked_select(x > 0).tolist()
    [1, 4]
    """
    mask = _as_mask(mask, self, "masked_select")
    x, m = broadcast_tensors(self, mask)
    if x.ndim == 0:
        x, m = reshape(x, 1), reshape(m, 1)
    return getitem(x, m)


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 one-hot encoding with a new last dim of ``num_classes`` (max + 1 when -1).

    >>> import ember
    >>> ember.one_hot(ember.tensor([0, 2]), 3).tolist()
    [[1, 0, 0], [0, 0, 1]]
    """
    tensor = as_tensor(tensor)
    if not tensor.dtype.is_int:
        raise DTypeError(f"one_hot: needs an integer tensor, got {tensor.dtype}")
    if num_classes == -1:
        if tensor.numel() == 0:
            raise ShapeError("one_hot: can't infer num_classes from an empty tensor")
        b = tensor.backend
        flat = b.reshape(tensor.astype(dt.int64)._prim, (tensor.numel(),))
        num_classes = int(b.to_data(b.int_max(flat, (0,))).values()[0]) + 1
    if num_classes < 0:
        raise ValueError(f"one_hot: num_classes must be >= 0 or -1, got {num_classes}")
    if tensor.numel():
        b = tensor.backend
        flat = b.reshape(tensor.astype(dt.int64)._prim, (tensor.numel(),))
        lo, hi = b.to_data(b.cat([b.int_min(flat, (0,)), b.int_max(flat, (0,))], 0)).values()
        if lo < 0 or hi >= num_classes:
            bad = lo if lo < 0 else hi
            raise TensorIndexError(
                f"one_hot: class value {bad} is out of range for num_classes {num_classes} "
                f"(valid: 0 to {num_classes - 1})"
            )
    classes = wrap(tensor, tensor.backend.arange(num_classes, dt.int64))
    return (unsqueeze(tensor.astype(dt.int64), -1) == classes).astype(dt.int64)

