"""ember in one headless Chromium beside onnxruntime-web (wasm), same weights, same page:
the MNIST demo CNN on every browser backend (WebGPU, wasm, python; eager and ``ember.jit``),
EfficientNet-Lite0 at 224×224 on the wasm backend, and the cold start's phases.

    python benchmarks/bench_browser.py [--run-dir runs/mnist] [--runs 30] [--cold 3]

Set-up (once): web/setup.sh (Chromium, Playwright, web/node_modules: pyodide and
onnxruntime-web; `npm install` in web/ is run here when onnxruntime-web is missing) and torch
for the ONNX exports. The MNIST model is the one ``ember demo mnist`` trained in ``--run-dir``
when it exists, else the same architecture with seeded random weights (latency does not depend
on the values). torch rebuilds the architecture with those weights and ``torch.onnx.export``
writes the ONNX file that onnxruntime-web runs.

One MNIST inference = one 28×28 image (batch 1) from 784 float pixel values in 0..255 to 10
probabilities readable on the CPU: scale, normalise, CNN, softmax, read back. ember is timed
inside Pyodide (``time.perf_counter`` around ``model(x).softmax(1).tolist()``; jitted: the
normalisation, model and softmax replayed by ``ember.jit`` after a warm-up and a traced call,
the tensor's creation and ``tolist()`` inside), ORT from JavaScript (tensor creation +
``session.run`` + ``.data``). The page's clock ticks in 0.1 ms (no cross-origin isolation), so
a fast runtime's sample is the mean of a block of consecutive runs (ORT 25, ember wasm 10).
The runtimes alternate block by block (every ember configuration, then ORT, round after round),
so a change in the machine's load hits them alike. Medians of the blocks after warm-up.
onnxruntime-web runs the wasm execution provider with one thread (the page is not
cross-origin isolated, so wasm threads are unavailable; Pyodide is single-threaded too).
Chromium's WebGPU adapter here is SwiftShader, a CPU emulation of a GPU: its numbers say
nothing about a real GPU.

EfficientNet-Lite0: ember's folded model (float32 weights, the web demo's folding) on the wasm
backend vs onnxruntime-web on ``torch.onnx.export`` of the reference PyTorch model with the
same checkpoint (bench_classify.py's export), one 1×3×224×224 input, logits read back, calls
alternating.

Cold start: fresh pages, alternating: Pyodide alone (``loadPyodide`` from the same files) and
the MNIST demo page on the wasm backend until its first inference has returned (navigation
start → first probabilities), with the phases ember.js reports (``info.phases``). Files come
from a local server with no HTTP cache. Ember's share is everything after Pyodide is loaded.

A last table takes the jitted WebGPU inference apart in the same page (parts timed in
alternation): the tensor's creation, the jit call (replay recorded, not submitted), the read's
submit and its mapAsync wait through JSPI; the CNN alone; a 1-element op's round trip; JSPI's
own floor; GPU time from timestamp queries (Chromium runs with
``--enable-webgpu-developer-features`` so they aren't rounded to 100 us); and the GPU time of
each dispatch submitted alone.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import warnings
from datetime import date
from pathlib import Path

from _common import row, write_record
from ember.demos.serve import load_source

ROOT = Path(__file__).resolve().parents[1]
WEB = ROOT / "web"
ORT_DIST = WEB / "node_modules" / "onnxruntime-web" / "dist"


harness = load_source("ember_web_harness", ROOT / "tests" / "web" / "harness.py")


# ---------------------------------------------------------------- model files
def model_files(run_dir: Path | None, out: Path) -> str:
    """model.safetensors + model.json in ``out`` (copied from a run, or seeded random);
    returns where the weights came from."""
    import shutil

    if run_dir and (run_dir / "model.safetensors").is_file():
        for name in ("model.safetensors", "model.json"):
            shutil.copy2(run_dir / name, out / name)
        return f"trained ({run_dir})"
    import ember
    from ember.demos.mnist_model import MEAN, STD, mnist_cnn
    from ember.io import save_file

    ember.seed(0)
    with ember.use_backend("numpy"):
        model = mnist_cnn()
    save_file(model.state_dict(), out / "model.safetensors")
    (out / "model.json").write_text(json.dumps(
        {"architecture": "mnist_cnn", "channels": [16, 32], "hidden": 64, "mean": MEAN,
         "std": STD, "dataset": "random-weights", "classes": list(range(10))}))
    return "seeded random weights"


def export_onnx(folder: Path) -> Path:
    """The same network in torch with the same weights → ``mnist.onnx`` (pixels 0..255 in,
    probabilities out, like the ember side)."""
    import torch
    from safetensors.torch import load_file

    config = json.loads((folder / "model.json").read_text())
    (c1, c2), hidden, nn = config["channels"], config["hidden"], torch.nn
    net = nn.Sequential(
        nn.Conv2d(1, c1, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(c1, c2, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(c2 * 7 * 7, hidden), nn.ReLU(), nn.Linear(hidden, 10),
    )
    net.load_state_dict(load_file(folder / "model.safetensors"))

    class Demo(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = net

        def forward(self, pixels):
            x = (pixels / 255.0 - config["mean"]) / config["std"]
            return torch.softmax(self.net(x), dim=1)

    path = folder / "mnist.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(Demo().eval(), (torch.zeros(1, 1, 28, 28),), str(path), dynamo=False,
                          input_names=["pixels"], output_names=["probs"], opset_version=17)
    return path


def sample_pixels() -> list[float]:
    try:
        from ember.dataset import MnistDataset

        return [float(v) for v in bytes(MnistDataset("test")[0][0])]
    except Exception:  # noqa: BLE001 (no dataset: any digit-like image times the same)
        return [float((r * 28 + c) * 37 % 256) if 6 < r < 22 and 10 < c < 18 else 0.0
                for r in range(28) for c in range(28)]


# ---------------------------------------------------------------- in the page
EMBER_SETUP = """
import json, time
import ember
import ember.jit
from ember.demos.mnist_model import mnist_cnn
from ember.io import load_file
from pyodide.http import pyfetch

CONFIG = await (await pyfetch("bench/model.json")).json()
with open("/tmp/bench.safetensors", "wb") as f:
    f.write(await (await pyfetch("bench/model.safetensors")).bytes())
FORWARD = {}  # (backend name, jitted) -> normalised pixels to probabilities
MODEL = {}  # backend name -> the jitted CNN alone (normalised input to logits)


def forward_of(model):
    def forward(x):
        return model((x / 255.0 - CONFIG["mean"]) / CONFIG["std"]).softmax(dim=1)

    return forward


for name in NAMES:
    b = ember.get_backend(name)
    m = mnist_cnn(tuple(CONFIG["channels"]), CONFIG["hidden"]).to(b)
    m.load_state_dict(load_file("/tmp/bench.safetensors", backend=b))
    m.eval()
    FORWARD[name, False] = forward_of(m)
    FORWARD[name, True] = ember.jit(forward_of(m))
    MODEL[name] = ember.jit(m)

def infer(name, jit, pixels):
    b = ember.get_backend(name)
    x = ember.tensor(pixels, dtype="float32", backend=b).reshape(1, 1, 28, 28)
    with ember.no_grad():
        return FORWARD[name, jit](x).tolist()[0]

def dispatches(name, jit, pixels):
    engine = getattr(getattr(ember.get_backend(name), "rt", None), "engine", None)
    if engine is None:
        return None
    before = engine.dispatches
    infer(name, jit, pixels)
    return engine.dispatches - before

PIXELS_LIST = list(PIXELS)


def chunk(name, jit, n):  # mean ms of n consecutive inferences (one block of the alternation)
    t0 = time.perf_counter()
    for _ in range(n):
        infer(name, jit, PIXELS_LIST)
    return (time.perf_counter() - t0) * 1000.0 / n


def wasm_parts(n):  # the jitted wasm inference cut where its parts meet: mean ms per block of n
    b = ember.get_backend("wasm")
    forward = FORWARD["wasm", True]

    def make():
        return ember.tensor(PIXELS_LIST, dtype="float32", backend=b).reshape(1, 1, 28, 28)

    x = make()
    xn = (x / 255.0 - CONFIG["mean"]) / CONFIG["std"]
    steps = {
        "create": make,
        "replay": lambda: forward(x),
        "inference": lambda: infer("wasm", True, PIXELS_LIST),
        "model": lambda: MODEL["wasm"](xn).tolist(),
        "roundtrip": lambda: (x[0, 0, 0, :1] + 1).tolist(),
    }
    out = {}
    with ember.no_grad():
        for key, fn in steps.items():
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            out[key] = (time.perf_counter() - t0) * 1000.0 / n
    return out


def outcome(name, jit):  # after the timing: the probabilities, dispatches and jit counters
    return json.dumps({"probs": infer(name, jit, PIXELS_LIST),
                       "dispatches": dispatches(name, jit, PIXELS_LIST),
                       "stats": FORWARD[name, jit].stats() if jit else None})


def profile(pixels, warmup, runs):
    # the jitted WebGPU inference taken apart, each part timed in alternation (ms); the
    # adapter's submit and its mapAsync wait (through JSPI) are timed by wrapping them
    from pyodide import ffi
    import js

    b = ember.get_backend("wgpu")
    adapter = b.rt.adapter
    spent = {"submit": 0.0, "map": 0.0}

    def timed(key, fn):
        def wrapper(*args):
            t0 = time.perf_counter()
            try:
                return fn(*args)
            finally:
                spent[key] += time.perf_counter() - t0
        return wrapper

    adapter.submit = timed("submit", adapter.submit)
    adapter.map_read = timed("map", adapter.map_read)
    pixels = list(pixels)
    one = ember.tensor([1.0], backend=b)
    x = ember.tensor(pixels, dtype="float32", backend=b).reshape(1, 1, 28, 28)
    xn = (x / 255.0 - CONFIG["mean"]) / CONFIG["std"]
    forward = FORWARD["wgpu", True]

    def jspi():  # JSPI's own floor: suspend on a settled promise, resume
        ffi.run_sync(js.Promise.resolve(0))

    def roundtrip():
        (one + 1).tolist()

    def model_only():
        MODEL["wgpu"](xn).tolist()

    def inference():  # what bench() times for (wgpu, jit), cut where the parts meet
        t0 = time.perf_counter()
        x = ember.tensor(pixels, dtype="float32", backend=b).reshape(1, 1, 28, 28)
        t1 = time.perf_counter()
        y = forward(x)
        t2 = time.perf_counter()
        y.tolist()
        t3 = time.perf_counter()
        return {"create": t1 - t0, "replay": t2 - t1, "read": t3 - t2}

    cases = {"jspi": jspi, "roundtrip": roundtrip, "model": model_only, "inference": inference}
    times = {}
    with ember.no_grad():
        for i in range(max(warmup, 2) + runs):
            for case, fn in cases.items():
                spent.update(submit=0.0, map=0.0)
                t0 = time.perf_counter()
                parts = fn() or {}
                parts["total"] = time.perf_counter() - t0
                parts.update(spent)
                if i >= max(warmup, 2):
                    for part, sec in parts.items():
                        times.setdefault(f"{case}.{part}", []).append(sec * 1000.0)
        gpu = None
        if "timestamp-query" in adapter.info.features:
            adapter.start_gpu_timer()
            for _ in range(runs):
                inference()
            gpu = [adapter.gpu_seconds() * 1000.0 / runs]
            adapter.stop_gpu_timer()
            adapter.start_gpu_timer()
            for _ in range(runs):
                roundtrip()
            gpu.append(adapter.gpu_seconds() * 1000.0 / runs)
            adapter.stop_gpu_timer()
            kernels = [kernel_times(x) for _ in range(3)]
    return json.dumps({"times": times, "gpu": gpu, "kernels": kernels})


def kernel_times(x):
    # GPU ms of each dispatch of the eager forward (the jitted one runs the same kernels), each
    # submitted and timed alone: slower than inside one pass, but it shows where the time goes
    b = ember.get_backend("wgpu")
    adapter, engine = b.rt.adapter, b.rt.engine
    names = {id(p): " ".join(str(k) for k in key[:2] if isinstance(k, str))
             for key, p in b.rt.lib._pipelines.items()}
    dispatch, every, out = engine.dispatch, engine.submit_every, []

    def timed(pipeline, meta, buffers, groups):
        dispatch(pipeline, meta, buffers, groups)  # submitted at once: submit_every is 1
        out.append((names.get(id(pipeline), "?"), "×".join(map(str, groups)),
                    adapter.gpu_seconds() * 1000.0))

    engine.dispatch, engine.submit_every = timed, 1
    adapter.start_gpu_timer()
    try:
        FORWARD["wgpu", False](x).tolist()
    finally:
        adapter.stop_gpu_timer()
        del engine.dispatch
        engine.submit_every = every
    return out
"""

ORT_SETUP = """async ([key, model, input, shape, output, values]) => {
    const ort = await import(location.origin + "/ort/ort.wasm.min.mjs");
    ort.env.wasm.wasmPaths = location.origin + "/ort/";
    ort.env.wasm.numThreads = 1;
    const t0 = performance.now();
    const session = await ort.InferenceSession.create(location.origin + model,
        { executionProviders: ["wasm"] });
    const loadMs = performance.now() - t0;
    const data = Float32Array.from(values);
    const once = async () => {
        const out = await session.run({ [input]: new ort.Tensor("float32", data, shape) });
        return Array.from(out[output].data);
    };
    window.ortRuns = window.ortRuns ?? {};
    window.ortRuns[key] = once;
    await once();
    return { loadMs, version: ort.env.versions?.web ?? "" };
}"""

# mean ms of n consecutive runs (one block of the alternation), or the outputs of one run
ORT_CHUNK = """async ([key, n]) => {
    const once = window.ortRuns[key];
    const s = performance.now();
    for (let j = 0; j < n; j++) await once();
    return (performance.now() - s) / n;
}"""
ORT_OUTPUT = "async ([key]) => await window.ortRuns[key]()"

PYODIDE_BARE = """async () => {
    const t0 = performance.now();
    const { loadPyodide } = await import("./pyodide/pyodide.mjs");
    await loadPyodide({ indexURL: new URL("pyodide/", location.href).href,
                        lockFileURL: new URL("pyodide/pyodide-lock.json", location.href).href });
    return performance.now() - t0;
}"""

COLD_START = """async () => {
    const { loadEmber } = await import("./ember.js");
    window.ember = await loadEmber({ backend: "auto" });
    return window.ember.info;
}"""

EFFNET_SETUP = """
import json, time
from array import array
import ember
from ember.demos.classify_web import load_web_model
from ember.tensordata import TensorData
from pyodide.http import pyfetch

with open("/tmp/effnet.safetensors", "wb") as f:
    f.write(await (await pyfetch("bench/effnet/efficientnet_lite0.safetensors")).bytes())
EB = ember.get_backend("wasm")
EFFNET = load_web_model("/tmp/effnet.safetensors", backend=EB)
EFFNET_JIT = ember.jit(EFFNET)
EFFNET_X = TensorData(array("f", EFFNET_VALUES).tobytes(), (1, 3, 224, 224), "float32")


def effnet(jit):
    x = ember.tensor(EFFNET_X, backend=EB)
    with ember.no_grad():
        return (EFFNET_JIT if jit else EFFNET)(x).tolist()[0]


def effnet_chunk(jit, n):
    t0 = time.perf_counter()
    for _ in range(n):
        effnet(jit)
    return (time.perf_counter() - t0) * 1000.0 / n
"""


def effnet_values() -> list[float]:
    """A fixed 1×3×224×224 input in [-1, 1] (latency does not depend on the picture)."""
    return [((i * 37) % 256) / 127.5 - 1.0 for i in range(3 * 224 * 224)]


def ensure_ort() -> None:
    if not (ORT_DIST / "ort.wasm.min.mjs").is_file():
        print("npm install in web/ (onnxruntime-web) …", flush=True)
        subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--silent"], cwd=WEB,
                       check=True)


def quantiles(times: list[float]) -> tuple[float, float, float]:
    qs = statistics.quantiles(times, n=10) if len(times) >= 2 else [times[0]] * 9
    return statistics.median(times), qs[0], qs[-1]


# ember's block size per backend in the MNIST alternation (the clock ticks in 0.1 ms)
CHUNK = {"python": 1, "wgpu": 1, "wasm": 10}
ORT_CHUNK_RUNS = 25
LABELS = {"wgpu": "ember, WebGPU adapter (SwiftShader = CPU emulation)",
          "wasm": "ember, wasm backend (C kernels, SIMD128)",
          "python": "ember, python backend (CPU, pure Python)"}


def mnist_rounds(page, names: list[str], pixels, warmup: int, rounds: int) -> tuple[dict, dict]:
    """Every (backend, jit) and ORT, block by block, ``rounds`` times; ms per inference."""
    configs = [(name, jit) for name in names for jit in (False, True)]
    for name, jit in configs:  # warm-up; jit: a traced call first
        harness.run_python(page, f"chunk({name!r}, {jit}, {max(warmup, 2)})")
    page.evaluate(ORT_CHUNK, ["mnist", warmup * 4])
    times: dict = {c: [] for c in configs}
    ort = []
    for _ in range(rounds):
        for name, jit in configs:
            times[name, jit].append(harness.run_python(
                page, f"chunk({name!r}, {jit}, {CHUNK[name]})"))
        ort.append(page.evaluate(ORT_CHUNK, ["mnist", ORT_CHUNK_RUNS]))
    results = {c: json.loads(harness.run_python(page, f"outcome({c[0]!r}, {c[1]})"))
               for c in configs}
    parts = [harness.run_python(page, "wasm_parts(50)") for _ in range(rounds)]
    results["wasm", True]["parts"] = {k: statistics.median(p[k] for p in parts) for k in parts[0]}
    for c, r in results.items():
        r["times"] = times[c]
    return results, {"times": ort, "probs": page.evaluate(ORT_OUTPUT, ["mnist"])}


def effnet_rounds(page, folder: Path, warmup: int, rounds: int) -> dict:
    values = effnet_values()
    setup = page.evaluate(ORT_SETUP, ["effnet", "/bench/effnet.onnx", "x", [1, 3, 224, 224],
                                      "logits", values])
    harness.run_python(page, EFFNET_SETUP, {"EFFNET_VALUES": values})
    for jit in (False, True):
        harness.run_python(page, f"effnet_chunk({jit}, {max(warmup, 2)})")
    page.evaluate(ORT_CHUNK, ["effnet", warmup])
    out = {"eager": [], "jit": [], "ort": []}
    for _ in range(rounds):
        out["eager"].append(harness.run_python(page, "effnet_chunk(False, 1)"))
        out["jit"].append(harness.run_python(page, "effnet_chunk(True, 1)"))
        out["ort"].append(page.evaluate(ORT_CHUNK, ["effnet", 1]))
    ember_logits = harness.run_python(page, "effnet(True)")
    ort_logits = page.evaluate(ORT_OUTPUT, ["effnet"])
    out["diff"] = max(abs(a - b) for a, b in zip(ember_logits, ort_logits))
    out["same_top1"] = ember_logits.index(max(ember_logits)) == ort_logits.index(max(ort_logits))
    out["ort_load_ms"] = setup["loadMs"]
    return out


def cold_starts(browser, server, demo_url: str, n: int) -> list[dict]:
    """Fresh pages, alternating: Pyodide alone, then the MNIST page on wasm to its first
    inference (ms since navigation began) with its phases."""
    out = []
    for _ in range(n):
        page = harness.blank_page(browser, server)
        page.set_default_timeout(600_000)
        bare = page.evaluate(PYODIDE_BARE)
        page.close()
        page = harness.blank_page(browser, server)
        page.set_default_timeout(600_000)
        page.goto(demo_url + "?backend=wasm")
        page.wait_for_function("window.mnistDemo && (window.mnistDemo.ready || "
                               "window.mnistDemo.error)")
        demo = page.evaluate("({ error: window.mnistDemo.error, phases: window.mnistDemo.phases,"
                             " at: window.mnistDemo.firstInferenceAt })")
        page.close()
        if demo["error"]:
            raise SystemExit(f"the MNIST page failed on wasm: {demo['error']}")
        out.append({"bare": bare, "page": demo["at"], "phases": demo["phases"]})
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--run-dir", type=Path, default=ROOT / "runs" / "mnist",
                   help="a run of `ember demo mnist` (else seeded random weights)")
    p.add_argument("--runs", type=int, default=30, help="rounds of the MNIST alternation")
    p.add_argument("--effnet-runs", type=int, default=15, help="rounds of EfficientNet-Lite0")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--cold", type=int, default=3, help="cold starts (pairs of fresh pages)")
    args = p.parse_args()

    from playwright.sync_api import sync_playwright

    from ember.demos.classify_web import export_web_model

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_classify import export_onnx as export_effnet_onnx
    from ember.demos.efficientnet import weights_path

    harness.ensure_dist()
    ensure_ort()
    tmp = Path(tempfile.mkdtemp(prefix="ember-bench-browser-"))
    weights = model_files(args.run_dir, tmp)
    export_onnx(tmp)
    export_web_model(tmp / "effnet", half=False, int8=False)  # the checkpoint, folded, float32
    export_effnet_onnx(weights_path(), str(tmp / "effnet.onnx"))
    pixels = sample_pixels()
    server = harness.Server(harness.DIST, {"/blank.html": ROOT / "tests" / "web" / "blank.html",
                                           "/bench/": tmp, "/ort/": ORT_DIST,
                                           "/mnist/model/": tmp,
                                           "/mnist/": ROOT / "demos" / "mnist" / "web"})
    notes = []
    with sync_playwright() as pw:
        # unrounded GPU timestamps (Chromium rounds them to 100 us otherwise)
        browser = pw.chromium.launch(executable_path=harness.CHROMIUM, headless=True,
                                     args=harness.BASE_FLAGS + harness.WEBGPU_FLAGS
                                     + ["--enable-webgpu-developer-features"])
        try:
            cold = cold_starts(browser, server, server.url + "mnist/", max(1, args.cold))
            page = harness.blank_page(browser, server)
            page.set_default_timeout(600_000)
            info = page.evaluate(COLD_START)
            names = ["wasm", "python"] + (["wgpu"] if info["backend"] == "wgpu" else [])
            if "wgpu" not in names:
                notes.append(f"no WebGPU adapter: {info['reason']}")
            ort_setup = page.evaluate(ORT_SETUP, ["mnist", "/bench/mnist.onnx", "pixels",
                                                  [1, 1, 28, 28], "probs", pixels])
            harness.run_python(page, EMBER_SETUP, {"NAMES": names, "PIXELS": pixels})
            ember_results, ort = mnist_rounds(page, names, pixels, args.warmup, args.runs)
            effnet = effnet_rounds(page, tmp, args.warmup, args.effnet_runs)
            prof = None
            if "wgpu" in names:
                prof = json.loads(harness.run_python(
                    page, f"profile(PIXELS, {args.warmup}, {args.runs})", {"PIXELS": pixels}))
            chromium = browser.version
        finally:
            browser.close()
            server.close()

    print(f"\n### Browser: MNIST CNN inference, batch 1 ({date.today().isoformat()})\n")
    print(f"Headless Chromium {chromium}, Pyodide {info['pyodide_version']}, "
          f"onnxruntime-web {ort_setup['version'] or '(npm)'}, {platform.machine()} "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; weights: {weights}. "
          f"WebGPU adapter: {info.get('adapter') or 'none'} (CPU emulation, not a GPU).\n")
    print_mnist(ember_results, ort)
    print(f"\nORT session creation (model load, wasm compile): {ort_setup['loadMs']:.0f} ms.")
    for note in notes:
        print(f"Note: {note}")
    print_effnet(effnet)
    print_cold(cold)
    if prof is not None:
        print_profile(prof, quantiles(ort["times"])[0])
    peer = "onnxruntime-web, wasm EP (1 thread)"
    record = [row("wasm", f"MNIST CNN in the page, batch 1, {LABELS[name]}, "
                  f"{'ember.jit' if jit else 'eager'}", quantiles(result["times"])[0],
                  quantiles(ort["times"])[0], "ms", peer)
              for (name, jit), result in ember_results.items()]
    record += [row("wasm", f"EfficientNet-Lite0 224 px in the page, wasm backend, {key}",
                   quantiles(effnet[key])[0], quantiles(effnet["ort"])[0], "ms", peer)
               for key in ("eager", "jit")]
    record.append(row("wasm", "cold start: the MNIST page (wasm) to its first probabilities",
                      statistics.median(c["page"] for c in cold),
                      statistics.median(c["bare"] for c in cold), "ms",
                      "Pyodide alone (loadPyodide, fresh page)"))
    write_record(record, device=f"Chromium {chromium}'s WebGPU adapter: "
                 f"{info.get('adapter') or 'none'} (CPU emulation)")


def print_mnist(ember_results: dict, ort: dict) -> None:
    ort_median = quantiles(ort["times"])[0]
    print("| runtime | median ms | p10 ms | p90 ms | blocks × runs | × ORT-web "
          "| max abs Δprob vs ORT | GPU dispatches |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    order = {"wasm": 0, "wgpu": 1, "python": 2}
    for (name, jit), result in sorted(ember_results.items(), key=lambda kv: order[kv[0][0]]):
        stats = result["stats"]
        if jit and stats["traces"] != stats["signatures"]:
            raise SystemExit(f"ember.jit on {name} traced again while timed: {stats}")
        diff = max(abs(a - b) for a, b in zip(result["probs"], ort["probs"]))
        med, p10, p90 = quantiles(result["times"])
        label = LABELS[name] + (", ember.jit (replays)" if jit else ", eager")
        d = "–" if result["dispatches"] is None else str(result["dispatches"])
        print(f"| {label} | {med:.3g} | {p10:.3g} | {p90:.3g} | {len(result['times'])}×"
              f"{CHUNK[name]} | {med / ort_median:.3g} | {diff:.1e} | {d} |")
    med, p10, p90 = quantiles(ort["times"])
    print(f"| onnxruntime-web, wasm EP (1 thread) | {med:.3g} | {p10:.3g} | {p90:.3g} "
          f"| {len(ort['times'])}×{ORT_CHUNK_RUNS} | 1 | 0 | – |")
    parts = ember_results["wasm", True]["parts"]
    print("\nThe jitted wasm inference taken apart (medians of blocks of 50 calls, each part "
          "timed alone, so only roughly additive):\n")
    print("| part | ms | × ORT-web |")
    print("|---|---:|---:|")
    for label, ms in (
            ("whole inference (create + replay + read)", parts["inference"]),
            ("  `ember.tensor(784 floats)` + reshape", parts["create"]),
            ("  the jit replay (wasm runs synchronously: the kernels are in it)",
             parts["replay"]),
            ("  the rest: `tolist()` of 10 probabilities",
             parts["inference"] - parts["create"] - parts["replay"]),
            ("jitted CNN alone + read (no scaling, no softmax)", parts["model"]),
            ("a 1-element view + 1, read back (the floor of one eager op)", parts["roundtrip"])):
        print(f"| {label} | {ms:.3g} | {ms / ort_median:.3g} |")


def print_effnet(effnet: dict) -> None:
    ort_median = quantiles(effnet["ort"])[0]
    print("\n#### EfficientNet-Lite0, 1×3×224×224, same page, calls alternating\n")
    print("| runtime | median ms | p10 ms | p90 ms | runs | × ORT-web |")
    print("|---|---:|---:|---:|---:|---:|")
    for key, label in (("eager", "ember, wasm backend, eager"),
                       ("jit", "ember, wasm backend, ember.jit (replays)"),
                       ("ort", "onnxruntime-web, wasm EP (1 thread)")):
        med, p10, p90 = quantiles(effnet[key])
        print(f"| {label} | {med:.3g} | {p10:.3g} | {p90:.3g} | {len(effnet[key])} "
              f"| {med / ort_median:.3g} |")
    print(f"\nLogits, ember (jit) vs ORT: max abs difference {effnet['diff']:.2e}, same top-1: "
          f"{effnet['same_top1']}. ORT session creation: {effnet['ort_load_ms']:.0f} ms.")


def print_cold(cold: list[dict]) -> None:
    print("\n#### Cold start: Pyodide alone vs the MNIST page (wasm) to its first inference\n")
    phases = ["pyodide", "install", "import", "backend", "model", "first_inference"]
    med = {k: statistics.median(c["phases"].get(k, 0.0) for c in cold) for k in phases}
    bare = statistics.median(c["bare"] for c in cold)
    page = statistics.median(c["page"] for c in cold)
    share = statistics.median(sum(c["phases"].get(k, 0.0) for k in phases[1:]) for c in cold)
    print("| what | median ms | min ms | max ms |")
    print("|---|---:|---:|---:|")
    for key, label in (("bare", "Pyodide alone (`loadPyodide`, fresh page)"),
                       ("page", "MNIST page: navigation → first probabilities")):
        values = [c[key] for c in cold]
        print(f"| {label} | {statistics.median(values):.0f} | {min(values):.0f} "
              f"| {max(values):.0f} |")
    for k in phases:
        values = [c["phases"].get(k, 0.0) for c in cold]
        print(f"| phase: {k} | {med[k]:.0f} | {min(values):.0f} | {max(values):.0f} |")
    print(f"\nember's share (install + import + backend + model + first inference): "
          f"{share:.0f} ms (goal ≤ 500); page / Pyodide alone: {page / bare:.2f} (goal ≤ 1.3); "
          f"{len(cold)} pairs of fresh pages.")


PROFILE_ROWS = (  # (key in profile()'s times, label); indented rows are parts of the row above
    ("inference.total", "jitted inference (as timed above: create + replay + read)"),
    ("inference.create", "  (d) `ember.tensor(784 floats)` + reshape"),
    ("inference.replay", "  (c) the jit call: replay recorded in Python (no submit, no wait)"),
    ("inference.read", "  `tolist()`: submit + wait + copy out"),
    ("inference.submit", "    queue.submit (in the read)"),
    ("inference.map", "    mapAsync through JSPI (the GPU work + the round trip)"),
    ("model.total", "(b) jitted CNN alone + read (no scaling, no softmax)"),
    ("roundtrip.total", "(a) 1-element `(x + 1).tolist()`: one GPU round trip"),
    ("roundtrip.map", "  mapAsync through JSPI"),
    ("jspi.total", "JSPI alone: `run_sync` on a settled Promise"),
)


def print_profile(prof: dict, ort_median: float) -> None:
    times = prof["times"]
    total = statistics.median(times["inference.total"])
    print("\n#### Where the jitted WebGPU inference goes (same page, calls alternating)\n")
    print("| part | median ms | p10 ms | p90 ms | share of the inference | × ORT-web |")
    print("|---|---:|---:|---:|---:|---:|")
    for key, label in PROFILE_ROWS:
        med, p10, p90 = quantiles(times[key])
        print(f"| {label} | {med:.3g} | {p10:.3g} | {p90:.3g} | {med / total:.0%} "
              f"| {med / ort_median:.3g} |")
    if prof["gpu"]:
        for ms, label in zip(prof["gpu"], ("jitted inference", "1-element op")):
            print(f"| (e) GPU time in compute passes (timestamp queries), {label} | {ms:.3g} "
                  f"| – | – | {ms / total:.0%} | {ms / ort_median:.3g} |")
    else:
        print("\n(e) no timestamp-query on this adapter: GPU time not measured.")
        return
    runs = prof["kernels"]
    per = [statistics.median(run[i][2] for run in runs) for i in range(len(runs[0]))]
    print("\nGPU ms per dispatch of the same forward, each dispatch submitted and timed alone "
          f"(sum {sum(per):.3g} ms: alone they cost more than inside one pass):\n")
    print("| # | kernel | workgroups | GPU ms | share |")
    print("|---:|---|---|---:|---:|")
    for i, ((name, groups, _), ms) in enumerate(zip(runs[0], per)):
        print(f"| {i} | {name} | {groups} | {ms:.3g} | {ms / sum(per):.0%} |")


if __name__ == "__main__":
    main()
