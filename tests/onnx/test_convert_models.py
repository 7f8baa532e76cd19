"""Real models through ``ember onnx convert``: the issue's done-when list, on a cheap set.

Each converted module imports, matches ``ember.onnx.load`` (convert's own check, then on
random inputs), has every float weight in ``parameters()``, survives ``eval/train/to/
state_dict/load_state_dict``, gets a gradient for every parameter and one SGD step from them,
and exports back to ONNX with onnxruntime giving the original file's outputs (the steps live
in ``convert_done_when.py``, which runs them over every real model installed).

Besides a CNN and a real PaddleOCR classifier, the set holds the cheapest model of each kind
that once converted but did not export back: an ONNX Loop with a constant trip count
(``loop_rnn``), dynamically quantized int8 (DynamicQuantizeLinear + MatMulInteger, a
reduction long enough to be summed in chunks), and shape arithmetic on a dynamic dim joined
with integer constants into a Reshape's target (multi-head attention in PaddleOCR's rec model).
"""

from __future__ import annotations

import os
import sys

import pytest

np = pytest.importorskip("numpy")
onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import ember  # noqa: E402
import ember.onnx  # noqa: E402
import convert_done_when as done  # noqa: E402
from real_models import rapidocr_models  # noqa: E402

HERE = os.path.dirname(__file__)


def _benchmark_model(name: str, folder: str) -> str:
    sys.path.insert(0, os.path.join(HERE, "..", "..", "benchmarks"))
    import onnx_models

    path = os.path.join(folder, f"{name}.onnx")
    getattr(onnx_models, f"_{name}")(path)
    return path


def _dynamic_int8(folder: str) -> str:
    """``x @ w + b`` (K = 300) quantized by onnxruntime's ``quantize_dynamic``."""
    from onnx import TensorProto, helper, numpy_helper
    from onnxruntime.quantization import QuantType, quantize_dynamic

    rng = np.random.default_rng(0)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["mm"]),
         helper.make_node("Add", ["mm", "b"], ["y"])], "linear",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 5, 300])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array((rng.standard_normal((300, 16)) / 17).astype("f4"), "w"),
         numpy_helper.from_array(rng.standard_normal(16).astype("f4"), "b")])
    source, path = os.path.join(folder, "linear.onnx"), os.path.join(folder, "linear_int8.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), source)
    quantize_dynamic(source, path, weight_type=QuantType.QInt8)
    return path


def _heads_reshape(folder: str) -> str:
    """Split ``x @ w + b`` into 3 heads of 8 along a dynamic length T: Reshape to
    ``Concat([0], Shape(x)[1:2], [3], [8])`` and Transpose."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    ints = {k: numpy_helper.from_array(np.asarray([v], np.int64), k)
            for k, v in (("one", 1), ("two", 2), ("zero", 0), ("three", 3), ("eight", 8))}
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["mm"]),
         helper.make_node("Add", ["mm", "b"], ["qkv"]),
         helper.make_node("Shape", ["x"], ["shape"]),
         helper.make_node("Slice", ["shape", "one", "two"], ["t"]),
         helper.make_node("Concat", ["zero", "t", "three", "eight"], ["target"], axis=0),
         helper.make_node("Reshape", ["qkv", "target"], ["heads"]),
         helper.make_node("Transpose", ["heads"], ["y"], perm=[0, 2, 1, 3])], "heads",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "T", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(rng.standard_normal((8, 24)).astype("f4"), "w"),
         numpy_helper.from_array(rng.standard_normal(24).astype("f4"), "b"), *ints.values()])
    path = os.path.join(folder, "heads.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def _models(folder) -> dict:
    """name -> (path, shapes for convert, shapes of the inputs the steps feed)."""
    out = {
        "same_pool_cnn": (_benchmark_model("same_pool_cnn", folder), None, None),
        "loop_rnn": (_benchmark_model("loop_rnn", folder), None, None),
        "dynamic_int8": (_dynamic_int8(folder), None, None),
        # convert keeps T dynamic; the module runs, trains and exports at T = 6
        "heads_reshape": (_heads_reshape(folder), None, {"x": (1, 6, 8)}),
    }
    cls = rapidocr_models().get("ch_ppocr_mobile_v2.0_cls_infer")
    if cls:  # a real PaddleOCR classifier, its dynamic image size given as convert --shape
        shape = {"x": (1, 3, 48, 192)}
        out["rapidocr_cls"] = (cls, shape, shape)
    return out


NAMES = ["same_pool_cnn", "loop_rnn", "dynamic_int8", "heads_reshape", "rapidocr_cls"]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    return _models(str(tmp_path_factory.mktemp("models")))


@pytest.mark.parametrize("name", NAMES)
def test_converted_model_trains_and_exports_back(name, models, tmp_path):
    if name not in models:
        pytest.skip(f"{name}: its registry package is not installed")
    path, shapes, feed_shapes = models[name]
    py, _ = ember.onnx.convert(path, tmp_path / "out", shapes=shapes)  # checks vs load
    mod = done.import_module(py, name)
    m = mod.load()
    feeds = done.feeds_for(path, feed_shapes)
    done.matches_load(m, path, feeds)
    done.has_parameters(m)
    done.module_api(m)
    done.fine_tune_one_step(mod, feeds)
    back = str(tmp_path / "back.onnx")
    done.export_back(m, feeds, back)
    done.runs_like_original(path, back, feeds)
