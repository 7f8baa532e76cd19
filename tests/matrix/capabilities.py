"""The matrix cells that are not numbers, each with its reason.

``NOT_RUN``: cells the matrix does not run, for a reason about the model's size or inputs that
holds on any machine. ``REFUSALS``: cells where Ember refuses with a typed error; the cell must
raise exactly that (type name, a piece of the message), and an entry whose cell starts running
fails the matrix so the list stays true.
"""

from __future__ import annotations

BIG = ("efficientnet_lite0", "efficientnet_lite0.onnx", "minilm", "minilm.onnx", "ppocr_cls.onnx")

_PYTHON = ("the pure-Python backend (Pyodide's fallback without numpy or wasm) runs small models "
           "only: millions of weights or of multiply-adds per call take minutes there")
_MICRO_PURE = ("the pure-MicroPython tier (no ulab, no native kernels) runs small models only: "
               "EfficientNet-Lite0 takes 30-40 s per 64x64 image on the unix port, minutes on "
               "a board")
_TOKENS = ("the micro model format takes one float image/vector input; a text encoder takes "
           "token ids and a mask")

_ONNX_IN_PAGE = ("ember.onnx reads files with the onnx package (protobuf) and runs graphs over "
                 "numpy; the offline Pyodide has neither")
_GENERATED = ("a generated module (a file per run) is not shipped to the page; its layers are "
              "mnist_cnn's, which the browser cells run")
ONNX_ROWS = ("mnist_cnn.onnx", "mnist_cnn.int8-qdq.onnx", "efficientnet_lite0.onnx",
             "minilm.onnx", "lstm_gru.onnx", "ppocr_cls.onnx")
BROWSER = ("browser wasm", "browser webgpu")
MCU = ("mcu native", "mcu pure", "mcu ulab")  # a refusal at export time holds for every tier


NOT_RUN: dict[tuple[str, str], str] = {
    **{(name, col): _ONNX_IN_PAGE for name in ONNX_ROWS for col in BROWSER},
    **{("mnist_cnn.converted", col): _GENERATED for col in BROWSER},
    **{(name, "python"): _PYTHON for name in BIG},
    **{(name, col): _TOKENS for name in ("minilm", "minilm.onnx") for col in MCU},
    **{(name, "mcu pure"): _MICRO_PURE for name in ("efficientnet_lite0",
                                                   "efficientnet_lite0.onnx")},
}

#: row -> (ember error type name, a piece of its message, the reason printed) on every MCU tier
_MCU_REFUSALS = {
    "mnist_cnn.int8-qdq.onnx": (
        "UnsupportedOpError", "runs float_round",
        "the micro format's int8 layers come from ember.export(int8=True) or ember.quantize; "
        "an ONNX QDQ graph's QuantizeLinear (round and clip in float) has no micro layer"),
    "lstm_gru.onnx": (
        "ShapeError", "must be (features,) or (C, H, W)",
        "the micro format has no recurrent layers; its input is (features,) or (C, H, W), not "
        "a sequence"),
    "ppocr_cls.onnx": (
        "UnsupportedOpError", "runs float_mul, which combines two activations",
        "PaddleOCR's squeeze-excitation blocks multiply the activation by a gate computed "
        "from it (a branch): the micro runtime runs one chain with x + f(x) shortcuts only"),
}
REFUSALS: dict[tuple[str, str], tuple[str, str, str]] = {
    **{(name, col): refusal for name, refusal in _MCU_REFUSALS.items() for col in MCU},
    ("mnist_cnn.int8", "onnx export → ort"): (
        "OnnxExportUnsupportedError", "no ONNX mapping for the backend op 'qconv_q'",
        "ONNX export maps float ops: ember's int8 kernels (qconv_q, ...) have no ONNX "
        "mapping (they would be QLinearConv or QDQ nodes); the float model exports"),
}
