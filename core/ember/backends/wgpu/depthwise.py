"""The register-blocked depthwise convolution (shaders/depthwise.wgsl): 1-d and 2-d convs with
``groups == C_in`` and ``C_out = C_in · multiplier`` (MobileNet / EfficientNet blocks).

Each workgroup stages the input tile of a few output planes (halo included) in workgroup
memory once, then each lane sums a small block of adjacent outputs with the kernel size,
stride and dilation compiled in. The rule for using it (:func:`supports`): a depthwise conv
(``groups == C_in == weight.shape[0] / multiplier``, ``weight.shape[1] == 1``) over 1 or 2
spatial dims whose staged tile fits the device's workgroup memory; anything else (3-d, huge
kernels or dilations) stays on the generic path. A 1-d conv runs as a 2-d one of height 1.

>>> import ember
>>> from ember.backends.wgpu import depthwise
>>> depthwise.supports(ember.get_backend("wgpu").rt, (1, 8, 14, 14), (8, 1, 3, 3), 8, (1, 1),
...                    (1, 1))
True
"""

from __future__ import annotations

from ... import dtype as dt
from ...shape import conv_output_size, numel
from .kernels import render
from .launch import Runtime, contiguous, narrow, widen
from .primitive import WgpuTensor

# lanes per workgroup: two warps / one wave64, enough to hide the staging without starving a
# small plane (7×7 at EfficientNet's last stage) of work
_LANES = 64


def _pow2_at_least(n: int, cap: int) -> int:
    p = 1
    while p < min(n, cap):
        p *= 2
    return p


def _tile_bytes(cfg: dict[str, int]) -> int:
    tw = (cfg["LX"] * cfg["BX"] - 1) * cfg["SW"] + (cfg["KW"] - 1) * cfg["DW"] + 1
    th = (cfg["LY"] * cfg["BY"] - 1) * cfg["SH"] + (cfg["KH"] - 1) * cfg["DH"] + 1
    return 4 * cfg["PL"] * tw * th


def _config(rt: Runtime, out, kernel, stride, dilation) -> dict[str, int] | None:
    """The template constants: lanes LY × LX per plane, PL planes, a BY × BX block per lane,
    shrunk (planes first, then the blocks) until the staged tile fits workgroup memory; None
    where even one output per lane does not fit."""
    (oh, ow), (kh, kw), (sh, sw), (dh, dw) = out, kernel, stride, dilation
    lx = _pow2_at_least(ow, 8)
    ly = _pow2_at_least(oh, 4)
    cfg = {"KH": kh, "KW": kw, "SH": sh, "SW": sw, "DH": dh, "DW": dw, "LX": lx, "LY": ly,
           "BX": 2 if ow > 8 else 1, "BY": 4 if oh > 8 else (2 if oh > 4 else 1),
           "PL": max(1, _LANES // (lx * ly))}
    limit = min(rt.info.workgroup_storage, 16384)
    for key in ("PL", "BY", "BX"):
        while _tile_bytes(cfg) > limit and cfg[key] > 1:
            cfg[key] //= 2
    return cfg if _tile_bytes(cfg) <= limit and lx * ly * cfg["PL"] <= rt.info.max_invocations \
        else None


def _plan(rt: Runtime, x_shape, weight_shape, groups, stride, padding, dilation):
    """(2-d stride, dilation, pads, output size, config) or None when the kernel doesn't
    apply; 1-d convs get a unit height."""
    nd = len(x_shape) - 2
    c = x_shape[1] if len(x_shape) > 1 else 0
    if nd not in (1, 2) or groups != c or weight_shape[1] != 1 or weight_shape[0] % c:
        return None
    pad = [tuple(p) if isinstance(p, (tuple, list)) else (p, p) for p in padding]
    out = tuple(conv_output_size(*a) for a in zip(x_shape[2:], weight_shape[2:], stride, pad,
                                                  dilation))
    if nd == 1:
        stride, dilation, pad, out = (1, *stride), (1, *dilation), [(0, 0), *pad], (1, *out)
    kernel = (1,) * (2 - nd) + tuple(weight_shape[2:])
    cfg = _config(rt, out, kernel, tuple(stride), tuple(dilation))
    return None if cfg is None else (out, pad, cfg)


def supports(rt: Runtime, x_shape, weight_shape, groups: int, stride, dilation,
             padding=((0, 0), (0, 0))) -> bool:
    """Whether :func:`depthwise_conv` handles this conv (the rule in the module docstring)."""
    return _plan(rt, tuple(x_shape), tuple(weight_shape), groups, tuple(stride),
                 tuple(padding)[:len(x_shape) - 2], tuple(dilation)) is not None


def depthwise_conv(rt: Runtime, x: WgpuTensor, weight: WgpuTensor, bias, stride, padding,
                   dilation) -> WgpuTensor:
    """``conv(x, weight, bias, stride, padding, dilation, groups=C_in)`` for a depthwise conv
    that :func:`supports` accepts (``padding`` as ``((lo, hi), ...)`` pairs); float32 inside,
    float16 inputs widened and the result narrowed. Returns a contiguous ``(N, C_out, *out)``."""
    dtype = x.dtype
    nd = len(x.shape) - 2
    plan = _plan(rt, x.shape, weight.shape, x.shape[1], tuple(stride), tuple(padding),
                 tuple(dilation))
    if plan is None:
        raise ValueError(f"depthwise_conv: not a depthwise 1-d/2-d conv it can run: x "
                         f"{x.shape}, weight {weight.shape}, stride {stride}, dilation "
                         f"{dilation}; check depthwise.supports() first")
    out, pad, cfg = plan
    x = widen(rt, x) if x.dtype != dt.float32 else x
    weight = contiguous(rt, widen(rt, weight) if weight.dtype != dt.float32 else weight)
    n, c_out = x.shape[0], weight.shape[0]
    y = rt.empty((n, c_out) + out[2 - nd:], dt.float32, "depthwise_conv")
    planes = n * c_out
    if planes and numel(out):
        b = None
        if bias is not None:
            b = contiguous(rt, widen(rt, bias) if bias.dtype != dt.float32 else bias)
        sh, sw = (0, *x.strides[2:]) if nd == 1 else x.strides[2:]
        h, w = (1, *x.shape[2:]) if nd == 1 else x.shape[2:]
        tiles_x = -(-out[1] // (cfg["LX"] * cfg["BX"]))
        tiles = tiles_x * -(-out[0] // (cfg["LY"] * cfg["BY"]))
        meta = [planes, c_out, c_out // x.shape[1], out[0], out[1], h, w, pad[-2][0],
                pad[-1][0], tiles_x, tiles, x.offset, x.strides[0], x.strides[1], sh, sw,
                int(b is not None)]
        key = ("depthwise", tuple(sorted(cfg.items())))
        pipe = rt.lib.pipeline(key, lambda: (
            render(rt.lib.source("depthwise"), **cfg),
            ("read", "read", "read", "read", "read_write")))
        rt.engine.dispatch(pipe, meta, [x.block, weight.block,
                                        (b if b is not None else weight).block, y.block],
                           rt.groups(-(-planes // cfg["PL"]) * tiles, 1))
    return narrow(rt, y, dtype)
