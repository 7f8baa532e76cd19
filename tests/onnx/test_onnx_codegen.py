"""``ember onnx convert``: the generated module parses, runs, and reproduces the model.

The official node cases that pass through ``ember.onnx.load`` are each converted, and the
generated module is checked against the cases' own expected outputs (computed by the ONNX
reference, not by ember). Every model the ONNX tests use converts, and its module matches the
runtime path. A small transformer exported from PyTorch checks that the code reads as
``F.linear`` / ``F.softmax`` / ``F.layer_norm`` and matches PyTorch.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import warnings

import pytest

np = pytest.importorskip("numpy")
onnx = pytest.importorskip("onnx")

import ember
import ember.onnx
import suite
from ember.onnx._types import numpy_to_tensor
from ember.onnx.codegen import ConvertMismatchError
from known_failures import KNOWN_FAILURES
from onnx import TensorProto, helper

PASSING = sorted(n for n in suite.cases() if n not in KNOWN_FAILURES["numpy"])


def _import(py: str, tag: str):
    spec = importlib.util.spec_from_file_location(f"gen_{tag}", py)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _tensor(v):
    if v is None:
        return None
    if isinstance(v, list):
        return [_tensor(x) for x in v]
    return numpy_to_tensor(np.asarray(suite._to_ember_input(v)), ember.get_backend("numpy"))


@pytest.mark.parametrize("name", PASSING)
def test_node_case_converts_and_matches_the_reference(name, tmp_path):
    case = suite.cases()[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            py, _ = ember.onnx.convert(case.model, tmp_path, check=False)
        except ember.UnsupportedOpError as e:  # refused by design (Scan-8, int16 wraps...)
            assert "convert does not write; ember.onnx.load runs it" in str(e)
            return
        m = _import(py, name).load()
        inits = {t.name for t in case.model.graph.initializer}
        names = [i.name for i in case.model.graph.input]
        for inputs, outputs in case.data_sets:
            got = m(*[_tensor(v) for n, v in zip(names, inputs) if n not in inits])
            got = got if isinstance(got, tuple) else (got,)
            assert len(got) == len(case.model.graph.output)
            for k, want in enumerate(outputs):
                suite._compare(str(k), got[k], want, case.rtol, case.atol)


def _model(nodes, inputs, outputs, inits=(), opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _vi(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def test_tensor_attribute_and_layer_norm_arity(tmp_path):
    # ConstantOfShape's value is a tensor attribute; LayerNormalization declares one output
    # of its three and the next node reads it
    shape = helper.make_tensor("shape", TensorProto.INT64, [2], [2, 4])
    scale = helper.make_tensor("scale", TensorProto.FLOAT, [4], [1.0, 2.0, 0.5, 1.0])
    nodes = [
        helper.make_node("ConstantOfShape", ["shape"], ["c"],
                         value=helper.make_tensor("v", TensorProto.FLOAT, [1], [0.25])),
        helper.make_node("Add", ["x", "c"], ["h"]),
        helper.make_node("LayerNormalization", ["h", "scale"], ["n"], epsilon=1e-3),
        helper.make_node("Relu", ["n"], ["y"]),
    ]
    model = _model(nodes, [_vi("x", [2, 4])], [_vi("y", [2, 4])], [shape, scale])
    py, _ = ember.onnx.convert(model, tmp_path)
    code = open(py).read()
    assert "array(" not in code and "F.layer_norm(" in code
    x = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)
    got = _import(py, "ln").load()(ember.from_numpy(x)).numpy()
    h = x + 0.25
    want = (h - h.mean(-1, keepdims=True)) / np.sqrt(h.var(-1, keepdims=True) + 1e-3)
    np.testing.assert_allclose(got, np.maximum(want * [1.0, 2.0, 0.5, 1.0], 0), rtol=1e-5,
                               atol=1e-6)


def _loop_model():
    """y = x * 2**n (a Loop of n steps) and the stacked partial products."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Add", ["acc_in", "acc_in"], ["acc_out"]),
         helper.make_node("Identity", ["acc_out"], ["scan_out"])],
        "body", [_vi("i", [], TensorProto.INT64), _vi("cond_in", [], TensorProto.BOOL),
                 _vi("acc_in", [3])],
        [_vi("cond_out", [], TensorProto.BOOL), _vi("acc_out", [3]), _vi("scan_out", [3])])
    node = helper.make_node("Loop", ["n", "", "x"], ["y", "steps"], body=body)
    return _model([node], [_vi("n", [], TensorProto.INT64), _vi("x", [3])],
                  [_vi("y", [3]), _vi("steps", [None, 3])])


def test_loop_becomes_a_while_loop(tmp_path):
    py, _ = ember.onnx.convert(_loop_model(), tmp_path)
    tree = ast.parse(open(py).read())
    assert any(isinstance(n, ast.While) for n in ast.walk(tree))
    m = _import(py, "loop").load()
    y, steps = m(ember.tensor(3), ember.tensor([1.0, 2.0, 3.0]))
    assert y.tolist() == [8.0, 16.0, 24.0]
    assert steps.tolist() == [[2.0, 4.0, 6.0], [4.0, 8.0, 12.0], [8.0, 16.0, 24.0]]


def test_scan_becomes_a_for_loop(tmp_path):
    case = suite.cases()["test_scan9_sum"]
    py, _ = ember.onnx.convert(case.model, tmp_path)
    assert any(isinstance(n, ast.For) for n in ast.walk(ast.parse(open(py).read())))


def test_static_shape_arithmetic_folds_to_literals(tmp_path):
    # the Shape -> Gather -> Unsqueeze -> Concat -> Reshape chain exporters write for a flatten
    inits = [helper.make_tensor("zero", TensorProto.INT64, [], [0]),
             helper.make_tensor("axes", TensorProto.INT64, [1], [0]),
             helper.make_tensor("minus1", TensorProto.INT64, [1], [-1]),
             helper.make_tensor("w", TensorProto.FLOAT, [12, 5], np.linspace(-1, 1, 60)),
             helper.make_tensor("b", TensorProto.FLOAT, [5], [0.1, 0.2, 0.3, 0.4, 0.5])]
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
             helper.make_node("Unsqueeze", ["n", "axes"], ["n1"]),
             helper.make_node("Concat", ["n1", "minus1"], ["target"], axis=0),
             helper.make_node("Reshape", ["x", "target"], ["flat"]),
             helper.make_node("MatMul", ["flat", "w"], ["mm"]),
             helper.make_node("Add", ["mm", "b"], ["y"])]
    model = _model(nodes, [_vi("x", [2, 3, 4])], [_vi("y", [2, 5])], inits)
    py, _ = ember.onnx.convert(model, tmp_path)
    code = open(py).read()
    assert "call(" not in code.split("def forward")[1], code
    assert ".reshape((2, -1))" in code and "F.linear(" in code
    x = np.random.default_rng(1).standard_normal((2, 3, 4)).astype(np.float32)
    want = x.reshape(2, -1) @ np.linspace(-1, 1, 60, dtype=np.float32).reshape(12, 5)
    got = _import(py, "static").load()(ember.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, want + [0.1, 0.2, 0.3, 0.4, 0.5], rtol=1e-5, atol=1e-6)


def test_names_are_short_and_unique(tmp_path):
    long = "/model/encoder/layer.0/attention/self/query/MatMul_output_0"
    nodes = [helper.make_node("Relu", ["x"], [long]),
             helper.make_node("Relu", [long], [long.replace("layer.0", "layer.1")]),
             helper.make_node("Relu", [long.replace("layer.0", "layer.1")], ["y"])]
    model = _model(nodes, [_vi("x", [2])], [_vi("y", [2])])
    py, _ = ember.onnx.convert(model, tmp_path)
    fwd = next(n for n in ast.walk(ast.parse(open(py).read()))
               if isinstance(n, ast.FunctionDef) and n.name == "forward")
    targets = [t.id for s in fwd.body if isinstance(s, ast.Assign) for t in s.targets]
    assert targets == ["query_matmul", "query_matmul_1", "y"]


def test_convert_fails_loudly_when_the_module_differs(tmp_path, monkeypatch, capsys):
    from ember.onnx import codegen
    from ember.onnx.cli import main

    real = codegen.spell

    def wrong(node, ins, consts, *rest):  # a deliberately broken spelling of Relu
        if node.op_type == "Relu":
            return ast.parse("ember.neg(x)", mode="eval").body
        return real(node, ins, consts, *rest)

    monkeypatch.setattr(codegen, "spell", wrong)
    model = _model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x", [2, 3])],
                   [_vi("y", [2, 3])])
    with pytest.raises(ConvertMismatchError, match="differs"):
        ember.onnx.convert(model, tmp_path / "a")
    src = tmp_path / "m.onnx"
    src.write_bytes(model.SerializeToString())
    assert main(["onnx", "convert", str(src), "-o", str(tmp_path / "b")]) == 1
    assert "ConvertMismatchError" in capsys.readouterr().err


def test_cli_shape_option_fixes_dynamic_dims(tmp_path, capsys):
    from ember.onnx.cli import main

    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Reshape", ["x", "s"], ["y"])]
    model = _model(nodes, [_vi("x", ["batch", 4])], [_vi("y", ["batch", 4])])
    src = tmp_path / "m.onnx"
    src.write_bytes(model.SerializeToString())
    assert main(["onnx", "convert", str(src), "-o", str(tmp_path / "o"), "--shape",
                 "x=3,4"]) == 0
    assert "checked" in capsys.readouterr().out
    assert "call('Shape'" not in (tmp_path / "o" / "model.py").read_text()


def test_small_transformer_reads_as_ember_nn_and_matches_torch(tmp_path):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64,
                                             batch_first=True, activation="gelu")
    model = torch.nn.Sequential(torch.nn.Embedding(50, 32), torch.nn.TransformerEncoder(
        layer, 2, enable_nested_tensor=False)).eval()
    ids = torch.randint(0, 50, (1, 8))
    path = tmp_path / "tfm.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (ids,), str(path), input_names=["input_ids"],
                          output_names=["hidden"], opset_version=17, dynamo=False)
    py, _ = ember.onnx.convert(path, tmp_path / "out")
    code = open(py).read()
    for spelled in ("F.linear(", "F.softmax(", "F.layer_norm(", "F.gelu("):
        assert spelled in code
    assert "call('Shape'" not in code and "model_model" not in code
    got = _import(py, "tfm").load()(ember.from_numpy(ids.numpy())).numpy()
    with torch.no_grad():
        want = model(ids).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def _test_models() -> dict[str, str]:
    from model_dirs import model_dirs
    from real_models import light_models, rapidocr_models

    out = {os.path.basename(d): os.path.join(d, "model.onnx") for d in model_dirs()}
    return {**out, **light_models(), **rapidocr_models()}


MODELS = _test_models()


@pytest.mark.parametrize("name", sorted(MODELS))
def test_every_test_model_converts_and_matches_the_runtime(name, tmp_path):
    """convert() itself runs the written module next to ember.onnx.load on the declared input
    shapes and raises ConvertMismatchError on a difference; here no check may be skipped."""
    try:
        ember.onnx.load(MODELS[name])
    except ember.onnx.OnnxUnsupportedError as e:
        pytest.skip(f"ember.onnx.load refuses it too: {e}")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "not checked" is a failure here
        ember.onnx.convert(MODELS[name], tmp_path)
