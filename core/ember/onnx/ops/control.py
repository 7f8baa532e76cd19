"""Control flow: If, Loop, Scan. Bodies are subgraphs run by the module with the enclosing
scope visible (ONNX lets a body read outer values by name)."""

from __future__ import annotations

import ember

from . import op
from ._util import const, scalar


def stack_outputs(steps: list, axis: int = 0, reverse: bool = False, backend=None):
    """The per-iteration values of a Loop/Scan output stacked along ``axis`` (``reverse``:
    last iteration first); sequences stay lists; no iterations give an empty tensor.

    >>> import ember
    >>> stack_outputs([ember.ones(2), ember.zeros(2)], axis=1).shape
    (2, 2)
    """
    if not steps:
        return ember.zeros(0, backend=backend)
    if isinstance(steps[0], list):
        return steps
    y = ember.stack(steps[::-1] if reverse else steps, dim=0)
    a = axis + y.ndim if axis < 0 else axis
    return y.movedim(0, a) if a else y


def _truth(t) -> bool:
    return bool(t.item()) if t.numel() == 1 else bool(scalar(t))


@op("If")
def if_(ctx, cond, then_branch, else_branch):
    branch = then_branch if _truth(cond) else else_branch
    outs = ctx.run(branch, [])
    return tuple(outs)


def _reads(graph, name: str) -> bool:
    return bool(name) and (name in graph.outputs or any(
        name in n.inputs or any(_reads(g, name) for g in n.subgraphs()) for n in graph.nodes))


@op("Loop")
def loop(ctx, m, cond, *carried, body):
    n_carried = len(carried)
    trip = int(m.item()) if m is not None else None
    keep_going = _truth(cond) if cond is not None else True
    state = list(carried)
    scans: list[list] = []
    i = 0
    outer = ctx.env
    # the iteration number and condition as tensors only when the body reads them
    need_i, need_cond = (_reads(body, body.inputs[0]), _reads(body, body.inputs[1]))
    flags = {v: const(ctx, v, ember.bool) for v in (True, False)} if need_cond else {}
    while keep_going and (trip is None or i < trip):
        it = const(ctx, i, ember.int64) if need_i else None
        outs = ctx.run(body, [it, flags.get(keep_going), *state], outer)
        keep_going = _truth(outs[0]) if outs[0] is not None else True
        state = outs[1:1 + n_carried]
        extra = outs[1 + n_carried:]
        if not scans:
            scans = [[] for _ in extra]
        for acc, v in zip(scans, extra):
            acc.append(v)
        i += 1
    n_scan = len(body.outputs) - 1 - n_carried
    return tuple(state + [stack_outputs(acc, backend=ctx.backend)
                          for acc in (scans or [[]] * n_scan)])


@op("Scan")
def scan(ctx, *inputs, body, num_scan_inputs, scan_input_axes=None,
         scan_input_directions=None, scan_output_axes=None, scan_output_directions=None,
         directions=None):
    if ctx.opset < 9:  # opset 8: batched, after an optional sequence_lens input
        return _scan_batched(ctx, inputs[0], inputs[1:], body, num_scan_inputs, directions)
    return _scan(ctx, inputs, body, num_scan_inputs, scan_input_axes, scan_input_directions,
                 scan_output_axes, scan_output_directions)


def _scan(ctx, inputs, body, num_scan_inputs, scan_input_axes=None,
          scan_input_directions=None, scan_output_axes=None, scan_output_directions=None):
    n_state = len(inputs) - num_scan_inputs
    state = list(inputs[:n_state])
    xs = inputs[n_state:]
    in_axes = scan_input_axes or [0] * len(xs)
    in_dirs = scan_input_directions or [0] * len(xs)
    in_axes = [a + x.ndim if a < 0 else a for a, x in zip(in_axes, xs)]
    steps = xs[0].shape[in_axes[0]]
    n_out = len(body.outputs) - n_state
    out_dirs = scan_output_directions or [0] * n_out
    outs_acc: list[list] = [[] for _ in range(n_out)]
    for t in range(steps):
        slices = []
        for x, a, d in zip(xs, in_axes, in_dirs):
            i = steps - 1 - t if d else t
            slices.append(x.select(a, i))
        outs = ctx.run(body, [*state, *slices])
        state = outs[:n_state]
        for acc, v in zip(outs_acc, outs[n_state:]):
            acc.append(v)
    out_axes = scan_output_axes or [0] * n_out
    return tuple(state + [stack_outputs(acc, a, bool(d))
                          for acc, a, d in zip(outs_acc, out_axes, out_dirs)])


def _scan_batched(ctx, lens, inputs, body, num_scan_inputs, directions):
    """Scan-8: every input has a batch axis 0 (scan inputs scan along axis 1); each batch
    item is a Scan-9 run; outputs are stacked along a new axis 0."""
    from .._graph import OnnxUnsupportedError

    batch = inputs[0].shape[0]
    steps = inputs[-1].shape[1]
    if lens is not None and any(int(v) != steps for v in lens.tolist()):
        raise OnnxUnsupportedError(
            f"Scan (opset 8): sequence_lens {lens.tolist()} shorter than the scan axis "
            f"({steps}) are not supported; omit sequence_lens or give every item {steps}")
    runs = [_scan(ctx, [x[b] for x in inputs], body, num_scan_inputs,
                  scan_input_directions=directions) for b in range(batch)]
    return tuple(ember.stack([r[k] for r in runs], dim=0) for k in range(len(runs[0])))
