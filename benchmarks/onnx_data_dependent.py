"""Small ONNX graphs whose nodes read values from data, with the inputs to time them on.

``cases(folder)`` writes them and returns ``[(label, path, feeds)]``:

- ``loop_input_trip``: a Loop (``h = tanh(h @ W + b)``, 8x64) whose trip count is an int64
  graph input (20): a guard on the compiled path (one trace per count).
- ``loop_data_trip``: the same Loop, its trip count the sum of a 40-value float input (too
  large to guard): the Loop runs on the host, its body compiled.
- ``topk_nonzero``: Conv -> Relu -> ReduceMax -> Reshape -> TopK with k an input (50, a
  guard) -> Sigmoid -> NonZero (on the host) and a Mul.
"""

from __future__ import annotations

import os

import numpy as np


def cases(folder: str) -> list[tuple[str, str, dict]]:
    from onnx import TensorProto, helper, numpy_helper, save

    f, i64 = TensorProto.FLOAT, TensorProto.INT64
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((64, 64)) * 0.1).astype(np.float32)
    b = rng.standard_normal(64).astype(np.float32)
    body = helper.make_graph(
        [helper.make_node("MatMul", ["h_in", "W"], ["m"]),
         helper.make_node("Add", ["m", "B"], ["a"]), helper.make_node("Tanh", ["a"], ["h"]),
         helper.make_node("Identity", ["cond"], ["cond_out"])],
        "body", [helper.make_tensor_value_info("i", i64, []),
                 helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
                 helper.make_tensor_value_info("h_in", f, [8, 64])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h", f, [8, 64])])
    weights = [numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "B")]
    h0 = helper.make_tensor_value_info("h0", f, [8, 64])
    y = [helper.make_tensor_value_info("y", f, [8, 64])]
    loop = helper.make_node("Loop", ["n", "", "h0"], ["y"], body=body)
    graphs = {
        "loop_input_trip": (helper.make_graph([loop], "g", [helper.make_tensor_value_info(
            "n", i64, []), h0], y, weights), {"n": np.array(20)}),
        "loop_data_trip": (helper.make_graph(
            [helper.make_node("ReduceSum", ["counts"], ["t"], keepdims=0),
             helper.make_node("Cast", ["t"], ["n"], to=i64), loop], "g",
            [helper.make_tensor_value_info("counts", f, [40]), h0], y, weights),
            {"counts": (np.arange(40) < 20).astype(np.float32)}),
    }
    h = {"h0": rng.standard_normal((8, 64)).astype(np.float32)}
    graphs["loop_input_trip"][1].update(h)
    graphs["loop_data_trip"][1].update(h)
    wc = (rng.standard_normal((16, 3, 3, 3)) * 0.2).astype(np.float32)
    graphs["topk_nonzero"] = (helper.make_graph(
        [helper.make_node("Conv", ["x", "Wc"], ["c"], pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c"], ["r"]),
         helper.make_node("ReduceMax", ["r"], ["s"], axes=[1], keepdims=0),
         helper.make_node("Reshape", ["s", "flat"], ["f1"]),
         helper.make_node("TopK", ["f1", "k"], ["v", "idx"]),
         helper.make_node("Sigmoid", ["v"], ["sv"]), helper.make_node("Mul", ["sv", "sv"], ["y"]),
         helper.make_node("NonZero", ["sv"], ["nz"])], "g",
        [helper.make_tensor_value_info("x", f, [1, 3, 32, 32]),
         helper.make_tensor_value_info("k", i64, [1])],
        [helper.make_tensor_value_info("y", f, None),
         helper.make_tensor_value_info("nz", i64, None)],
        [numpy_helper.from_array(wc, "Wc"), numpy_helper.from_array(np.array([-1]), "flat")]),
        {"x": rng.standard_normal((1, 3, 32, 32)).astype(np.float32), "k": np.array([50])})
    os.makedirs(folder, exist_ok=True)
    out = []
    for label, (graph, feeds) in graphs.items():
        path = os.path.join(folder, f"{label}.onnx")
        save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
        out.append((label, path, feeds))
    return out
