"""How large a node's outputs can get, known from its constant inputs before it runs.

Load-time folding must neither hang nor exhaust memory on a model such as
``ConstantOfShape([10**12]) -> ReduceSum``. A node is folded only when an upper bound on each
of its outputs is known and within ``ember.limits`` ``max_folded_elements``; any other node is
left to run at call time, as onnxruntime leaves large constants unfolded. The bounds are loose
(a product of input sizes for contractions) but never below the true size; ops without a bound
here (convolutions, resizing, padding, functions, ...) are simply not folded.
"""

from __future__ import annotations

import math

from ..tensor import Tensor
from .ops._util import ints, scalar

# each output is no larger than the inputs broadcast together
BROADCAST = frozenset("""
    Abs Acos Acosh Add And Asin Asinh Atan Atanh BatchNormalization BitShift BitwiseAnd
    BitwiseNot BitwiseOr BitwiseXor Cast CastLike Ceil Celu Clip Cos Cosh CumProd CumSum
    DequantizeLinear Div Dropout DynamicQuantizeLinear Elu Equal Erf Exp Floor Gelu Greater
    GreaterOrEqual GroupNormalization HardSigmoid HardSwish Hardmax Identity InstanceNormalization
    IsInf IsNaN LRN LayerNormalization LeakyRelu Less LessOrEqual Log LogSoftmax LpNormalization
    Max Mean MeanVarianceNormalization Min Mish Mod Mul Neg Not Or PRelu Pow QuantizeLinear
    RMSNormalization Reciprocal Relu Round Scatter ScatterElements ScatterND Selu Shrink Sigmoid
    Sign Sin Sinh Softmax Softplus Softsign Sqrt Sub Sum Swish Tan Tanh ThresholdedRelu Trilu
    Where Xor
""".split())
# each output rearranges, selects or reduces input elements (Shape/NonZero: a few per dim)
REARRANGE = frozenset("""
    ArgMax ArgMin Compress Concat Constant DepthToSpace Det EyeLike Flatten GatherElements
    GlobalAveragePool GlobalLpPool GlobalMaxPool NonZero ReduceL1 ReduceL2 ReduceLogSum
    ReduceLogSumExp ReduceMax ReduceMean ReduceMin ReduceProd ReduceSum ReduceSumSquare Reshape
    ReverseSequence Shape Size Slice SpaceToDepth Split Squeeze TopK Transpose Unique Unsqueeze
""".split())
# outputs combine dims of several inputs (outer products)
CONTRACT = frozenset("Einsum Gather GatherND Gemm MatMul MatMulInteger QLinearMatMul".split())


def _span(shape) -> int:
    """Elements of ``shape`` with each 0 counted as 1: a bound that survives combining dims."""
    return math.prod(max(int(d), 1) for d in shape)


def _broadcast(shapes) -> int:
    rank = max((len(s) for s in shapes), default=0)
    dims = [1] * rank
    for s in shapes:
        for i, d in enumerate(s, rank - len(s)):
            dims[i] = max(dims[i], int(d))
    return _span(dims)


def _range(start, limit, delta) -> int | None:
    start, limit, delta = (float(scalar(v, 0)) for v in (start, limit, delta))
    steps = (limit - start) / delta if delta else math.inf
    return max(0, math.ceil(steps)) if math.isfinite(steps) else None


def _sized(values) -> list[int] | None:
    out = ints(values)
    return out if all(v >= 0 for v in out) else None


def output_bound(op_type: str, args: list) -> int | None:
    """An upper bound on the elements of each output of ``op_type`` applied to the constant
    tensors ``args`` (``None`` for an omitted input); ``None`` when there is none."""
    if not all(a is None or isinstance(a, Tensor) for a in args):
        return None
    shapes = [tuple(a.shape) for a in args if a is not None]
    if op_type in BROADCAST:
        return _broadcast(shapes)
    if op_type in REARRANGE:
        return sum(_span(s) * max(len(s), 1) for s in shapes)
    if op_type in CONTRACT:
        return math.prod(_span(s) for s in shapes)
    if op_type == "ConstantOfShape" and len(args) == 1:
        # _span, not prod: an empty (0, 10**17) constant would fold to an absurd shape
        dims = _sized(args[0])
        return None if dims is None else _span(dims)
    if op_type == "Expand" and len(args) == 2:
        dims = _sized(args[1])
        return None if dims is None else _broadcast([shapes[0], dims])
    if op_type == "Tile" and len(args) == 2:
        reps = _sized(args[1])
        return None if reps is None else _span(shapes[0]) * _span(reps)
    if op_type == "Range" and len(args) == 3:
        return _range(*args)
    return None
