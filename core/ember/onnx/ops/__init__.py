"""The ONNX operator registry: one short function per operator, grouped by family.

An op function takes ``(ctx, *inputs, **attributes)`` — inputs in ONNX order (``None`` for an
omitted optional input), attributes by their ONNX names — and returns a tensor, or a tuple of
tensors for several outputs (a Python ``list`` is an ONNX sequence value).
"""

from __future__ import annotations

from collections.abc import Callable

from ...errors import EmberError, UnsupportedOpError
from .._graph import OnnxRunError

REGISTRY: dict[str, Callable] = {}
# ops that must run every call (random) or carry state; never folded at load time. Ops of
# domains other than ai.onnx register as "<domain>.<op>" (e.g. "ai.onnx.preview.FlexAttention")
NOT_FOLDABLE = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
                "Bernoulli", "Multinomial", "If", "Loop", "Scan", "SequenceMap"}


class CallCtx:
    """The context an op function sees when called outside a graph (generated code)."""

    def __init__(self, op_type: str, backend, opset: int, n_outputs: int):
        self.op_type, self.backend, self.opset, self.n_outputs = op_type, backend, opset, n_outputs
        self.env = None

    def run(self, graph, inputs, outer=None):
        """Generated code passes a subgraph attribute as a Python function."""
        if not callable(graph):
            raise UnsupportedOpError(f"onnx {self.op_type}: a subgraph attribute must be a "
                                     "Python function here (ember onnx convert writes one)")
        out = graph(*inputs)
        return list(out) if isinstance(out, tuple) else [out]


def call(op_type: str, *inputs, opset: int = 21, n_outputs: int = 1, **attrs):
    """Run one ONNX operator on ember tensors (what ``ember onnx convert`` emits for ops with
    no direct ember spelling).

    >>> import ember
    >>> from ember.onnx.ops import call
    >>> call("Flatten", ember.ones(2, 3, 4), axis=1).shape
    (2, 12)
    >>> call("LayerNormalization", ember.ones(2, 3), ember.ones(3)).shape
    (2, 3)
    """
    from ...backends import default_backend

    fn = REGISTRY.get(op_type)
    if fn is None:
        raise UnsupportedOpError(f"onnx {op_type}: not an operator ember implements; see "
                                 "ember.onnx.supported_ops()")
    first = next((t for t in inputs if hasattr(t, "backend")), None)
    backend = first.backend if first is not None else default_backend()
    out = invoke(fn, CallCtx(op_type, backend, opset, n_outputs), op_type, inputs, attrs)
    # exactly the outputs the node declares (LayerNormalization computes three, a node may
    # use one)
    if not isinstance(out, tuple):
        return out
    if len(out) < n_outputs:
        raise UnsupportedOpError(f"onnx {op_type}: {n_outputs} outputs asked for, the op "
                                 f"gives {len(out)}")
    return out[0] if n_outputs == 1 else out[:n_outputs]


# ops whose output size comes from the values of their inputs (a shape, repeats, a range):
# bounded before they allocate (see ``_fold.output_bound``; Resize checks its own)
SIZED_BY_DATA = frozenset({"ConstantOfShape", "Expand", "Tile", "Range"})


def invoke(fn: Callable, ctx, op_type: str, inputs, attrs: dict):
    """``fn(ctx, *inputs, **attrs)``; inputs or attributes the op does not take raise an
    UnsupportedOpError naming them (not the TypeError of a Python call). An output sized by
    its inputs' values is checked against ``ember.limits`` ``max_tensor_bytes`` before it is
    made (ShapeError), and any error that is not ember's own (an IndexError, a
    ZeroDivisionError... from inputs that break the operator) becomes an OnnxRunError."""
    if op_type in SIZED_BY_DATA:
        _check_sized(op_type, inputs)
    try:
        return fn(ctx, *inputs, **attrs)
    except (EmberError, MemoryError):
        raise
    except TypeError as e:
        if "argument" in str(e) and fn.__name__ in str(e):
            raise UnsupportedOpError(f"onnx {op_type}: unsupported inputs/attributes "
                                     f"{sorted(attrs)}: {e}") from e
        raise OnnxRunError(f"onnx {op_type}: {type(e).__name__}: {e}") from e
    except Exception as e:  # noqa: BLE001 - typed here: the model broke the operator
        raise OnnxRunError(f"onnx {op_type}: the node's inputs or attributes break the "
                           f"operator ({type(e).__name__}: {e})") from e


def _check_sized(op_type: str, inputs) -> None:
    from ... import limits
    from ...errors import ShapeError
    from .._fold import output_bound

    try:
        bound = output_bound(op_type, list(inputs))
    except Exception:  # noqa: BLE001 - malformed inputs: the op itself reports them
        return
    if bound is not None:  # 8 bytes a value: the widest dtype, a bound for every output
        limits.check(ShapeError, f"onnx {op_type}: the bytes of its output (8 a value, at "
                     "most)", bound * 8, "max_tensor_bytes")


def op(*names: str):
    """Register a function under one or more ONNX op names."""

    def register(fn: Callable) -> Callable:
        for n in names:
            REGISTRY[n] = fn
        return fn

    return register


from .control import stack_outputs  # noqa: E402  (generated code imports it from here)

from . import (  # noqa: F401, E402  (importing registers the ops)
    attention,
    col2im,
    control,
    detection,
    elementwise,
    grid_sample,
    linear_attention,
    logic,
    loss,
    nn_conv,
    nn_norm,
    nn_resize,
    quant,
    reduce,
    rnn,
    sequence,
    shape,
    spectral,
    stateful,
    training,
    tensor_misc,
)
