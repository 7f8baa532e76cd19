"""Issue 42's done-when list for ``ember onnx convert``, one step at a time, on real models.

Each step takes a model through one promise of a converted module: it converts (with convert's
own check against ``ember.onnx.load``), imports, matches ``ember.onnx.load`` on random inputs,
holds every float weight in ``parameters()``, survives ``eval/train/to/state_dict/
load_state_dict``, fine-tunes one SGD step with Autodiff (a gradient for every parameter, the
step applied as SGD says), and exports back to ONNX, which onnxruntime runs with the original
file's outputs. ``test_convert_models.py`` runs the steps on a cheap set; run this file to get
the table over every real model installed (the ``benchmarks/onnx_models.py`` models, the
rapidocr models, the onnx wheel's "light" CNNs) and the share of ``call(`` lines in each
converted ``forward``:

    python tests/onnx/convert_done_when.py [NAME ...]
"""

from __future__ import annotations

import ast
import importlib.util
import os
import sys
import tempfile
import time
import traceback
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
STEPS = ("convert", "import", "matches load", "parameters", "module API", "fine-tune",
         "export", "ort matches")
# the models whose forward should read as ember code (call( on at most 10 % of its lines)
CNN_OR_TRANSFORMER = ("encoder", "encoder_int8", "same_pool_cnn", "efficientnet_lite0",
                      "ch_", "light_")


def available(folder: str) -> dict[str, tuple[str, dict | None]]:
    """name -> (path, dims given to ``convert --shape``) of every real model installed."""
    sys.path.insert(0, os.path.join(HERE, "..", "..", "benchmarks"))
    import onnx_models
    from real_models import SHAPES, light_models, rapidocr_models

    out: dict[str, tuple[str, dict | None]] = {
        k: (p, None) for k, p in onnx_models.built(folder).items()}
    for name, path in {**rapidocr_models(), **light_models()}.items():
        shape = SHAPES.get(name)
        out[name] = (path, {_input_names(path)[0]: shape} if shape else None)
    return out


def _input_names(path: str) -> list[str]:
    return [i.name for i in _session(path).get_inputs()]


def _session(path: str, options=None):
    import onnxruntime as ort

    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def feeds_for(path: str, shapes: dict | None, seed: int = 0) -> dict:
    """Random inputs for the model's declared inputs: floats in [0, 1) (like images), ids in
    [0, 1000) for integer inputs; ``shapes`` fixes dynamic dims."""
    rng = np.random.default_rng(seed)
    feeds = {}
    for i in _session(path).get_inputs():
        dims = list((shapes or {}).get(i.name) or [d if isinstance(d, int) else 1
                                                   for d in i.shape])
        feeds[i.name] = (rng.integers(0, 1000, dims).astype(np.int64) if "int" in i.type
                         else rng.random(dims, dtype=np.float32))
    return feeds


def reference(path: str, feeds: dict) -> list:
    """onnxruntime's outputs, its integer kernels exact (``session.x64quantprecision``: the
    default u8 x s8 kernels saturate on CPUs without VNNI)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.add_session_config_entry("session.x64quantprecision", "1")
    return _session(path, options).run(None, feeds)


def import_module(py: str, name: str):
    spec = importlib.util.spec_from_file_location("converted_" + name.replace("-", "_").replace(
        ".", "_"), py)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _tensors(feeds: dict) -> list:
    import ember

    return [ember.tensor(v) for v in feeds.values()]


def _close(got, want, what: str, tol: float = 1e-4) -> None:
    for k, (g, w) in enumerate(zip(got, want)):
        g, w = np.asarray(g), np.asarray(w)
        if g.shape != w.shape or not np.allclose(g, w, rtol=tol, atol=tol):
            diff = np.abs(g - w).max() if g.shape == w.shape else f"shape {g.shape} != {w.shape}"
            raise AssertionError(f"{what}: output {k} differs (max |diff| {diff})")


def _outputs(out) -> list:
    return [o.numpy() for o in (out if isinstance(out, (list, tuple)) else [out])]


def matches_load(m, path: str, feeds: dict) -> None:
    import ember.onnx

    x = _tensors(feeds)
    _close(_outputs(m(*x)), _outputs(ember.onnx.load(path)(*x)), "module vs ember.onnx.load")


def has_parameters(m) -> None:
    params = {k for k, _ in m.named_parameters()}
    floats = {k for k, v in m.state_dict().items() if v.dtype.is_float}
    stats = {k for k, _ in m.named_buffers()}
    assert params, "no parameters"
    assert floats - stats == params, f"float weights not parameters: {floats - stats - params}"


def module_api(m) -> None:
    assert m.train() is m and m.eval() is m and m.to("numpy") is m
    state = m.state_dict()
    m.load_state_dict(state)
    assert list(m.state_dict()) == list(state), "state_dict keys changed"


def fine_tune_one_step(mod, feeds: dict, lr: float = 0.5) -> None:
    """One SGD step on Autodiff: every parameter gets a gradient and moves by ``-lr * grad``."""
    import ember

    with ember.use_backend("autodiff-numpy"):
        tuned = mod.load()  # eval: no dropout noise between the two losses
        out = tuned(*[v.to("autodiff-numpy") for v in _tensors(feeds)])
        out = out[0] if isinstance(out, (list, tuple)) else out
        grads = (out * out).mean().backward()
    named = dict(tuned.named_parameters())
    missing = [k for k, p in named.items() if grads.get(p) is None]
    assert not missing, f"no gradient for {missing[:3]}"
    want = {k: p.numpy() - lr * grads.get(p).numpy() for k, p in named.items()}
    ember.optim.SGD(tuned.parameters(), lr=lr).step(grads)
    for k, p in tuned.named_parameters():
        np.testing.assert_allclose(p.numpy(), want[k], rtol=1e-6, atol=1e-7, err_msg=k)


def export_back(m, feeds: dict, out_path: str) -> None:
    import ember.onnx

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ember.onnx.export(m.eval(), tuple(_tensors(feeds)), out_path)


def runs_like_original(path: str, back: str, feeds: dict) -> None:
    sess = _session(back)
    got = sess.run(None, dict(zip([i.name for i in sess.get_inputs()], feeds.values())))
    _close(got, reference(path, feeds), "exported model in onnxruntime vs the original")


def load_vs_onnxruntime(path: str, feeds: dict) -> float:
    """The largest difference between ``ember.onnx.load`` and onnxruntime on the original file:
    how closely the two runtimes agree on this model at all (a bound on what export can do)."""
    import ember.onnx

    got = _outputs(ember.onnx.load(path)(*_tensors(feeds)))
    return max(float(np.abs(g - w).max()) for g, w in zip(got, reference(path, feeds)))


def call_share(py: str) -> tuple[int, int]:
    """(lines holding ``call(``, lines) of the ``forward`` methods in a converted module."""
    source = open(py).read().split("\n")
    calls = lines = 0
    for node in ast.walk(ast.parse("\n".join(source))):
        if isinstance(node, ast.FunctionDef) and node.name == "forward":
            body = source[node.body[0].lineno - 1:node.end_lineno]
            lines += sum(1 for s in body if s.strip())
            calls += sum(1 for s in body if "call(" in s)
    return calls, lines


def run(name: str, path: str, shapes: dict | None, folder: str) -> dict:
    """step -> "pass" or "FAIL: why" ("-" for steps after a failure), and "call(" -> share."""
    import ember.onnx

    result = dict.fromkeys(STEPS, "-")
    out = os.path.join(folder, name)
    feeds = feeds_for(path, shapes)
    state: dict = {}

    def convert():
        state["py"], _ = ember.onnx.convert(path, out, shapes=shapes, force=True)

    def load_module():
        state["mod"] = import_module(state["py"], name)
        state["m"] = state["mod"].load()

    steps = {
        "convert": convert,
        "import": load_module,
        "matches load": lambda: matches_load(state["m"], path, feeds),
        "parameters": lambda: has_parameters(state["m"]),
        "module API": lambda: module_api(state["m"]),
        "fine-tune": lambda: fine_tune_one_step(state["mod"], feeds),
        "export": lambda: export_back(state["m"], feeds, os.path.join(out, "back.onnx")),
        "ort matches": lambda: runs_like_original(path, os.path.join(out, "back.onnx"), feeds),
    }
    for step, fn in steps.items():
        try:
            fn()
            result[step] = "pass"
        except Exception as e:  # the table reports it; the traceback goes to stderr
            traceback.print_exc()
            result[step] = f"FAIL: {type(e).__name__}: {str(e)[:100]}"
            if step == "ort matches":
                result[step] += ("; ember.onnx.load vs onnxruntime on the original: max |diff| "
                                 f"{load_vs_onnxruntime(path, feeds):.3g}")
            if step in ("convert", "import"):
                break
    if "py" in state:
        calls, lines = call_share(state["py"])
        result["call("] = f"{calls}/{lines} = {100 * calls / max(lines, 1):.1f} %"
    return result


def main(argv: list[str]) -> int:
    sys.path.insert(0, HERE)
    folder = os.environ.get("DONE_WHEN_DIR") or tempfile.mkdtemp(prefix="convert_done_when_")
    models = available(os.path.join(folder, "models"))
    names = [n for n in models if not argv or n in argv]
    print("| model | " + " | ".join(STEPS) + " | call( / forward lines | s |")
    print("|" + "---|" * (len(STEPS) + 3))
    failed = 0
    for name in names:
        t0 = time.perf_counter()
        r = run(name, *models[name], os.path.join(folder, "converted"))
        bad = any(v.startswith("FAIL") for v in r.values())
        share = r.get("call(", "-")
        if not name.startswith(CNN_OR_TRANSFORMER):
            share += " (control flow: not counted)"
        elif share != "-" and float(share.split("= ")[1].split(" ")[0]) > 10:
            share += " **over 10 %**"
            bad = True
        failed += bad
        cells = [("pass" if r[s] == "pass" else r[s].split(":")[0]) for s in STEPS]
        print(f"| {name} | " + " | ".join(cells) + f" | {share} | "
              f"{time.perf_counter() - t0:.0f} |", flush=True)
        for s in STEPS:
            if r[s].startswith("FAIL"):
                print(f"<!-- {name} / {s}: {r[s]} -->", flush=True)
    print(f"\n{len(names) - failed} of {len(names)} models pass every step")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
