"""Hostile and malformed ONNX models: ``ember onnx convert`` never turns file text into code,
and ``ember.onnx.load`` stays within ember.limits and fails only with OnnxLoadError.

Each reproducer is built here with the onnx helper API; ``python tests/onnx/test_onnx_security.py``
writes them as the serialized models in tests/fuzz/regressions/onnx_convert/ and onnx_load/.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path

import pytest

np = pytest.importorskip("numpy")
onnx = pytest.importorskip("onnx")

import ember
import ember.onnx
from ember.onnx import OnnxLoadError
from onnx import AttributeProto, TensorProto, helper

HAS_ORT = importlib.util.find_spec("onnxruntime") is not None
REGRESSIONS = Path(__file__).resolve().parents[1] / "fuzz" / "regressions"
SENTINEL = "PWNED"  # the payloads create this file in the working directory if they ever run
_TOUCH = f'__import__("pathlib").Path("{SENTINEL}").touch()'
# text that would run _TOUCH when pasted into a docstring, a string literal or an argument list
DOC = f'x"""\n    {_TOUCH}\n    """'
DOC_SINGLE = f"x'''\n    {_TOUCH}\n    '''"
QUOTE = f'x")\n{_TOUCH}\n#'
KWARG = f"y={_TOUCH}, z"
EXPR = f"{_TOUCH} or 1"


def _model(nodes, inputs, outputs, inits=(), functions=(), opsets=(("", 17),), **graph_kw):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits), **graph_kw)
    return helper.make_model(graph, functions=list(functions),
                             opset_imports=[helper.make_opsetid(d, v) for d, v in opsets])


def _vi(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def _attr(node, name: str, kind: int, value):
    """An INT or STRING attribute under any name (helper.make_node would infer the type)."""
    a = node.attribute.add()
    a.name, a.type = name, kind
    if kind == AttributeProto.INT:
        a.i = value
    else:
        a.s = value.encode()
    return node


# ---------------------------------------------------------------- ember onnx convert
def _chain(x="x", b="b", h="h", y="y", node_name="relu", extra=None, pad_mode=None,
           stray=False):
    """x + b -> Relu -> Flatten (or Pad) -> y: every name and attribute a parameter (and, if
    ``stray``, a Relu node with neither inputs nor outputs)."""
    last = helper.make_node("Flatten", ["r"], [y], axis=1)
    inits = [helper.make_tensor(b, TensorProto.FLOAT, [3], [0.5, -1.0, 2.0])]
    if pad_mode is not None:
        last = helper.make_node("Pad", ["r", "pads"], [y], mode=pad_mode)
        inits.append(helper.make_tensor("pads", TensorProto.INT64, [4], [0, 1, 0, 1]))
    for k, v in (extra or {}).items():
        _attr(last, k, AttributeProto.INT, v)
    nodes = [helper.make_node("Add", [x, b], [h]), helper.make_node("Relu", [h], ["r"],
                                                                     name=node_name), last]
    if stray:
        nodes.insert(0, helper.make_node("Relu", [], []))
    return _model(nodes, [_vi(x, [2, 3])], [_vi(y, None)], inits)


def _int_attr_as_string(op: str, attr: str):
    """An op whose INT attribute holds a STRING payload (the old generator pasted it as code)."""
    node = _attr(helper.make_node(op, ["x", "x"] if op == "Concat" else ["x"], ["y"]), attr,
                 AttributeProto.STRING, EXPR)
    if op == "Conv":
        node.input.append("w")
    w = helper.make_tensor("w", TensorProto.FLOAT, [2, 2, 1, 1], [1.0, 0.0, 0.0, 1.0])
    shape = [1, 2, 3, 3] if op == "Conv" else [2, 3]
    return _model([node], [_vi("x", shape)], [_vi("y", None)], [w] if op == "Conv" else [])


def _if_model(name: str):
    """An If whose branches name their values (and the If its output) ``name``."""
    then_g = helper.make_graph([helper.make_node("Relu", ["x"], [name])], "t", [],
                               [_vi(name, [2, 3])])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], [name + "2"])], DOC, [],
                               [_vi(name + "2", [2, 3])])
    nodes = [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
             helper.make_node("Greater", ["s", "zero"], ["c"]),
             helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g,
                              name=DOC)]
    zero = helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0])
    return _model(nodes, [_vi("x", [2, 3])], [_vi("y", None)], [zero])


def _loop_model(name: str):
    """A Loop of three steps whose body values are called ``name``."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], [name + "c"]),
         helper.make_node("Add", [name, name], [name + "o"])],
        "body", [_vi("i", [], TensorProto.INT64), _vi("c_in", [], TensorProto.BOOL),
                 _vi(name, [2, 3])],
        [_vi(name + "c", [], TensorProto.BOOL), _vi(name + "o", [2, 3])])
    n = helper.make_tensor("n", TensorProto.INT64, [], [3])
    node = helper.make_node("Loop", ["n", "", "x"], ["y"], body=body)
    return _model([node], [_vi("x", [2, 3])], [_vi("y", None)], [n])


CONVERT_CASES = {
    "if_branch_value_name_closes_string": _if_model(QUOTE),
    "if_branch_value_name_breaks_docstring": _if_model(DOC),
    "loop_body_value_name_closes_string": _loop_model(QUOTE),
    "loop_body_value_name_is_keyword_arguments": _loop_model(KWARG),
    "input_name_breaks_docstring": _chain(x=DOC),
    "input_name_breaks_single_quoted_docstring": _chain(x=DOC_SINGLE),
    "output_name_breaks_docstring": _chain(y=DOC),
    "output_name_closes_string": _chain(y=QUOTE),
    "node_name_breaks_docstring": _chain(node_name=DOC),
    "initializer_name_closes_string": _chain(b=QUOTE),
    "value_name_closes_string": _chain(h=QUOTE),
    "attribute_name_is_keyword_arguments": _chain(extra={KWARG: 1}),
    "attribute_name_not_identifier": _chain(extra={"a-b": 1, "class": 2}),
    "string_attribute_value_breaks_docstring": _chain(pad_mode=DOC),
    "concat_axis_is_a_string": _int_attr_as_string("Concat", "axis"),
    "softmax_axis_is_a_string": _int_attr_as_string("Softmax", "axis"),
    "conv_group_is_a_string": _int_attr_as_string("Conv", "group"),
    "node_without_inputs_or_outputs": _chain(stray=True),
}

# every call the generated module makes: its own helpers, ember, and methods on tensors
_CALLS = {"call", "stack_outputs", "load_file", "super", "float", "bool", "int", "range", "len",
          "isinstance", "Model", "Model().eval", "nn.Parameter", "os.path.join",
          "os.path.dirname", "os.path.abspath"}
_METHODS = (".permute", ".reshape", ".item", ".append", ".select", ".shape", ".squeeze",
            ".unsqueeze", ".clamp", ".float", ".double", ".half", ".int", ".long", ".bool",
            ".to", ".mean", ".sum", ".amax", ".amin", ".flatten", ".floor", ".ceil",
            ".reciprocal", ".sign", ".round", ".logical_not")
_CALL_PREFIXES = ("ember.", "F.", "self.", "super().")


def _callee(func) -> str:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return f"{_callee(func.value)}.{func.attr}"
    if isinstance(func, ast.Call):
        return f"{_callee(func.func)}()"
    return type(func).__name__


def _check_source(code: str) -> None:
    """Only the expected calls appear, and no docstring holds text from the file."""
    tree = ast.parse(code)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = _callee(node.func)
            assert name in _CALLS or name.startswith(_CALL_PREFIXES) or name.endswith(
                _METHODS), f"unexpected call {name} in the generated code"
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef)):
            assert "__import__(" not in (ast.get_docstring(node) or "")


def _inputs(model) -> dict:
    inits = {t.name for t in model.graph.initializer}
    out = {}
    for vi in model.graph.input:
        if vi.name not in inits:
            shape = [d.dim_value for d in vi.type.tensor_type.shape.dim]
            out[vi.name] = (np.arange(np.prod(shape), dtype=np.float32).reshape(shape) / 3 - 1)
    return out


def _reference(model, feeds):
    """onnxruntime's outputs, or None where it rejects the model (as it does most of these)."""
    if not HAS_ORT:
        return None
    import onnxruntime as ort

    try:
        sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        return sess.run(None, feeds)
    except Exception:  # noqa: BLE001 - onnxruntime refuses a malformed model: no reference
        return None


@pytest.mark.parametrize("case", sorted(CONVERT_CASES))
def test_convert_never_runs_file_text(case, tmp_path, monkeypatch):
    model = CONVERT_CASES[case]
    monkeypatch.chdir(tmp_path)
    feeds = _inputs(model)
    want = _reference(model, feeds)
    try:
        py, _ = ember.onnx.convert(model, tmp_path / "out")
    except ember.EmberError:
        assert want is None, "ember refused a model onnxruntime runs"
        assert not (tmp_path / SENTINEL).exists()
        return
    code = Path(py).read_text()
    _check_source(code)
    spec = importlib.util.spec_from_file_location(f"gen_{case}", py)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    try:
        got = mod.load()(*[ember.from_numpy(v) for v in feeds.values()])
    except ember.EmberError:
        got = None
    assert not (tmp_path / SENTINEL).exists(), "a payload from the ONNX file ran"
    if want is None:
        assert got is None, "ember ran a model onnxruntime rejects; expected a typed error"
    else:
        np.testing.assert_allclose(got.numpy(), want[0], rtol=1e-6)


def test_convert_source_file_name_is_not_code(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    src = tmp_path / f'm"""\n{_TOUCH}\n""".onnx'
    src.write_bytes(_chain().SerializeToString())
    py, _ = ember.onnx.convert(src, tmp_path / "out")
    _check_source(Path(py).read_text())
    spec = importlib.util.spec_from_file_location("gen_source_name", py)
    spec.loader.exec_module(importlib.util.module_from_spec(spec))
    assert not (tmp_path / SENTINEL).exists()


@pytest.mark.parametrize("name", ['Model(nn.Module):\n    pass\nimport os  #', "class", "os", ""])
def test_convert_refuses_a_class_name_that_is_not_an_identifier(name, tmp_path):
    with pytest.raises(ValueError, match="class name"):
        ember.onnx.convert(_chain(), tmp_path, class_name=name)


# ---------------------------------------------------------------- load-time folding bounds
def _sized_source(op: str, n: int):
    """A constant input of ``op`` that makes an n-element output."""
    one = helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0])
    consts = {
        "ConstantOfShape": ([helper.make_tensor("s", TensorProto.INT64, [1], [n])],
                            helper.make_node("ConstantOfShape", ["s"], ["big"],
                                             value=helper.make_tensor("v", 1, [1], [1.0]))),
        "Expand": ([one, helper.make_tensor("s", TensorProto.INT64, [1], [n])],
                   helper.make_node("Expand", ["one", "s"], ["big"])),
        "Tile": ([one, helper.make_tensor("s", TensorProto.INT64, [1], [n])],
                 helper.make_node("Tile", ["one", "s"], ["big"])),
        "Range": ([helper.make_tensor(k, TensorProto.FLOAT, [], [v])
                   for k, v in (("a", 0.0), ("z", float(n)), ("d", 1.0))],
                  helper.make_node("Range", ["a", "z", "d"], ["big"])),
    }
    inits, node = consts[op]
    nodes = [node, helper.make_node("ReduceSum", ["big"], ["s_"], keepdims=0),
             helper.make_node("Add", ["x", "s_"], ["y"])]
    return _model(nodes, [_vi("x", [])], [_vi("y", None)], inits)


FOLD_OPS = ["ConstantOfShape", "Expand", "Tile", "Range"]


@pytest.mark.parametrize("op", FOLD_OPS)
def test_huge_constant_is_not_folded_at_load(op):
    # 10**12 float32 values: folding would allocate 4 TB or loop for hours
    m = ember.onnx.load(_sized_source(op, 10**12))
    assert op in [n.op_type for n in m.graph.nodes]


@pytest.mark.parametrize("op", FOLD_OPS)
def test_folding_respects_max_folded_elements_and_still_computes(op):
    model = _sized_source(op, 50)
    x = np.array(0.25, np.float32)
    with ember.limits.override(max_folded_elements=49):
        m = ember.onnx.load(model)
    assert op in [n.op_type for n in m.graph.nodes]
    with ember.limits.override(max_folded_elements=50):
        folded = ember.onnx.load(model)
    assert op not in [n.op_type for n in folded.graph.nodes]
    want = sum(range(50)) if op == "Range" else 50  # 0 + 1 + ... + 49, or fifty ones
    for module in (m, folded):
        assert float(module(x).numpy()) == pytest.approx(want + 0.25)


# ---------------------------------------------------------------- malformed graphs
def _attribute_name_not_utf8() -> bytes:
    node = _attr(helper.make_node("Relu", ["x"], ["y"]), "zq", AttributeProto.INT, 1)
    raw = _model([node], [_vi("x", [2])], [_vi("y", [2])]).SerializeToString()
    return raw.replace(b"zq", b"\xff\xfe")  # protobuf hands such a name back as bytes


def _value_name_not_utf8() -> bytes:
    nodes = [helper.make_node("Relu", ["x"], ["qq"]), helper.make_node("Neg", ["qq"], ["y"])]
    raw = _model(nodes, [_vi("x", [2])], [_vi("y", [2])]).SerializeToString()
    return raw.replace(b"qq", b"\xc3\x28")  # an invalid two-byte sequence, in both places


def _if(then_outputs, then_nodes, outer_nodes=()):
    then_g = helper.make_graph(then_nodes, "then", [], [_vi(o, None) for o in then_outputs])
    node = helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=then_g)
    return _model([*outer_nodes, node], [_vi("c", [], TensorProto.BOOL), _vi("x", [2])],
                  [_vi("y", None)])


def _function(name, calls):
    nodes = [helper.make_node(c, ["a"], ["b"], domain="loc") for c in calls] or [
        helper.make_node("Neg", ["a"], ["b"])]
    return helper.make_function("loc", name, ["a"], ["b"], nodes,
                                [helper.make_opsetid("", 17), helper.make_opsetid("loc", 1)])


def _calling(*functions):
    return _model([helper.make_node(functions[0].name, ["x"], ["y"], domain="loc")],
                  [_vi("x", [2])], [_vi("y", [2])], functions=functions,
                  opsets=(("", 17), ("loc", 1)))


def _initializer(dims, raw: bytes, elem=TensorProto.FLOAT):
    t = onnx.TensorProto(name="w", data_type=elem, dims=dims, raw_data=raw)
    return _model([helper.make_node("Identity", ["w"], ["y"])], [], [_vi("y", None)], [t])


def _sparse_initializer(dims, index=0):
    values = helper.make_tensor("w", TensorProto.FLOAT, [1], [1.0])
    indices = helper.make_tensor("i", TensorProto.INT64, [1], [index])
    sparse = helper.make_sparse_tensor(values, indices, dims)
    return _model([helper.make_node("Identity", ["w"], ["y"])], [], [_vi("y", None)],
                  sparse_initializer=[sparse])


def _string_initializer():
    t = helper.make_tensor("w", TensorProto.STRING, [1], [b"text"])
    return _model([helper.make_node("Identity", ["w"], ["y"])], [], [_vi("y", None)], [t])


LOAD_CASES = {  # name -> (model or bytes, what the OnnxLoadError says)
    "constant_of_shape_1e12_then_reduce_sum": (_sized_source("ConstantOfShape", 10**12), None),
    "range_1e12_then_reduce_sum": (_sized_source("Range", 10**12), None),
    "attribute_name_not_utf8": (_attribute_name_not_utf8(), "not UTF-8"),
    "value_name_not_utf8": (_value_name_not_utf8(), "not UTF-8"),
    "if_branch_output_never_computed": (
        _if(["nope"], [helper.make_node("Identity", ["x"], ["o"])]), r"\['nope'\] are never"),
    "if_branch_reads_undefined_outer_value": (
        _if(["o"], [helper.make_node("Identity", ["later"], ["o"])]), r"reads \['later'\]"),
    "local_function_calls_itself": (_calling(_function("F", ["F"])), "cycle: loc.F -> loc.F"),
    "local_functions_call_each_other": (
        _calling(_function("F", ["G"]), _function("G", ["F"])), "cycle"),
    "initializer_raw_data_shorter_than_shape": (
        _initializer([1000, 1000], b"\0" * 4), "holds 4 bytes"),
    "initializer_declares_2p40_floats": (_initializer([1 << 40], b""), "max_tensor_bytes"),
    "initializer_negative_dimension": (_initializer([-4], b""), "negative dimension"),
    "initializer_unknown_element_type": (_initializer([1], b"\0", elem=99), "element type 99"),
    "sparse_initializer_dense_2p40_floats": (_sparse_initializer([1 << 40]), "max_tensor_bytes"),
    "sparse_initializer_index_outside_shape": (_sparse_initializer([4], index=-1), "outside"),
    "concat_axis_is_a_string": (CONVERT_CASES["concat_axis_is_a_string"],
                                "'axis' is STRING.*declares it INT"),
    "string_initializer": (_string_initializer(), "string tensors"),
}


@pytest.mark.parametrize("case", sorted(LOAD_CASES))
def test_malformed_model_raises_only_onnx_load_error(case):
    model, message = LOAD_CASES[case]
    if message is None:  # loads (folding skipped): the model is well-formed, just huge
        assert isinstance(ember.onnx.load(model), ember.onnx.OnnxModule)
        return
    with pytest.raises(OnnxLoadError, match=message):
        ember.onnx.load(model)


def test_unexpected_errors_are_chained_onnx_load_errors():
    with pytest.raises(OnnxLoadError) as e:
        ember.onnx.load(_string_initializer())
    assert isinstance(e.value.__cause__, ember.DTypeError)


def test_unsupported_ops_are_both_load_and_unsupported_errors():
    model = _model([helper.make_node("StringNormalizer", ["x"], ["y"])], [_vi("x", [2])],
                   [_vi("y", [2])])
    with pytest.raises(OnnxLoadError) as e:
        ember.onnx.load(model)
    assert isinstance(e.value, ember.UnsupportedOpError)


def test_a_bad_backend_argument_is_not_blamed_on_the_file():
    with pytest.raises(ember.EmberError, match="unknown backend") as e:
        ember.onnx.load(_chain(), backend="no-such-backend")
    assert not isinstance(e.value, OnnxLoadError)


@pytest.mark.skipif(not HAS_ORT, reason="onnxruntime is the reference")
def test_well_formed_subgraphs_and_functions_still_run():
    import onnxruntime as ort

    outer = [helper.make_node("Neg", ["x"], ["nx"])]
    cases = [_if(["o"], [helper.make_node("Identity", ["nx"], ["o"])], outer),
             _calling(_function("F", ["G"]), _function("G", []))]
    for model in cases:
        feeds = {"c": np.array(True), "x": np.array([1.5, -2.0], np.float32)}
        feeds = {i.name: feeds[i.name] for i in model.graph.input}
        want = ort.InferenceSession(model.SerializeToString()).run(None, feeds)[0]
        np.testing.assert_array_equal(ember.onnx.load(model)(*feeds.values()).numpy(), want)


@pytest.mark.skipif(not HAS_ORT, reason="onnxruntime is the reference")
def test_sparse_initializer_densifies_like_onnxruntime():
    import onnxruntime as ort

    model = _sparse_initializer([2, 3], index=4)
    want = ort.InferenceSession(model.SerializeToString()).run(None, {})[0]
    np.testing.assert_array_equal(ember.onnx.load(model)().numpy(), want)


def test_sparse_constant_densifies():
    values = helper.make_tensor("v", TensorProto.FLOAT, [2], [1.0, 2.0])
    coords = helper.make_tensor("i", TensorProto.INT64, [2, 2], [0, 1, 1, 2])
    node = helper.make_node("Constant", [], ["y"],
                            sparse_value=helper.make_sparse_tensor(values, coords, [2, 3]))
    got = ember.onnx.load(_model([node], [], [_vi("y", None)]))().numpy()
    np.testing.assert_array_equal(got, [[0.0, 1.0, 0.0], [0.0, 0.0, 2.0]])  # (0,1)=1, (1,2)=2


# ---------------------------------------------------------------- limits on structure
def test_node_count_is_bounded_by_max_tensors():
    nodes = [helper.make_node("Relu", [f"v{i}"], [f"v{i + 1}"]) for i in range(20)]
    model = _model(nodes, [_vi("v0", [2])], [_vi("v20", [2])])
    with ember.limits.override(max_tensors=10), pytest.raises(OnnxLoadError, match="max_tensors"):
        ember.onnx.load(model)
    assert ember.onnx.load(model)(np.array([-1.0, 2.0], np.float32)).tolist() == [0.0, 2.0]


def test_subgraph_nesting_is_bounded_by_max_nesting():
    body = helper.make_graph([helper.make_node("Identity", ["x"], ["o0"])], "b0", [],
                             [_vi("o0", None)])
    for depth in range(1, 6):
        node = helper.make_node("If", ["c"], [f"o{depth}"], then_branch=body, else_branch=body)
        body = helper.make_graph([node], f"b{depth}", [], [_vi(f"o{depth}", None)])
    model = _model(list(body.node), [_vi("c", [], TensorProto.BOOL), _vi("x", [2])],
                   [_vi("o5", None)])
    with ember.limits.override(max_nesting=3), pytest.raises(OnnxLoadError, match="max_nesting"):
        ember.onnx.load(model)
    x = np.array([1.0, 2.0], np.float32)
    assert ember.onnx.load(model)(np.array(True), x).tolist() == [1.0, 2.0]


def test_local_function_call_depth_is_bounded_by_max_nesting():
    chain = [_function(f"F{i}", [f"F{i + 1}"]) for i in range(5)] + [_function("F5", [])]
    with ember.limits.override(max_nesting=3), pytest.raises(OnnxLoadError, match="max_nesting"):
        ember.onnx.load(_calling(*chain))


def test_header_bytes_exclude_tensor_data():
    big = helper.make_tensor("w", TensorProto.FLOAT, [4096], np.ones(4096, np.float32).tobytes(),
                             raw=True)
    model = _model([helper.make_node("Identity", ["w"], ["y"])], [], [_vi("y", None)], [big])
    with ember.limits.override(max_header_bytes=200):
        assert ember.onnx.load(model)().shape == (4096,)  # 16 kB of data, ~60 bytes of graph
    model.graph.doc_string = "d" * 1000
    with ember.limits.override(max_header_bytes=200), pytest.raises(OnnxLoadError,
                                                                    match="max_header_bytes"):
        ember.onnx.load(model)


def test_file_beyond_the_protobuf_limit_is_refused_unread(tmp_path):
    path = tmp_path / "huge.onnx"
    with open(path, "wb") as f:  # a sparse file: no disk or memory is used
        f.truncate(3 << 30)
    with pytest.raises(OnnxLoadError, match="holds at most"):
        ember.onnx.load(path)


# ---------------------------------------------------------------- regression files
def _files() -> dict[str, bytes]:
    out = {}
    for folder, cases in (("onnx_convert", CONVERT_CASES), ("onnx_load", LOAD_CASES)):
        for name, case in cases.items():
            model = case[0] if isinstance(case, tuple) else case
            raw = model if isinstance(model, bytes) else model.SerializeToString()
            out[f"{folder}/{name}.onnx"] = raw
    return out


def test_regression_files_are_committed():
    missing = [k for k in _files() if not (REGRESSIONS / k).is_file()]
    assert not missing, f"run `python {__file__}` to write {missing}"


if __name__ == "__main__":
    for rel, raw in _files().items():
        (REGRESSIONS / rel).parent.mkdir(parents=True, exist_ok=True)
        (REGRESSIONS / rel).write_bytes(raw)
        print(f"wrote {rel} ({len(raw)} bytes)", file=sys.stderr)
