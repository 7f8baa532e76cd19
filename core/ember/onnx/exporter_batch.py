"""Which traced sizes depend on the batch, for ``export(..., dynamic_batch=True)``.

The module is traced twice: at the example's batch size ``b`` and at ``b + 1`` (each input
with its first row appended). The two traces run the same ops; every literal that differs
between them (a reshape's target, an expand's shape, a slice's bound) and every value whose
shape differs is a function of the batch, ``k * batch + c``, solved from the two sizes: a
:class:`Dim`. Sizes that agree are fixed. So the batch can sit in any dim (time-major RNN
states, ``(B·T, C)`` rows of a flattened sequence) without guessing from the values.

>>> symbolic((2, 7, 16), (3, 7, 16), 2)
(Dim(k=1, c=0), 7, 16)
"""

from __future__ import annotations

from ..contract.program import Slot
from .exporter_graph import Dim, OnnxExportError


def symbolic(first, second, batch: int):
    """``first`` (a literal of the trace at ``batch``) with each int that differs in
    ``second`` (the trace at ``batch + 1``) replaced by its :class:`Dim` (tensors, as
    :class:`~ember.contract.program.Slot` markers, stay ``first``'s)."""
    if isinstance(first, Slot) and isinstance(second, Slot):
        return first
    if isinstance(first, (list, tuple)) and isinstance(second, (list, tuple)):
        if len(first) != len(second):
            raise _changed(f"{first} and {second}")
        return type(first)(symbolic(a, b, batch) for a, b in zip(first, second))
    if first == second:
        return first
    if isinstance(first, int) and isinstance(second, int) and not isinstance(first, bool):
        k = second - first
        return Dim(k, first - k * batch)
    raise _changed(f"{first!r} and {second!r}")


def _changed(what: str) -> OnnxExportError:
    return OnnxExportError(
        f"onnx export: the traced ops change with the batch size ({what} at two batch sizes), "
        "so no dynamic batch axis can express them: export with dynamic_batch=False"
    )


def grown(inputs):
    """Each input with its first row appended along dim 0 (batch + 1, values like the
    example's: token ids stay valid ids)."""
    from ..ops.shape_ops import cat

    for t in inputs:
        if t.ndim == 0:
            raise OnnxExportError("onnx export: dynamic_batch needs inputs with a batch dim 0, "
                                  "got a 0-d example input")
    return tuple(cat([t, t[:1]], 0) for t in inputs)


def batch_symbols(first, second, batch: int) -> tuple[dict, dict]:
    """``(args, shapes)`` from two tracers of the same module: per step of ``first`` (by
    ``id``), its arguments with batch-dependent literals as :class:`Dim`; per slot of
    ``first``, its symbolic shape (for the inputs and every step's outputs)."""
    b = first.backend
    if [s.name for s in first.steps] != [s.name for s in second.steps]:
        raise _changed(f"{len(first.steps)} and {len(second.steps)} ops")
    shapes = {}
    for s1, s2 in zip(first.inputs, second.inputs):
        shapes[s1] = symbolic(tuple(b.shape(first.keep[s1])), tuple(b.shape(second.keep[s2])),
                              batch)
    args = {}
    for one, two in zip(first.steps, second.steps):
        args[id(one)] = symbolic(one.args, two.args, batch)
        for s1, s2 in zip(one.outputs(), two.outputs()):
            shapes[s1] = symbolic(tuple(b.shape(first.keep[s1])),
                                  tuple(b.shape(second.keep[s2])), batch)
    return args, shapes
