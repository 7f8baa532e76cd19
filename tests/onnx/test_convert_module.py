"""``ember onnx convert`` writes a module a user can train and trust.

- Float weights are ``nn.Parameter``s (BatchNorm statistics are buffers), and one Autodiff
  step gives the gradients PyTorch computes for the same graph.
- Initializers named after ``nn.Module`` members never hide the methods.
- The built-in check always runs: a check that cannot run, or ``--shape`` that contradicts
  the graph, is a non-zero exit with the reason.
"""

from __future__ import annotations

import ast
import importlib.util
import warnings

import pytest

np = pytest.importorskip("numpy")
onnx = pytest.importorskip("onnx")

import ember
import ember.onnx
from ember import nn
from ember.onnx.cli import main
from onnx import TensorProto, helper, numpy_helper


def _import(py, tag: str):
    spec = importlib.util.spec_from_file_location(f"conv_{tag}", py)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _model(nodes, inputs, outputs, inits=(), opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _vi(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def _init(name, a):
    return numpy_helper.from_array(np.asarray(a), name)


def _torch_cnn(path):
    """A small CNN from PyTorch; the exporter folds each BatchNorm into its Conv, so the
    folded weights are named onnx::Conv_<n>."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)

    class Stem(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
            self.bn = torch.nn.BatchNorm2d(4)

        def forward(self, x):
            return torch.relu(self.bn(self.conv(x)))

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = Stem()
            self.head = torch.nn.Linear(4 * 6 * 6, 5)

        def forward(self, x):
            return self.head(torch.flatten(self.stem(x), 1))

    net = Net().eval()
    with torch.no_grad():
        net.stem.bn.running_mean.uniform_(-0.5, 0.5)
        net.stem.bn.running_var.uniform_(0.5, 2.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation notice
        torch.onnx.export(net, (torch.zeros(2, 3, 6, 6),), str(path), input_names=["x"],
                          output_names=["y"], opset_version=17, dynamo=False)
    return torch


def test_weights_are_parameters_and_one_step_matches_torch_gradients(tmp_path):
    torch = _torch_cnn(tmp_path / "cnn.onnx")
    py, _ = ember.onnx.convert(tmp_path / "cnn.onnx", tmp_path / "out")
    code = open(py).read()
    assert "register_buffer" not in code  # every weight of this graph is trained
    mod = _import(py, "cnn")
    names = dict(mod.load().named_parameters())
    # folded layers are named after the layer that reads them, not onnx::Conv_<n>
    assert sorted(names) == ["head_bias", "head_weight", "stem_conv_bias", "stem_conv_weight"]

    # reference: PyTorch on the ONNX file's own weights (the folded graph)
    proto = onnx.load(str(tmp_path / "cnn.onnx"))
    w = {i.name: torch.tensor(numpy_helper.to_array(i).copy(), requires_grad=True)
         for i in proto.graph.initializer}
    conv_w, conv_b = (w[n] for n in proto.graph.node[0].input[1:3])
    gemm = next(n for n in proto.graph.node if n.op_type == "Gemm")
    head_w, head_b = w[gemm.input[1]], w[gemm.input[2]]
    x = np.random.default_rng(0).standard_normal((2, 3, 6, 6)).astype(np.float32)
    h = torch.relu(torch.nn.functional.conv2d(torch.from_numpy(x), conv_w, conv_b, padding=1))
    y = torch.flatten(h, 1) @ head_w.T + head_b
    (y * y).mean().backward()

    with ember.use_backend("autodiff-numpy"):
        model = mod.load(backend="autodiff-numpy")
        out = model(ember.tensor(x))
        grads = (out * out).mean().backward()
    got = dict(model.named_parameters())
    for name, ref in [("stem_conv_weight", conv_w), ("stem_conv_bias", conv_b),
                      ("head_weight", head_w),  # Gemm with transB: F.linear's layout
                      ("head_bias", head_b)]:
        np.testing.assert_allclose(grads.get(got[name]).numpy(), ref.grad.numpy(), rtol=1e-4,
                                   atol=1e-6, err_msg=name)
    before = got["head_bias"].numpy().copy()
    ember.optim.SGD(model.parameters(), lr=0.1).step(grads)
    np.testing.assert_allclose(got["head_bias"].numpy(), before - 0.1 * head_b.grad.numpy(),
                               rtol=1e-5, atol=1e-7)


def test_batchnorm_statistics_are_buffers(tmp_path):
    rng = np.random.default_rng(0)
    inits = [_init("bn.weight", rng.uniform(0.5, 1.5, 3).astype(np.float32)),
             _init("bn.bias", rng.standard_normal(3).astype(np.float32)),
             _init("bn.running_mean", rng.standard_normal(3).astype(np.float32)),
             _init("bn.running_var", rng.uniform(0.5, 2, 3).astype(np.float32))]
    node = helper.make_node("BatchNormalization", ["x", "bn.weight", "bn.bias",
                                                   "bn.running_mean", "bn.running_var"], ["y"])
    model = _model([node], [_vi("x", [1, 3, 4, 4])], [_vi("y", [1, 3, 4, 4])], inits)
    py, _ = ember.onnx.convert(model, tmp_path)
    m = _import(py, "bn").load()
    assert sorted(n for n, _ in m.named_parameters()) == ["bn_bias", "bn_weight"]
    assert sorted(n for n, _ in m.named_buffers()) == ["bn_running_mean", "bn_running_var"]


def test_initializers_named_like_module_methods_keep_the_methods(tmp_path):
    """Initializers named train, to, state_dict, parameters, eval and forward: the module's
    methods still work, and the outputs match numpy."""
    rng = np.random.default_rng(1)
    vals = {k: rng.standard_normal(s).astype(np.float32) for k, s in [
        ("train", (4, 3)), ("to", (3,)), ("state_dict", (3,)), ("parameters", (3,)),
        ("eval", (3,)), ("forward", (3,))]}
    nodes = [helper.make_node("MatMul", ["x", "train"], ["a"]),
             helper.make_node("Add", ["a", "to"], ["b"]),
             helper.make_node("Mul", ["b", "state_dict"], ["c"]),
             helper.make_node("Sub", ["c", "parameters"], ["d"]),
             helper.make_node("Div", ["d", "eval"], ["e"]),
             helper.make_node("Add", ["e", "forward"], ["y"])]
    model = _model(nodes, [_vi("x", [2, 4])], [_vi("y", [2, 3])],
                   [_init(k, v) for k, v in vals.items()])
    py, _ = ember.onnx.convert(model, tmp_path)
    m = _import(py, "shadow").load()
    assert m.eval() is m and m.train() is m and m.training
    assert m.to("numpy") is m
    state = m.state_dict()
    assert len(state) == 6 and len(list(m.parameters())) == 6
    for value in state.values():
        assert isinstance(value, ember.Tensor)
    m.load_state_dict({k: v * 2 for k, v in state.items()})
    m.load_state_dict(state)
    x = rng.standard_normal((2, 4)).astype(np.float32)
    v = {k: a.astype(np.float64) for k, a in vals.items()}
    want = ((x @ v["train"] + v["to"]) * v["state_dict"] - v["parameters"]) / v["eval"] + v[
        "forward"]
    np.testing.assert_allclose(m(ember.tensor(x)).numpy(), want, rtol=1e-5, atol=1e-6)
    members = {n for n in dir(nn.Module)}
    for name, _ in m.named_parameters():
        assert name not in members and name.isidentifier()


def test_a_check_that_cannot_run_fails_with_the_reason(tmp_path, capsys):
    # the input has no declared shape: nothing to feed the check with until --shape gives one
    model = _model([helper.make_node("Relu", ["x"], ["y"])],
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
                   [_vi("y", None)])
    with pytest.raises(ember.onnx.ConvertCheckError, match="'x' has no declared shape"):
        ember.onnx.convert(model, tmp_path / "a")
    src = tmp_path / "m.onnx"
    src.write_bytes(model.SerializeToString())
    assert main(["onnx", "convert", str(src), "-o", str(tmp_path / "b")]) == 1
    err = capsys.readouterr().err
    assert "ConvertCheckError" in err and "--shape x=" in err
    assert main(["onnx", "convert", str(src), "-o", str(tmp_path / "c"), "--shape",
                 "x=2,3"]) == 0
    assert "checked: the generated module matches" in capsys.readouterr().out


def test_a_runtime_that_fails_on_the_check_inputs_fails_convert(tmp_path):
    # Gather into 2 rows with indices drawn from 0..2: the runtime path refuses index 2
    model = _model([helper.make_node("Gather", ["table", "i"], ["y"])],
                   [_vi("i", [64], TensorProto.INT64)], [_vi("y", [64, 2])],
                   [_init("table", np.ones((2, 2), np.float32))])
    with pytest.raises(ember.onnx.ConvertCheckError,
                       match=r"cannot check.*fails on random inputs.*shapes \(64,\)"):
        ember.onnx.convert(model, tmp_path)


@pytest.mark.parametrize("shape, why", [
    ("x=1,3", "has 2 dims; the graph declares x with 3: ('batch', 3, 8)"),
    ("x=1,4,8", "dim 1 is fixed to 3 in the graph"),
    ("x=0,3,8", "every dim must be at least 1"),
    ("nope=1,3,8", "no graph input named 'nope'"),
])
def test_shape_option_is_checked_against_the_graph(tmp_path, capsys, shape, why):
    model = _model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x", ["batch", 3, 8])],
                   [_vi("y", ["batch", 3, 8])])
    src = tmp_path / "m.onnx"
    src.write_bytes(model.SerializeToString())
    assert main(["onnx", "convert", str(src), "-o", str(tmp_path / "o"), "--shape", shape]) == 1
    assert why in capsys.readouterr().err


def test_repeated_layers_read_as_a_loop_over_a_block(tmp_path):
    """A 3-layer encoder from PyTorch: one Block class, a ModuleList of 3, a for loop; each
    layer's weights are its own parameters (layers.<i>.<name>) and the output is PyTorch's."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
    model = torch.nn.Sequential(torch.nn.Embedding(20, 16), torch.nn.TransformerEncoder(
        layer, 3, enable_nested_tensor=False)).eval()
    with torch.no_grad():  # TransformerEncoder copies one layer: make each layer its own
        for p in model[1].parameters():
            p.add_(torch.randn_like(p) * 0.1)
    ids = torch.randint(0, 20, (1, 6))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (ids,), str(tmp_path / "enc.onnx"), input_names=["ids"],
                          output_names=["hidden"], opset_version=17, dynamo=False)
    py, _ = ember.onnx.convert(tmp_path / "enc.onnx", tmp_path / "out")
    tree = ast.parse(open(py).read())
    classes = [n.name for n in tree.body if isinstance(n, ast.ClassDef)]
    assert classes == ["Block", "Model"]
    loops = [n for n in ast.walk(tree) if isinstance(n, ast.For)]
    assert len(loops) == 1 and ast.unparse(loops[0].iter) == "self.layers"
    m = _import(py, "enc").load()
    names = [k for k, _ in m.named_parameters()]
    for i in range(3):
        assert f"layers.{i}.linear1_weight" in names and f"layers.{i}.linear2_bias" in names
    with torch.no_grad():
        want = model(ids).numpy()
    got = m(ember.tensor(ids.numpy())).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    state = m.state_dict()
    m.load_state_dict(state)
    with ember.use_backend("autodiff-numpy"):
        tuned = _import(py, "enc_tuned").load()
        out = tuned(ember.tensor(ids.numpy()))
        grads = (out * out).mean().backward()
    assert all(grads.get(p) is not None for p in tuned.layers[2].parameters())
