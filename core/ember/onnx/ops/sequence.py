"""Sequence and Optional values: a sequence is a Python list of tensors, an empty optional is
``None``."""

from __future__ import annotations

import ember

from .._types import onnx_dtype
from . import op
from ._util import axis as _axis
from ._util import const, ints, scalar


@op("SequenceEmpty")
def sequence_empty(ctx, dtype=None):
    return []


@op("SequenceConstruct")
def sequence_construct(ctx, *xs):
    return list(xs)


@op("SequenceInsert")
def sequence_insert(ctx, seq, x, position=None):
    out = list(seq)
    out.insert(int(scalar(position)) if position is not None else len(out), x)
    return out


@op("SequenceAt")
def sequence_at(ctx, seq, position):
    return seq[int(scalar(position))]


@op("SequenceErase")
def sequence_erase(ctx, seq, position=None):
    out = list(seq)
    del out[int(scalar(position)) if position is not None else -1]
    return out


@op("SequenceLength")
def sequence_length(ctx, seq):
    return const(ctx, len(seq), ember.int64)


@op("SplitToSequence")
def split_to_sequence(ctx, x, split=None, axis=0, keepdims=1):
    a = _axis(axis, x.ndim)
    if split is None:
        parts = ember.split(x, 1, dim=a)
        return [p.squeeze(a) for p in parts] if not keepdims else list(parts)
    sizes = ints(split)
    if split.ndim == 0 or len(sizes) == 1:
        n = x.shape[a]
        sizes = [min(sizes[0], n - i) for i in range(0, n, sizes[0])]
    return list(ember.split(x, sizes, dim=a))


@op("ConcatFromSequence")
def concat_from_sequence(ctx, seq, axis, new_axis=0):
    if new_axis:
        return ember.stack(seq, dim=axis)
    return ember.cat(seq, dim=axis)


@op("SequenceMap")
def sequence_map(ctx, seq, *extra, body):
    n = len(seq)
    outs = []
    for i in range(n):
        args = [seq[i]] + [e[i] if isinstance(e, list) else e for e in extra]
        outs.append(ctx.run(body, args))
    res = tuple([o[j] for o in outs] for j in range(len(body.outputs)))
    return res if len(res) > 1 else res[0]


@op("Optional")
def optional(ctx, x=None, type=None):
    return x


@op("OptionalHasElement")
def optional_has_element(ctx, x=None):
    return const(ctx, x is not None, ember.bool)


@op("OptionalGetElement")
def optional_get_element(ctx, x):
    if x is None:
        raise ValueError("OptionalGetElement: the optional is empty")
    return x


del onnx_dtype
