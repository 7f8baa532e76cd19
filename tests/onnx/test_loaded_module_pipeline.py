"""A loaded ONNX module goes through the same traced program as any module: ember.jit replays
it and ember.onnx.export writes it back, after any number of calls of its own compiled path
(inside a trace the module runs node by node: the trace records the registry ops). The
reference is onnxruntime on the original file."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.onnx

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def cnn_file(tmp_path_factory):
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv, self.bn = torch.nn.Conv2d(1, 4, 3, padding=1), torch.nn.BatchNorm2d(4)
            self.fc = torch.nn.Linear(4 * 4 * 4, 5)

        def forward(self, x):
            y = torch.nn.functional.max_pool2d(torch.relu(self.bn(self.conv(x))), 2)
            return self.fc(y.flatten(1))

    torch.manual_seed(0)
    path = str(tmp_path_factory.mktemp("cnn") / "cnn.onnx")
    torch.onnx.export(Net().eval(), (torch.randn(1, 1, 8, 8),), path, opset_version=17,
                      dynamo=False)
    return path


def _reference(path, x):
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: x})[0]


def _input(seed):
    return np.random.default_rng(seed).standard_normal((1, 1, 8, 8)).astype(np.float32)


def test_jit_replays_a_loaded_module_on_every_call(cnn_file):
    module = ember.onnx.load(cnn_file)
    step = ember.jit(module)
    for seed in range(5):  # warm-up, trace, then replays
        x = _input(seed)
        np.testing.assert_allclose(step(ember.tensor(x)).numpy(), _reference(cnn_file, x),
                                   rtol=1e-5, atol=1e-6)
    assert step.stats()["replays"] == 3


def test_export_after_eager_calls_round_trips(cnn_file, tmp_path):
    module = ember.onnx.load(cnn_file)
    x = _input(0)
    for _ in range(2):
        module(ember.tensor(x))
    out = str(tmp_path / "again.onnx")
    ember.onnx.export(module, ember.tensor(x), out)
    for seed in (1, 2):
        x = _input(seed)
        np.testing.assert_allclose(_reference(out, x), _reference(cnn_file, x), rtol=1e-5,
                                   atol=1e-6)


def test_the_microcontroller_export_lowers_a_loaded_module(cnn_file):
    from ember.export import lower, run_reference

    program = lower(ember.onnx.load(cnn_file), (1, 8, 8))
    assert [layer.describe().split()[0] for layer in program.layers] == [
        "conv2d+relu", "maxpool", "linear"]
    x = _input(3)
    np.testing.assert_allclose(run_reference(program, x), _reference(cnn_file, x), rtol=1e-5,
                               atol=1e-6)


def test_jit_replays_a_pytorch_exported_transformer(tmp_path):
    """Shape arithmetic (Shape -> Gather -> Concat -> Reshape) and the graph's constants are
    read while tracing: the same values at every replay of the signature."""
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)
    net = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval()
    path = str(tmp_path / "encoder.onnx")
    torch.onnx.export(net, (torch.randn(1, 8, 32),), path, opset_version=17, dynamo=False)
    module = ember.onnx.load(path)
    step = ember.jit(module)
    for seed in range(4):
        x = np.random.default_rng(seed).standard_normal((1, 8, 32)).astype(np.float32)
        np.testing.assert_allclose(step(ember.tensor(x)).numpy(), _reference(path, x),
                                   rtol=1e-4, atol=1e-5)
    assert step.stats()["replays"] == 2


@pytest.mark.parametrize("backend", ["numpy", "wasm", "wgpu"])
def test_a_loaded_module_compiles_itself_on_a_compiling_backend(cnn_file, tmp_path, backend):
    """On numpy, wasm and wgpu (backends with a tape compiler) a loaded module traces on its
    first call and replays after: no ember.jit needed. A node whose output shape comes from data
    (NonZero, over more values than a guard holds) runs eagerly between compiled segments,
    saying why."""
    try:
        ember.get_backend(backend)
    except Exception as e:  # noqa: BLE001 - no wgpu adapter
        pytest.skip(f"{backend} unavailable: {e}")
    module = ember.onnx.load(cnn_file, backend=backend)
    for seed in range(3):
        x = _input(seed)
        got = module(ember.tensor(x, backend=backend)).numpy()
        np.testing.assert_allclose(got, _reference(cnn_file, x), rtol=1e-5, atol=1e-5)
    stats = module.jit_stats()
    assert (stats["traces"], stats["replays"]) == (1, 2) and module.jit_fallback is None

    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("NonZero", ["x"], ["i"]), helper.make_node("Transpose", ["i"], ["y"])],
        "nz", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [24])],
        [helper.make_tensor_value_info("y", TensorProto.INT64, None)])
    path = str(tmp_path / "nonzero.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    module = ember.onnx.load(path, backend=backend)
    for x in ([0, 1, 0, 2, 3, 0] * 4, [1, 0, 0, 0, 0, 5] * 4):
        x = np.array(x, dtype=np.float32)
        got = module(ember.tensor(x, backend=backend)).numpy()
        np.testing.assert_array_equal(got, _reference(path, x))
    assert module.jit_stats()["host_nodes"] == 1 and "(NonZero)" in module.jit_fallback
