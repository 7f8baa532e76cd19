"""The wasm backend's kernels under wasmtime against numpy (one BLAS thread) and, for whole
models, onnxruntime-web's wasm execution provider (one thread, under Node): the speed goals of
issue 15 (MNIST CNN <= 2x onnxruntime-web wasm, EfficientNet-Lite0 at 224 px <= 3x).

    .venv/bin/python benchmarks/bench_wasm.py [--repeat 20] [--skip gemm,layers,mnist,effnet]

Sections, each timed in alternation (medians of ``--repeat`` rounds, every variant once per
round, so all see the same machine load):

- GEMM n x n x n, n = 64..512, float32 (and float64, and the int8 kernel ``em_gemm_i8_i32``
  at 256 and 512): ``float_matmul`` on the wasm backend (one kernel call from Python) vs
  ``A @ B`` in numpy; G(FL)OP/s and the ratio;
- the MNIST CNN (``ember.demos.mnist_model.mnist_cnn``, batch 1) layer by layer, each layer
  module called on ember's wasm and numpy backends with the same weights;
- whole forwards, batch 1: the MNIST CNN (random weights, seeded) and EfficientNet-Lite0 at
  224 px (ImageNet weights where their package is installed; batch norms folded into the
  convolutions, the fusion onnxruntime applies to its graph) on ember-wasm eager and through
  ``ember.jit`` (the timed calls replay the recorded kernel calls), ember-numpy, and
  onnxruntime-web (the same model exported by ``ember.onnx.export``; wasm EP, one thread,
  SIMD; benchmarks/ort_wasm_node.mjs; its own timer around ``session.run``, so no pipe time)
  and onnxruntime CPU (one thread) for reference. Every output is checked against
  ember-numpy's (max abs difference over the largest logit).

wasmtime compiles wasm with Cranelift, V8 (Node, Chromium) with TurboFan: the same SIMD128
instructions, different code generators. ember's figures include Python's per-call overhead
(about 13 us per kernel call under wasmtime); onnxruntime-web's are its own C++ graph loop.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

from _common import blas_threads, pin_blas_threads, row, write_record

if __name__ == "__main__":
    pin_blas_threads("1")

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))

import ember
import ember.jit
import ember.random
from ember.tensordata import TensorData

HERE = Path(__file__).resolve().parent
RUNNER = HERE / "ort_wasm_node.mjs"
ORT_WEB = HERE.parent / "web" / "node_modules" / "onnxruntime-web" / "dist" / "ort.wasm.min.mjs"


def alternate(variants: dict, repeat: int, warmup: int = 2, best: bool = False) -> dict:
    """Median seconds per variant (``best``: (median, fastest) pairs, the fastest call being
    the least disturbed on a loaded machine); a variant is a callable returning the seconds
    one call took. Every round runs each variant once, in turn."""
    for fn in variants.values():
        for _ in range(warmup):
            fn()
    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(repeat):
        for name, fn in variants.items():
            times[name].append(fn())
    if best:
        return {name: (statistics.median(t), min(t)) for name, t in times.items()}
    return {name: statistics.median(t) for name, t in times.items()}


def timed(fn):
    def run() -> float:
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0

    return run


class OrtWeb:
    """onnxruntime-web (wasm, one thread) in a Node process running ``model`` on ``x``."""

    def __init__(self, model: Path, x: np.ndarray, folder: Path):
        raw = folder / f"{model.stem}.f32"
        raw.write_bytes(np.ascontiguousarray(x, dtype="<f4").tobytes())
        self.proc = subprocess.Popen(
            ["node", str(RUNNER), str(model), str(raw), ",".join(map(str, x.shape))],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        line = self.proc.stdout.readline().strip()
        if line != "ready":
            raise RuntimeError(f"ort_wasm_node.mjs did not start (said {line!r})")

    def _ask(self, what: str) -> str:
        self.proc.stdin.write(what + "\n")
        self.proc.stdin.flush()
        return self.proc.stdout.readline()

    def run(self) -> float:
        return float(self._ask("run")) / 1e3

    def output(self) -> np.ndarray:
        import json

        return np.array(json.loads(self._ask("out")), dtype=np.float32)

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def ort_web_missing() -> str | None:
    if shutil.which("node") is None:
        return "node is not installed"
    if not ORT_WEB.is_file():
        return "onnxruntime-web is not installed (npm install in web/)"
    try:
        import onnx  # noqa: F401 - ember.onnx.export needs it
    except ImportError:
        return "the onnx package is missing (pip install 'ember[onnx]')"
    return None


# ---------------------------------------------------------------------- GEMM
def gemm_rows(repeat: int) -> list[tuple]:
    """(what, n, ember-wasm G(FL)OP/s, numpy's, time ratio): float32 for every n, float64 and
    the int8 kernel (int32 accumulation; numpy multiplies int32 without BLAS) for some."""
    b = ember.get_backend("wasm")
    rng = np.random.default_rng(0)
    rows = []
    for kind, sizes in (("float32", (64, 128, 256, 384, 512)), ("float64", (256, 512)),
                        ("int8→int32", (256, 512))):
        for n in sizes:
            if kind == "int8→int32":
                a = rng.integers(-128, 128, (n, n)).astype(np.int8)
                c = rng.integers(-128, 128, (n, n)).astype(np.int8)
                ta, tct = (b.from_data(TensorData.from_numpy(v)) for v in (a, c.T.copy()))
                out = b.rt.empty((n, n), ember.int32, "bench")
                b.rt.call("em_gemm_i8_i32", ta.ptr, tct.ptr, out.ptr, n, n, n)
                want = a.astype(np.int32) @ c.astype(np.int32)
                assert (b.to_data(out).to_numpy() == want).all()
                a32, c32 = a.astype(np.int32), c.astype(np.int32)
                fns = {"wasm": timed(lambda: b.rt.call("em_gemm_i8_i32", ta.ptr, tct.ptr,
                                                       out.ptr, n, n, n)),
                       "numpy": timed(lambda: a32 @ c32)}
            else:
                a = rng.standard_normal((n, n)).astype(kind)
                c = rng.standard_normal((n, n)).astype(kind)
                ta, tc = (b.from_data(TensorData.from_numpy(v)) for v in (a, c))
                got = b.to_data(b.float_matmul(ta, tc)).to_numpy()
                assert np.allclose(got, a.astype(np.float64) @ c, rtol=1e-4, atol=1e-3)
                fns = {"wasm": timed(lambda: b.float_matmul(ta, tc)),
                       "numpy": timed(lambda: a @ c)}
            t = alternate(fns, repeat)
            flop = 2 * n**3
            rows.append((kind, n, flop / t["wasm"] / 1e9, flop / t["numpy"] / 1e9,
                         t["wasm"] / t["numpy"]))
    return rows


# ---------------------------------------------------------------------- models
def twins(make):
    """The model on the numpy and wasm backends with the same (seeded) weights, eval mode."""
    ember.random.seed(0)
    on_numpy = make().eval()
    on_wasm = make().eval()
    on_wasm.load_state_dict(on_numpy.state_dict())
    return on_numpy, on_wasm.to("wasm")


def layer_flop(layer, x_shape, y_shape) -> int:
    kind = type(layer).__name__
    if kind == "Conv2d":
        w = layer.weight.shape
        return 2 * int(np.prod(y_shape)) * w[1] * w[2] * w[3]
    if kind == "Linear":
        return 2 * int(np.prod(x_shape[:-1])) * layer.in_features * layer.out_features
    return 0


def mnist_layer_rows(repeat: int) -> list[tuple]:
    from ember.demos.mnist_model import mnist_cnn

    on_numpy, on_wasm = twins(mnist_cnn)
    x = np.random.default_rng(1).standard_normal((1, 1, 28, 28), dtype=np.float32)
    xn, xw = ember.tensor(x), ember.tensor(x, backend="wasm")
    rows = []
    with ember.no_grad():
        for i, (ln, lw) in enumerate(zip(on_numpy, on_wasm)):
            t = alternate({"wasm": timed(lambda: lw(xw)), "numpy": timed(lambda: ln(xn))},
                          repeat)
            yn, yw = ln(xn), lw(xw)
            err = float(np.abs(yw.numpy() - yn.numpy()).max())
            flop = layer_flop(ln, xn.shape, yn.shape)
            gf = f"{flop / t['wasm'] / 1e9:.2f}" if flop else ""
            rows.append((f"{i} {type(ln).__name__}", tuple(yn.shape), t["wasm"] * 1e6,
                         t["numpy"] * 1e6, t["wasm"] / t["numpy"], gf, err))
            xn, xw = yn, yw
    return rows


def mnist_pair():
    from ember.demos.mnist_model import mnist_cnn

    return twins(mnist_cnn), "random weights"


def efficientnet_pair():
    """The ImageNet weights (batch norms folded) where their package is installed: random
    weights starve the activations over 50 layers (the logits are the classifier's bias)."""
    from ember.demos import efficientnet
    from ember.errors import DatasetError
    from ember.nn.utils import fold_batchnorms

    try:
        path = efficientnet.weights_path()
    except DatasetError as e:
        on_numpy, on_wasm = twins(efficientnet.efficientnet_lite0)
        fold_batchnorms(on_numpy)
        fold_batchnorms(on_wasm)
        return (on_numpy, on_wasm), f"random weights ({e})"
    return (efficientnet.pretrained(path, fold=True),
            efficientnet.pretrained(path, backend="wasm", fold=True)), "ImageNet weights"


def model_rows(models, shape, repeat: int, folder: Path) -> tuple[list, dict]:
    """Rows (variant, median ms, fastest ms, both x onnxruntime-web's, max |diff| / max |logit|
    vs ember-numpy) and notes (why a peer did not run)."""
    on_numpy, on_wasm = models
    x = np.random.default_rng(1).standard_normal(shape, dtype=np.float32)
    xn, xw = ember.tensor(x), ember.tensor(x, backend="wasm")
    jitted = ember.jit(on_wasm)
    variants, outputs, notes = {}, {}, {}
    with ember.no_grad():
        ref = on_numpy(xn).numpy()
        outputs["ember-wasm eager"] = on_wasm(xw).numpy()
        jitted(xw)  # trace, then record the kernel calls; the timed calls replay them
        outputs["ember-wasm jit"] = jitted(xw).numpy()
        variants["ember-wasm eager"] = timed(lambda: on_wasm(xw).numpy())
        variants["ember-wasm jit"] = timed(lambda: jitted(xw).numpy())
        variants["ember-numpy eager"] = timed(lambda: on_numpy(xn).numpy())
        outputs["ember-numpy eager"] = ref
        missing = ort_web_missing()
        ort_web = session = None
        if missing is None:
            from ember.onnx.exporter import export

            path = folder / f"{type(on_numpy).__name__}-{shape[-1]}.onnx"
            export(on_numpy, xn, path)
            ort_web = OrtWeb(path, x, folder)
            ort_web.run()
            variants["onnxruntime-web wasm (node)"] = ort_web.run
            outputs["onnxruntime-web wasm (node)"] = ort_web.output().reshape(ref.shape)
            try:
                import onnxruntime as ort

                opts = ort.SessionOptions()
                opts.intra_op_num_threads = opts.inter_op_num_threads = 1
                session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
                name = session.get_inputs()[0].name
                variants["onnxruntime CPU"] = timed(lambda: session.run(None, {name: x}))
                outputs["onnxruntime CPU"] = session.run(None, {name: x})[0]
            except ImportError:
                notes["onnxruntime CPU"] = "onnxruntime is not installed"
        else:
            notes["onnxruntime-web"] = missing
        try:
            t = alternate(variants, repeat, best=True)
        finally:
            if ort_web is not None:
                ort_web.close()
    peer = t.get("onnxruntime-web wasm (node)")
    scale = float(np.abs(ref).max()) or 1.0
    rows = [(name, med * 1e3, fast * 1e3, med / peer[0] if peer else None,
             fast / peer[1] if peer else None, float(np.abs(outputs[name] - ref).max()) / scale)
            for name, (med, fast) in t.items()]
    return rows, notes


# ---------------------------------------------------------------------- report
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--skip", default="", help="comma list of sections: gemm,layers,mnist,effnet")
    ap.add_argument("--threads", default="1", help="numpy's BLAS threads (default 1)")
    args = ap.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    threads, source = blas_threads()
    print(f"# bench_wasm {date.today()} — {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} CPUs, load {load:.2f}, numpy BLAS threads {threads} ({source})\n")
    record = []
    if "gemm" not in skip:
        print("| GEMM n×n×n | n | ember-wasm G(FL)OP/s | numpy G(FL)OP/s | wasm time / numpy "
              "time |")
        print("|---|---|---|---|---|")
        for kind, n, gw, gn, ratio in gemm_rows(args.repeat):
            print(f"| {kind} | {n} | {gw:.1f} | {gn:.1f} | {ratio:.2f} |")
            record.append(row("wasm", f"GEMM {kind}, n={n}, wasmtime", gw, gn, "G(FL)OP/s",
                              f"numpy, {threads} BLAS thread(s)", higher_is_better=True))
        print()
    if "layers" not in skip:
        print("| MNIST layer | output | wasm µs | numpy µs | wasm / numpy | wasm GFLOP/s "
              "| max abs diff |")
        print("|---|---|---|---|---|---|---|")
        for name, out, tw, tn, ratio, gf, err in mnist_layer_rows(max(args.repeat, 50)):
            print(f"| {name} | {out} | {tw:.1f} | {tn:.1f} | {ratio:.2f} | {gf} | {err:.1e} |")
        print()
    with tempfile.TemporaryDirectory() as tmp:
        for key, title, pair, shape, repeat in (
            ("mnist", "MNIST CNN, batch 1", mnist_pair, (1, 1, 28, 28), max(args.repeat, 100)),
            ("effnet", "EfficientNet-Lite0 224 px, batch 1, BN folded", efficientnet_pair,
             (1, 3, 224, 224), args.repeat),
        ):
            if key in skip:
                continue
            models, weights = pair()
            rows, notes = model_rows(models, shape, repeat, Path(tmp))
            print(f"| {title}, {weights} | median ms | fastest ms | × onnxruntime-web "
                  "(median, fastest) | max abs diff / max abs logit vs ember-numpy |")
            print("|---|---|---|---|---|")
            for name, ms, fast, ratio, fast_ratio, err in rows:
                r = f"{ratio:.2f}, {fast_ratio:.2f}" if ratio is not None else "n/a"
                print(f"| {name} | {ms:.3f} | {fast:.3f} | {r} | {err:.1e} |")
            for name, why in notes.items():
                print(f"\n{name}: not run ({why})")
            print()
            peer = "onnxruntime-web wasm (node)"
            peer_ms = {name: ms for name, ms, *_ in rows}.get(peer)
            if peer_ms is not None:
                record += [row("wasm", f"{title}, {name}", ms, peer_ms, "ms",
                               "onnxruntime-web wasm (Node, 1 thread)")
                           for name, ms, *_ in rows if name.startswith("ember-wasm")]
    if record:
        write_record(record)


if __name__ == "__main__":
    main()
