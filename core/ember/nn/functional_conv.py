"""Convolutions: ``conv1d``, ``conv2d``, ``conv_transpose1d``, ``conv_transpose2d``
(PyTorch's signatures; inputs (N, C, *spatial) or unbatched (C, *spatial))."""

from __future__ import annotations

from ..shape import conv_output_size, conv_transpose_output_size
from ..errors import ShapeError
from ..tensor import Tensor
from .functional_util import as_input, batched, check_float, ints, result, unbatch


def _weights(op: str, nd: int, weight, bias) -> tuple[Tensor, Tensor | None]:
    weight = as_input(weight, op)
    bias = None if bias is None else as_input(bias, op)
    if weight.ndim != nd + 2:
        raise ShapeError(
            f"{op}: weight must be {nd + 2}-d (out_channels, in_channels / groups, "
            f"*kernel), got shape {weight.shape}"
        )
    return weight, bias


def _check_bias(op: str, bias: Tensor | None, channels: int) -> None:
    if bias is not None and bias.shape != (channels,):
        raise ShapeError(f"{op}: bias must have shape ({channels},), got {bias.shape}")


def _groups(op: str, groups) -> int:
    if not isinstance(groups, int) or isinstance(groups, bool) or groups < 1:
        raise ShapeError(f"{op}: groups must be a positive int, got {groups!r}")
    return groups


def _conv(op: str, nd: int, input, weight, bias, stride, padding, dilation, groups) -> Tensor:
    x, unbatched = batched(op, as_input(input, op), nd)
    weight, bias = _weights(op, nd, weight, bias)
    check_float(op, x, ("weight", weight), ("bias", bias))
    stride = ints(op, "stride", stride, nd, 1)
    dilation = ints(op, "dilation", dilation, nd, 1)
    groups = _groups(op, groups)
    c, c_out, kernel = x.shape[1], weight.shape[0], weight.shape[2:]
    if c_out % groups:
        raise ShapeError(
            f"{op}: weight {weight.shape} has {c_out} output channels, not divisible by "
            f"groups={groups}"
        )
    if weight.shape[1] * groups != c:
        raise ShapeError(
            f"{op}: input {x.shape} has {c} channels but weight {weight.shape} with "
            f"groups={groups} expects {weight.shape[1] * groups} (weight.shape[1] * groups)"
        )
    _check_bias(op, bias, c_out)
    if isinstance(padding, str):
        if padding == "valid":
            pairs = ((0, 0),) * nd
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise ShapeError(f"{op}: padding='same' needs stride 1, got stride={stride}")
            # PyTorch puts the odd extra element after (right/bottom)
            totals = [d * (k - 1) for k, d in zip(kernel, dilation)]
            pairs = tuple((t // 2, t - t // 2) for t in totals)
        else:
            raise ValueError(
                f"{op}: padding must be an int, a tuple, 'same' or 'valid', got {padding!r}"
            )
    else:
        pairs = tuple((p, p) for p in ints(op, "padding", padding, nd, 0))
    out = [conv_output_size(*a) for a in zip(x.shape[2:], kernel, stride, pairs, dilation)]
    if any(o < 1 for o in out):
        padded = tuple(s + lo + hi for s, (lo, hi) in zip(x.shape[2:], pairs))
        dilated = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation))
        raise ShapeError(
            f"{op}: input {x.shape} padded to spatial size {padded} is smaller than the "
            f"(dilated) kernel {dilated}"
        )
    b = x.backend
    prim = b.conv(
        x._prim, weight._prim, None if bias is None else bias._prim, stride, pairs, dilation, groups
    )
    return unbatch(result(x, prim), unbatched)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) -> Tensor:
    """1-d cross-correlation over (N, C_in, L) with weight (C_out, C_in / groups, k).

    ``padding`` is an int, a 1-tuple, ``'valid'`` or ``'same'`` (stride 1).

    >>> import ember
    >>> from ember.nn import functional as F
    >>> F.conv1d(ember.ones(1, 1, 4), ember.ones(1, 1, 2)).tolist()
    [[[2.0, 2.0, 2.0]]]
    """
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) -> Tensor:
    """2-d cross-correlation over (N, C_in, H, W) with weight (C_out, C_in / groups, kH, kW).

    >>> import ember
    >>> from ember.nn import functional as F
    >>> F.conv2d(ember.ones(1, 1, 3, 3), ember.ones(2, 1, 2, 2), padding="same").shape
    (1, 2, 3, 3)
    """
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def _conv_transpose(
    op: str, nd: int, input, weight, bias, stride, padding, output_padding, groups, dilation
) -> Tensor:
    x, unbatched = batched(op, as_input(input, op), nd)
    weight, bias = _weights(op, nd, weight, bias)
    check_float(op, x, ("weight", weight), ("bias", bias))
    stride = ints(op, "stride", stride, nd, 1)
    dilation = ints(op, "dilation", dilation, nd, 1)
    padding = ints(op, "padding", padding, nd, 0)
    output_padding = ints(op, "output_padding", output_padding, nd, 0)
    groups = _groups(op, groups)
    c, kernel = x.shape[1], weight.shape[2:]
    if weight.shape[0] != c or c % groups:
        raise ShapeError(
            f"{op}: input {x.shape} has {c} channels but weight {weight.shape} expects "
            f"{weight.shape[0]} (weight is (C_in, C_out / groups, *kernel)); C_in must also "
            f"be divisible by groups={groups}"
        )
    for op_, s, d in zip(output_padding, stride, dilation):
        if op_ >= s and op_ >= d:
            raise ShapeError(
                f"{op}: output_padding {output_padding} must be smaller than either stride "
                f"{stride} or dilation {dilation}"
            )
    _check_bias(op, bias, weight.shape[1] * groups)
    out = [
        conv_transpose_output_size(*a)
        for a in zip(x.shape[2:], kernel, stride, padding, output_padding, dilation)
    ]
    if any(o < 1 for o in out):
        raise ShapeError(
            f"{op}: input {x.shape} with kernel {kernel}, stride {stride} and padding "
            f"{padding} gives a non-positive output size {tuple(out)}"
        )
    b = x.backend
    prim = b.conv_transpose(x._prim, weight._prim, None if bias is None else bias._prim, stride,
                            padding, output_padding, dilation, groups)
    return unbatch(result(x, prim), unbatched)


def conv_transpose1d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
) -> Tensor:
    """Transposed 1-d convolution; weight is (C_in, C_out / groups, k). Note PyTorch's argument
    order: ``groups`` comes before ``dilation``.

    >>> import ember
    >>> from ember.nn import functional as F
    >>> F.conv_transpose1d(ember.ones(1, 1, 3), ember.ones(1, 1, 2), stride=2).tolist()
    [[[1.0, 1.0, 1.0, 1.0, 1.0, 1.0]]]
    """
    return _conv_transpose("conv_transpose1d", 1, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


def conv_transpose2d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
) -> Tensor:
    """Transposed 2-d convolution; weight is (C_in, C_out / groups, kH, kW).

    >>> import ember
    >>> from ember.nn import functional as F
    >>> F.conv_transpose2d(ember.ones(1, 4, 5, 5), ember.ones(4, 2, 3, 3), stride=2,
    ...                    padding=1, output_padding=1).shape
    (1, 2, 10, 10)
    """
    return _conv_transpose("conv_transpose2d", 2, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)
