"""Lower a module with its own ``forward`` from its traced program.

``ember.jit`` records the registry ops one call of the module runs (a :class:`~ember.jit.Tape`:
steps over slots, parameters as constants, constant subexpressions folded); each step maps to
the micro layer the module walk would emit, through the walk's own methods, so folds and
fusions are the same: a per-channel affine (a BatchNorm written out, a bias, a scale) folds
into the Conv2d/Linear before it, an activation fuses into it. The micro runtime runs one chain
of layers on one current activation with identity shortcuts: ``y = x + f(x)`` becomes
save/add. A value read after the chain moved past it any other way is a branch it can't run;
the error names the step.

>>> import ember
>>> from ember import nn
>>> import ember.nn.functional as F
>>> from ember.export import lower
>>> class Net(nn.Module):
...     def __init__(self):
...         super().__init__()
...         self.conv, self.fc = nn.Conv2d(1, 2, 3, padding=1), nn.Linear(8, 3)
...     def forward(self, x):
...         y = F.relu(self.conv(x))
...         return self.fc(F.max_pool2d(y + F.relu6(y), 2).flatten(1))
>>> [la.describe() for la in lower(Net(), (1, 4, 4)).layers]  # doctest: +NORMALIZE_WHITESPACE
['conv2d+relu (1, 4, 4)->(2, 4, 4)', 'save (2, 4, 4)->(2, 4, 4)',
 'activation+relu6 (2, 4, 4)->(2, 4, 4)', 'add (2, 4, 4)->(2, 4, 4)',
 'maxpool (2, 4, 4)->(2, 2, 2)', 'linear (8, 1, 1)->(3, 1, 1)']
"""

from __future__ import annotations

import math
from typing import Any

from ..errors import UnsupportedOpError
from ..contract.program import Slot
from ..jit import JitError
from . import format as fmt
from .geometry import Geometry

_ACTS = {"relu": fmt.RELU, "relu6": fmt.RELU6, "float_sigmoid": fmt.SIGMOID,
         "float_tanh": fmt.TANH, "hard_swish": fmt.HARDSWISH}
_AFFINE = ("float_add", "float_sub", "float_mul", "float_div")
_CONVS = ("conv", "qconv", "qconv_u8")  # what takes a zero padding before
#: layers whose trace computes float weights from codes (the file must keep the codes)
_CODES_BY_MODULE = ("WeightOnlyLinear", "WeightOnlyConv2d")


class _Const:
    """A value known before the input: a numpy float64 array."""

    def __init__(self, array):
        self.array = array


class _Traced:
    """One traced call of ``module`` mapped onto ``lowering`` (an export ``_Lowering``)."""

    def __init__(self, lowering, module, name: str, shape: tuple[int, int, int]):
        self.lw, self.name, self.np = lowering, name or "<model>", lowering.np
        held = sorted({type(m).__name__ for m in module.modules() if type(m).__name__
                       in _CODES_BY_MODULE})
        if held:
            # its trace reads the float weights the codes stand for: the file would lose them
            raise UnsupportedOpError(
                f"its forward is traced, and it holds {', '.join(held)}, whose codes only the "
                "module walk keeps: build that part as an nn.Sequential")
        self.tape = _trace(module, (shape[0],) if lowering.flat else shape)
        self.values: dict[int, Any] = {}  # slot -> _Const, or an activation's tensor shape
        self.saved: dict[int, int] = {}  # activation slot -> micro save slot
        self.uses: dict[int, int] = {}
        for s in [i for step in self.tape.steps for i in step.inputs()] + self.tape.outputs:
            self.uses[s] = self.uses.get(s, 0) + 1
        for slot, prim in self.tape.constants.items():
            self.values[slot] = _Const(self._array(prim))
        (self.current,) = self.tape.inputs
        self.values[self.current] = (1, shape[0]) if lowering.flat else (1, *shape)

    def run(self) -> tuple[int, int, int]:
        if len(self.tape.outputs) != 1:
            raise UnsupportedOpError(f"its forward returns {len(self.tape.outputs)} tensors "
                                     "(the boards' models return one)")
        for step in self.tape.steps:
            if step.kind != "op":
                self._fail(step, f"is a {step.kind} step (state the forward changes)")
            if step.inputs() and all(self._const_slot(s) for s in step.inputs()):
                self._evaluate(step)
                continue
            if self.lw.pad is not None and step.name not in _CONVS:
                self.lw.unpadded(f"{step.name} {self._label(step)}")
            if step.name in _ACTS:
                shape = self._take(step, step.args[0])
                self.lw.activation(_ACTS[step.name], self._label(step), _micro(shape))
                self._set(step, shape)
            elif step.name in _AFFINE:
                self._elementwise(step)
            else:
                getattr(self, "do_" + step.name, self._unmapped)(step)
        (out,) = self.tape.outputs
        if out != self.current:
            self._fail(self.tape.steps[-1], "leaves the returned value behind the chain")
        self.lw.flat = len(self.values[out]) == 2
        return _micro(self.values[out])

    # ------------------------------------------------------------------ values
    def _fail(self, step, why: str):
        raise UnsupportedOpError(f"its forward, traced, runs {step.name}, which {why}")

    def _unmapped(self, step) -> None:
        self._fail(step, "has no micro layer")

    def _label(self, step) -> str:
        return f"{self.name}:{step.name}"

    def _array(self, prim):
        return self.np.asarray(self.tape.backend.to_data(prim).to_numpy(), dtype=self.np.float64)

    def _const_slot(self, slot: int) -> bool:
        return isinstance(self.values.get(slot), _Const)

    def _is_const(self, a) -> bool:
        return not isinstance(a, Slot) or self._const_slot(a.id)

    def _const(self, a):
        if a is None:
            return None
        return self.values[a.id].array if isinstance(a, Slot) else self.np.asarray(a, float)

    def _evaluate(self, step) -> None:
        """A step on constants alone (the jit folds most of them), run on the tape's backend."""
        args = _substitute(step.args, self.tape.constants)
        prim = getattr(self.tape.backend, step.name)(*args, **step.kwargs)
        (out,) = step.outputs()
        self.tape.constants[out] = prim
        self.values[out] = _Const(self._array(prim))

    def _take(self, step, a) -> tuple[int, ...]:
        """The tensor shape of activation ``a``, which must be the chain's current value; one
        read again later is saved first (the start of an identity shortcut)."""
        if not isinstance(a, Slot) or a.id != self.current:
            self._fail(step, f"reads {a!r}, a value the chain has moved past (a branch)")
        self.uses[a.id] -= 1
        if self.uses[a.id] > 0 and a.id not in self.saved:
            self.saved[a.id] = self.lw.save(_micro(self.values[a.id]), self._label(step))
        return self.values[a.id]

    def _set(self, step, tshape: tuple[int, ...]) -> None:
        (out,) = step.outputs()
        self.values[out] = tuple(tshape)
        self.current = out

    # ------------------------------------------------------------------ elementwise
    def _elementwise(self, step) -> None:
        a, b = step.args
        if not self._is_const(a) and not self._is_const(b):
            return self._shortcut(step, a, b)
        if self._is_const(a) and step.name == "float_div":
            self._fail(step, "divides a constant by the activation")
        x, c = (b, a) if self._is_const(a) else (a, b)
        shape = self._take(step, x)
        c = self._const(c)
        if step.name == "float_add":
            scale, shift = 1.0, c
        elif step.name == "float_sub":  # x - c, or c - x = -x + c
            scale, shift = (-1.0, c) if self._is_const(a) else (1.0, -c)
        else:
            scale, shift = (c if step.name == "float_mul" else 1.0 / c), 0.0
        self._affine(step, shape, scale, shift)

    def do_float_neg(self, step) -> None:
        self._affine(step, self._take(step, step.args[0]), -1.0, 0.0)

    def _affine(self, step, tshape, scale, shift) -> None:
        np = self.np
        channels = tshape[1]
        vectors = []
        for v in (scale, shift):
            v = np.broadcast_to(np.asarray(v, dtype=np.float64), tshape).reshape(channels, -1)
            if not np.all(v == v[:, :1]):
                self._fail(step, "applies a constant that varies within a channel")
            vectors.append(v[:, 0].copy())
        self.lw.affine(*vectors, self._label(step), _micro(tshape))
        self._set(step, tshape)

    def _shortcut(self, step, a, b) -> None:
        if step.name != "float_add":
            self._fail(step, "combines two activations (only x + f(x) runs)")
        x, saved = (a, b) if a.id == self.current else (b, a)
        if saved.id not in self.saved:
            self._fail(step, f"adds {saved!r}, a value the chain has moved past")
        shape = self._take(step, x)
        self.uses[saved.id] -= 1
        if (self.values[saved.id] != shape or self.uses[saved.id]
                or self.saved[saved.id] != self.lw.open_slots - 1):
            self._fail(step, "adds a saved value of another shape, one read again later, or "
                       "one saved before an open shortcut (shortcuts must nest)")
        self.lw.restore_add(self.saved.pop(saved.id), _micro(shape), self._label(step))
        self._set(step, shape)

    def _scalar_operand(self, step, value: float):
        """The activation of a binary ``step`` whose other operand is the constant ``value``."""
        a, b = step.args
        x, c = (b, a) if self._is_const(a) else (a, b)
        c = self._const(c) if self._is_const(c) else None
        if c is None or not self.np.all(c == value):
            self._fail(step, f"bounds the activation by something other than {value:g}")
        return x

    def do_float_maximum(self, step) -> None:
        """max(x, 0) is a ReLU (ONNX Clip's lower bound 0)."""
        x = self._scalar_operand(step, 0.0)
        shape = self._take(step, x)
        self.lw.activation(fmt.RELU, self._label(step), _micro(shape))
        self._set(step, shape)

    def do_float_minimum(self, step) -> None:
        """min(relu(x), 6), ONNX Clip(0, 6), widens the ReLU just emitted to a ReLU6."""
        x = self._scalar_operand(step, 6.0)
        last = self.lw.layers[-1] if self.lw.layers else None
        if (not isinstance(x, Slot) or x.id != self.current or self.uses[x.id] != 1
                or last is None or last.act != fmt.RELU):
            self._fail(step, "clips at 6 a value that is not a ReLU's output read once "
                       "(only Clip(0, 6), a ReLU6, runs)")
        shape = self._take(step, x)
        last.act = fmt.RELU6
        last.name += f"+{self._label(step)}"
        self._set(step, shape)

    def do_slice_assign(self, step) -> None:
        """The activation written into a zero tensor (ONNX Pad, F.pad) is a zero padding of
        height and width, folded into the Conv2d that must follow, as the walk folds
        SamePad2d."""
        base, ranges, x = step.args
        if not self._is_const(base) or self.np.any(self._const(base)):
            self._fail(step, "writes the activation into a tensor that is not a constant zero")
        full = self._const(base).shape
        shape = self._take(step, x)
        if (len(full) != 4 or any(r[2] != 1 for r in ranges)
                or any((r[0], r[1]) != (0, n) for r, n in zip(ranges[:2], full[:2]))):
            self._fail(step, "writes other than a zero padding of an image's height and width")
        top, bottom = ranges[2][0], full[2] - ranges[2][1]
        left, right = ranges[3][0], full[3] - ranges[3][1]
        self.lw.zero_pad(self._label(step), _micro(shape), top, bottom, left, right)
        self._set(step, full)

    # ------------------------------------------------------------------ layers
    def do_conv(self, step) -> None:
        x, w, b, stride, padding, dilation, groups = step.args
        self._conv(step, x, self._const(w), self._const(b), stride, padding, dilation, groups)

    def do_qconv(self, step) -> None:
        x, w, w_scale, b, in_scale, stride, padding, dilation, groups = step.args
        self._conv(step, x, self._const(w), self._const(b), stride, padding, dilation, groups)
        self._codes(step, w, w_scale, in_scale)

    do_qconv_u8 = do_qconv

    def _conv(self, step, x, w, b, stride, padding, dilation, groups) -> None:
        shape = self._take(step, x)
        if len(shape) != 4:
            self._fail(step, f"convolves a {len(shape)}-d activation (only 2-d images)")
        view = Geometry(in_channels=shape[1], out_channels=w.shape[0],
                        kernel_size=tuple(w.shape[2:]), stride=tuple(stride),
                        padding=tuple(tuple(p) for p in padding), dilation=tuple(dilation),
                        groups=groups, padding_mode="zeros", weight=w, bias=b)
        self._set(step, (1, *self.lw.do_Conv2d(view, self._label(step), _micro(shape))))

    def do_float_matmul(self, step) -> None:
        x, w = step.args
        if not self._is_const(w):
            self._fail(step, "multiplies two activations")
        self._linear(step, x, self._const(w).T, None)

    def do_qlinear(self, step) -> None:
        x, w, w_scale, b, in_scale = step.args
        self._linear(step, x, self._const(w), self._const(b))
        self._codes(step, w, w_scale, in_scale)

    do_qlinear_u8 = do_qlinear

    def _linear(self, step, x, w, b) -> None:
        shape = self._take(step, x)
        if len(shape) != 2:
            self._fail(step, f"multiplies a {len(shape)}-d activation (only (1, features))")
        view = Geometry(in_features=w.shape[1], out_features=w.shape[0], weight=w, bias=b)
        self._set(step, (1, self.lw.do_Linear(view, self._label(step), _micro(shape))[0]))

    def _codes(self, step, w, w_scale, in_scale) -> None:
        self.lw.codes(self.lw.layers[-1], self._const(w), self._const(w_scale),
                      float(self._const(in_scale).reshape(-1)[0]), step.name.endswith("_u8"))

    def _pool(self, step, op, kernel, stride, padding, ceil_mode, count_pad=True) -> None:
        shape = self._take(step, step.args[0])
        if len(shape) != 4:
            self._fail(step, f"pools a {len(shape)}-d activation (only 2-d images)")
        view = Geometry(kernel_size=tuple(kernel), stride=tuple(stride), padding=tuple(padding),
                        ceil_mode=ceil_mode, count_include_pad=count_pad)
        self._set(step, (1, *self.lw.pool(view, self._label(step), _micro(shape), op)))

    def do_max_pool(self, step) -> None:
        _, kernel, stride, padding, dilation, ceil_mode = step.args
        if tuple(dilation) != (1,) * len(dilation):
            self._fail(step, f"has dilation {tuple(dilation)}")
        self._pool(step, fmt.MAXPOOL, kernel, stride, padding, ceil_mode)

    def do_avg_pool(self, step) -> None:
        _, kernel, stride, padding, ceil_mode, count_pad, *divisor = step.args
        if divisor and divisor[0]:
            self._fail(step, "has a divisor_override")
        self._pool(step, fmt.AVGPOOL, kernel, stride, padding, ceil_mode, count_pad)

    def do_adaptive_avg_pool(self, step) -> None:
        x, size = step.args
        shape = self._take(step, x)
        if len(shape) != 4 or tuple(size) != (1, 1):
            self._fail(step, f"pools to {tuple(size)} (only to 1x1, the global average)")
        self.lw.global_average(self._label(step), _micro(shape))
        self._set(step, (1, shape[1], 1, 1))

    def do_float_mean(self, step) -> None:
        """The mean over height and width (ONNX GlobalAveragePool; the dims stay, size 1) is
        the global average."""
        x, dims = step.args
        shape = self._take(step, x)
        if len(shape) != 4 or sorted(d % 4 for d in dims) != [2, 3]:
            self._fail(step, f"averages {shape} over dims {tuple(dims)} (only over height and "
                       "width, the global average)")
        self.lw.global_average(self._label(step), _micro(shape))
        self._set(step, (1, shape[1], 1, 1))

    def do_reshape(self, step) -> None:
        x, new = step.args
        shape, new = self._take(step, x), tuple(new)
        if not 2 <= len(new) <= 4 or new[0] != 1 or math.prod(new) != math.prod(shape):
            self._fail(step, f"reshapes {shape} to {new} (only keeping a batch of 1, <= 4-d)")
        self._set(step, new)  # the boards hold (C, H, W) row-major: the data stays as it is

    def do_softmax(self, step) -> None:
        x, dim = step.args
        shape = self._take(step, x)
        if len(shape) != 2 or dim not in (1, -1):
            self._fail(step, f"is over dim {dim} of {shape} (only over a flat vector)")
        self.lw.softmax(self._label(step), _micro(shape))
        self._set(step, shape)


def lower_traced(lowering, module, name: str, shape: tuple[int, int, int]):
    """Map one traced call of ``module`` (input ``shape``, no batch dim, eval mode) onto
    ``lowering``; returns the output's ``(C, H, W)``."""
    return _Traced(lowering, module, name, shape).run()


def _trace(module, shape):
    import ember
    from ..autodiff import no_grad

    # a fully quantized model has buffers only (codes, scales): they say the backend too
    params = list(module.parameters()) or list(module.buffers())
    backend = params[0].backend if params else None
    training = [(m, m.training) for m in module.modules()]
    module.eval()
    try:
        fn = ember.jit(module)
        x = ember.zeros((1, *shape), backend=backend)
        with no_grad():
            for _ in range(2):  # the eager warm-up settles lazy state (quantized layers' plans)
                fn(x)
        return fn.tapes()[0]
    except JitError as e:
        raise UnsupportedOpError(f"its forward can't be traced: {e}") from None
    finally:
        for m, was in training:
            m.training = was


def _micro(tshape) -> tuple[int, int, int]:
    """A batch-of-1 tensor shape as the boards' ``(C, H, W)``."""
    dims = tuple(tshape[1:])
    if len(dims) == 1:
        return (dims[0], 1, 1)
    return (dims[0], dims[1], dims[2] if len(dims) == 3 else 1)


def _substitute(args, constants):
    return tuple(constants[a.id] if isinstance(a, Slot)
                 else _substitute(a, constants) if isinstance(a, (list, tuple)) else a
                 for a in args)
