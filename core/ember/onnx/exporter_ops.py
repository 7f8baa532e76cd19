"""One emitter per backend op for the ONNX export (see :mod:`.exporter`).

An emitter gets the :class:`~ember.onnx.exporter_graph.Graph`, the step's arguments with each
tensor replaced by its ONNX value name (None stays None), appends nodes and initializers, and
returns the name of the value it computed. Ops without an entry in :data:`EMITTERS` are an
:class:`~ember.onnx.exporter_graph.OnnxExportUnsupportedError` naming the op.

>>> "conv" in EMITTERS and "layer_norm" in EMITTERS
True
"""

from __future__ import annotations

import math

from .exporter_graph import Dim, OnnxExportUnsupportedError, follows

#: ONNX's "to the start" end for a negative-step Slice (a negative end counts from the back)
_BEFORE_START = -(2**63)


# ---------------------------------------------------------------------- emitters
def _simple(op_type: str):
    return lambda g, *xs: g.node(op_type, list(xs))


def _not(op_type: str):
    return lambda g, a, b: g.node("Not", [g.node(op_type, [a, b])])


def _then(first: str, second: str):
    return lambda g, x: g.node(second, [g.node(first, [x])])


def _with_scalar(op_type: str, value: float, first: str | None = None, after: str | None = None):
    """``op_type(first(x), value)`` then ``after``: expm1, log1p, log2…"""

    def emit(g, x):
        y = g.node(first, [x]) if first else x
        y = g.node(op_type, [y, g.scalar(value, x)])
        return g.node(after, [y]) if after else y

    return emit


def _remainder(g, a, b):
    # Python/PyTorch remainder takes the sign of b (ONNX Mod with fmod=1 is C's fmod)
    return g.node("Sub", [a, g.node("Mul", [g.node("Floor", [g.node("Div", [a, b])]), b])])


def _cast(g, x, dtype):
    from onnx import helper

    return g.node("Cast", [x], to=helper.np_dtype_to_tensor_dtype(g.np.dtype(dtype.name)))


def _reshape(g, x, shape):
    if tuple(shape) == g.symbolic[x]:
        return x
    following = [i for i, d in enumerate(shape) if isinstance(d, Dim)]
    if len(following) == 1:  # one size follows the batch: Reshape infers it
        shape = [-1 if i == following[0] else d for i, d in enumerate(shape)]
    return g.node("Reshape", [x, g.dims(shape)])


def _expand(g, x, shape):
    # 1 keeps the input's size (Expand broadcasts both ways), batch-dependent or not
    dims = [1 if s == d else d for s, d in zip(g.symbolic[x], shape)]
    return g.node("Expand", [x, g.dims(dims)])


def _full(g, shape, value, dtype):
    # only a fill whose shape follows the batch is a step (others are folded)
    fill = g.const(g.np.full((1,) * len(shape), value, dtype=dtype.name))
    return g.node("Expand", [fill, g.dims(shape)])


def _slice(g, x, ranges):
    shape, axes, starts, ends, steps = g.symbolic[x], [], [], [], []
    for axis, ((start, stop, step), size) in enumerate(zip(ranges, shape)):
        if (start, stop, step) == (0, size, 1):
            continue
        if follows((start, stop, step)):
            raise OnnxExportUnsupportedError(
                f"onnx export: a slice of axis {axis} whose bounds depend on the batch size "
                "has no dynamic-batch mapping; export with dynamic_batch=False"
            )
        axes.append(axis)
        starts.append(start)
        ends.append(_BEFORE_START if step < 0 and stop < 0 else stop)
        steps.append(step)
    if not axes:
        return g.node("Identity", [x])
    return g.node("Slice", [x, g.const(starts), g.const(ends), g.const(axes), g.const(steps)])


def _slice_assign(g, x, ranges, value):
    # the padding idiom (a constant-filled tensor with a block written in) is one Pad;
    # anything else is the input masked outside the block plus the zero-padded value
    if any(r[2] != 1 for r in ranges):
        raise OnnxExportUnsupportedError(
            "onnx export: slice_assign with strided ranges has no ONNX mapping (unit steps do)"
        )
    pads = [r[0] for r in ranges] + [size - r[1] for r, size in zip(ranges, g.shapes[x])]
    filled = g.arrays.get(x)
    if filled is not None and filled.size and (filled == filled.flat[0]).all():
        fill = g.const(filled.reshape(-1)[:1].reshape(()))
        return g.node("Pad", [value, g.const(pads), fill], mode="constant")
    padded = g.node("Pad", [value, g.const(pads)], mode="constant")
    keep = g.np.ones(g.shapes[x], dtype=g.dtypes[x])
    keep[tuple(slice(a, b) for a, b, _ in ranges)] = 0
    return g.node("Add", [g.node("Mul", [x, g.const(keep)]), padded])


def _cat(g, xs, dim):
    return g.node("Concat", list(xs), axis=dim)


def _flip(g, x, dims):
    if any(isinstance(g.symbolic[x][d], Dim) for d in dims):
        raise OnnxExportUnsupportedError(
            "onnx export: flipping the batch axis has no dynamic-batch mapping; export with "
            "dynamic_batch=False"
        )
    return _slice(g, x, [(s - 1, -1, -1) if d in dims else (0, s, 1)
                         for d, s in enumerate(g.symbolic[x])])


def _reduce(op_type: str):
    def emit(g, x, dims):
        # ReduceSum takes its axes as an input from opset 13, the others from opset 18
        if op_type == "ReduceSum" or g.opset >= 18:
            return g.node(op_type, [x, g.const(list(dims))], keepdims=1)
        return g.node(op_type, [x], axes=list(dims), keepdims=1)

    return emit


def _var(g, x, dims, correction):
    n = math.prod(g.shapes[x][d] for d in dims)
    centred = g.node("Sub", [x, _reduce("ReduceMean")(g, x, dims)])
    total = _reduce("ReduceSum")(g, g.node("Mul", [centred, centred]), dims)
    return g.node("Div", [total, g.scalar(max(n - correction, 0), x)])


def _bool_reduce(op_type: str):
    """any/all: ReduceMax/ReduceMin over the values as int32 (ONNX reduces no booleans)."""

    def emit(g, x, dims):
        from onnx import TensorProto

        as_int = g.node("Cast", [x], to=TensorProto.INT32)
        return g.node("Cast", [_reduce(op_type)(g, as_int, dims)], to=TensorProto.BOOL)

    return emit


def _trunc(g, x):
    # ONNX has no Trunc: sign(x) * floor(|x|) (keeps -0.0, NaN and the infinities)
    return g.node("Mul", [g.node("Sign", [x]), g.node("Floor", [g.node("Abs", [x])])])


def _cumsum(g, x, dim):
    return g.node("CumSum", [x, g.const(g.np.asarray(dim))])


def _arg(op_type: str):
    return lambda g, x, dim: g.node(op_type, [x], axis=dim, keepdims=1)


def _gelu(g, x, approximate="none"):
    half = g.node("Mul", [x, g.scalar(0.5, x)])
    if approximate == "tanh":
        cube = g.node("Mul", [g.node("Mul", [x, x]), x])
        inner = g.node("Add", [x, g.node("Mul", [cube, g.scalar(0.044715, x)])])
        t = g.node("Tanh", [g.node("Mul", [inner, g.scalar(math.sqrt(2 / math.pi), x)])])
    else:
        t = g.node("Erf", [g.node("Mul", [x, g.scalar(1 / math.sqrt(2), x)])])
    return g.node("Mul", [half, g.node("Add", [t, g.scalar(1.0, x)])])


def _softplus(g, x, beta=1.0, threshold=20.0):
    scaled = g.node("Mul", [x, g.scalar(beta, x)])
    soft = g.node("Div", [g.node("Softplus", [scaled]), g.scalar(beta, x)])
    # PyTorch's softplus is linear above the threshold
    return g.node("Where", [g.node("Greater", [scaled, g.scalar(threshold, x)]), x, soft])


def _conv(g, x, weight, bias, stride, padding, dilation, groups):
    pads = [p[0] for p in padding] + [p[1] for p in padding]
    return g.node("Conv", [x, weight, bias] if bias else [x, weight], strides=list(stride),
                  pads=pads, dilations=list(dilation), group=groups)


def _conv_transpose(g, x, weight, bias, stride, padding, output_padding, dilation, groups):
    return g.node("ConvTranspose", [x, weight, bias] if bias else [x, weight],
                  strides=list(stride), pads=list(padding) * 2,
                  output_padding=list(output_padding), dilations=list(dilation), group=groups)


def _filled_if_none(g, t, shape: tuple, like: str, value: float):
    """``t``, or an initializer of ``shape`` filled with ``value`` (an affine-free norm)."""
    return t if t is not None else g.const(g.np.full(shape, value, dtype=g.dtypes[like]))


def _layer_norm(g, x, normalized_ndim, weight, bias, eps):
    w = _filled_if_none(g, weight, g.shapes[x][-normalized_ndim:], x, 1.0)
    return g.node("LayerNormalization", [x, w, bias] if bias else [x, w],
                  axis=-normalized_ndim, epsilon=float(eps))


def _batch_norm(g, x, mean, var, weight, bias, eps):
    c = g.shapes[x][1]
    w, b = _filled_if_none(g, weight, (c,), x, 1.0), _filled_if_none(g, bias, (c,), x, 0.0)
    return g.node("BatchNormalization", [x, w, b, mean, var], epsilon=float(eps))


def _max_pool(g, x, kernel, stride, padding, dilation, ceil_mode):
    return g.node("MaxPool", [x], kernel_shape=list(kernel), strides=list(stride),
                  pads=list(padding) * 2, dilations=list(dilation), ceil_mode=int(ceil_mode))


def _avg_pool(g, x, kernel, stride, padding, ceil_mode, count_include_pad,
              divisor_override=None):
    if divisor_override is not None:
        raise OnnxExportUnsupportedError(
            "onnx export: avg_pool with divisor_override has no ONNX mapping (use None)"
        )
    return g.node("AveragePool", [x], kernel_shape=list(kernel), strides=list(stride),
                  pads=list(padding) * 2, ceil_mode=int(ceil_mode),
                  count_include_pad=int(count_include_pad))


def _adaptive_avg_pool(g, x, output_size):
    spatial = g.shapes[x][2:]
    if all(o == 1 for o in output_size):
        return g.node("GlobalAveragePool", [x])
    if any(s % o for s, o in zip(spatial, output_size)):
        raise OnnxExportUnsupportedError(
            f"onnx export: adaptive_avg_pool from {spatial} to {tuple(output_size)} has no ONNX "
            "mapping (an output of 1 or one that divides the input size does)"
        )
    kernel = [s // o for s, o in zip(spatial, output_size)]
    return g.node("AveragePool", [x], kernel_shape=kernel, strides=kernel)


_RESIZE = {"nearest": ("nearest", "asymmetric"), "linear": ("linear", None),
           "bilinear": ("linear", None), "trilinear": ("linear", None)}


def _interpolate(g, x, size, mode, align_corners, scale_factors=None):
    if mode not in _RESIZE:
        raise OnnxExportUnsupportedError(
            f"onnx export: interpolate mode {mode!r} has no ONNX mapping (one of "
            f"{', '.join(_RESIZE)} has)"
        )
    onnx_mode, transform = _RESIZE[mode]
    transform = transform or ("align_corners" if align_corners else "pytorch_half_pixel")
    extra = {"nearest_mode": "floor"} if onnx_mode == "nearest" else {}
    # output sizes, not scales: a float scale like 7/5 may floor to one pixel less
    sizes = g.node("Concat", [g.node("Shape", [x], start=0, end=2), g.const(list(size))],
                   axis=0)
    return g.node("Resize", [x, "", "", sizes], mode=onnx_mode,
                  coordinate_transformation_mode=transform, **extra)


def _leaky_relu(g, x, negative_slope):
    return g.node("LeakyRelu", [x], alpha=float(negative_slope))


def _elu(g, x, alpha):
    return g.node("Elu", [x], alpha=float(alpha))


def _clip(low: float, high: float):
    return lambda g, x: g.node("Clip", [x, g.scalar(low, x), g.scalar(high, x)])


def _silu(g, x):
    return g.node("Mul", [x, g.node("Sigmoid", [x])])


def _mish(g, x):
    return g.node("Mul", [x, g.node("Tanh", [g.node("Softplus", [x])])])


def _hard_sigmoid(g, x):
    return g.node("HardSigmoid", [x], alpha=1 / 6, beta=0.5)  # relu6(x + 3) / 6


def _axis(op_type: str):
    return lambda g, x, dim: g.node(op_type, [x], axis=dim)


def _gather(g, x, dim, index):
    return g.node("GatherElements", [x, index], axis=dim)


def _index_select(g, x, dim, index):
    return g.node("Gather", [x, index], axis=dim)


def _scatter(g, x, dim, index, src, reduce="none"):
    extra = {} if reduce == "none" else {"reduction": reduce}
    return g.node("ScatterElements", [x, index, src], axis=dim, **extra)


def _permute(g, x, axes):
    return g.node("Transpose", [x], perm=list(axes))


def _where(g, cond, a, b):
    return g.node("Where", [cond, a, b])


_BINARY = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "pow": "Pow",
           "maximum": "Max", "minimum": "Min", "eq": "Equal", "lt": "Less",
           "le": "LessOrEqual", "gt": "Greater", "ge": "GreaterOrEqual"}
_UNARY = {"neg": "Neg", "abs": "Abs", "exp": "Exp", "log": "Log", "sqrt": "Sqrt", "sin": "Sin",
          "cos": "Cos", "atan": "Atan", "tanh": "Tanh", "erf": "Erf", "floor": "Floor",
          "ceil": "Ceil", "round": "Round", "isnan": "IsNaN", "isinf": "IsInf",
          "reciprocal": "Reciprocal", "tan": "Tan", "sinh": "Sinh", "cosh": "Cosh",
          "asin": "Asin", "acos": "Acos", "sigmoid": "Sigmoid", "sign": "Sign"}

EMITTERS: dict = {
    **{f"float_{k}": _simple(v) for k, v in {**_BINARY, **_UNARY}.items()},
    **{f"int_{k}": _simple(v) for k, v in _BINARY.items() if k not in ("div", "pow")},
    **{f"int_{k}": _simple(_UNARY[k]) for k in ("neg", "abs", "sign")},
    "float_ne": _not("Equal"), "int_ne": _not("Equal"), "bool_eq": _simple("Equal"),
    "bool_ne": _simple("Xor"), "bool_and": _simple("And"), "bool_or": _simple("Or"),
    "bool_xor": _simple("Xor"), "bool_not": _simple("Not"),
    "float_floor_divide": _then("Div", "Floor"), "float_remainder": _remainder,
    "float_expm1": _with_scalar("Sub", 1.0, first="Exp"),
    "float_log1p": _with_scalar("Add", 1.0, after="Log"),
    "float_log2": _with_scalar("Div", math.log(2), first="Log"),
    "float_log10": _with_scalar("Div", math.log(10), first="Log"),
    "float_rsqrt": _then("Sqrt", "Reciprocal"),
    "where": _where, "cast": _cast, "full": _full,
    "reshape": _reshape, "permute": _permute, "expand": _expand, "slice": _slice,
    "slice_assign": _slice_assign, "cat": _cat, "flip": _flip, "gather": _gather,
    "index_select": _index_select, "scatter": _scatter,
    "float_sum": _reduce("ReduceSum"), "int_sum": _reduce("ReduceSum"),
    "float_prod": _reduce("ReduceProd"), "float_max": _reduce("ReduceMax"),
    "int_max": _reduce("ReduceMax"), "float_min": _reduce("ReduceMin"),
    "int_min": _reduce("ReduceMin"), "float_mean": _reduce("ReduceMean"),
    "float_logsumexp": _reduce("ReduceLogSumExp"), "float_var": _var,
    "float_argmax": _arg("ArgMax"), "float_argmin": _arg("ArgMin"),
    "int_argmax": _arg("ArgMax"), "int_argmin": _arg("ArgMin"),
    "int_prod": _reduce("ReduceProd"), "bool_any": _bool_reduce("ReduceMax"),
    "bool_all": _bool_reduce("ReduceMin"), "float_trunc": _trunc,
    "float_cumsum": _cumsum, "int_cumsum": _cumsum,
    "float_matmul": _simple("MatMul"), "int_matmul": _simple("MatMul"),
    "relu": _simple("Relu"), "relu6": _clip(0.0, 6.0), "leaky_relu": _leaky_relu, "elu": _elu,
    "gelu": _gelu, "silu": _silu, "softplus": _softplus, "hard_sigmoid": _hard_sigmoid,
    "hard_swish": _simple("HardSwish"), "mish": _mish,
    "softmax": _axis("Softmax"), "log_softmax": _axis("LogSoftmax"),
    "conv": _conv, "conv_transpose": _conv_transpose, "layer_norm": _layer_norm,
    "batch_norm": _batch_norm, "max_pool": _max_pool, "avg_pool": _avg_pool,
    "adaptive_avg_pool": _adaptive_avg_pool, "interpolate": _interpolate,
}
