"""The ONNX loader folds an inference BatchNormalization into the Conv before it (through
``ember.contract.batchnorm_fold``): the node is gone and the outputs are onnxruntime's on the
original file, on the numpy backend (compiled path and generic path) and on the python
backend. A BatchNormalization with no Conv before it stays a node."""

from __future__ import annotations

import numpy as np
import pytest

import ember.onnx

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def _conv_bn_file(folder, with_bias: bool, conv_first: bool = True) -> str:
    rng = np.random.default_rng(3)
    c_out = 4
    inits = {
        "w": rng.normal(size=(c_out, 3, 3, 3)),
        "gamma": rng.normal(size=c_out),
        "beta": rng.normal(size=c_out),
        "mean": rng.normal(size=c_out),
        "var": rng.uniform(0.05, 2.0, size=c_out),
    }
    if with_bias:
        inits["b"] = rng.normal(size=c_out)
    conv = helper.make_node("Conv", ["x", "w"] + (["b"] if with_bias else []), ["y"],
                            pads=[1, 1, 1, 1])
    bn = helper.make_node("BatchNormalization", ["y", "gamma", "beta", "mean", "var"], ["z"],
                          epsilon=1e-3)
    # without the conv first, a Relu feeds the norm: nothing to fold into
    first = conv if conv_first else helper.make_node("Relu", ["x"], ["y"])
    if not conv_first:
        inits = {k: v for k, v in inits.items() if k not in ("w", "b")}
    c_in = 3 if conv_first else c_out
    graph = helper.make_graph(
        [first, bn], "conv_bn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, c_in, 6, 6])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, c_out, 6, 6])],
        [numpy_helper.from_array(v.astype(np.float32), k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])
    path = str(folder / f"conv_bn_{with_bias}_{conv_first}.onnx")
    onnx.save(model, path)
    return path


@pytest.mark.parametrize("with_bias", [True, False])
@pytest.mark.parametrize("backend,fast", [("numpy", True), ("numpy", False), ("python", False)])
def test_conv_batchnorm_folds_and_matches_onnxruntime(tmp_path, with_bias, backend, fast):
    path = _conv_bn_file(tmp_path, with_bias)
    x = np.random.default_rng(4).normal(size=(2, 3, 6, 6)).astype(np.float32)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    want = session.run(None, {"x": x})[0]
    m = ember.onnx.load(path, backend=backend)
    m.fast = fast
    assert [n.op_type for n in m.graph.nodes] == ["Conv"]
    xt = ember.tensor(x, backend=backend)
    for _ in range(2):  # the compiled path traces, then replays
        got = m(xt).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("fast", [True, False])
def test_a_batchnorm_with_nothing_to_fold_into_matches_onnxruntime(tmp_path, fast):
    path = _conv_bn_file(tmp_path, False, conv_first=False)
    x = np.random.default_rng(5).normal(size=(2, 4, 6, 6)).astype(np.float32)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    want = session.run(None, {"x": x})[0]
    m = ember.onnx.load(path, backend="numpy")
    m.fast = fast
    assert [n.op_type for n in m.graph.nodes] == ["Relu", "BatchNormalization"]
    for _ in range(2):
        np.testing.assert_allclose(m(ember.tensor(x)).numpy(), want, rtol=1e-5, atol=1e-5)
