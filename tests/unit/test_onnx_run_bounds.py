"""ONNX models that load fine must not hang, exhaust memory or fail untyped when run (issue 33):
nested functions are bounded at load (and so in ``ember onnx convert``), outputs sized by data
(Resize, Expand, ConstantOfShape...) are checked against ``ember.limits`` before they are
made, and an operator broken by its inputs raises OnnxRunError, not ZeroDivisionError."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnx")

from onnx import TensorProto, helper, numpy_helper

import ember
import ember.onnx
from ember.errors import ShapeError
from ember.onnx import OnnxLoadError, OnnxRunError

LOCAL = [helper.make_opsetid("", 17), helper.make_opsetid("local", 1)]


def nested_functions(depth: int, calls: int = 2) -> bytes:
    """f0 = Relu; f(i) calls f(i-1) ``calls`` times: ``calls**(depth-1)`` Relus from a model of
    about 2 KB (what the fuzzer found: it did not finish in 30 s)."""
    funcs = []
    for i in range(depth):
        if i == 0:
            nodes = [helper.make_node("Relu", ["x"], ["y"])]
        else:
            nodes = [helper.make_node(f"f{i - 1}", ["x" if c == 0 else f"t{c - 1}"],
                                      ["y" if c == calls - 1 else f"t{c}"], domain="local")
                     for c in range(calls)]
        funcs.append(helper.make_function("local", f"f{i}", ["x"], ["y"], nodes, LOCAL))
    return _model([helper.make_node(f"f{depth - 1}", ["X"], ["Y"], domain="local")], [1],
                  functions=funcs)


def _model(nodes, shape, inits=(), functions=(), opset=17) -> bytes:
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT,
                                                                        shape)],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
                              list(inits))
    imports = LOCAL if functions else [helper.make_opsetid("", opset)]
    return helper.make_model(graph, functions=list(functions),
                             opset_imports=imports).SerializeToString()


def test_nested_functions_are_bounded_at_load_and_in_convert(tmp_path):
    model = nested_functions(24)
    assert len(model) < 3000
    with pytest.raises(OnnxLoadError, match=r"functions expanded: \d+ exceeds the limit "
                                            r"max_expanded_nodes=250000"):
        ember.onnx.load(model, backend="numpy")
    with pytest.raises(OnnxLoadError, match="max_expanded_nodes"):
        ember.onnx.convert(model, tmp_path / "out", check=False)
    small = ember.onnx.load(nested_functions(4), backend="numpy")  # 8 Relus: runs
    assert small(np.array([-2.0], np.float32)).tolist() == [0.0]


@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_resize_output_is_bounded_before_it_is_made(mode):
    sizes = numpy_helper.from_array(np.array([1, 1, 1000, 1000], np.int64), "S")
    model = ember.onnx.load(_model([helper.make_node("Resize", ["X", "", "", "S"], ["Y"],
                                                     mode=mode)], [1, 1, 2, 2], [sizes], opset=19),
                            backend="numpy")
    x = np.ones((1, 1, 2, 2), np.float32)
    with ember.limits.override(max_tensor_bytes=1 << 20):  # the 4 MB output passes it
        with pytest.raises(ShapeError, match=r"Resize: an output of shape \(1, 1, 1000, 1000\) "
                                             r"from \(1, 1, 2, 2\): 4000000 exceeds the limit "
                                             r"max_tensor_bytes=1048576"):
            model(x)
    with ember.limits.override(max_folded_elements=1000):  # linear: its weight matrices
        if mode == "linear":
            with pytest.raises(ShapeError, match=r"a 1000×2 weight matrix .*max_folded_elements"):
                model(x)
    assert model(x).shape == (1, 1, 1000, 1000)  # within the defaults: runs


def test_outputs_sized_by_data_are_bounded_before_they_are_made():
    shape = numpy_helper.from_array(np.array([1000, 1000], np.int64), "S")
    model = ember.onnx.load(_model([helper.make_node("Expand", ["X", "S"], ["Y"])], [1],
                                   [shape]), backend="numpy")
    with ember.limits.override(max_tensor_bytes=1 << 20):
        with pytest.raises(ShapeError, match=r"onnx Expand: the bytes of its output .*: "
                                             r"8000000 exceeds the limit max_tensor_bytes"):
            model(np.ones(1, np.float32))


@pytest.mark.parametrize("node", [
    helper.make_node("SpaceToDepth", ["X"], ["Y"], blocksize=0),
    helper.make_node("DepthToSpace", ["X"], ["Y"], blocksize=0),
    helper.make_node("LRN", ["X"], ["Y"], size=0),
    helper.make_node("MaxPool", ["X"], ["Y"], kernel_shape=[2, 2], strides=[0, 0]),
], ids=lambda n: n.op_type)
def test_an_operator_broken_by_its_attributes_raises_a_typed_error(node):
    model = ember.onnx.load(_model([node], [1, 4, 4, 4]), backend="numpy")
    with pytest.raises(OnnxRunError, match=f"onnx {node.op_type}: the node's inputs or "
                                           "attributes break the operator"):
        model(np.ones((1, 4, 4, 4), np.float32))


def test_onnx_info_refuses_a_device_before_reading_it(capsys):
    """``ember onnx info /dev/zero`` read 2 GB before refusing: the file type comes first."""
    from ember.cli import main

    assert main(["onnx", "info", "/dev/zero"]) == 1
    assert capsys.readouterr().err == ("ember onnx info: onnx.load: '/dev/zero' is not a regular "
                                       "file (a device, pipe or socket); give the path of an "
                                       ".onnx file\n")
