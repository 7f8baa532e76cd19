"""int8 activations kept as codes between quantized layers on the wasm backend (issue 17):
per EfficientNet-Lite0-like layer (batch 1), the float32 conv vs the int8 op with float input
and float output (quantizes its input, rescales to float) vs codes in / codes out
(``qconv2d(..., out_scale=...)`` fed the previous layer's uint8 codes), then the whole
inverted-residual block (expand 1x1 -> ReLU6 -> depthwise 3x3 -> ReLU6 -> project 1x1) in
each form (the codes chain folds the ReLU6s into its clamps: three kernel calls).

    .venv/bin/python benchmarks/bench_wasm_quant_chain.py [--repeat 20] [--size 56]

Medians of ``--repeat`` rounds, every variant once per round (alternating calls, so all see
the same machine load); ratios are against the float32 conv on the same backend. Outputs are
checked: the int8 forms against the float32 conv on the same codes-valued weights, within a
few output steps.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from datetime import date
from pathlib import Path

import numpy as np

from _common import median_times, row, write_record

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))

import ember  # noqa: E402
import ember.nn.functional as F  # noqa: E402
from ember.quantize.functional import qconv2d  # noqa: E402

SAME1, SAME3 = ((0, 0), (0, 0)), ((1, 1), (1, 1))


def _round(v):
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


class Layer:
    """One conv with random int8 weights, its float32 twin (the same weights, dequantized),
    the scale of its input codes and that of its output codes, clamped to ``out_range``
    (uint8 0..255 at 6/255 after a ReLU6, or int8)."""

    def __init__(self, rng, c_in, c_out, k, groups, in_scale, out_range, y_max):
        w = rng.integers(-127, 127, (c_out, c_in // groups, k, k), endpoint=True)
        fan_in = c_in // groups * k * k
        self.w_scale = (rng.uniform(0.5, 1.5, c_out) / (127 * fan_in ** 0.5)).astype(np.float32)
        self.bias = rng.uniform(-0.1, 0.1, c_out).astype(np.float32)
        self.w_float = (w * self.w_scale.reshape(-1, 1, 1, 1)).astype(np.float32)
        self.w = w.astype(np.int8)
        self.padding, self.groups, self.out_range = (SAME1 if k == 1 else SAME3), groups, out_range
        self.in_scale = np.array([in_scale], np.float32)
        self.out_scale = np.array([y_max / max(-out_range[0], out_range[1])], np.float32)

    def on(self, backend):
        self.t = {name: ember.tensor(getattr(self, name), backend=backend)
                  for name in ("w", "w_float", "w_scale", "bias", "in_scale", "out_scale")}
        return self

    def float32(self, x):
        return F.conv2d(x, self.t["w_float"], self.t["bias"], 1, self.padding[0][0], 1,
                        self.groups)

    def int8(self, x, unsigned):
        """Float in (quantized here; ``unsigned``: 0..255 codes), float out."""
        t = self.t
        return qconv2d(x, t["w"], t["w_scale"], t["bias"], t["in_scale"], (1, 1), self.padding,
                       (1, 1), self.groups, unsigned=unsigned)

    def codes(self, q):
        """Codes in, codes out (a ReLU6 folded into the clamp)."""
        t = self.t
        return qconv2d(q, t["w"], t["w_scale"], t["bias"], t["in_scale"], (1, 1), self.padding,
                       (1, 1), self.groups, out_scale=t["out_scale"], out_range=self.out_range)

    def check(self, xf, q, unsigned) -> None:
        """int8 float-out within 5% of the float32 conv's largest value; the codes within one
        step of the int8 float output requantized (both from the same input codes)."""
        ref = self.float32(xf).numpy()
        y = self.int8(xf, unsigned).numpy()
        assert np.abs(y - ref).max() <= 0.05 * np.abs(ref).max(), "int8 float out is off"
        want = np.clip(_round(y.astype(np.float64) / self.out_scale[0]), *self.out_range)
        assert np.abs(self.codes(q).numpy() - want).max() <= 1, "codes out are off"


def relu6(y):
    return F.relu6(y)


def run(repeat: int, size: int, backend: str = "wasm") -> list[str]:
    rng = np.random.default_rng(17)
    s6 = 6.0 / 255  # ReLU6 outputs as uint8 codes 0..255
    expand = Layer(rng, 24, 144, 1, 1, 4.0 / 127, (0, 255), 6.0).on(backend)
    dw = Layer(rng, 144, 144, 3, 144, s6, (0, 255), 6.0).on(backend)
    project = Layer(rng, 144, 24, 1, 1, s6, (-127, 127), 8.0).on(backend)
    x_np = rng.uniform(-4, 4, (1, 24, size, size)).astype(np.float32)  # the int8 codes' range
    x6_np = rng.uniform(0, 6, (1, 144, size, size)).astype(np.float32)  # after a ReLU6
    x, x6 = ember.tensor(x_np, backend=backend), ember.tensor(x6_np, backend=backend)
    # the same values as codes, as the layer before would hand them over
    q = ember.tensor(_round(x_np / expand.in_scale[0]).astype(np.int8), backend=backend)
    q6 = ember.tensor(_round(x6_np / s6).astype(np.uint8), backend=backend)

    rows = []
    for name, layer, xf, qf, unsigned in [("expand 1x1 24->144", expand, x, q, False),
                                          ("depthwise 3x3 144", dw, x6, q6, True),
                                          ("project 1x1 144->24", project, x6, q6, True)]:
        layer.check(xf, qf, unsigned)
        rows.append((name, *median_times([
            lambda layer=layer, xf=xf: layer.float32(xf),
            lambda layer=layer, xf=xf, u=unsigned: layer.int8(xf, u),
            lambda layer=layer, qf=qf: layer.codes(qf)], repeat)))

    def block_float32():
        return project.float32(relu6(dw.float32(relu6(expand.float32(x)))))

    def block_int8():
        return project.int8(relu6(dw.int8(relu6(expand.int8(x, False)), True)), True)

    def block_codes():
        return project.codes(dw.codes(expand.codes(q)))

    rows.append(("block: expand, ReLU6, dw, ReLU6, project",
                 *median_times([block_float32, block_int8, block_codes], repeat)))
    out = [f"| layer (batch 1, {size}x{size}) | float32 conv ms | int8, float in/out ms | "
           "int8, codes in/out ms | int8 float / f32 | codes / f32 | codes / int8 float |",
           "|---|---:|---:|---:|---:|---:|---:|"]
    for name, f32, i8, codes in rows:
        out.append(f"| {name} | {f32 * 1e3:.2f} | {i8 * 1e3:.2f} | {codes * 1e3:.2f} | "
                   f"{i8 / f32:.2f} | {codes / f32:.2f} | {codes / i8:.2f} |")
    write_record([row("quant", f"wasm, {name}, {size}×{size}, int8 codes in/out", codes * 1e3,
                      f32 * 1e3, "ms", "ember float32 on wasm",
                      note=f"int8 with float in/out: {i8 / f32:.2f}× float32's time")
                  for name, f32, i8, codes in rows])
    return out


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--size", type=int, default=56, help="the feature map's height and width")
    args = p.parse_args(argv)
    lines = run(args.repeat, args.size)
    print(f"{date.today()} — {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}; wasm under wasmtime, "
          f"median of {args.repeat}")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
