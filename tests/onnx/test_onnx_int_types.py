"""ONNX graphs on the integer types ember holds widened (int16, uint16, uint32, uint64): single-op
models built with onnx.helper, run by ember and by onnxruntime (onnx's ReferenceEvaluator
where onnxruntime has no kernel for the type). Each result is exact or a typed refusal, never a
wrapped or negative unsigned value.
"""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto as TP  # noqa: E402
from onnx import helper  # noqa: E402

import ember  # noqa: E402
import ember.onnx  # noqa: E402

_NP = {TP.INT16: np.int16, TP.UINT16: np.uint16, TP.UINT32: np.uint32, TP.UINT64: np.uint64,
       TP.INT32: np.int32}


def _model(op: str, elem: int, feeds: dict, out_elem: int | None = None, **attrs):
    names = list(feeds)
    node = helper.make_node(op, names, ["y"], **attrs)
    graph = helper.make_graph(
        [node], op, [helper.make_tensor_value_info(n, elem, None) for n in names],
        [helper.make_tensor_value_info("y", out_elem or elem, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def _reference(model, feeds):
    try:
        sess = ort.InferenceSession(model.SerializeToString(),
                                    providers=["CPUExecutionProvider"])
        return sess.run(None, feeds)[0]
    except Exception:  # noqa: BLE001 - no kernel for this type in onnxruntime
        from onnx.reference import ReferenceEvaluator

        return ReferenceEvaluator(model).run(None, feeds)[0]


def _a(elem, values):
    return np.array(values, dtype=_NP[elem])


# (id, op, elem, inputs, attrs): results that leave the narrow type's range
CASES = [
    ("sub_uint16_below_zero", "Sub", TP.UINT16, [[0, 5], [1, 2]], {}),
    ("add_int16_past_max", "Add", TP.INT16, [[32767, -32768], [1, -1]], {}),
    ("sub_uint32_below_zero", "Sub", TP.UINT32, [[0, 7], [1, 9]], {}),
    ("mul_uint16_wraps", "Mul", TP.UINT16, [[300, 65535], [300, 2]], {}),
    ("mul_int16_wraps", "Mul", TP.INT16, [[300, -200], [300, 200]], {}),
    ("add_uint32_wraps", "Add", TP.UINT32, [[4294967295, 3], [2, 4]], {}),
    ("neg_int16_min", "Neg", TP.INT16, [[-32768, 5]], {}),
    ("abs_int16_min", "Abs", TP.INT16, [[-32768, -5]], {}),
    ("reducesum_uint16_wraps", "ReduceSum", TP.UINT16, [[[60000, 60000, 5]]],
     {"keepdims": 0}),
    ("bitwise_not_uint16", "BitwiseNot", TP.UINT16, [[0, 1, 65535]], {}),
    ("bitwise_not_uint32", "BitwiseNot", TP.UINT32, [[0, 1, 4294967295]], {}),
    ("bitwise_not_int16", "BitwiseNot", TP.INT16, [[0, -1, 32767]], {}),
    ("bitshift_left_uint16", "BitShift", TP.UINT16, [[1, 3], [15, 15]], {"direction": "LEFT"}),
    ("max_uint64", "Max", TP.UINT64, [[3, 9], [7, 2]], {}),
]


@pytest.mark.parametrize("backend", ["numpy", "python"])
@pytest.mark.parametrize(("cid", "op", "elem", "inputs", "attrs"), CASES,
                         ids=[c[0] for c in CASES])
def test_matches_onnxruntime(cid, op, elem, inputs, attrs, backend):
    feeds = {f"x{i}": _a(elem, v) for i, v in enumerate(inputs)}
    model = _model(op, elem, feeds, **attrs)
    want = _reference(model, feeds)
    got = ember.onnx.load(model.SerializeToString(), backend=backend).run(feeds)["y"].numpy()
    assert got.tolist() == want.tolist()


def test_cumsum_uint16_wraps():
    x, axis = _a(TP.UINT16, [60000, 60000, 5]), np.array(0, np.int32)
    node = helper.make_node("CumSum", ["x", "axis"], ["y"])
    graph = helper.make_graph([node], "cumsum", [
        helper.make_tensor_value_info("x", TP.UINT16, None),
        helper.make_tensor_value_info("axis", TP.INT32, [])],
        [helper.make_tensor_value_info("y", TP.UINT16, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    feeds = {"x": x, "axis": axis}
    got = ember.onnx.load(model.SerializeToString(), backend="numpy").run(feeds)["y"].numpy()
    assert got.tolist() == _reference(model, feeds).tolist() == [60000, 54464, 54469]


@pytest.mark.parametrize(("to", "values", "want"), [
    (TP.UINT16, [-1, 65536 + 7], [65535, 7]),
    (TP.INT16, [40000, -40000], [-25536, 25536]),
    (TP.UINT32, [-1, 5], [4294967295, 5]),
])
def test_cast_to_narrow_int_wraps(to, values, want):
    feeds = {"x": np.array(values, np.int64)}
    node = helper.make_node("Cast", ["x"], ["y"], to=to)
    graph = helper.make_graph([node], "cast", [helper.make_tensor_value_info("x", TP.INT64, None)],
                              [helper.make_tensor_value_info("y", to, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    got = ember.onnx.load(model.SerializeToString(), backend="numpy").run(feeds)["y"].numpy()
    assert got.tolist() == _reference(model, feeds).tolist() == want


def test_uint64_arithmetic_is_refused_at_load():
    feeds = {"x0": _a(TP.UINT64, [0]), "x1": _a(TP.UINT64, [1])}
    with pytest.raises(ember.onnx.OnnxUnsupportedError, match=r"\(Sub\) computes a uint64"):
        ember.onnx.load(_model("Sub", TP.UINT64, feeds).SerializeToString(), backend="numpy")


def test_uint64_values_past_int64_are_refused():
    feeds = {"x0": _a(TP.UINT64, [2**64 - 1]), "x1": _a(TP.UINT64, [1])}
    m = ember.onnx.load(_model("Max", TP.UINT64, feeds).SerializeToString(), backend="numpy")
    with pytest.raises(ember.DTypeError, match=r"uint64 value 18446744073709551615 is 2\*\*63"):
        m.run(feeds)


def test_wgpu_is_exact_or_refuses():
    """On wgpu (int64 held as int32) a uint32 result past int32 is refused, never wrapped."""
    try:
        ember.get_backend("wgpu")
    except Exception:  # noqa: BLE001
        pytest.skip("wgpu backend unavailable")
    feeds = {"x0": _a(TP.UINT32, [0, 7]), "x1": _a(TP.UINT32, [1, 9])}
    m = ember.onnx.load(_model("Sub", TP.UINT32, feeds).SerializeToString(), backend="wgpu")
    with pytest.raises(ember.DTypeError, match="outside the range the wgpu backend stores"):
        m.run(feeds)
    feeds = {"x0": _a(TP.UINT16, [0, 5]), "x1": _a(TP.UINT16, [1, 2])}
    m = ember.onnx.load(_model("Sub", TP.UINT16, feeds).SerializeToString(), backend="wgpu")
    assert m.run(feeds)["y"].tolist() == [65535, 3]


def test_convert_refuses_a_graph_that_needs_wraps(tmp_path):
    feeds = {"x0": _a(TP.UINT16, [0, 5]), "x1": _a(TP.UINT16, [1, 2])}
    with pytest.raises(ember.UnsupportedOpError, match="whose wrap-around convert does not"):
        ember.onnx.convert(_model("Sub", TP.UINT16, feeds), tmp_path, check=False)


def _graph_with_int64_constant(op: str, value: list[int]):
    """x (int64) -> op(x, c) with c an int64 initializer (Slice: c is `ends`, starts 1)."""
    inits = [helper.make_tensor("c", TP.INT64, [len(value)], value)]
    if op == "Slice":
        inits.append(helper.make_tensor("s", TP.INT64, [1], [1]))
        node = helper.make_node("Slice", ["x", "s", "c"], ["y"])
    else:
        node = helper.make_node(op, ["x", "c"], ["y"])
    graph = helper.make_graph([node], op, [helper.make_tensor_value_info("x", TP.INT64, [3])],
                              [helper.make_tensor_value_info("y", TP.INT64, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def test_wgpu_keeps_int64_constants_it_cannot_store_on_the_host():
    """PyTorch's exporter writes Slice(ends=INT64_MAX): wgpu (int64 held as int32) reads the
    constant as a Python int; computing with such a constant on the device is refused."""
    try:
        ember.get_backend("wgpu")
    except Exception:  # noqa: BLE001
        pytest.skip("wgpu backend unavailable")
    x = {"x": np.array([5, 6, 7], dtype=np.int64)}
    sliced = _graph_with_int64_constant("Slice", [2**63 - 1])
    got = ember.onnx.load(sliced.SerializeToString(), backend="wgpu").run(x)["y"]
    assert got.tolist() == _reference(sliced, x).tolist() == [6, 7]
    added = _graph_with_int64_constant("Add", [2**40, 1, 2])
    m = ember.onnx.load(added.SerializeToString(), backend="wgpu")
    with pytest.raises(ember.DTypeError, match="computes with constant 'c', whose integers the "
                       "wgpu backend cannot store"):
        m.run(x)
