"""``quantize(model, calibration, scheme)``: post-training quantization of a trained module,
and the records of the result.

The model is copied; BatchNorm after a Conv2d/Linear (in a Sequential) is folded into its
weights; each Linear/Conv2d's input is observed on the calibration batches; then the layers
are replaced by the scheme's quantized layers (:mod:`ember.quantize.layers`).
"""

from __future__ import annotations

import os
from dataclasses import replace

from ..autodiff import no_grad
from ..contract.rounding import round_code
from ..nn.batchnorm_fold import fold_batchnorms
from ..nn.layers.activation import ReLU, ReLU6
from ..nn.layers.container import Sequential
from ..nn.layers.conv import Conv2d
from ..nn.layers.dropout import Dropout
from ..nn.layers.linear import Flatten, Identity, Linear
from ..nn.layers.pooling import MaxPool2d
from ..nn.module import Module, clone_module
from ..ops.creation import tensor
from ..tensor import Tensor
from .gptq import MAX_POSITIONS, Hessian, gptq_codes
from .layers import (FoldedActivation, QuantConv2d, QuantLinear, WeightOnlyConv2d,
                     WeightOnlyLinear, _pairs)
from .observers import Observer
from .scheme import Scheme
from .weights import per_block

#: the metadata key of a quantized model's record (``ember.save(..., metadata=...)``)
META_KEY = "ember.quantize"
"""The key of a quantized model's scheme in its saved metadata (what ``load`` rebuilds from)."""


def _targets(model: Module, scheme: Scheme) -> list[tuple[Module, str, Module]]:
    """``(parent, attribute, layer)`` for each Linear/Conv2d the scheme quantizes."""
    out, cal = [], scheme.calibration
    for path, parent in model.named_modules():
        for name, child in list(parent._own_modules()):
            full = f"{path}.{name}" if path else name
            if not isinstance(child, (Linear, Conv2d)) or any(
                    full == k or full.startswith(k + ".") or full.endswith("." + k)
                    for k in cal.keep_float):
                continue
            if not scheme.representation.activations and child.weight.numel() < cal.min_params:
                continue
            out.append((parent, name, child))
    return out


def _batches(calibration, size: int = 64):
    if isinstance(calibration, Tensor) or hasattr(calibration, "shape"):
        for start in range(0, calibration.shape[0], size):
            yield calibration[start:start + size]
    else:
        yield from calibration


def _run(model: Module, batches, hook, layers) -> None:
    """``model`` on each batch with ``hook`` on ``layers`` (removed afterwards)."""
    hooks = [layer.register_forward_hook(hook) for layer in layers]
    backend = next(iter(model.state_dict().values())).backend  # quantized: buffers only
    try:
        with no_grad():
            for batch in batches:
                if not isinstance(batch, Tensor):
                    batch = tensor(batch, backend=backend)
                model(batch)
    finally:
        for h in hooks:
            h.remove()


def _calibrate(model: Module, targets, calibration, scheme: Scheme):
    """``(inputs, outputs, hessians)``: an Observer of each target layer's input and (for
    bias correction) of its output, and (for GPTQ) the Hessian of its input, by
    ``id(layer)``."""
    inputs = {id(layer): Observer(scheme.calibration.observer, scheme.calibration.percentile)
              for _, _, layer in targets}
    outputs = {id(layer): Observer() for _, _, layer in targets}
    hessians = {id(layer): Hessian() for _, _, layer in targets} if _gptq(scheme) else {}
    if calibration is None:
        return inputs, outputs, hessians

    # bias correction compares with the float output on the first batch, the one _refine
    # runs the quantized model on (a mean over every batch would add the batches' own
    # difference to each bias)
    first = [True]

    def observe(m, args, out):
        x = args[0].numpy()
        if scheme.representation.activations:
            inputs[id(m)].observe(x)
        if scheme.calibration.bias_correction and first[0]:
            outputs[id(m)].observe(out.numpy())
        if hessians and isinstance(m, Conv2d):
            hessians[id(m)].add_conv(x, m.kernel_size, m.stride, _pairs(m), m.dilation,
                                     m.groups)
        elif hessians:
            rows = x.reshape(-1, x.shape[-1])
            hessians[id(m)].add_rows(rows[::max(1, len(rows) // MAX_POSITIONS)])

    batches = iter(_batches(calibration))
    head = next(batches, None)
    if head is None:
        raise ValueError("quantize: the calibration data is empty (give a few hundred "
                         "representative inputs, or None for a weight-only scheme)")
    layers = [layer for _, _, layer in targets]
    _run(model, [head], observe, layers)
    first[0] = False
    _run(model, batches, observe, layers)
    return inputs, outputs, hessians


def _gptq(scheme: Scheme) -> bool:
    return scheme.calibration.rounding == "gptq"


def _int8_layers(targets, scheme: Scheme) -> set[int]:
    """``id`` of each target layer an int4 scheme leaves at int8, one scale per output
    channel: rows shorter than the block (``int8_short_rows``), and the smallest of the other
    layers, as many as hold at most ``int8_share`` of their weights (in the model's order
    among layers of one size)."""
    if scheme.bits != 4:
        return set()
    out, rest = set(), []
    for _, _, layer in targets:
        k = layer.weight.numel() // layer.weight.shape[0]
        if scheme.calibration.int8_short_rows and k < (scheme.representation.block or k):
            out.add(id(layer))
        else:
            rest.append(layer)
    budget = scheme.calibration.int8_share * sum(layer.weight.numel() for layer in rest)
    for layer in sorted(rest, key=lambda m: m.weight.numel()):  # stable: model order on ties
        budget -= layer.weight.numel()
        if budget < 0:
            break
        out.add(id(layer))
    return out


def _searched(layer, bits: int, block: int, scheme: Scheme):
    """Nearest rounding's ``(codes, scales)`` with searched scales, or None: the layer's own
    max-abs rounding (``from_float``)."""
    if not scheme.calibration.scale_search:
        return None
    return per_block(layer.weight.numpy(), bits, block, search=True)


def _rounded(layer, hessian, top: int, block: int | None, search: bool = False):
    """GPTQ's ``(codes (C_out, K), scales)`` for ``layer``'s weight: one scale per output
    channel (``block`` None: max |w| / ``top``, as nearest rounding) or per ``block``
    (``search``: each the least-squared-error one)."""
    import numpy as np

    w = np.asarray(layer.weight.numpy(), dtype=np.float64).reshape(layer.weight.shape[0], -1)
    scale = None
    if block is None:
        amax = np.abs(w).max(axis=1, keepdims=True)
        scale = np.where(amax > 0, amax / top, 1.0).astype(np.float32)
    codes, scales = gptq_codes(w, hessian.matrix(), scale, top, block, search=search)
    return codes, scales.reshape(-1) if block is None else scales


def _refine(model: Module, refs: dict, calibration, scheme: Scheme) -> None:
    """The calibration pass over the quantized model (first calibration batch; each layer in
    the order they run, its corrected output passed on, so later layers are refined for what
    the earlier ones still get wrong):

    - ``range_search``: the input range among the observer's candidates (largest value, MSE
      clip, 99.99th and 99.9th percentiles) whose output is nearest the float layer's on the
      same input (least squared error);
    - ``bias_correction``: the bias absorbs the float model's mean output per channel minus
      the layer's own (empirical bias correction).

    ``refs``: id(quantized layer) -> (its float layer, input Observer, float mean output)."""
    import numpy as np

    def refine(m, args, out):
        layer, obs, mean = refs[id(m)]
        if scheme.calibration.range_search:
            levels = 255 if m.unsigned else 127
            want = layer(args[0]).numpy()
            best = None
            for amax in obs.candidates(levels):
                m.input_scale = tensor([amax / levels if amax > 0 else 1.0],
                                       dtype=m.input_scale.dtype, backend=m.input_scale.backend)
                y = m.forward(args[0])
                err = float(np.mean((y.numpy() - want) ** 2))
                if best is None or err < best[0]:
                    best = (err, m.input_scale, y)
            m.input_scale, out = best[1], best[2]
        if not scheme.calibration.bias_correction:
            return out
        y = out.numpy()
        axis = Observer.channel_axis(y)
        axes = tuple(i for i in range(y.ndim) if i != axis)
        shift = (mean - y.mean(axis=axes, dtype=np.float64)).astype(y.dtype)
        m.bias = tensor(m.bias.numpy() + shift, dtype=m.bias.dtype, backend=m.bias.backend)
        view = [1] * y.ndim
        view[axis] = -1
        return tensor(y + shift.reshape(view), dtype=out.dtype, backend=out.backend)

    first = next(iter(_batches(calibration)))
    _run(model, [first], refine, [m for m in model.modules() if id(m) in refs])


def quantize(model: Module, calibration=None, scheme: str | dict | Scheme = "int8") -> Module:
    """A quantized copy of ``model`` (which is left as it is).

    ``scheme`` is a :class:`Scheme` or a preset: ``"int8"`` (int8 weights per channel, int8
    activations calibrated on ``calibration``: integer kernels), ``"int8-u8"`` (the same
    with unsigned codes for inputs never negative, MSE ranges, bias correction and GPTQ
    rounding: more accurate), ``"int8-weights"`` and ``"int4"`` (weight-only: int8 per
    channel; int4 per block of 64 for the large layers, int8 per channel for the small ones
    and depthwise convs) and ``"int4-gptq"`` (``"int4"`` with GPTQ rounding).
    ``calibration`` is a batch of inputs (Tensor or numpy, run in batches of 64) or an
    iterable of batches, a few hundred representative inputs; weight-only schemes don't need
    it (unless ``rounding="gptq"``, as in ``"int4-gptq"``). ``calibration=None`` with ``"int8"`` gives the
    structure only (scales 1), e.g. to :func:`load` a record into.

    >>> import ember
    >>> from ember import nn
    >>> model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
    >>> x = ember.randn(32, 8)
    >>> q = quantize(model, x)
    >>> type(q[0]).__name__, float((q(x) - model(x)).abs().max()) < 0.1
    ('QuantLinear', True)
    """
    return _build(model, calibration, Scheme.named(scheme), values=True)


def _build(model: Module, calibration, scheme: Scheme, values: bool) -> Module:
    """:func:`quantize`; ``values=False``: the int8 structure only, zero placeholders made
    without numpy (for :func:`load`, in a web page too)."""
    q = clone_module(model)
    q.eval()
    fold_batchnorms(q, values)
    targets = _targets(q, scheme)
    if _gptq(scheme) and values and calibration is None:
        raise ValueError("quantize: rounding='gptq' needs calibration data (the layers' "
                         "inputs on a few hundred representative samples)")
    rep, cal = scheme.representation, scheme.calibration
    seen, outs, hessians = (_calibrate(q, targets, calibration, scheme)
                            if rep.activations or _gptq(scheme) else ({}, {}, {}))
    refs = {}  # id(quantized layer) -> (float layer, input observer, float mean output)
    eight = _int8_layers(targets, scheme)
    for parent, name, layer in targets:
        conv = isinstance(layer, Conv2d)
        k = layer.weight.numel() // layer.weight.shape[0]
        bits, block = ((8, None) if rep.activations else (8, k) if id(layer) in eight
                       else (rep.bits, rep.block or k))
        codes = (_rounded(layer, hessians[id(layer)], 127 if bits == 8 else 7, block,
                          cal.scale_search) if hessians and values else None)
        if rep.activations:
            obs = seen[id(layer)]
            unsigned = rep.activations == "uint8" and obs.low >= 0 and calibration is not None
            amax = obs.amax(255 if unsigned else 127) if values else None
            new = (QuantConv2d if conv else QuantLinear).from_float(layer, amax, unsigned,
                                                                    codes)
            if calibration is not None and (cal.bias_correction or cal.range_search):
                refs[id(new)] = (layer, obs, outs[id(layer)].means())
        else:
            new = (WeightOnlyConv2d if conv else WeightOnlyLinear).from_float(
                layer, bits, block, codes or _searched(layer, bits, block, scheme))
        setattr(parent, name, new)
    if refs:
        _refine(q, refs, calibration, scheme)
    if rep.activations and rep.chain:
        chain(q, values and calibration is not None)
    q.scheme = scheme
    return q


def _leaves(seq: Sequential):
    """``seq``'s modules in the order they run, nested Sequentials opened up."""
    for _, m in seq._own_modules():
        if type(m) is Sequential:
            yield from _leaves(m)
        else:
            yield m


def _keeps_codes(m: Module) -> bool:
    """Modules a code tensor may pass through unchanged in meaning: zero code is zero (zero
    padding, dropout off, identity, reshaping) and the order of codes is the order of values
    (max pooling); a model's own padding module says so with ``keeps_codes = True``."""
    return (isinstance(m, (Identity, Dropout, Flatten, MaxPool2d))
            or getattr(m, "keeps_codes", False) is True)


def _fold_range(act, consumer) -> tuple[int, int]:
    """The codes a producer writes for ``consumer`` with ``act`` (None, ReLU or ReLU6)
    between them: ReLU6's top at 6 / scale is a clamp (quantizing is monotone)."""
    import struct

    hi = 255 if consumer.unsigned else 127
    if act is None:
        return (0 if consumer.unsigned else -hi, hi)
    if isinstance(act, ReLU6):
        scale = float(consumer.input_scale.tolist()[0])
        top = struct.unpack("<f", struct.pack("<f", 6.0 / scale))[0] if scale > 0 else hi
        hi = round_code(top, 0, hi)
    return (0, hi)


def chain(model: Module, values: bool = True) -> None:
    """Keep int8 activations in memory between quantized layers: a QuantConv2d/QuantLinear
    followed (within Sequentials) by at most one ReLU/ReLU6 and modules that keep codes,
    then by another one, ends in codes at that one's input scale; the activation becomes a
    :class:`FoldedActivation` (its clamp is in the producer). ``values=False``: the
    structure only (placeholder buffers a record is loaded into). ``quantize`` calls it
    (``Representation(chain=True)``, the default); call it on a model quantized with
    ``chain=False``, or on your own assembly of quantized layers.

    >>> import ember
    >>> from ember import nn
    >>> from ember.quantize import Representation, Scheme
    >>> model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
    >>> q = ember.quantize(model, ember.randn(32, 8), Scheme(Representation(chain=False)))
    >>> chain(q)
    >>> q[0](ember.randn(1, 8)).dtype.name, type(q[1]).__name__
    ('uint8', 'FoldedActivation')
    """
    nested = {id(m) for seq in model.modules() if type(seq) is Sequential
              for _, m in seq._own_modules() if type(m) is Sequential}
    quant = (QuantConv2d, QuantLinear)
    for seq in [m for m in model.modules() if type(m) is Sequential and id(m) not in nested]:
        leaves = list(_leaves(seq))
        for i, producer in enumerate(leaves):
            if not isinstance(producer, quant):
                continue
            act, j = None, i + 1
            while j < len(leaves) and (_keeps_codes(leaves[j]) or (
                    act is None and type(leaves[j]) in (ReLU, ReLU6))):
                if type(leaves[j]) in (ReLU, ReLU6):
                    act = leaves[j]
                j += 1
            if j == len(leaves) or not isinstance(leaves[j], quant):
                continue
            consumer = leaves[j]
            bounds = _fold_range(act, consumer) if values else (0, 0)
            producer.chain_to(consumer.input_scale, bounds)
            producer._prepared()  # read the buffers now, not first inside an ember.jit trace
            if act is not None:
                _replace(model, act, FoldedActivation(act))


def _replace(model: Module, old: Module, new: Module) -> None:
    for parent in list(model.modules()):
        for name, child in list(parent._own_modules()):
            if child is old and parent is not new:
                setattr(parent, name, new)


def size_bytes(model: Module) -> int:
    """Bytes of the model's state (parameters and persistent buffers): its record's size,
    less the header.

    >>> from ember import nn
    >>> size_bytes(nn.Linear(4, 2))  # 8 + 2 float32
    40
    """
    return sum(t.numel() * t.dtype.itemsize for t in model.state_dict().values())


def save(model: Module, path: str | os.PathLike) -> None:
    """``ember.save`` with the scheme in the record's metadata, so :func:`load` can rebuild
    the structure from the float model.

    >>> import os, tempfile, ember
    >>> from ember import nn, quantize
    >>> from ember.io import read_metadata
    >>> q = quantize(nn.Sequential(nn.Linear(4, 2)), ember.randn(8, 4))
    >>> path = os.path.join(tempfile.mkdtemp(), "q8")
    >>> quantize.save(q, path)
    >>> read_metadata(path)["user"][quantize.META_KEY]["representation"]["weights"]
    'int8'
    """
    from ..io import save as save_record

    scheme = getattr(model, "scheme", None)
    if scheme is None:
        raise ValueError("quantize.save: the model is not a quantize() result (no scheme)")
    save_record(model, path, metadata={META_KEY: scheme.to_dict()})


def load(model: Module, path: str | os.PathLike) -> Module:
    """The quantized model in ``path`` (written by :func:`save`), built from ``model``, the
    float architecture it was quantized from (its weights don't matter).

    >>> import os, tempfile, ember
    >>> from ember import nn, quantize
    >>> model = nn.Sequential(nn.Linear(8, 4), nn.ReLU(), nn.Linear(4, 2))
    >>> x = ember.randn(16, 8)
    >>> q = quantize(model, x)
    >>> path = os.path.join(tempfile.mkdtemp(), "q8")
    >>> quantize.save(q, path)
    >>> twin = quantize.load(nn.Sequential(nn.Linear(8, 4), nn.ReLU(), nn.Linear(4, 2)), path)
    >>> twin(x).tolist() == q(x).tolist()
    True
    """
    from ..errors import RecordError
    from ..io import load as load_record
    from ..io import read_metadata

    fields = read_metadata(path).get("user", {}).get(META_KEY)
    if not isinstance(fields, dict):
        raise RecordError(f"quantize.load: {os.fspath(path)} has no quantization scheme in "
                          "its metadata (write it with ember.quantize.save)")
    scheme = Scheme.from_record(fields)
    # the codes and scales come from the record: the structure is built by plain nearest
    # rounding (GPTQ would want calibration; the scale search would be time lost)
    nearest = Scheme(scheme.representation,
                     replace(scheme.calibration, rounding="nearest", scale_search=False))
    skeleton = _build(model, None, nearest, values=not scheme.representation.activations)
    skeleton.scheme = scheme
    load_record(skeleton, path)
    for m in skeleton.modules():
        if isinstance(m, (QuantConv2d, QuantLinear)):
            m._prepared()  # read the buffers now, not first inside an ember.jit trace
    return skeleton
