"""``OnnxModule.to(backend)`` places the graph's constants as ``ember.onnx.load(backend=)``
does: an int64 the backend can't store (an exporter's ``Slice(ends=INT64_MAX)``) stays on the
host, and the constants stay frozen so ``ember.jit`` can read shapes and axes from them (found
by tests/matrix: torch-exported EfficientNet-Lite0 failed on wgpu after ``.to``)."""

from __future__ import annotations

import pytest

np = pytest.importorskip("numpy")
onnx = pytest.importorskip("onnx")

import ember
import ember.jit
import ember.onnx
from onnx import TensorProto, helper, numpy_helper

INT64_MAX = np.iinfo(np.int64).max


def _slice_model(path):
    """y = relu(x[:, 1:INT64_MAX]).reshape(shape): a sentinel and a shape as constants."""
    inits = [numpy_helper.from_array(np.array([1], np.int64), "starts"),
             numpy_helper.from_array(np.array([INT64_MAX], np.int64), "ends"),
             numpy_helper.from_array(np.array([1], np.int64), "axes"),
             numpy_helper.from_array(np.array([-1, 3], np.int64), "shape")]
    nodes = [helper.make_node("Slice", ["x", "starts", "ends", "axes"], ["s"]),
             helper.make_node("Relu", ["s"], ["r"]),
             helper.make_node("Reshape", ["r", "shape"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [2, 7])], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, None)], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def _backend(name):
    try:
        inner = ember.get_backend(name.removeprefix("fusion-"))
    except (ImportError, ember.EmberError) as e:
        pytest.skip(f"{name}: {e}")
    return ember.Fusion(inner) if name.startswith("fusion-") else inner


@pytest.mark.parametrize("name", ["wgpu", "fusion-wgpu", "fusion-wasm"])
def test_moved_module_keeps_host_constants_and_jits(tmp_path, name):
    path = str(tmp_path / "slice.onnx")
    _slice_model(path)
    backend = _backend(name)
    module = ember.onnx.load(path).to(backend)
    x = np.random.default_rng(0).standard_normal((2, 7)).astype(np.float32)
    want = np.maximum(x[:, 1:], 0).reshape(-1, 3)
    fn = ember.jit(module.__call__)
    for _ in range(2):  # trace, then replay
        got = fn(ember.tensor(x, backend=backend)).numpy()
        np.testing.assert_allclose(got, want, rtol=0, atol=0)
