"""``ember onnx convert`` writes each op with an ember spelling as ember code.

Every case is one ONNX node: the generated line must read as a user would write it
(``x[..., 1:]``, ``x.float()``, ``F.max_pool2d``...), with no ``call(``, and the module must
give onnxruntime's outputs. Ops with no spelling keep ``call(...)`` with a comment naming the
ONNX op. On the benchmark CNN and a transformer from PyTorch, ``call(`` stays under 10 % of
the forward's lines.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
import warnings

import pytest

np = pytest.importorskip("numpy")
onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import ember
import ember.onnx
from onnx import TensorProto, helper, numpy_helper

F32, I64 = TensorProto.FLOAT, TensorProto.INT64
BIG = 2**63 - 1
RNG = np.random.default_rng(0)


def _import(py, tag: str):
    spec = importlib.util.spec_from_file_location(f"spell_{tag}", py)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _forward(py) -> list[str]:
    """The lines of every forward in the file (the model's, a repeated block's)."""
    lines = []
    for part in open(py).read().split("def forward")[1:]:
        body = re.split(r"\n(?:class |def |    def )", part)[0]
        lines += [line.strip() for line in body.splitlines()[1:] if line.strip()]
    return lines


def _i64(name, values):
    return numpy_helper.from_array(np.asarray(values, np.int64), name)


def _f32(name, values):
    return numpy_helper.from_array(np.asarray(values, np.float32), name)


def _case(op, inputs, attrs=None, inits=(), out_elem=F32, opset=17, order=None, dims=None):
    """A one-node model: ``inputs`` maps graph input names to arrays; ``inits`` are
    initializers the node also reads (after the graph inputs, unless ``order`` names them
    all); ``dims`` declares the inputs' dims (default: the arrays' shapes)."""
    names = order or list(inputs) + [t.name for t in inits]
    elem = {np.dtype("float32"): F32, np.dtype("int64"): I64, np.dtype("int8"): TensorProto.INT8}
    node = helper.make_node(op, names, ["y"], **(attrs or {}))
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(k, elem[v.dtype], (dims or {}).get(
            k, v.shape)) for k, v in inputs.items()],
        [helper.make_tensor_value_info("y", out_elem, None)], list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]), inputs


def _x(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


CASES = {
    "slice_last_dim": (_case("Slice", {"x": _x(2, 3, 5)}, inits=[
        _i64("s", [1]), _i64("e", [BIG]), _i64("a", [-1])]), "x[..., 1:]"),
    "slice_step": (_case("Slice", {"x": _x(2, 6)}, inits=[
        _i64("s", [0]), _i64("e", [BIG]), _i64("a", [1]), _i64("st", [2])]), "x[:, ::2]"),
    "slice_reversed": (_case("Slice", {"x": _x(4, 2)}, inits=[
        _i64("s", [-1]), _i64("e", [-BIG]), _i64("a", [0]), _i64("st", [-1])]), "x[::-1]"),
    "slice_two_axes": (_case("Slice", {"x": _x(4, 3, 5)}, inits=[
        _i64("s", [1, 0]), _i64("e", [3, -1]), _i64("a", [0, 2])]), "x[1:3, :, :-1]"),
    "cast_float_to_int": (_case("Cast", {"x": np.array([-1.7, 2.5, -0.2, 3.9], np.float32)},
                                {"to": I64}, out_elem=I64), "ember.trunc(x).long()"),
    "cast_int_to_float": (_case("Cast", {"x": np.array([-3, 0, 7], np.int64)}, {"to": F32}),
                          "x.float()"),
    "max_pool": (_case("MaxPool", {"x": _x(1, 2, 7, 7)}, {
        "kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
        "F.max_pool2d(x, (3, 3), (2, 2), (1, 1), (1, 1))"),
    "max_pool_same": (_case("MaxPool", {"x": _x(1, 2, 8, 8)}, {
        "kernel_shape": [3, 3], "strides": [2, 2], "pads": [0, 0, 1, 1]}),
        "F.max_pool2d(F.pad(x, (0, 1, 0, 1), value=float('-inf')), (3, 3), (2, 2), 0"),
    "average_pool": (_case("AveragePool", {"x": _x(1, 2, 6, 6)}, {
        "kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),
        "F.avg_pool2d(x, (3, 3), (1, 1), (1, 1), count_include_pad=False)"),
    "pad_value": (_case("Pad", {"x": _x(1, 2, 3, 3)}, {"mode": "constant"}, inits=[
        _i64("p", [0, 0, 1, 2, 0, 0, 3, 4]), _f32("v", 0.5)]), "F.pad(x, (2, 4, 1, 3), value=0.5)"),
    "pad_reflect": (_case("Pad", {"x": _x(1, 1, 4, 4)}, {"mode": "reflect"}, inits=[
        _i64("p", [0, 0, 1, 1, 0, 0, 1, 1])]), "F.pad(x, (1, 1, 1, 1), mode='reflect')"),
    "relu6": (_case("Clip", {"x": _x(3, 4) * 8}, inits=[_f32("lo", 0.0), _f32("hi", 6.0)]),
              "F.relu6(x)"),
    "clamp": (_case("Clip", {"x": _x(3, 4) * 2}, inits=[_f32("lo", -1.0), _f32("hi", 0.5)]),
              "x.clamp(-1.0, 0.5)"),
    "global_average_pool": (_case("GlobalAveragePool", {"x": _x(2, 3, 4, 5)}),
                            "x.mean((2, 3), keepdim=True)"),
    "reduce_mean": (_case("ReduceMean", {"x": _x(2, 3, 4)}, {"axes": [-1], "keepdims": 0}),
                    "x.mean(-1, keepdim=False)"),
    "embedding": (_case("Gather", {"ids": np.array([[0, 3], [-1, 2]], np.int64)},
                        inits=[_f32("table", _x(4, 3))], order=["table", "ids"]),
                  "self.table[ids]"),
    "equal_number": (_case("Equal", {"x": np.array([1, 2, 3, 2], np.int64)},
                           inits=[_i64("two", 2)], out_elem=TensorProto.BOOL), "x == 2"),
    "hard_sigmoid": (_case("HardSigmoid", {"x": _x(3, 4) * 4}, {"alpha": 0.2}),
                     "(x * 0.2 + 0.5).clamp(0.0, 1.0)"),
    "softmax_opset11": (_case("Softmax", {"x": _x(2, 5)}, {"axis": 1}, opset=11),
                        "F.softmax(x, dim=1)"),
    "softmax_opset11_flattened": (_case("Softmax", {"x": _x(2, 3, 4)}, {"axis": 1}, opset=11),
                                  "F.softmax(x.flatten(1), dim=-1).reshape(x.shape)"),
    "reshape_copy_dim": (_case("Reshape", {"x": _x(2, 3, 4)}, inits=[_i64("s", [0, -1])]),
                         "x.reshape((x.shape[0], -1))"),
    "shape": (_case("Shape", {"x": _x(2, 3, 4)}, {"start": 1}, out_elem=I64,
                    dims={"x": ["n", 3, "t"]}),
              "ember.tensor(x.shape[1:], dtype=ember.int64)"),
    "resize_nearest": (_case("Resize", {"x": _x(1, 2, 3, 4)}, {
        "mode": "nearest", "coordinate_transformation_mode": "asymmetric",
        "nearest_mode": "floor"}, inits=[_f32("roi", []), _f32("scales", [1, 1, 2, 2])]),
        "F.interpolate(x, scale_factor=(2.0, 2.0), mode='nearest')"),
    "resize_bilinear": (_case("Resize", {"x": _x(1, 2, 3, 4)}, {"mode": "linear"}, inits=[
        _f32("roi", []), _f32("scales", [1, 1, 2, 2])]),
        "F.interpolate(x, scale_factor=(2.0, 2.0), mode='bilinear', align_corners=False)"),
    "dequantize": (_case("DequantizeLinear", {"q": np.array([-128, -3, 0, 7, 127], np.int8)},
                         inits=[_f32("scale", np.float32(0.05)), numpy_helper.from_array(
                             np.int8(3), "zp")]), "(q.float() - 3) * 0.05"),
    "sum": (_case("Sum", {"a": _x(2, 3), "b": _x(3), "c": _x(2, 3)}), "a + b + c"),
    "conv_transpose": (_case("ConvTranspose", {"x": _x(1, 2, 4, 4)}, {
        "strides": [2, 2], "pads": [1, 1, 1, 1], "output_padding": [1, 1]},
        inits=[_f32("w", _x(2, 3, 3, 3)), _f32("b", _x(3))]),
        "F.conv_transpose2d(x, self.convtranspose_weight, self.convtranspose_bias, "
        "stride=(2, 2), padding=(1, 1), output_padding=(1, 1), groups=1, dilation=(1, 1))"),
}


def _where_case():
    """Where(c, x, y) with c a graph input: reads the inputs in ONNX's order."""
    node = helper.make_node("Where", ["c", "x", "y"], ["out"])
    graph = helper.make_graph([node], "g", [
        helper.make_tensor_value_info("c", TensorProto.BOOL, [3]),
        helper.make_tensor_value_info("x", F32, [3]), helper.make_tensor_value_info(
            "y", F32, [3])], [helper.make_tensor_value_info("out", F32, [3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return (model, {"c": np.array([True, False, True]), "x": _x(3), "y": _x(3)}), \
        "ember.where(c, x, y)"


CASES["where"] = _where_case()


def _run_both(model, feeds, tmp_path, tag):
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)
    py, _ = ember.onnx.convert(path, tmp_path / "out")
    m = _import(py, tag).load()
    got = m(*[ember.tensor(v) for v in feeds.values()])
    return py, m, got, want[0]


@pytest.mark.parametrize("name", sorted(CASES))
def test_op_reads_as_ember_and_matches_onnxruntime(name, tmp_path):
    (model, feeds), spelled = CASES[name]
    py, _, got, want = _run_both(model, feeds, tmp_path, name)
    lines = _forward(py)
    assert not any("call(" in line for line in lines), lines
    assert any(spelled in line for line in lines), (spelled, lines)
    assert got.numpy().dtype == want.dtype
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)


def test_dropout_is_off_in_eval_and_on_after_train(tmp_path):
    (model, feeds) = _case("Dropout", {"x": np.ones((64, 64), np.float32)},
                           inits=[_f32("ratio", 0.5)])
    model.graph.node[0].output.append("mask")  # declared, read by nothing: not asked for
    py, m, got, want = _run_both(model, feeds, tmp_path, "dropout")
    assert "F.dropout(x, 0.5, self.training)" in _forward(py)[0]
    np.testing.assert_array_equal(got.numpy(), want)  # load() gives the eval-mode module
    trained = m.train()(ember.tensor(feeds["x"])).numpy()
    assert 0.3 < (trained == 0).mean() < 0.7 and set(np.unique(trained)) == {0.0, 2.0}


def test_a_constant_too_large_to_fold_is_ember_full(tmp_path):
    # the "light" model zoo files hold their weights so; here the fold limit is lowered
    (model, feeds) = _case("Add", {"x": _x(2, 3)}, inits=[_f32("w", 0.0)])
    model.graph.node.insert(0, helper.make_node("ConstantOfShape", ["shape"], ["w"], value=(
        numpy_helper.from_array(np.array([0.02], np.float32)))))
    model.graph.initializer[0].CopyFrom(_i64("shape", [2, 3]))
    with ember.limits.override(max_folded_elements=4):
        py, _, got, want = _run_both(model, feeds, tmp_path, "full")
    assert "v_w = ember.full((2, 3), 0.02, dtype=ember.float32)" in _forward(py)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)


@pytest.mark.parametrize("dims, message", [
    ([100, 100], r"the bytes of its constant of shape \[100, 100\]: 40000 exceeds the "
                 r"limit max_tensor_bytes=1000 \(ember.limits.override"),
    ([10**10, 10**10], r"a dim of the shape: 10000000000 exceeds the limit max_tensor_bytes"),
    ([0, 10**17], r"a dim of the shape: 100000000000000000 exceeds the limit max_tensor_bytes"),
    ([2, -3], r"shape \[2, -3\] has a negative dim"),
])
def test_a_constant_past_the_limits_is_refused_naming_the_limit(tmp_path, dims, message):
    """A ConstantOfShape too large to fold and past ``max_tensor_bytes`` (or with a negative
    dim) is a ShapeError at convert time; it was written as ``ember.full(...)``, which raised
    numpy's untyped ValueError (or ran for minutes) when the module ran."""
    (model, _) = _case("Add", {"x": _x(2, 3)}, inits=[_f32("w", 0.0)])
    model.graph.node.insert(0, helper.make_node("ConstantOfShape", ["shape"], ["w"], value=(
        numpy_helper.from_array(np.array([0.02], np.float32)))))
    model.graph.initializer[0].CopyFrom(_i64("shape", dims))
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    with ember.limits.override(max_folded_elements=4, max_tensor_bytes=1000), \
            pytest.raises(ember.errors.ShapeError, match=r"onnx convert: node '.*' "
                          r"\(ConstantOfShape\): .*" + message):
        ember.onnx.convert(path, tmp_path / "out", check=False)


def test_an_op_without_spelling_keeps_call_with_a_comment(tmp_path):
    (model, feeds) = _case("LRN", {"x": _x(1, 4, 3, 3)}, {"size": 3})
    py, _, got, want = _run_both(model, feeds, tmp_path, "lrn")
    line, = [ln for ln in _forward(py) if "call(" in ln]
    assert line.endswith("# ONNX LRN: no ember spelling")
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)


def _share(py) -> float:
    lines = _forward(py)
    return sum("call(" in line for line in lines) / len(lines)


def test_call_share_on_the_benchmark_cnn_and_a_transformer(tmp_path):
    torch = pytest.importorskip("torch")
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
    import onnx_models

    cnn = tmp_path / "cnn.onnx"
    onnx_models._same_pool_cnn(str(cnn))
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, activation="gelu",
                                             batch_first=True)
    model = torch.nn.Sequential(torch.nn.Embedding(50, 32), torch.nn.TransformerEncoder(
        layer, 2, enable_nested_tensor=False)).eval()
    tfm = tmp_path / "tfm.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (torch.randint(0, 50, (1, 8)),), str(tfm),
                          input_names=["input_ids"], output_names=["hidden"],
                          opset_version=17, dynamo=False)
    for path in (cnn, tfm):
        py, _ = ember.onnx.convert(path, tmp_path / path.stem)
        assert _share(py) <= 0.10, open(py).read()
