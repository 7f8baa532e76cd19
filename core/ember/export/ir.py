"""Lower an ember ``nn`` model to a flat list of micro layers (the exported program).

BatchNorm folds into the Conv2d/Linear before it (or becomes a 1×1 depthwise conv when nothing
precedes it); activations fuse into the Conv2d/Linear before them; Dropout and Identity vanish.
Layers of ``ember.quantize`` keep their codes: int8 ones (``QuantLinear``/``QuantConv2d``)
and weight-only ones (``WeightOnlyLinear``/``WeightOnlyConv2d``: int8 or int4 codes per block).
A zero-padding layer (``SamePad2d``, TensorFlow's lopsided "SAME" padding, or ``ZeroPad2d``)
folds into the Conv2d after it, whose record then pads one more row/column after than before.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ..contract.batchnorm_fold import batchnorm_affine, fold_affine_into
from ..errors import ShapeError, UnsupportedOpError
from ..shape import conv_output_size
from . import format as fmt
from .geometry import Geometry

#: what a traced forward may run (ember.export.traced maps each to a micro layer)
SUPPORTED_STEPS = ("conv/qconv and float_matmul/qlinear with constant weights, float_add/sub/"
                   "mul/div by a per-channel constant, float_neg, relu, relu6, sigmoid, tanh, "
                   "hard_swish, max_pool, avg_pool, adaptive_avg_pool to 1x1, reshape keeping "
                   "a batch of 1, softmax over a flat vector, and shortcuts x + f(x) that nest")


@dataclass
class Layer:
    """One micro layer; arrays are numpy float64 (int8 arrays after quantisation).

    >>> from ember import nn
    >>> from ember.export import lower
    >>> layer = lower(nn.Sequential(nn.Flatten(), nn.Linear(4, 2), nn.ReLU()), (1, 2, 2)).layers[0]
    >>> layer.describe(), layer.weighted, layer.weight.shape
    ('linear+relu (4, 1, 1)->(2, 1, 1)', True, (2, 4))
    """

    op: int
    in_shape: tuple[int, int, int]
    out_shape: tuple[int, int, int]
    name: str = ""
    act: int = fmt.NONE
    weight: Any = None
    bias: Any = None
    kh: int = 1
    kw: int = 1
    sh: int = 1
    sw: int = 1
    ph: int = 0
    pw: int = 0
    extra_h: int = 0  # 1: one more zero row after (bottom) than ph before (TF "SAME")
    extra_w: int = 0  # 1: one more zero column after (right) than pw before
    groups: int = 1
    slot: int = 0
    count_pad: bool = True
    w_q: Any = None
    w_scale: Any = None
    in_scale: float = 0.0
    w_bits: int = 0  # weight-only codes (float activations): 8 or 4 bits; 0: none
    w_block: int = 0  # weight-only: weights per scale along a row (at most the row)

    @property
    def weighted(self) -> bool:
        """Whether the layer has weights (linear and conv2d)."""
        return self.op in (fmt.LINEAR, fmt.CONV2D)

    @property
    def wdtype(self) -> int:
        """The weight dtype the file stores (``format.F32``, ``INT8``, ``INT8_BLOCK``,
        ``INT4_BLOCK``).

        >>> from ember.export import format as fmt
        >>> Layer(fmt.LINEAR, (4, 1, 1), (2, 1, 1)).wdtype == fmt.F32
        True
        """
        if self.w_q is None:
            return fmt.F32
        if self.w_bits:
            return fmt.INT4_BLOCK if self.w_bits == 4 else fmt.INT8_BLOCK
        return fmt.INT8

    def describe(self) -> str:
        """``"conv2d+relu (1, 8, 8)->(4, 8, 8)"``: the op, its fused activation and the shapes."""
        s = fmt.OP_NAMES[self.op]
        if self.act:
            s += "+" + fmt.ACT_NAMES[self.act]
        if self.w_bits:
            s += f" int{self.w_bits}/{self.w_block}"
        return f"{s} {self.in_shape}->{self.out_shape}"


@dataclass
class Program:
    """The exported graph: layers run in order on one current activation.

    >>> import ember
    >>> from ember import nn
    >>> from ember.export import lower, quantize
    >>> program = lower(nn.Sequential(nn.Flatten(), nn.Linear(4, 2)), (1, 2, 2))
    >>> program.input_shape, program.output_shape, program.quantized
    ((1, 2, 2), (2, 1, 1), False)
    >>> quantize(program, ember.randn(8, 1, 2, 2).numpy()).quantized
    True
    """

    layers: list[Layer]
    input_shape: tuple[int, int, int]
    n_slots: int = 0
    in_mul: float = 1.0
    in_add: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def output_shape(self) -> tuple[int, int, int]:
        """The ``(C, H, W)`` shape of the last layer's output."""
        return self.layers[-1].out_shape if self.layers else self.input_shape

    @property
    def quantized(self) -> bool:
        """Whether any layer holds int8 weights with an int8 input (not weight-only)."""
        return any(layer.wdtype == fmt.INT8 for layer in self.layers)

    @property
    def weight_only(self) -> bool:
        """Whether any layer holds weight-only codes (int8/int4 per block, float inputs).

        >>> import ember
        >>> from ember import nn
        >>> from ember.export import lower
        >>> model = ember.quantize(nn.Sequential(nn.Linear(64, 32)), None, "int4")
        >>> program = lower(model, (64,))
        >>> program.weight_only, program.quantized, program.layers[0].describe()
        (True, False, 'linear int4/64 (64, 1, 1)->(32, 1, 1)')
        """
        return any(layer.w_bits for layer in self.layers)


def _np():
    try:
        import numpy
    except ImportError as e:  # pragma: no cover - numpy is in the [numpy] extra
        raise ImportError("ember.export needs numpy: pip install 'ember[numpy]'") from e
    return numpy


def _pair(v, what: str, name: str) -> tuple[int, int]:
    if isinstance(v, (tuple, list)):
        if len(v) != 2:
            raise ShapeError(f"export: {name}: {what} {v!r} must be an int or a pair")
        return int(v[0]), int(v[1])
    return int(v), int(v)


def _array(t):
    """A weight (a tensor, or an array already) as numpy float64."""
    np = _np()
    if t is None:
        return None
    return np.asarray(t.numpy() if hasattr(t, "numpy") else t, dtype=np.float64)


_ACTS = {"ReLU": fmt.RELU, "ReLU6": fmt.RELU6, "Sigmoid": fmt.SIGMOID, "Tanh": fmt.TANH,
         "Hardswish": fmt.HARDSWISH, "HardSwish": fmt.HARDSWISH}
_SKIP = ("Dropout", "Identity")
_CONVS = ("Conv2d", "QuantConv2d", "WeightOnlyConv2d")  # what takes a zero padding before


class _Lowering:
    def __init__(self, input_shape):
        shape = tuple(int(d) for d in input_shape)
        if len(shape) == 1:
            shape = (shape[0], 1, 1)
        if len(shape) != 3 or min(shape) < 1:
            raise ShapeError(
                f"export: input_shape {tuple(input_shape)} must be (features,) or (C, H, W) "
                "without the batch dim"
            )
        self.input_shape = shape
        self.np = _np()
        self.layers: list[Layer] = []
        self.unsupported: list[str] = []
        self.slots = 0
        self.open_slots = 0
        self.pad = None  # (top, bottom, left, right, name) waiting for the next Conv2d
        #: whether the current activation is a flat (batch, features) tensor, not an image:
        #: (C, H, W) alone can't tell (C, 1, 1) images from C features
        self.flat = len(input_shape) == 1

    def emit(self, layer: Layer) -> tuple[int, int, int]:
        self.layers.append(layer)
        if layer.op == fmt.LINEAR:
            self.flat = True
        elif layer.op in (fmt.MAXPOOL, fmt.AVGPOOL, fmt.GAP) or (
                layer.op == fmt.CONV2D and not (self.flat and layer.kh == layer.kw == 1)):
            self.flat = False
        return layer.out_shape

    def last_weighted(self) -> Layer | None:
        last = self.layers[-1] if self.layers else None
        return last if last is not None and last.weighted and last.act == fmt.NONE else None

    def walk(self, m, name: str, shape):
        kind = type(m).__name__
        handler = getattr(self, "do_" + kind, None)
        if self.pad is not None and kind not in (*_CONVS, "Sequential", *_SKIP):
            self.unpadded(f"{kind} {name}")
        if kind in _ACTS:
            return self.activation(_ACTS[kind], name, shape)
        if kind in _SKIP:
            return shape
        if handler is None:  # a module the walk doesn't know: lowered from its traced forward
            from .traced import lower_traced

            try:
                return lower_traced(self, m, name, shape)
            except UnsupportedOpError as e:
                self.unsupported.append(f"{name or '<model>'} ({kind}: {e})")
                return shape
        return handler(m, name, shape)

    def unpadded(self, what: str) -> None:
        pad_name = self.pad[4]
        self.pad = None
        self.unsupported.append(f"{pad_name} (zero padding followed by {what}: only a Conv2d "
                                "can take it)")

    def zero_pad(self, name, shape, top, bottom, left, right):
        """A zero padding, held for the Conv2d that must come next; returns the padded shape."""
        if self.pad is not None:
            self.unpadded(name)
        c, h, w = shape
        self.pad = (top, bottom, left, right, name)
        return (c, h + top + bottom, w + left + right)

    def do_SamePad2d(self, m, name, shape):
        # pads() is SamePad2d's own rule (ember.demos.efficientnet): ceil(size / stride) outputs
        return self.zero_pad(name, shape, *m.pads(shape[1]), *m.pads(shape[2]))

    def do_ZeroPad2d(self, m, name, shape):
        p = m.padding
        left, right, top, bottom = (p,) * 4 if isinstance(p, int) else tuple(p)
        return self.zero_pad(name, shape, top, bottom, left, right)

    def do_Sequential(self, m, name, shape):
        for child_name, child in m.named_children():
            shape = self.walk(child, f"{name}.{child_name}" if name else child_name, shape)
        return shape

    def save(self, shape, name: str) -> int:
        """Keep the current activation in a new slot (a shortcut's start); returns the slot."""
        slot = self.open_slots
        self.open_slots += 1
        self.slots = max(self.slots, self.open_slots)
        self.emit(Layer(fmt.SAVE, shape, shape, name, slot=slot))
        return slot

    def restore_add(self, slot: int, shape, name: str):
        """Add the newest open slot (``slot``) to the current activation and close it."""
        self.open_slots -= 1
        return self.emit(Layer(fmt.ADD, shape, shape, name, slot=slot))

    def do_Residual(self, m, name, shape):
        slot = self.save(shape, name)
        out = self.walk(m.body, f"{name}.body" if name else "body", shape)
        if out != shape and not self.unsupported:
            raise ShapeError(
                f"export: residual {name or '<model>'}: body maps {shape} to {out}; the add "
                "needs the same shape"
            )
        return self.restore_add(slot, out, name)

    def do_Flatten(self, m, name, shape):
        if (m.start_dim, m.end_dim) not in ((1, -1), (1, 3)):
            self.unsupported.append(f"{name} (Flatten start_dim={m.start_dim}, "
                                    f"end_dim={m.end_dim}: only 1..-1)")
        self.flat = True
        return (shape[0] * shape[1] * shape[2], 1, 1)

    def do_Linear(self, m, name, shape):
        n = shape[0] * shape[1] * shape[2]
        if n != m.in_features:
            raise ShapeError(f"export: {name} Linear expects {m.in_features} features but "
                             f"gets {shape} = {n}")
        w = _array(m.weight)
        return self.emit(Layer(fmt.LINEAR, shape, (m.out_features, 1, 1), name, weight=w,
                               bias=_array(m.bias)))

    def do_Conv2d(self, m, name, shape):
        c, h, w = shape
        kh, kw = _pair(m.kernel_size, "kernel_size", name)
        sh, sw = _pair(m.stride, "stride", name)
        if tuple(m.dilation) != (1, 1) or getattr(m, "padding_mode", "zeros") != "zeros":
            self.unsupported.append(f"{name} (Conv2d dilation={m.dilation}, "
                                    f"padding_mode={m.padding_mode}: needs 1 and 'zeros')")
        extra_h = extra_w = 0
        if m.padding == "valid":
            ph = pw = 0
        elif m.padding == "same":
            if (sh, sw) != (1, 1) or kh % 2 == 0 or kw % 2 == 0:
                self.unsupported.append(f"{name} (Conv2d padding='same' with stride or even "
                                        "kernel)")
            ph, pw = (kh - 1) // 2, (kw - 1) // 2
        elif isinstance(m.padding[0], (tuple, list)):  # (before, after) pairs: QuantConv2d
            (ph, below), (pw, right) = m.padding
            extra_h, extra_w = below - ph, right - pw
            if extra_h not in (0, 1) or extra_w not in (0, 1):
                self.unsupported.append(f"{name} (padding {m.padding}: the micro runtime pads "
                                        "after by at most one more than before)")
        else:
            ph, pw = _pair(m.padding, "padding", name)
        if c != m.in_channels:
            raise ShapeError(f"export: {name} Conv2d expects {m.in_channels} channels but gets "
                             f"shape {shape}")
        if self.pad is not None:  # fold the zero padding before: the record pads instead
            top, bottom, left, right, pad_name = self.pad
            self.pad = None
            h, w = h - top - bottom, w - left - right
            extra_h, extra_w = extra_h + bottom - top, extra_w + right - left
            if extra_h not in (0, 1) or extra_w not in (0, 1):
                self.unsupported.append(
                    f"{pad_name} (padding top/bottom {top}/{bottom}, left/right {left}/{right}: "
                    "the micro runtime pads after by at most one more than before)")
                extra_h, extra_w = max(0, min(extra_h, 1)), max(0, min(extra_w, 1))
            ph, pw = ph + top, pw + left
            shape = (c, h, w)
            name = f"{pad_name}+{name}"
        oh = conv_output_size(h, kh, sh, (ph, ph + extra_h))
        ow = conv_output_size(w, kw, sw, (pw, pw + extra_w))
        if oh < 1 or ow < 1:
            raise ShapeError(f"export: {name} Conv2d kernel {kh}x{kw} doesn't fit {shape}")
        return self.emit(Layer(fmt.CONV2D, shape, (m.out_channels, oh, ow), name,
                               weight=_array(m.weight), bias=_array(m.bias), kh=kh, kw=kw,
                               sh=sh, sw=sw, ph=ph, pw=pw, extra_h=extra_h, extra_w=extra_w,
                               groups=m.groups))

    def _quantized(self, layer: Layer, m) -> tuple[int, int, int]:
        return self.codes(layer, _array(m.weight), _array(m.weight_scale),
                          float(_array(m.input_scale)[0]), m.unsigned)

    def codes(self, layer: Layer, codes, w_scale, in_scale: float, unsigned: bool):
        """A layer of ``ember.quantize`` as it is: its int8 codes and scales, not
        re-quantized (the float weight is what the codes stand for)."""
        np = self.np
        layer.w_q = np.asarray(codes, dtype=np.int8)
        layer.w_scale = np.asarray(w_scale, dtype=np.float64)
        layer.in_scale = in_scale
        if unsigned:  # the boards quantize to +-127 only: the same range, half the steps
            layer.in_scale *= 255 / 127
        layer.weight = layer.w_q * layer.w_scale.reshape((-1,) + (1,) * (layer.w_q.ndim - 1))
        return layer.out_shape

    def do_FoldedActivation(self, m, name, shape):
        # a chained int8 model: the boards requantize themselves, the activation stays
        return self.walk(m.act, name, shape)

    def do_QuantLinear(self, m, name, shape):
        self.do_Linear(_FloatView(m), name, shape)
        return self._quantized(self.layers[-1], m)

    def do_QuantConv2d(self, m, name, shape):
        self.do_Conv2d(_FloatView(m), name, shape)
        return self._quantized(self.layers[-1], m)

    def _weight_only(self, layer: Layer, m, name: str) -> tuple[int, int, int]:
        """A weight-only layer of ``ember.quantize`` as it is: its int8/int4 codes and block
        scales, not re-quantized; the float weight is what they stand for."""
        from ..quantize.weights import unpack_int4

        np = _np()
        shape = tuple(m.weight_shape)
        rows, row_len = shape[0], math.prod(shape[1:])
        codes = m.weight_q.numpy()
        if m.bits == 4:
            codes = unpack_int4(codes, rows * row_len)
        layer.w_q = np.asarray(codes, dtype=np.int8).reshape(shape)
        layer.w_scale = _array(m.weight_scale).reshape(rows, -1)
        layer.w_bits, layer.w_block = int(m.bits), min(int(m.block), row_len)
        if layer.w_block < row_len and layer.w_block > 0xFFFF:
            self.unsupported.append(f"{name} (block of {layer.w_block} weights: the file "
                                    "stores blocks of at most 65535, or whole rows)")
        layer.weight = dequantize(layer.w_q, layer.w_scale, layer.w_block)
        return layer.out_shape

    def do_WeightOnlyLinear(self, m, name, shape):
        out_f, in_f = m.weight_shape
        self.do_Linear(Geometry(in_features=in_f, out_features=out_f, bias=m.bias), name,
                       shape)
        return self._weight_only(self.layers[-1], m, name)

    def do_WeightOnlyConv2d(self, m, name, shape):
        out_c, in_g, kh, kw = m.weight_shape
        self.do_Conv2d(Geometry(in_channels=in_g * m.groups, out_channels=out_c,
                                 kernel_size=(kh, kw), stride=m.stride, padding=m.padding,
                                 dilation=m.dilation, groups=m.groups, padding_mode="zeros",
                                 bias=m.bias), name, shape)
        return self._weight_only(self.layers[-1], m, name)

    def _batchnorm(self, m, name, shape):
        if m.running_mean is None:
            self.unsupported.append(f"{name} ({type(m).__name__} without running stats)")
            return shape
        scale, shift = batchnorm_affine(_array(m.running_mean), _array(m.running_var), m.eps,
                                        _array(m.weight), _array(m.bias))
        if shape[0] != len(scale):
            raise ShapeError(f"export: {name} {type(m).__name__}({len(scale)}) gets {shape}")
        return self.affine(scale, shift, name, shape)

    def affine(self, scale, shift, name: str, shape):
        """``x * scale + shift`` per channel: folded into the float Conv2d/Linear before it,
        else a 1×1 depthwise conv."""
        prev = self.last_weighted()
        # a quantized layer keeps its codes: the affine can't fold into them
        if prev is not None and prev.w_q is None and prev.out_shape[0] == len(scale):
            prev.weight, prev.bias = fold_affine_into(prev.weight, prev.bias, scale, shift)
            prev.name += f"+{name}"
            return shape
        # nothing to fold into: a per-channel affine is a 1×1 depthwise conv
        c = shape[0]
        return self.emit(Layer(fmt.CONV2D, shape, shape, name, weight=scale.reshape(c, 1, 1, 1),
                               bias=shift, groups=c))

    do_BatchNorm1d = do_BatchNorm2d = _batchnorm

    def activation(self, code, name, shape):
        prev = self.last_weighted()
        if prev is not None:
            prev.act = code
            prev.name += f"+{name}"
            return shape
        return self.emit(Layer(fmt.ACT, shape, shape, name, act=code))

    def do_Softmax(self, m, name, shape):
        if shape[1:] != (1, 1) or m.dim not in (None, 1, -1):
            self.unsupported.append(f"{name} (Softmax dim={m.dim} on {shape}: only over the "
                                    "features of a flat vector)")
        return self.softmax(name, shape)

    def softmax(self, name: str, shape):
        return self.emit(Layer(fmt.SOFTMAX, shape, shape, name))

    def pool(self, m, name, shape, op):
        kind = type(m).__name__
        kh, kw = _pair(m.kernel_size, "kernel_size", name)
        sh, sw = _pair(m.stride if m.stride is not None else m.kernel_size, "stride", name)
        ph, pw = _pair(m.padding, "padding", name)
        if m.ceil_mode or _pair(getattr(m, "dilation", 1), "dilation", name) != (1, 1):
            self.unsupported.append(f"{name} ({kind} with ceil_mode or dilation)")
        c, h, w = shape
        oh, ow = conv_output_size(h, kh, sh, (ph, ph)), conv_output_size(w, kw, sw, (pw, pw))
        if oh < 1 or ow < 1:
            raise ShapeError(f"export: {name} {kind} window {kh}x{kw} doesn't fit {shape}")
        return self.emit(Layer(op, shape, (c, oh, ow), name, kh=kh, kw=kw, sh=sh, sw=sw,
                               ph=ph, pw=pw,
                               count_pad=bool(getattr(m, "count_include_pad", True))))

    def do_MaxPool2d(self, m, name, shape):
        return self.pool(m, name, shape, fmt.MAXPOOL)

    def do_AvgPool2d(self, m, name, shape):
        return self.pool(m, name, shape, fmt.AVGPOOL)

    def do_AdaptiveAvgPool2d(self, m, name, shape):
        if m.output_size not in (1, (1, 1), [1, 1]):
            self.unsupported.append(f"{name} (AdaptiveAvgPool2d({m.output_size!r}): only "
                                    "output_size=1, the global average pool)")
        return self.global_average(name, shape)

    def global_average(self, name: str, shape):
        return self.emit(Layer(fmt.GAP, shape, (shape[0], 1, 1), name))


def _unsupported(what: list[str]) -> str:
    return ("export: the micro runtime can't run " + ", ".join(what) + ". Supported: "
            "Linear, Conv2d (groups, stride, padding), MaxPool2d, AvgPool2d, "
            "AdaptiveAvgPool2d(1), BatchNorm1d/2d, ReLU, ReLU6, Sigmoid, Tanh, Softmax, "
            "Hardswish, Flatten, Dropout, Identity, ember.export.Residual, nested Sequential, "
            "SamePad2d/ZeroPad2d before a Conv2d, ember.quantize's QuantLinear, "
            "QuantConv2d, WeightOnlyLinear, WeightOnlyConv2d; and any other module whose "
            "forward, traced, runs " + SUPPORTED_STEPS + ".")


class _FloatView:
    """A quantized layer seen as the float layer it replaced (geometry, bias; the weight
    is replaced by its codes afterwards)."""

    def __init__(self, m):
        self.__dict__.update(vars(m))
        self.padding_mode = "zeros"


def dequantize(codes, scale, block: int):
    """Float64 weights from per-block ``codes`` (the weight's shape) and ``scale`` (rows,
    blocks): ``code * scale[row, i // block]`` along each flattened row.

    >>> import numpy as np
    >>> dequantize(np.array([[1, 2, 3]]), np.array([[0.5, 2.0]]), 2).tolist()
    [[0.5, 1.0, 6.0]]
    """
    np = _np()
    codes = np.asarray(codes)
    flat = codes.reshape(len(codes), -1).astype(np.float64)
    per = np.repeat(np.asarray(scale, dtype=np.float64), block, axis=1)[:, : flat.shape[1]]
    return (flat * per).reshape(codes.shape)


def lower(model, input_shape) -> Program:
    """Lower ``model`` (eval-mode semantics) for inputs of ``input_shape`` (no batch dim).

    >>> from ember import nn
    >>> prog = lower(nn.Sequential(nn.Linear(4, 3), nn.ReLU()), (4,))
    >>> [layer.describe() for layer in prog.layers]
    ['linear+relu (4, 1, 1)->(3, 1, 1)']
    """
    lw = _Lowering(input_shape)
    try:
        lw.walk(model, "", lw.input_shape)
    except ShapeError as e:
        # a module it can't run passed its input shape on unchanged; a later layer's shape
        # error would only be the consequence: name the module instead
        if not lw.unsupported:
            raise
        raise UnsupportedOpError(_unsupported(lw.unsupported)) from e
    if lw.pad is not None:
        lw.unpadded("the end of the model")
    if lw.unsupported:
        raise UnsupportedOpError(_unsupported(lw.unsupported))
    if lw.layers and any(la.w_bits for la in lw.layers) and any(
            la.wdtype == fmt.INT8 for la in lw.layers):
        raise UnsupportedOpError(
            "export: the model mixes int8-activation layers (QuantLinear/QuantConv2d) and "
            "weight-only layers (WeightOnlyLinear/WeightOnlyConv2d); a micro model file holds "
            "one kind: quantize the whole model with one scheme")
    if not lw.layers:
        raise UnsupportedOpError("export: the model has no layers to run")
    return Program(lw.layers, lw.input_shape, lw.slots)
