"""Data, layout, indexing and creation ops: the same for every dtype (hence no kind prefix).

``Range`` is ``(start, stop, step)`` normalised like ``slice.indices(size)``, so
``range(start, stop, step)`` lists the kept indices (steps may be negative). Index tensors are
int64 with values already in range (non-negative).
"""

from __future__ import annotations

from .. import dtype as dt
from ..random import philox_uniform
from ..shape import numel
from ..tensordata import TensorData
from . import infer
from . import prims
from .registry import Kind, declare

M, IDX, C, D = Kind.MOVEMENT, Kind.INDEX, Kind.CREATION, Kind.DATA

# ---------------------------------------------------------------------- data (no graph node)
from_data = declare("from_data", C, "data", infer.from_data, differentiable=False,
                    doc="A primitive holding ``data`` (its dtype and shape).")
to_data = declare("to_data", D, "x", infer.metadata, differentiable=False,
                  doc="The values of ``x`` as TensorData (synchronous; may wait for a device).")
to_data_async = declare(
    "to_data_async", D, "x", infer.metadata, differentiable=False,
    doc="``await`` the values of ``x`` (browsers whose GPU reads can't block).",
)
shape = declare("shape", D, "x", infer.metadata, differentiable=False, doc="The shape of ``x``.")
dtype = declare("dtype", D, "x", infer.metadata, differentiable=False, doc="The dtype of ``x``.")

# ---------------------------------------------------------------------- layout
reshape = declare("reshape", M, "x, shape", infer.reshape,
                  doc="Row-major reshape; ``shape`` is resolved (no -1), same element count.")
permute = declare("permute", M, "x, axes", infer.permute,
                  doc="Reorder dims: output dim i is input dim ``axes[i]``.")
expand = declare("expand", M, "x, shape", infer.reshape,
                 doc="Broadcast to ``shape`` of the same rank; only size-1 dims grow (a view).")
slice = declare("slice", M, "x, ranges", infer.slice_,  # noqa: A001 - the op's name
                doc="Strided slice: one ``Range`` per dim.")
slice_assign = declare("slice_assign", IDX, "x, ranges, value", infer.same, tensors="x, value",
                       doc="A copy of ``x`` with the slice ``ranges`` replaced by ``value`` (same "
                       "shape/dtype as the slice). Functional: ``x`` is unchanged.")
cat = declare("cat", M, "xs, dim", infer.cat, tensors="xs",
              doc="Concatenate same-dtype tensors along ``dim`` (other dims equal).")
flip = declare("flip", M, "x, dims", infer.same, doc="Reverse the order along ``dims``.")

# ---------------------------------------------------------------------- indexing
gather = declare("gather", IDX, "x, dim, index", infer.gather, tensors="x, index",
                 doc="``out[i][j][k] = x[i][index[i][j][k]][k]`` for dim=1 (torch.gather); "
                 "``index`` has the rank of ``x``, its sizes may be smaller except along dim.")
scatter = declare("scatter", IDX, "x, dim, index, src, reduce='none'", infer.same,
                  tensors="x, index, src",
                  doc="A copy of ``x`` where ``out[i][index[i][j]] = src[i][j]`` for dim=1 "
                  "(torch.scatter); ``reduce='add'`` accumulates (duplicates add up).")
index_select = declare("index_select", IDX, "x, dim, index", infer.index_select,
                       tensors="x, index",
                       doc="Rows of ``x`` along ``dim`` picked by the 1-d int64 ``index``.")

# ---------------------------------------------------------------------- creation
full = declare("full", C, "shape, value, dtype", infer.full, differentiable=False,
                doc="A tensor of ``shape`` filled with ``value``.")
arange = declare("arange", C, "n, dtype", infer.arange, differentiable=False,
                 doc="``[0, 1, ..., n-1]`` as ``dtype``.")
random_uniform = declare(
    "random_uniform", C, "shape, dtype, seed, offset", infer.random_uniform, differentiable=False,
    doc="Uniform [0, 1) numbers from the counter-based Philox4x32-10 stream ``(seed, offset)``; "
    "an override must produce the same numbers, so a seed gives one tensor on every backend.",
)


# ---------------------------------------------------------------------- default bodies (composites)
@to_data_async.implements
async def to_data_async(self, x):
    return self.to_data(x)


@full.implements
def full(self, shape: tuple[int, ...], value: bool | int | float, dtype: dt.DType):
    """A tensor of ``shape`` filled with ``value``."""
    one = self.from_data(TensorData.from_values([value], (), dtype))
    return self.expand(self.reshape(one, (1,) * len(shape)), tuple(shape)) if shape else one


@arange.implements
def arange(self, n: int, dtype: dt.DType):
    """``[0, 1, ..., n-1]`` as ``dtype``."""
    return self.from_data(TensorData.from_values(range(n), (n,), dtype))


@index_select.implements
def index_select(self, x, dim: int, index):
    """Rows of ``x`` along ``dim`` picked by the 1-d int64 ``index``."""
    shape = self.shape(x)
    view = [1] * len(shape)
    view[dim] = self.shape(index)[0]
    target = list(shape)
    target[dim] = view[dim]
    idx = self.expand(self.reshape(index, tuple(view)), tuple(target))
    return self.gather(x, dim, idx)


@flip.implements
def flip(self, x, dims: tuple[int, ...]):
    """Reverse the order along ``dims``."""
    ranges = tuple(
        (s - 1, -1 if s else 0, -1) if d in dims else (0, s, 1)
        for d, s in enumerate(self.shape(x))
    )
    return self.slice(x, ranges)


@random_uniform.implements
def random_uniform(self, shape: tuple[int, ...], dtype: dt.DType, seed: int, offset: int):
    """Uniform [0, 1) numbers from the counter-based Philox4x32-10 stream ``(seed, offset)``.

    Backends overriding this must produce the same numbers, so a seed gives the same
    tensor on every backend.
    """
    values = philox_uniform(numel(shape), seed, offset)
    return self.from_data(TensorData.from_values(values, shape, dtype))


# ---------------------------------------------------------------------- gradients
@reshape.gradient(cheap=True)
def _(c, g):
    return (c.b.reshape(g, c.shape(0)),)


@permute.gradient(cheap=True)
def _(c, g):
    axes = c.params[0]
    return (c.b.permute(g, tuple(axes.index(i) for i in range(len(axes)))),)


@expand.gradient(cheap=True)
def _(c, g):
    # the front end broadcasts binary operands with expand: broadcast grads are summed here
    src, dst = c.shape(0), c.params[0]
    dims = tuple(d for d, (s, t) in enumerate(zip(src, dst)) if s == 1 and t != 1)
    return (c.b.float_sum(g, dims) if dims else g,)


@slice.gradient()
def _(c, g):
    b = c.b
    return (b.slice_assign(prims.full(b, c.shape(0), 0.0, b.dtype(g)), c.params[0], g),)


@slice_assign.gradient()
def _(c, g):
    b, ranges = c.b, c.params[0]
    gx = b.slice_assign(g, ranges, prims.full(b, c.shape(1), 0.0, b.dtype(g))) if c.wants(0) else None
    return gx, b.slice(g, ranges) if c.wants(1) else None


@cat.gradient()
def _(c, g):
    b, dim = c.b, c.params[0]
    shape = tuple(b.shape(g))
    out, start = [], 0
    for i in range(len(c.node.shapes)):
        size = c.shape(i)[dim]
        if c.wants(i):
            ranges = tuple(
                (start, start + size, 1) if d == dim else (0, s, 1) for d, s in enumerate(shape)
            )
            out.append(b.slice(g, ranges))
        else:
            out.append(None)
        start += size
    return tuple(out)


@gather.gradient(inputs=(1,))
def _(c, g):
    b = c.b
    zeros = prims.full(b, c.shape(0), 0.0, b.dtype(g))
    return b.scatter(zeros, c.params[0], c.x(1), g, "add"), None


@scatter.gradient(inputs=(1,))
def _(c, g):
    # replace mode: overwritten positions of x get no gradient; each src element gets the
    # gradient of the position it was written to (with duplicates, as PyTorch: all of them)
    b = c.b
    dim, reduce = c.params
    index = c.x(1)
    gx = None
    if c.wants(0):
        gx = (
            g
            if reduce == "add"
            else b.scatter(g, dim, index, prims.full(b, c.shape(1), 0.0, b.dtype(g)), "none")
        )
    gsrc = b.gather(g, dim, index) if c.wants(2) else None
    return gx, None, gsrc


@index_select.gradient(inputs=(1,))
def _(c, g):
    b = c.b
    dim = c.params[0]
    shape, gshape = c.shape(0), tuple(b.shape(g))
    view = tuple(gshape[d] if d == dim else 1 for d in range(len(shape)))
    index = b.expand(b.reshape(c.x(1), view), gshape)
    return b.scatter(prims.full(b, shape, 0.0, b.dtype(g)), dim, index, g, "add"), None
