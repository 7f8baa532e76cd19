"""``export()``: an ember model → a micro model file, optionally int8, with a report."""

from __future__ import annotations

import os
from dataclasses import dataclass

from . import binary, reference
from .budget import MemoryEstimate, check_budget, estimate_memory
from .ir import Program, _np, lower


@dataclass
class ExportReport:
    """What ``export`` wrote, and (int8) how much accuracy quantisation cost.

    >>> import os, tempfile
    >>> from ember import nn
    >>> from ember.export import export
    >>> model = nn.Sequential(nn.Flatten(), nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    >>> report = export(model, os.path.join(tempfile.mkdtemp(), "m.emb"), (1, 2, 2))
    >>> report.layers, report.size_bytes == os.path.getsize(report.path), report.int8
    (['linear+relu (4, 1, 1)->(3, 1, 1)', 'linear (3, 1, 1)->(2, 1, 1)'], True, False)
    >>> report.ram_bytes == report.memory.ram_bytes
    True
    """

    path: str
    size_bytes: int
    float_size_bytes: int
    layers: list[str]
    int8: bool
    n_eval: int = 0
    accuracy_f32: float | None = None
    accuracy_int8: float | None = None
    agreement: float | None = None
    max_abs_logit_diff: float | None = None
    memory: MemoryEstimate | None = None
    weight_only: bool = False  # ember.quantize's weight-only codes (int4/int8 per block)

    @property
    def ram_bytes(self) -> int | None:
        """Estimated RAM on the board (see :mod:`ember.export.budget`)."""
        return self.memory.ram_bytes if self.memory is not None else None

    def __str__(self) -> str:
        kind = "int8" if self.int8 else "weight-only" if self.weight_only else ""
        lines = [f"{self.path}: {self.size_bytes:,} bytes, {len(self.layers)} layers"
                 + (f" ({kind}; f32 would be {self.float_size_bytes:,})" if kind else "")]
        if self.memory is not None:
            lines.append(f"  board memory: {self.memory}")
        lines += [f"  {d}" for d in self.layers]
        if self.int8 and self.n_eval:
            acc = ""
            if self.accuracy_f32 is not None:
                delta = 100 * (self.accuracy_int8 - self.accuracy_f32)
                acc = (f"accuracy f32 {100 * self.accuracy_f32:.2f}% -> int8 "
                       f"{100 * self.accuracy_int8:.2f}% ({delta:+.2f} points), ")
            lines.append(f"  int8 on {self.n_eval} inputs: {acc}argmax agreement "
                         f"{100 * self.agreement:.2f}%, max |logit diff| "
                         f"{self.max_abs_logit_diff:.4g}")
        return "\n".join(lines)


def _as_batch(x, program: Program):
    np = _np()
    if hasattr(x, "numpy") and not isinstance(x, np.ndarray):
        x = x.numpy()
    x = np.asarray(x, dtype=np.float64)
    return x.reshape((len(x),) + program.input_shape)


def model_logits(model, x):
    """Run an ember model on CPython in eval mode: numpy (N, ...) in, numpy (N, outputs) out.

    >>> import numpy as np
    >>> from ember import nn
    >>> model_logits(nn.Linear(3, 2), np.zeros((4, 3))).shape
    (4, 2)
    """
    import ember

    np = _np()
    # a fully quantized model has buffers only (codes, scales): they say the backend too
    params = list(model.parameters()) or list(model.buffers())
    backend = params[0].backend if params else None
    was_training = getattr(model, "training", False)
    model.eval()
    try:
        with ember.no_grad():
            t = ember.tensor(np.ascontiguousarray(x, dtype=np.float32), backend=backend)
            y = model(t)
        out = y.numpy() if hasattr(y, "numpy") else np.asarray(y.tolist())
    finally:
        model.train(was_training)
    return np.asarray(out, dtype=np.float64).reshape(len(x), -1)


def _unquantized(program: Program) -> Program:
    """A copy of ``program`` with float weights only (what it would take unquantized)."""
    import copy

    plain = copy.copy(program)
    plain.layers = [copy.copy(layer) for layer in program.layers]
    for layer in plain.layers:
        layer.w_q, layer.w_bits = None, 0
    return plain


def export(model, path: str | os.PathLike, input_shape, *, int8: bool = False,
           calibration=None, evaluate=None, input_transform=None,
           percentile: float = 100.0, budget_bytes: int | None = None,
           flash_budget_bytes: int | None = None, tier: str | None = None,
           romfs: bool = False) -> ExportReport:
    """Write ``model`` as a micro model file for ``embedded/ember_micro``.

    ``input_shape`` excludes the batch dim: ``(1, 28, 28)`` or ``(784,)``. ``int8=True``
    quantises weights per output channel and calibrates activation scales on ``calibration``
    (a batch of float inputs, numpy or Tensor). ``evaluate=(x, labels)`` measures the accuracy
    change (labels may be None: then only agreement with f32). ``input_transform=(mul, add)``
    tells the board how to scale uint8 inputs: ``x = byte * mul + add``.

    A model from ``ember.quantize`` is written with its own codes and scales, not quantized
    again (no calibration needed): scheme ``"int8"`` as int8 layers, the weight-only schemes
    ``"int8-weights"`` and ``"int4"`` as int8/int4 codes per block with float activations
    (the board dequantizes each weight row as it uses it). ``int8=True`` can't apply to a
    weight-only model (its codes would be quantized again).

    ``budget_bytes`` (RAM) and ``flash_budget_bytes`` (the model file) state the board's
    memory: a model over either raises :class:`~ember.export.budget.BudgetError` naming what
    exceeds it, before anything is written. ``tier`` names the kernel tier the board will run
    (``"native"``, ``"ulab"``, ``"pure"``); by default the budget holds for any of them.
    ``romfs=True``: the board runs ember_micro's ``.mpy`` in place from ROMFS (the 32-bit
    boards' smaller heap figure, :meth:`MemoryEstimate.heap_for`). The report's ``memory`` has the estimate either way, with the heap each tier needs.

    >>> import os, tempfile
    >>> from ember import nn
    >>> path = os.path.join(tempfile.mkdtemp(), "mlp.emb")
    >>> report = export(nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)), path, (4,))
    >>> report.size_bytes
    384
    """
    model.eval()
    program = lower(model, input_shape)
    # an ember.quantize model: its codes are written as they are
    already = program.quantized or program.weight_only
    if int8 and program.weight_only:
        raise ValueError("export(int8=True): the model holds ember.quantize weight-only layers "
                         "(int4/int8 codes per block), which are written as they are; export "
                         "it without int8=True, or quantize the float model with "
                         "ember.quantize(model, calibration, 'int8')")
    int8 = int8 or program.quantized
    memory = estimate_memory(program, int8=int8)
    check_budget(memory, budget_bytes, flash_budget_bytes, tier, romfs)
    if input_transform is not None:
        program.in_mul, program.in_add = float(input_transform[0]), float(input_transform[1])
    float_bytes = len(binary.encode(_unquantized(program) if already else program))
    n_eval = 0
    acc_f = acc_q = agree = diff = None
    float_program = program
    if int8 and not already:
        if calibration is None:
            raise ValueError("export(int8=True) needs calibration inputs for the activation "
                             "scales, e.g. a few hundred training images")
        program = reference.quantize(program, _as_batch(calibration, program),
                                     percentile=percentile)
    size = binary.save(program, path)
    if int8 and (evaluate is not None or calibration is not None):
        np = _np()
        x, labels = evaluate if evaluate is not None else (calibration, None)
        x = _as_batch(x, program)
        written = binary.load(path)  # evaluate exactly what the board will read
        yf = reference.run(float_program, x, int8=False)
        yq = reference.run(written, x, int8=True)
        n_eval = len(x)
        agree = float(np.mean(yf.argmax(1) == yq.argmax(1)))
        diff = float(np.abs(yf - yq).max())
        if labels is not None:
            labels = np.asarray(labels).reshape(-1)
            acc_f = float(np.mean(yf.argmax(1) == labels))
            acc_q = float(np.mean(yq.argmax(1) == labels))
    return ExportReport(os.fspath(path), size, float_bytes,
                        [layer.describe() for layer in program.layers], int8, n_eval, acc_f,
                        acc_q, agree, diff, memory, program.weight_only)
