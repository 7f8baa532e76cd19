"""Seed corpora: small valid files written by the real writers of each format.

Each ``<format>_seeds()`` returns ``{name: bytes}``. The writers are the reference ones (the
``safetensors`` package, ``torch.save`` in both layouts, ``onnx.helper``, Pillow), plus Ember's
own writers where Ember defines the format (``ember.save``, ``ember.export``). Values are fixed,
so a seeded fuzz run mutates the same bytes every time.
"""

from __future__ import annotations

import io
import os
import tempfile
from collections.abc import Callable


def _via_file(write: Callable[[str], object], suffix: str) -> bytes:
    with tempfile.TemporaryDirectory(prefix="ember-fuzz-seed-") as tmp:
        path = os.path.join(tmp, "seed" + suffix)
        write(path)
        with open(path, "rb") as f:
            return f.read()


def _arrays():
    import numpy as np

    ramp = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 7
    return {
        "f32": ramp, "f64": ramp.astype(np.float64)[0], "f16": ramp.astype(np.float16)[1],
        "i64": np.arange(5, dtype=np.int64) - 2, "i32": np.array([[1, -2], [3, 4]], np.int32),
        "i16": np.array([-3, 7], np.int16), "i8": np.array([-128, 127], np.int8),
        "u8": np.arange(6, dtype=np.uint8), "u16": np.array([1, 65535], np.uint16),
        "u32": np.array([4000000000], np.uint32), "bool": np.array([True, False, True]),
        "scalar": np.array(3.5, np.float32), "empty": np.zeros((0, 3), np.float32),
    }


def safetensors_seeds() -> dict[str, bytes]:
    """Files written by the ``safetensors`` package (numpy and torch front ends) and Ember."""
    import torch
    from safetensors.numpy import save as np_save
    from safetensors.torch import save as torch_save

    import ember
    from ember.io import save_file

    arrays = _arrays()
    seeds = {
        "all_dtypes": np_save(arrays, metadata={"format": "np", "note": "seed"}),
        "one": np_save({"w": arrays["f32"]}),
        "bf16": torch_save({"w": torch.arange(6, dtype=torch.bfloat16).reshape(2, 3) / 3,
                            "b": torch.ones(3, dtype=torch.bfloat16)}),
        "empty_file": np_save({}),
    }
    seeds["ember"] = _via_file(
        lambda p: save_file({"w": ember.tensor([[1.0, 2.0], [3.0, 4.0]]),
                             "i": ember.tensor([1, 2, 3])}, p, metadata={"a": "b"}),
        ".safetensors",
    )
    return seeds


def small_net(backend: str = "autodiff-numpy"):
    """The module the record seeds hold (the record target loads files into a fresh one)."""
    import ember
    from ember import nn

    ember.random.seed(0)
    return nn.Sequential(nn.Linear(3, 4, backend=backend), nn.ReLU(),
                         nn.Linear(4, 2, backend=backend))


def record_seeds() -> dict[str, bytes]:
    """Records written by ``ember.save``: a module, a float16 module, a checkpoint dict."""
    import ember
    from ember import optim

    net = small_net()
    opt = optim.Adam(net.parameters(), lr=1e-3)
    opt.step(net(ember.ones(2, 3, backend="autodiff-numpy")).sum().backward())
    return {
        "module": _via_file(lambda p: ember.save(net, p, metadata={"epoch": 1}), ".ember"),
        "module_f16": _via_file(lambda p: ember.save(net, p, dtype=ember.float16), ".ember"),
        "checkpoint": _via_file(
            lambda p: ember.save({"model": net, "optim": opt, "epoch": 3, "best": [0.5, None]},
                                 p),
            ".ember",
        ),
    }


def _torch_objects():
    import torch

    torch.manual_seed(0)
    lin = torch.nn.Linear(3, 2)
    base = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    return {
        "state_dict": lin.state_dict(),
        "views": {"t": base.t(), "row": base[1], "strided": base[:, ::2], "same": base},
        "dtypes": {"bf16": torch.ones(2, dtype=torch.bfloat16), "f16": torch.ones(2).half(),
                   "i16": torch.tensor([1, -1], dtype=torch.int16),
                   "b": torch.tensor([True, False]), "u8": torch.tensor([1, 2], dtype=torch.uint8),
                   "f64": torch.zeros(2, 2, dtype=torch.float64), "i64": torch.tensor(7)},
        "nested": {"model": lin.state_dict(), "layers": [torch.ones(1), {"p": torch.nn.Parameter(
            torch.zeros(2))}], "epoch": 4, "name": "seed"},
    }


def _torch_bytes(obj, zip_format: bool) -> bytes:
    import torch

    buf = io.BytesIO()
    torch.save(obj, buf, _use_new_zipfile_serialization=zip_format)
    return buf.getvalue()


def pt_zip_seeds() -> dict[str, bytes]:
    """``torch.save`` files in the zip layout (the default since PyTorch 1.6)."""
    return {name: _torch_bytes(obj, True) for name, obj in _torch_objects().items()}


def pt_legacy_seeds() -> dict[str, bytes]:
    """``torch.save(..., _use_new_zipfile_serialization=False)``: the legacy pickle stream."""
    return {name: _torch_bytes(obj, False) for name, obj in _torch_objects().items()}


def onnx_seeds() -> dict[str, bytes]:
    """Models built with ``onnx.helper``: an MLP, a CNN, shape arithmetic, ConstantOfShape, an
    ``If`` with two subgraphs, and a node calling a local function."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    def model(nodes, inputs, outputs, inits=(), functions=(), opsets=(("", 17),)):
        graph = helper.make_graph(nodes, "seed", inputs, outputs, list(inits))
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets],
                              functions=list(functions))
        m.ir_version = 8
        return m.SerializeToString()

    def vi(name, shape, elem=TensorProto.FLOAT):
        return helper.make_tensor_value_info(name, elem, shape)

    def init(name, array):
        return numpy_helper.from_array(np.asarray(array), name)

    w1 = (np.arange(12, dtype=np.float32).reshape(4, 3) - 6) / 10
    mlp = model(
        [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], transB=1, name="fc1"),
         helper.make_node("Relu", ["h"], ["r"]),
         helper.make_node("MatMul", ["r", "w2"], ["y"])],
        [vi("x", [1, 3])], [vi("y", [1, 2])],
        [init("w1", w1), init("b1", np.ones(4, np.float32)),
         init("w2", np.ones((4, 2), np.float32))])
    cnn = model(
        [helper.make_node("Conv", ["x", "k", "kb"], ["c"], pads=[1, 1, 1, 1], strides=[1, 1]),
         helper.make_node("BatchNormalization", ["c", "s", "bb", "m", "v"], ["n"]),
         helper.make_node("Relu", ["n"], ["r"]),
         helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
         helper.make_node("GlobalAveragePool", ["p"], ["g"]),
         helper.make_node("Flatten", ["g"], ["f"]),
         helper.make_node("Softmax", ["f"], ["y"], axis=1)],
        [vi("x", [1, 1, 4, 4])], [vi("y", [1, 2])],
        [init("k", np.ones((2, 1, 3, 3), np.float32) / 9), init("kb", np.zeros(2, np.float32)),
         init("s", np.ones(2, np.float32)), init("bb", np.zeros(2, np.float32)),
         init("m", np.zeros(2, np.float32)), init("v", np.ones(2, np.float32))])
    shapes = model(
        [helper.make_node("Shape", ["x"], ["s"]),
         helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
         helper.make_node("Unsqueeze", ["n", "axes"], ["n1"]),
         helper.make_node("Concat", ["n1", "minus1"], ["shape"], axis=0),
         helper.make_node("Reshape", ["x", "shape"], ["flat"]),
         helper.make_node("ConstantOfShape", ["cshape"], ["ones"],
                          value=helper.make_tensor("v", TensorProto.FLOAT, [1], [1.0])),
         helper.make_node("Add", ["flat", "ones"], ["y"])],
        [vi("x", [2, 3, 2])], [vi("y", [2, 6])],
        [init("zero", np.array(0, np.int64)), init("axes", np.array([0], np.int64)),
         init("minus1", np.array([-1], np.int64)), init("cshape", np.array([2, 6], np.int64))])
    branch = [helper.make_graph([helper.make_node(op, ["x"], [f"o_{op}"])], f"b_{op}", [],
                                [vi(f"o_{op}", [2])]) for op in ("Neg", "Abs")]
    cond = model(
        [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
         helper.make_node("Greater", ["s", "zero"], ["c"]),
         helper.make_node("If", ["c"], ["y"], then_branch=branch[0], else_branch=branch[1])],
        [vi("x", [2])], [vi("y", [2])], [init("zero", np.array(0.0, np.float32))])
    fn = helper.make_function(
        "local", "AddMul", ["a", "b"], ["c"],
        [helper.make_node("Add", ["a", "b"], ["t"]), helper.make_node("Mul", ["t", "b"], ["c"])],
        [helper.make_opsetid("", 17)])
    func = model(
        [helper.make_node("AddMul", ["x", "two"], ["y"], domain="local")],
        [vi("x", [3])], [vi("y", [3])], [init("two", np.full(3, 2.0, np.float32))],
        functions=[fn], opsets=(("", 17), ("local", 1)))
    seeds = {"mlp": mlp, "cnn": cnn, "shapes": shapes, "if": cond, "function": func}
    for raw in seeds.values():  # the seeds themselves must be valid ONNX
        onnx.checker.check_model(onnx.load_from_string(raw))
    real = _package_file("rapidocr_onnxruntime", "models/ch_ppocr_mobile_v2.0_cls_infer.onnx")
    if real is not None:  # a real exported CNN (580 KB): the ops and attributes exporters write
        seeds["ppocr_cls"] = real
    return seeds


def _package_file(package: str, name: str) -> bytes | None:
    """A data file shipped in an installed package (``make test`` installs it), or None. The
    package is found, not imported: it was installed without its dependencies."""
    import importlib.util

    spec = importlib.util.find_spec(package)
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            with open(path, "rb") as f:
                return f.read()
    return None


def onnx_convert_seeds() -> dict[str, bytes]:
    """The ONNX seeds ``ember onnx convert`` takes: straight-line graphs (the code generator
    refuses control flow and local functions with UnsupportedOpError, by design)."""
    return {k: v for k, v in onnx_seeds().items() if k not in ("if", "function")}


def mcu_seeds() -> dict[str, bytes]:
    """Model files written by ``ember.export``: MLP, CNN (conv, pools, GAP), int8, residual,
    and weight-only codes (``ember.quantize``: int4 per block of 5 on odd rows, int8 per
    channel)."""
    import numpy as np

    import ember
    from ember import nn
    from ember.export import Residual, export
    from ember.quantize import Scheme

    ember.random.seed(0)
    calib = np.linspace(-1, 1, 2 * 64, dtype=np.float32).reshape(2, 1, 8, 8)
    models = {
        "mlp": (nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3), nn.Softmax(dim=1)),
                (4,), {}),
        "cnn": (nn.Sequential(nn.Conv2d(1, 2, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                              nn.AvgPool2d(2), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                              nn.Linear(2, 3)), (1, 8, 8), {}),
        "int8": (nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU(), nn.Flatten(), nn.Linear(72, 2)),
                 (1, 8, 8), {"int8": True, "calibration": calib}),
        "residual": (nn.Sequential(nn.Linear(4, 4), Residual(nn.Sequential(nn.Linear(4, 4),
                                                                            nn.Tanh())),
                                   nn.Linear(4, 2)), (4,), {}),
        "weight_only": (ember.quantize(
            nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU(), nn.Flatten(), nn.Linear(72, 3)), None,
            Scheme(weights="int4", activations=False, block=5, min_params=0)), (1, 8, 8), {}),
        "int8_weights": (ember.quantize(
            nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)), None,
            Scheme(activations=False, min_params=0)), (4,), {}),
    }
    return {name: _via_file(lambda p, m=m, s=s, kw=kw: export(m, p, s, **kw), ".emb")
            for name, (m, s, kw) in models.items()}


def image_seeds() -> dict[str, bytes]:
    """Small images written by Pillow in every format the image loader accepts."""
    from PIL import Image

    rgb = Image.frombytes("RGB", (5, 4), bytes(range(60)))
    seeds = {}
    for name, image, fmt, kw in [
        ("rgb_png", rgb, "PNG", {}), ("gray_png", rgb.convert("L"), "PNG", {}),
        ("palette_png", rgb.convert("P"), "PNG", {}), ("rgba_png", rgb.convert("RGBA"), "PNG", {}),
        ("jpeg", rgb, "JPEG", {"quality": 90}), ("bmp", rgb, "BMP", {}),
        ("gif", rgb.convert("P"), "GIF", {}), ("tiff", rgb, "TIFF", {}),
        ("webp", rgb, "WEBP", {"lossless": True}),
    ]:
        buf = io.BytesIO()
        image.save(buf, fmt, **kw)
        seeds[name] = buf.getvalue()
    return seeds
