"""Shape helpers: broadcasting and dim normalisation, with errors that name the op."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .errors import DimensionError, ShapeError

Shape = tuple[int, ...]


def numel(shape: Sequence[int]) -> int:
    """The number of elements of a shape (1 for the 0-d shape ``()``).

    >>> numel((2, 3, 4)), numel(())
    (24, 1)
    """
    n = 1
    for s in shape:
        n *= s
    return n


def broadcast_shapes(*shapes: Sequence[int], op: str = "broadcast") -> Shape:
    """numpy broadcasting: align right; sizes must be equal or 1.

    >>> broadcast_shapes((2, 1, 3), (4, 1))
    (2, 4, 3)
    """
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for s in shapes:
        for i, size in enumerate(s):
            j = ndim - len(s) + i
            if out[j] == 1:
                out[j] = size
            elif size != 1 and size != out[j]:
                shown = " and ".join(str(tuple(x)) for x in shapes)
                raise ShapeError(
                    f"{op}: shapes {shown} can't be broadcast: dim {j - ndim} has sizes "
                    f"{out[j]} and {size} (sizes must match or be 1)"
                )
    return tuple(out)


def normalize_dim(dim: int, ndim: int, op: str = "op") -> int:
    """A dim in [-ndim, ndim) as a non-negative index; 0-d tensors accept dim 0 and -1.

    >>> normalize_dim(-1, 3), normalize_dim(0, 0)
    (2, 0)
    """
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise DimensionError(f"{op}: dim must be an int, got {type(dim).__name__}")
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise DimensionError(
            f"{op}: dim {dim} is out of range for a tensor with {ndim} dims "
            f"(valid: {-n} to {n - 1})"
        )
    return dim % n


def normalize_dims(dims: int | Iterable[int] | None, ndim: int, op: str = "op") -> tuple[int, ...]:
    """None → all dims; an int or iterable → sorted unique non-negative dims."""
    if dims is None:
        return tuple(range(ndim))
    if isinstance(dims, int):
        dims = (dims,)
    out = sorted({normalize_dim(d, ndim, op) for d in dims})
    if ndim == 0:
        return ()
    return tuple(out)


def contiguous_strides(shape: Sequence[int]) -> Shape:
    strides = [1] * len(shape)
    acc = 1
    for i in range(len(shape) - 1, -1, -1):
        strides[i] = acc
        acc *= shape[i]
    return tuple(strides)


def infer_reshape(
    shape: Sequence[int], total: int, op: str = "reshape", source: Sequence[int] | None = None
) -> Shape:
    """Resolve one -1 in a target shape; check the element count against ``total`` (the
    element count of ``source``, the input shape named in errors)."""
    shape = tuple(int(s) for s in shape)
    what = f"a tensor of shape {tuple(source)} ({total} elements)" if source is not None \
        else f"{total} elements"
    unknown = [i for i, s in enumerate(shape) if s == -1]
    if len(unknown) > 1:
        raise ShapeError(f"{op}: only one dim can be -1, got shape {shape}")
    if any(s < -1 for s in shape):
        raise ShapeError(f"{op}: negative size in shape {shape}")
    known = numel(s for s in shape if s != -1)
    if unknown:
        if known == 0 or total % known:
            raise ShapeError(f"{op}: can't reshape {what} into shape {shape}")
        shape = tuple(total // known if s == -1 else s for s in shape)
    if numel(shape) != total:
        raise ShapeError(
            f"{op}: can't reshape {what} into shape {shape} ({numel(shape)} elements)"
        )
    return shape


# ---------------------------------------------------------------- sliding-window geometry
def conv_output_size(
    size: int,
    kernel: int,
    stride: int,
    padding: tuple[int, int] = (0, 0),
    dilation: int = 1,
    ceil_mode: bool = False,
) -> int:
    """Output length along one dim of a convolution or pooling window grid (PyTorch's and
    ONNX's formula); ``padding`` is ``(before, after)``. May be < 1 for inputs too small.
    With ``ceil_mode`` a partial last window counts if it starts inside the input or the
    padding before it.

    >>> conv_output_size(5, 3, 2, (1, 1))
    3
    >>> conv_output_size(5, 2, 2, ceil_mode=True)
    3
    """
    before, after = padding
    span = size + before + after - dilation * (kernel - 1) - 1
    out = (span + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (out - 1) * stride >= size + before:
        out -= 1
    return out


def conv_transpose_output_size(
    size: int, kernel: int, stride: int, padding: int, output_padding: int, dilation: int
) -> int:
    """Output length along one dim of a transposed convolution (PyTorch's formula).

    >>> conv_transpose_output_size(3, 3, 2, 1, 1, 1)
    6
    """
    return (size - 1) * stride - 2 * padding + dilation * (kernel - 1) + output_padding + 1


def pool_output_size(
    size: int, kernel: int, stride: int, padding: int, dilation: int, ceil_mode: bool
) -> int:
    """:func:`conv_output_size` with PyTorch pooling's symmetric ``padding``."""
    return conv_output_size(size, kernel, stride, (padding, padding), dilation, ceil_mode)


def pool_geometry(
    spatial: Sequence[int],
    kernel: Sequence[int],
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    ceil_mode: bool,
) -> tuple[Shape, list[tuple[int, int]]]:
    """``(out, pairs)`` for pooling the trailing dims ``spatial``: the output sizes, and per dim
    the ``(before, after)`` padding whose window grid covers them (``after`` grows past
    ``padding`` when ceil_mode's last window runs off the end)."""
    out, pairs = [], []
    for size, k, s, p, d in zip(spatial, kernel, stride, padding, dilation):
        o = pool_output_size(size, k, s, p, d, ceil_mode)
        out.append(o)
        pairs.append((p, max(p, (o - 1) * s + d * (k - 1) + 1 - size - p)))
    return tuple(out), pairs
