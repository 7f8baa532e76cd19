"""What an op will cost the server, known from its operands' shapes before it runs.

The server bounds each op's working memory (its results plus the scratch a backend allocates
on the way: a convolution's column matrix grows with the batch, the kernel and the channels,
not with its result) and its work (multiply-adds and element visits), so that a small request
cannot make a huge computation. The estimates follow the op's kind in the registry, never its
name; they are upper bounds for the default bodies (im2col convolutions, windowed pooling).

>>> from ember.contract import registry
>>> from ember.contract.registry import Spec
>>> from ember import dtype as dt
>>> a, b = Spec((64, 32), dt.float32), Spec((32, 16), dt.float32)
>>> out = registry.REGISTRY["float_matmul"].infer(a, b)
>>> op_cost(registry.REGISTRY["float_matmul"], [a, b], [out])
(32768, 0)
"""

from __future__ import annotations

import math

from .. import dtype as dt
from ..contract.registry import Kind, Op, Spec
from ..shape import numel


def op_cost(op: Op, specs: list, outs: list[Spec]) -> tuple[int, int]:
    """``(work, scratch_bytes)`` of ``op`` on operands ``specs`` (Specs at the tensor
    positions, parameters elsewhere) giving ``outs``: work in multiply-adds or element
    visits, scratch the bytes of intermediates beyond the results."""
    named = dict(zip(op.args, specs))
    tensors = [*_tensor_specs(op, specs), *outs]
    visits = sum(numel(s.shape) for s in tensors)
    if op.kind is Kind.CONTRACTION:
        a = next(_tensor_specs(op, specs))
        return max(visits, numel(outs[0].shape) * (a.shape[-1] if a.shape else 1)), 0
    if op.kind is Kind.SORT:
        longest = max((max(s.shape, default=1) for s in tensors), default=1)
        return visits * max(1, math.ceil(math.log2(max(longest, 2)))), 0
    if op.kind is not Kind.MODULE:
        return visits, 0
    weight = named.get("weight")
    wshape = tuple(weight.shape) if isinstance(weight, Spec) else named.get("weight_shape")
    itemsize = max((dt.as_dtype(s.dtype).itemsize for s in tensors), default=4)
    if isinstance(wshape, tuple) and len(wshape) >= 3:  # a convolution: im2col columns
        maps = [s.shape for s in tensors if len(s.shape) == len(wshape)]
        batch = max((m[0] for m in maps), default=1)
        positions = max((numel(m[2:]) for m in maps), default=1)
        groups = named.get("groups") if isinstance(named.get("groups"), int) else 1
        columns = batch * positions * numel(wshape[1:]) * max(groups, 1)  # taps × positions
        return max(visits, batch * positions * numel(wshape)), columns * itemsize
    if isinstance(wshape, tuple) and len(wshape) == 2:  # a linear layer
        return max(visits, numel(outs[0].shape) * wshape[1]), 0
    kernel = named.get("kernel")
    if isinstance(kernel, tuple) and all(isinstance(k, int) for k in kernel):  # pooling windows
        window = numel(kernel)
        largest = max(numel(s.shape) for s in tensors)
        return visits * window, largest * window * itemsize
    return visits, 0


def _tensor_specs(op: Op, specs: list):
    """The operands' Specs (lists of tensors, as ``cat`` takes, flattened)."""
    for i in op.tensor_positions:
        s = specs[i]
        if isinstance(s, Spec):
            yield s
        elif isinstance(s, list):
            yield from (x for x in s if isinstance(x, Spec))
