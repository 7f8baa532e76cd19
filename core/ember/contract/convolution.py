"""Convolution (PyTorch's cross-correlation), its transpose and its weight gradient.

``x`` is (N, C, *spatial) with any number of spatial dims (1 and 2 are the tested ones);
strides, paddings and dilations have one entry per spatial dim, already validated by
``ember.nn.functional``. The defaults are im2col + matmul from primitives; backends override
them for speed (see ``ember.backends.numpy.nn``) with the same semantics.
"""

from __future__ import annotations

from ..shape import conv_output_size, conv_transpose_output_size, numel
from . import prims
from .registry import Kind, Spec, declare
from .windows import along, channels, pad_spatial, window_slices


def _conv_shape(x, weight, bias, stride, padding, dilation, groups):
    spatial, kernel = x.shape[2:], weight.shape[2:]
    out = tuple(conv_output_size(*a) for a in zip(spatial, kernel, stride, padding, dilation))
    return Spec((x.shape[0], weight.shape[0]) + out, x.dtype)


def _conv_transpose_shape(x, weight, bias, stride, padding, output_padding, dilation, groups):
    spatial, kernel = x.shape[2:], weight.shape[2:]
    out = tuple(
        conv_transpose_output_size(*a)
        for a in zip(spatial, kernel, stride, padding, output_padding, dilation)
    )
    return Spec((x.shape[0], weight.shape[1] * groups) + out, x.dtype)


def _weight_grad_shape(x, grad, weight_shape, *params):
    return Spec(tuple(weight_shape), x.dtype)


conv = declare(
    "conv", Kind.MODULE, "x, weight, bias, stride, padding, dilation, groups", _conv_shape,
    tensors="x, weight, bias",
)
conv_weight_grad = declare(
    "conv_weight_grad", Kind.MODULE, "x, grad, weight_shape, stride, padding, dilation, groups",
    _weight_grad_shape, tensors="x, grad", differentiable=False,
)
conv_transpose = declare(
    "conv_transpose", Kind.MODULE,
    "x, weight, bias, stride, padding, output_padding, dilation, groups", _conv_transpose_shape,
    tensors="x, weight, bias",
)


# ---------------------------------------------------------------------- default bodies
@conv.implements
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
        y = self.float_add(y, along(self, bias, tuple(self.shape(y)), 1, self.dtype(y)))
    return y


@conv_weight_grad.implements
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
        xs = channels(self, xp, gi * cg, cg)
        gs = channels(self, grad, gi * og, og)
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


@conv_transpose.implements
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


# ---------------------------------------------------------------------- gradient
def _fit(b, v, size: tuple[int, ...]):
    """Zero-extend (at the end) or crop the spatial dims of ``v`` to ``size``."""
    for i, want in enumerate(size):
        axis = 2 + i
        shape = tuple(b.shape(v))
        if shape[axis] < want:
            pad = shape[:axis] + (want - shape[axis],) + shape[axis + 1 :]
            v = b.cat([v, prims.full(b, pad, 0.0, b.dtype(v))], axis)
        elif shape[axis] > want:
            v = b.slice(v, tuple((0, want if d == axis else s, 1) for d, s in enumerate(shape)))
    return v


@conv.gradient(inputs=(0, 1))
def _(c, g):
    # backward of a conv is a conv_transpose (input) and the backend's conv_weight_grad
    b = c.b
    stride, padding, dilation, groups = c.params
    xshape, wshape = c.shape(0), c.shape(1)
    nd = len(stride)
    padded = tuple(s + lo + hi for s, (lo, hi) in zip(xshape[2:], padding))
    gx = gw = gbias = None
    if c.wants(0):
        zeros = (0,) * nd
        gxp = b.conv_transpose(g, c.x(1), None, stride, zeros, zeros, dilation, groups)
        gxp = _fit(b, gxp, padded)
        gx = pad_spatial(b, gxp, [(-lo, -hi) for lo, hi in padding], 0.0)
    if c.wants(1):
        gw = b.conv_weight_grad(c.x(0), g, tuple(wshape), stride, padding, dilation, groups)
    if len(c.node.parents) > 2 and c.wants(2):
        gbias = b.reshape(b.float_sum(g, (0,) + tuple(range(2, 2 + nd))), (wshape[0],))
    return gx, gw, gbias
