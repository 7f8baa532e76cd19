"""``distill(model, images)``: int8 quantization-aware fine-tuning on unlabelled images.

Post-training quantization (:func:`~ember.quantize.quantize`) leaves each layer's rounding
error where it lands; :func:`distill` starts from the scheme's PTQ result (its observer
ranges, its GPTQ-rounded weights and bias-corrected biases) and fine-tunes the fake-quantized
copy (:func:`~ember.quantize.prepare_qat`, straight-through gradients) so that its outputs
match the float model's on random augmented crops of ``images`` — no labels: the float model
is the teacher (knowledge distillation; the loss is the KL divergence of the softened
softmax, or the squared error of the outputs). The weights keep PTQ's per-channel scales;
the input ranges stay fixed, or learn too (``learn_ranges``, LSQ). The result is the
ordinary chained int8 module :func:`~ember.quantize.convert_qat` makes.

>>> import ember
>>> from ember import nn
>>> model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 3))
>>> x = ember.randn(64, 4)
>>> q = distill(model, x, steps=5, batch=16, progress=False)
>>> [type(m).__name__ for m in q]
['QuantLinear', 'FoldedActivation', 'QuantLinear']
"""

from __future__ import annotations

import math

from ..autodiff import Autodiff, no_grad
from ..backends import available, get_backend
from ..contract.quantized import code_range
from ..nn.module import Module
from ..nn.parameter import Parameter
from ..ops.creation import tensor
from ..tensor import Tensor
from .convert import quantize
from .qat import _FakeQuantized, convert_qat, prepare_qat
from .scheme import Scheme

LOSSES = ("kl", "mse")


def distill(model: Module, images, scheme: str | dict | Scheme = "int8-u8", *,
            calibration=None, steps: int = 200, batch: int = 8, lr: float = 1e-5,
            loss: str = "kl", temperature: float = 1.0, learn_ranges: bool = False,
            range_lr: float = 1e-3, lr_in_codes: bool = False,
            size: int | tuple[int, int] | None = None,
            crop_scale: tuple[float, float] = (0.25, 1.0), mixup: float = 0.0,
            seed: int = 0, progress=True) -> Module:
    """The int8 model of ``model`` (left as it is), fine-tuned to agree with it.

    ``images``: unlabelled inputs, a (N, C, H, W) Tensor or array, or a list of (C, H, W)
    arrays of any sizes (preprocessed as the model wants them). Each of the ``steps``
    training steps draws ``batch`` random resized crops of them (a ``crop_scale`` fraction of
    an image's area, aspect ratio 3/4..4/3, bilinear to ``size``, default the images' own
    size; every other one mirrored); inputs that are not (C, H, W) images, (N, ...) of any
    other rank, are drawn as they are. ``mixup`` > 0 blends each crop with another at a weight
    drawn from Beta(mixup, mixup). The float ``model`` (the teacher, on its own backend)
    labels each batch; the student — ``prepare_qat`` of ``model`` on the Autodiff form of its
    backend, with the weights, biases and ranges of ``quantize(model, calibration,
    scheme)`` — follows with Adam at ``lr`` (cosine decay to 0; ``lr_in_codes``: ``lr`` is in
    units of each layer's median weight code step, so every layer's weights move by the same
    fraction of their grid whatever their scale; try 0.02). ``loss``: ``"kl"`` (the
    KL divergence of the softmax of outputs / ``temperature``, times temperature², for a
    classifier) or ``"mse"`` (the outputs' squared error). ``learn_ranges``: the input
    ranges train too (LSQ's gradient, on their logarithms, Adam at ``range_lr``) instead of
    staying at PTQ's. ``calibration``: PTQ's calibration inputs (default 64 crops of
    ``images``). ``progress``: True shows a progress
    bar (rich, on a terminal; ``ember.train``'s renderer), False nothing, or a
    :class:`~ember.train.renderers.Renderer`. The result is chained int8 (as ``quantize``),
    in eval mode, on ``model``'s backend; it saves with ``ember.quantize.save``.

    >>> import ember
    >>> from ember import nn
    >>> model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Flatten(), nn.Linear(72, 4))
    >>> photos = [ember.randn(3, 9, 12).numpy(), ember.randn(3, 10, 8).numpy()]
    >>> q = distill(model, photos, size=5, steps=3, batch=4, progress=False)
    >>> q(ember.randn(2, 3, 5, 5)).shape, q.scheme.representation.activations
    ((2, 4), 'uint8')
    """
    import numpy as np

    scheme = Scheme.named(scheme)
    _check(scheme, steps, batch, (lr, range_lr, temperature), loss, crop_scale, mixup)
    pool = _as_images(images)
    size = _size(pool, size)
    rng = np.random.default_rng(seed)
    if calibration is None:
        calibration = np.stack([_draw(pool, size, rng, crop_scale, i % 2 == 1)
                                for i in range(64)])
    home = next(iter(model.state_dict().values())).backend
    ptq = quantize(model, calibration, scheme)
    trainer = _autodiff(home)
    student = prepare_qat(model, None, scheme, momentum=0.0).to(trainer)
    _start_from(student, ptq, learn_ranges)
    # eval mode: dropout off, each input range fixed (or trained, never a moving average)
    student.eval()
    from ..optim import Adam

    groups = _groups(student, lr, range_lr, lr_in_codes)
    tops = [g["lr"] for g in groups]
    opt = Adam(groups)
    show = _renderer(progress)
    show.on_fit_start({"model": f"{type(model).__name__} → int8 ({loss} distillation)",
                       "backend": trainer.name, "epochs": 1, "steps": steps,
                       "has_valid": False})
    total, was_training = 0.0, model.training
    model.eval()  # the teacher: dropout off (its mode is restored below)
    try:
        for step in range(steps):
            x = np.stack([_draw(pool, size, rng, crop_scale, j % 2 == 1)
                          for j in range(batch)])
            if mixup > 0:
                lam = rng.beta(mixup, mixup, size=(batch,) + (1,) * (x.ndim - 1))
                lam = lam.astype(x.dtype)
                x = lam * x + (1 - lam) * x[rng.permutation(batch)]
            with no_grad():
                target = model(tensor(x, backend=home)).numpy()
            value = _loss(student(tensor(x, backend=trainer)), target, loss, temperature)
            decay = 0.5 * (1 + math.cos(math.pi * step / steps))
            for group, top in zip(opt.param_groups, tops):
                group["lr"] = top * decay
            opt.step(value.backward())
            total += value.item()
            show.on_step(1, "distill", step + 1, steps,
                         {"loss": value.item(), "lr": opt.param_groups[0]["lr"]})
        show.on_epoch_end(1, "distill", {"loss": total / steps}, {})
    finally:
        model.train(was_training)
        show.on_fit_end({})
    for m in student.modules():  # the learned ranges into the buffers convert_qat reads
        log_amax = m.__dict__.get("input_log_amax")
        if log_amax is not None:
            m.input_amax = log_amax.detach().exp()
            del m.input_log_amax
    return convert_qat(student.to(home))


def _groups(student: Module, lr: float, range_lr: float, in_codes: bool) -> list[dict]:
    """Adam's parameter groups: the input ranges at ``range_lr``; the rest at ``lr``, or
    (``in_codes``) each quantized layer's weight and bias at ``lr`` times the median of its
    weight's code steps (a step then moves a weight by about that fraction of its code
    step, whatever the layer's scale), the other parameters at the median over layers."""
    import numpy as np

    ranges, layers = [], []
    for m in student.modules():
        if "input_log_amax" in m.__dict__:
            ranges.append(m.input_log_amax)
        if isinstance(m, _FakeQuantized):
            step = float(np.median(m.weight_scale.numpy()))
            layers.append(([p for p in (m.weight, m.bias) if p is not None], step))
    groups, seen = [], {id(p) for p in ranges}
    if in_codes:
        for params, step in layers:
            groups.append({"params": params, "lr": lr * step})
            seen.update(id(p) for p in params)
    rest = [p for p in student.parameters() if id(p) not in seen]
    median = float(np.median([step for _, step in layers])) if in_codes and layers else 1.0
    groups += [{"params": rest, "lr": lr * median}] if rest else []
    return groups + ([{"params": ranges, "lr": range_lr}] if ranges else [])


def _check(scheme, steps, batch, rates, loss, crop_scale, mixup) -> None:
    if not scheme.representation.activations:
        raise ValueError(f"distill: scheme {scheme} is weight-only; distillation fine-tunes "
                         "int8 activations (a scheme with int8/uint8 activations, e.g. "
                         "'int8-u8')")
    for name, value in (("steps", steps), ("batch", batch)):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"distill: {name} must be a positive int, got {value!r}")
    if not min(rates) > 0 or not mixup >= 0:
        lr, range_lr, temperature = rates
        raise ValueError(f"distill: lr, range_lr and temperature must be > 0 and mixup >= 0, "
                         f"got lr={lr}, range_lr={range_lr}, temperature={temperature}, "
                         f"mixup={mixup}")
    if loss not in LOSSES:
        raise ValueError(f"distill: loss must be one of {LOSSES}, got {loss!r}")
    lo, hi = crop_scale
    if not 0 < lo <= hi <= 1:
        raise ValueError(f"distill: crop_scale must be (low, high) with 0 < low <= high <= 1 "
                         f"(fractions of an image's area), got {crop_scale}")


def _as_images(images) -> list:
    """``images`` as a list of float numpy arrays of one rank and channel count."""
    import numpy as np

    if isinstance(images, Tensor):
        images = images.numpy()
    pool = [np.asarray(p.numpy() if isinstance(p, Tensor) else p) for p in images]
    if not pool:
        raise ValueError("distill: images is empty (give a (N, C, H, W) batch, a list of "
                         "(C, H, W) images, or a (N, ...) batch of other inputs)")
    kinds = {(p.ndim, p.shape[0] if p.ndim == 3 else p.shape) for p in pool}
    if len(kinds) > 1:
        raise ValueError("distill: the images must share a rank and channel count (or, not "
                         f"being (C, H, W) images, a shape); got shapes "
                         f"{sorted({p.shape for p in pool})}")
    bad = [p for p in pool if p.dtype.kind not in "biuf"]
    if bad:
        raise ValueError("distill: images must be numbers (float arrays as the model wants "
                         f"them), got dtype {bad[0].dtype}")
    return [p if p.dtype.kind == "f" else p.astype(np.float32) for p in pool]


def _draw(pool: list, size, rng, scale, mirror: bool):
    """One training input: a random crop of a random image, or a random other input."""
    img = pool[rng.integers(len(pool))]
    return _crop(img, size, rng, scale, mirror) if img.ndim == 3 else img


def _size(pool: list, size) -> tuple[int, int]:
    if pool[0].ndim != 3:
        return None
    if size is None:
        shapes = {p.shape[1:] for p in pool}
        if len(shapes) > 1:
            raise ValueError(f"distill: the images have different sizes {sorted(shapes)}; "
                             "give size= (the model's input height and width)")
        return next(iter(shapes))
    size = (size, size) if isinstance(size, int) else tuple(size)
    if len(size) != 2 or min(size) < 1:
        raise ValueError(f"distill: size must be an int or (height, width), got {size}")
    return size


def _crop(img, size: tuple[int, int], rng, scale: tuple[float, float], mirror: bool):
    """A random crop of ``img`` (C, H, W) with a ``scale`` fraction of its area and an
    aspect ratio in 3/4..4/3, resized bilinearly to ``size`` (pixel centres aligned);
    ``mirror``: flipped left to right."""
    import numpy as np

    _, h, w = img.shape
    area = h * w * rng.uniform(*scale)
    ratio = math.exp(rng.uniform(math.log(3 / 4), math.log(4 / 3)))
    ch = max(1, min(h, round(math.sqrt(area / ratio))))
    cw = max(1, min(w, round(math.sqrt(area * ratio))))
    y, x = rng.integers(0, h - ch + 1), rng.integers(0, w - cw + 1)
    out = _resize(img[:, y:y + ch, x:x + cw], size)
    return np.ascontiguousarray(out[:, :, ::-1] if mirror else out)


def _resize(img, size: tuple[int, int]):
    """Bilinear resize of (C, H, W) to ``size`` (pixel centres aligned, as PIL and torch):
    ``F.interpolate`` on the numpy backend."""
    from ..nn import functional as F

    x = tensor(img[None], backend="numpy")
    return F.interpolate(x, size=size, mode="bilinear", align_corners=False).numpy()[0]


def _autodiff(backend):
    """The Autodiff form of ``backend`` (the registered one when there is one)."""
    if isinstance(backend, Autodiff):
        return backend
    name = f"autodiff-{backend.name}"
    return get_backend(name) if name in available() else Autodiff(backend)


def _start_from(student: Module, ptq: Module, learn_ranges: bool) -> None:
    """Give each QAT layer of ``student`` its PTQ twin's state: the weight its codes times
    their scale (the scale kept fixed), the (bias-corrected) bias, the input range and
    signedness; ``learn_ranges``: the range becomes a Parameter."""
    import numpy as np

    twins = dict(ptq.named_modules())
    for path, m in student.named_modules():
        if not isinstance(m, _FakeQuantized):
            continue
        q = twins[path]
        w, on = m.weight, {"dtype": m.weight.dtype, "backend": m.weight.backend}
        scale = q.weight_scale.numpy().reshape((-1,) + (1,) * (w.ndim - 1))
        m.weight.assign(tensor(q.weight.numpy() * scale, **on))
        bias = tensor(q.bias.numpy(), **on)
        if m.bias is None:
            m.bias = Parameter(bias)
        else:
            m.bias.assign(bias)
        m.register_buffer("weight_scale", tensor(scale, **on))
        m.unsigned = q.unsigned
        amax = q.input_scale.numpy() * code_range(q.unsigned)[1]
        m.input_amax = tensor(amax, **on)
        if learn_ranges:  # its log: Adam's steps then move it by a fraction of itself
            m.input_log_amax = Parameter(tensor(np.log(amax), **on))


def _loss(out: Tensor, target, kind: str, temperature: float) -> Tensor:
    """The distillation loss of the student's ``out`` against the teacher's ``target``
    (numpy): KL(softmax(target / T) ‖ softmax(out / T)) · T², batch mean, or the mean
    squared error."""
    import numpy as np

    on = {"dtype": out.dtype, "backend": out.backend}
    if kind == "mse":
        return ((out - tensor(target, **on)) ** 2).mean()
    t = target.astype(np.float64) / temperature
    log_p = t - t.max(axis=1, keepdims=True)
    log_p -= np.log(np.exp(log_p).sum(axis=1, keepdims=True))
    p = tensor(np.exp(log_p), **on)
    kl = (p * (tensor(log_p, **on) - (out / temperature).log_softmax(dim=1))).sum(dim=1)
    return kl.mean() * (temperature * temperature)


def _renderer(progress):
    from ..train.renderers import Renderer, default_renderer

    if isinstance(progress, Renderer):
        return progress
    return default_renderer() if progress else Renderer()
