"""The MNIST demo CNN in one headless Chromium: ember (WebGPU), ember (python), each eager and
through ``ember.jit``, and onnxruntime-web (wasm), with the same weights, plus Pyodide + ember
cold start.

    python benchmarks/bench_browser.py [--run-dir runs/mnist] [--runs 30] [--cold 3]

Set-up (once): web/setup.sh (Chromium, Playwright, web/node_modules: pyodide and
onnxruntime-web; `npm install` in web/ is run here when onnxruntime-web is missing) and torch
for the ONNX export. The model is the one ``ember demo mnist`` trained in ``--run-dir`` when it
exists, else the same architecture with seeded random weights (latency does not depend on the
values). torch rebuilds the architecture with those weights and ``torch.onnx.export`` writes
the ONNX file that onnxruntime-web runs.

One inference = one 28×28 image (batch 1) from 784 float pixel values in 0..255 to 10
probabilities readable on the CPU: scale, normalise, CNN, softmax, read back. ember is timed
inside Pyodide (``time.perf_counter`` around ``model(x).softmax(1).tolist()``; jitted: the
normalisation, model and softmax replayed by ``ember.jit`` after a warm-up and a traced call,
the tensor's creation and ``tolist()`` outside; eager and jitted calls alternate), ORT from
JavaScript (tensor creation + ``session.run`` + ``.data``; the page's clock ticks in 0.1 ms, so
each ORT sample is the mean of 25 consecutive runs). Medians after warm-up.
onnxruntime-web runs the wasm execution provider with one thread (the page is not
cross-origin isolated, so wasm threads are unavailable; Pyodide is single-threaded too).
Chromium's WebGPU adapter here is SwiftShader, a CPU emulation of a GPU: its numbers say
nothing about a real GPU. Cold start: a fresh page until ``loadEmber()`` resolves (Pyodide
core, micropip, ember's wheel, backend choice), files from a local server, no HTTP cache.

A second table takes the jitted WebGPU inference apart in the same page (parts timed in
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
import tempfile
import warnings
from datetime import date
from pathlib import Path

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

def bench(name, pixels, warmup, runs):  # eager and jitted inferences, timed in alternation
    pixels = list(pixels)
    for _ in range(max(warmup, 2)):  # jit: a warm-up and a traced call first
        for jit in (False, True):
            infer(name, jit, pixels)
    times = {False: [], True: []}
    for _ in range(runs):
        for jit in (False, True):
            t0 = time.perf_counter()
            infer(name, jit, pixels)
            times[jit].append((time.perf_counter() - t0) * 1000.0)
    return json.dumps([{"times": times[jit], "probs": infer(name, jit, pixels),
                        "dispatches": dispatches(name, jit, pixels),
                        "stats": FORWARD[name, jit].stats() if jit else None}
                       for jit in (False, True)])


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

ORT_BENCH = """async ([pixels, warmup, runs]) => {
    const ort = await import(location.origin + "/ort/ort.wasm.min.mjs");
    ort.env.wasm.wasmPaths = location.origin + "/ort/";
    ort.env.wasm.numThreads = 1;
    const t0 = performance.now();
    const session = await ort.InferenceSession.create(location.origin + "/bench/mnist.onnx",
        { executionProviders: ["wasm"] });
    const loadMs = performance.now() - t0;
    const data = Float32Array.from(pixels);
    const once = async () => {
        const out = await session.run({ pixels: new ort.Tensor("float32", data, [1, 1, 28, 28]) });
        return Array.from(out.probs.data);
    };
    let probs;
    for (let i = 0; i < warmup; i++) probs = await once();
    // performance.now() ticks in 0.1 ms here (no cross-origin isolation): time blocks of
    // `chunk` runs, one sample per block
    const chunk = 25, times = [];
    for (let i = 0; i < Math.ceil(runs / chunk); i++) {
        const s = performance.now();
        for (let j = 0; j < chunk; j++) probs = await once();
        times.push((performance.now() - s) / chunk);
    }
    return { times, probs, loadMs, version: ort.env.versions?.web ?? "" };
}"""

COLD_START = """async () => {
    const t0 = performance.now();
    const { loadEmber } = await import("./ember.js");
    window.ember = await loadEmber({ backend: "auto" });
    return { ms: performance.now() - t0, info: window.ember.info };
}"""


def ensure_ort() -> None:
    if not (ORT_DIST / "ort.wasm.min.mjs").is_file():
        print("npm install in web/ (onnxruntime-web) …", flush=True)
        subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--silent"], cwd=WEB,
                       check=True)


def quantiles(times: list[float]) -> tuple[float, float, float]:
    qs = statistics.quantiles(times, n=10) if len(times) >= 2 else [times[0]] * 9
    return statistics.median(times), qs[0], qs[-1]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--run-dir", type=Path, default=ROOT / "runs" / "mnist",
                   help="a run of `ember demo mnist` (else seeded random weights)")
    p.add_argument("--runs", type=int, default=30, help="timed ember inferences per backend")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--ort-runs", type=int, default=1000)
    p.add_argument("--cold", type=int, default=3, help="cold starts (fresh pages)")
    args = p.parse_args()

    from playwright.sync_api import sync_playwright

    harness.ensure_dist()
    ensure_ort()
    tmp = Path(tempfile.mkdtemp(prefix="ember-bench-browser-"))
    weights = model_files(args.run_dir, tmp)
    export_onnx(tmp)
    pixels = sample_pixels()
    server = harness.Server(harness.DIST, {"/blank.html": ROOT / "tests" / "web" / "blank.html",
                                           "/bench/": tmp, "/ort/": ORT_DIST})
    rows, notes = [], []
    with sync_playwright() as pw:
        # unrounded GPU timestamps (Chromium rounds them to 100 us otherwise)
        browser = pw.chromium.launch(executable_path=harness.CHROMIUM, headless=True,
                                     args=harness.BASE_FLAGS + harness.WEBGPU_FLAGS
                                     + ["--enable-webgpu-developer-features"])
        try:
            cold, info, page = [], None, None
            for _ in range(max(1, args.cold)):  # the last page stays for the latency runs
                if page is not None:
                    page.close()
                page = harness.blank_page(browser, server)
                page.set_default_timeout(600_000)
                result = page.evaluate(COLD_START)
                cold.append(result["ms"])
                info = result["info"]
            names = ["python"] + (["wgpu"] if info["backend"] == "wgpu" else [])
            if "wgpu" not in names:
                notes.append(f"no WebGPU adapter: {info['reason']}")
            harness.run_python(page, EMBER_SETUP, {"NAMES": names})
            ember_results = {}
            for name in names:
                text = harness.run_python(page, f"bench({name!r}, PIXELS, {args.warmup}, "
                                                f"{args.runs})", {"PIXELS": pixels})
                eager, jitted = json.loads(text)
                ember_results[name, False], ember_results[name, True] = eager, jitted
            prof = None
            if "wgpu" in names:
                prof = json.loads(harness.run_python(
                    page, f"profile(PIXELS, {args.warmup}, {args.runs})", {"PIXELS": pixels}))
            ort = page.evaluate(ORT_BENCH, [pixels, args.warmup * 4, args.ort_runs])
            chromium = browser.version
        finally:
            browser.close()
            server.close()

    ort_median = quantiles(ort["times"])[0]
    labels = {"wgpu": "ember, WebGPU adapter (SwiftShader = CPU emulation)",
              "python": "ember, python backend (CPU, pure Python)"}
    for (name, jit), result in sorted(ember_results.items(), key=lambda kv: kv[0][0] != "wgpu"):
        stats = result["stats"]
        if jit and stats["traces"] != stats["signatures"]:
            raise SystemExit(f"ember.jit on {name} traced again while timed: {stats}")
        diff = max(abs(a - b) for a, b in zip(result["probs"], ort["probs"]))
        med, p10, p90 = quantiles(result["times"])
        label = labels[name] + (", ember.jit (replays)" if jit else ", eager")
        rows.append((label, med, p10, p90, str(len(result["times"])), med / ort_median, diff,
                     "–" if result["dispatches"] is None else str(result["dispatches"])))
    med, p10, p90 = quantiles(ort["times"])
    rows.append(("onnxruntime-web, wasm EP (1 thread)", med, p10, p90,
                 f"{len(ort['times'])}×25", 1.0, 0.0, "–"))

    print(f"\n### Browser: MNIST CNN inference, batch 1 ({date.today().isoformat()})\n")
    print(f"Headless Chromium {chromium}, Pyodide {info['pyodide_version']}, "
          f"onnxruntime-web {ort['version'] or '(npm)'}, {platform.machine()} "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; weights: {weights}. WebGPU adapter: "
          f"{info.get('adapter') or 'none'} (CPU emulation, not a GPU).\n")
    print("| runtime | median ms | p10 ms | p90 ms | runs | × ORT-web | max abs Δprob vs ORT "
          "| GPU dispatches |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for label, m, lo, hi, n, ratio, diff, d in rows:
        print(f"| {label} | {m:.3g} | {lo:.3g} | {hi:.3g} | {n} | {ratio:.3g} | {diff:.1e} "
              f"| {d} |")
    cm = statistics.median(cold)
    print(f"| cold start: Pyodide + ember wheel + backend choice (`loadEmber()`) | {cm:.0f} | "
          f"{min(cold):.0f} | {max(cold):.0f} | {len(cold)} | – | – | – |")
    print(f"\nORT session creation (model load, wasm compile): {ort['loadMs']:.0f} ms.")
    for note in notes:
        print(f"Note: {note}")
    if prof is not None:
        print_profile(prof, ort_median)


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
