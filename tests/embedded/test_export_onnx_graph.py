"""An ONNX graph written the way torch exports a TensorFlow-"SAME" CNN goes to a board: its Pad
(a zero tensor the activation is written into) folds into the next Conv2d, Clip(0, 6) becomes
a ReLU6 and GlobalAveragePool the global average (tests/matrix found EfficientNet-Lite0's
torch export refused). Expected values: onnxruntime; the pure tier of ember_micro runs the
written file on CPython."""

from __future__ import annotations

from array import array

import pytest

np = pytest.importorskip("numpy")
onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import ember.onnx
from ember.errors import UnsupportedOpError
from ember.export import export, lower
from onnx import TensorProto, helper, numpy_helper


def _graph(path, clip_max=6.0):
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(a.astype(np.float32), n) for n, a in [
        ("w1", rng.standard_normal((4, 2, 3, 3)) / 3), ("b1", rng.standard_normal(4)),
        ("w2", rng.standard_normal((4, 1, 3, 3)) / 3), ("wf", rng.standard_normal((3, 4))),
        ("bf", rng.standard_normal(3)), ("lo", np.array(0.0)), ("hi", np.array(clip_max))]]
    inits.append(numpy_helper.from_array(np.array([0, 0, 0, 0, 0, 0, 1, 1], np.int64), "pads"))
    nodes = [helper.make_node("Pad", ["x", "pads"], ["p"]),
             helper.make_node("Conv", ["p", "w1", "b1"], ["c1"], strides=[2, 2]),
             helper.make_node("Clip", ["c1", "lo", "hi"], ["a1"]),
             helper.make_node("Conv", ["a1", "w2"], ["c2"], group=4, pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c2"], ["a2"]),
             helper.make_node("GlobalAveragePool", ["a2"], ["g"]),
             helper.make_node("Flatten", ["g"], ["f"]),
             helper.make_node("Gemm", ["f", "wf", "bf"], ["y"], transB=1)]
    graph = helper.make_graph(nodes, "same_cnn", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [1, 2, 8, 8])], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, None)], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def test_pad_clip_and_global_pool_of_an_onnx_graph_run_on_the_board(tmp_path):
    import ember_micro

    path = str(tmp_path / "same_cnn.onnx")
    _graph(path)
    module = ember.onnx.load(path)
    layers = [la.describe().split()[0] for la in lower(module, (2, 8, 8)).layers]
    assert layers == ["conv2d+relu6", "conv2d+relu", "global_avg_pool", "linear"]
    x = np.random.default_rng(1).standard_normal((3, 1, 2, 8, 8)).astype(np.float32)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    export(module, tmp_path / "same_cnn.emb", (2, 8, 8))
    board = ember_micro.Model(str(tmp_path / "same_cnn.emb"), "pure")
    for xi in x:
        want = sess.run(None, {"x": xi})[0].reshape(-1)
        got = list(board.run(array("f", xi.ravel().tolist())))
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_a_clip_other_than_relu6_is_refused_by_name(tmp_path):
    path = str(tmp_path / "clip4.onnx")
    _graph(path, clip_max=4.0)
    with pytest.raises(UnsupportedOpError, match="float_minimum, which bounds the activation"):
        export(ember.onnx.load(path), tmp_path / "clip4.emb", (2, 8, 8))
