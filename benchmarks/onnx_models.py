"""Benchmark models built on the spot (deterministic weights), for ``bench_onnx.py``.

- ``encoder``: a MiniLM-sized transformer encoder (6 layers, width 384, 12 heads, GELU via
  Erf, LayerNormalization), exported from PyTorch at opset 17, batch 1 x 128 tokens.
- ``encoder_int8``: the same, dynamically quantized by onnxruntime (DynamicQuantizeLinear +
  MatMulInteger); onnxruntime's u8 x s8 kernels saturate on CPUs without VNNI, so its
  accuracy is checked against ``onnx.reference`` instead.
- ``loop_rnn``: control flow: a Loop of 64 steps whose body holds Constants, a MatMul, an
  If on the step's parity and a Tanh (a small recurrent cell).
- ``same_pool_cnn``: a small CNN with SiLU (Sigmoid * x) and TF-style "SAME" max pooling
  (asymmetric pads).
- ``efficientnet_lite0``: EfficientNet-Lite0 with its pretrained weights (``ember.demos.
  efficientnet``, from a registry package), written by ``ember.onnx.export``, 1x3x224x224;
  left out when the weights are not installed.
"""

from __future__ import annotations

import os
import warnings

import numpy as np


def _encoder(path: str) -> None:
    import torch

    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(384, 12, 1536, dropout=0.0, activation="gelu",
                                             batch_first=True)
    model = torch.nn.Sequential(torch.nn.Embedding(30522, 384), torch.nn.TransformerEncoder(
        layer, 6, enable_nested_tensor=False)).eval()
    ids = torch.randint(0, 30522, (1, 128))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (ids,), path, input_names=["input_ids"],
                          output_names=["hidden"], opset_version=17, dynamo=False)


def _encoder_int8(path: str, source: str) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        quantize_dynamic(source, path, weight_type=QuantType.QInt8)


def _loop_rnn(path: str) -> None:
    from onnx import TensorProto, helper, numpy_helper, save

    rng = np.random.default_rng(0)
    w = numpy_helper.from_array((rng.standard_normal((64, 64)) / 8).astype(np.float32), "w")
    f = TensorProto.FLOAT

    def const(name, value):
        return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(
            np.asarray(value), name))

    then_g = helper.make_graph([const("k1", np.float32(0.5)),
                                helper.make_node("Mul", ["pre", "k1"], ["t_out"])], "then", [],
                               [helper.make_tensor_value_info("t_out", f, [1, 64])])
    else_g = helper.make_graph([const("k2", np.float32(-0.25)),
                                helper.make_node("Add", ["pre", "k2"], ["e_out"])], "else", [],
                               [helper.make_tensor_value_info("e_out", f, [1, 64])])
    body = helper.make_graph(
        [const("two", np.int64(2)), const("zero", np.int64(0)),
         const("bias", np.linspace(-1, 1, 64, dtype=np.float32).reshape(1, 64)),
         helper.make_node("MatMul", ["h_in", "w"], ["mm"]),
         helper.make_node("Add", ["mm", "bias"], ["pre"]),
         helper.make_node("Mod", ["i", "two"], ["parity"]),
         helper.make_node("Equal", ["parity", "zero"], ["even"]),
         helper.make_node("If", ["even"], ["mixed"], then_branch=then_g, else_branch=else_g),
         helper.make_node("Tanh", ["mixed"], ["h_out"]),
         helper.make_node("Identity", ["cond"], ["cond_out"])],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
                 helper.make_tensor_value_info("h_in", f, [1, 64])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_out", f, [1, 64])])
    n = numpy_helper.from_array(np.int64(64), "n")
    graph = helper.make_graph([helper.make_node("Loop", ["n", "", "h0"], ["h"], body=body)],
                              "loop_rnn", [helper.make_tensor_value_info("h0", f, [1, 64])],
                              [helper.make_tensor_value_info("h", f, [1, 64])], [n, w])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def _same_pool_cnn(path: str) -> None:
    from onnx import TensorProto, helper, numpy_helper, save

    rng = np.random.default_rng(0)
    nodes, inits, x, c = [], [], "x", 3
    for i, width in enumerate((16, 32, 64, 64)):
        w = (rng.standard_normal((width, c, 3, 3)) / np.sqrt(9 * c)).astype(np.float32)
        inits += [numpy_helper.from_array(w, f"w{i}"),
                  numpy_helper.from_array(np.zeros(width, np.float32), f"b{i}")]
        nodes += [helper.make_node("Conv", [x, f"w{i}", f"b{i}"], [f"c{i}"], pads=[1, 1, 1, 1]),
                  helper.make_node("Sigmoid", [f"c{i}"], [f"s{i}"]),
                  helper.make_node("Mul", [f"c{i}", f"s{i}"], [f"a{i}"]),
                  helper.make_node("MaxPool", [f"a{i}"], [f"p{i}"], kernel_shape=[3, 3],
                                   strides=[2, 2], pads=[0, 0, 1, 1])]
        x, c = f"p{i}", width
    graph = helper.make_graph(nodes, "same_pool_cnn", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [1, 3, 224, 224])], [helper.make_tensor_value_info(
            x, TensorProto.FLOAT, None)], inits)
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def _efficientnet_lite0(path: str) -> None:
    import ember
    import ember.onnx
    from ember.demos import efficientnet

    x = ember.tensor(np.random.default_rng(0).uniform(-1, 1, (1, 3, 224, 224)).astype("f4"))
    ember.onnx.export(efficientnet.pretrained(), x, path)


def built(folder: str) -> dict[str, str]:
    """name -> path of each model, building what is missing in ``folder``."""
    os.makedirs(folder, exist_ok=True)
    from ember.errors import DatasetError

    paths = {k: os.path.join(folder, f"{k}.onnx") for k in (
        "encoder", "encoder_int8", "loop_rnn", "same_pool_cnn", "efficientnet_lite0")}
    makers = {"encoder": _encoder, "loop_rnn": _loop_rnn, "same_pool_cnn": _same_pool_cnn,
              "encoder_int8": lambda p: _encoder_int8(p, paths["encoder"]),
              "efficientnet_lite0": _efficientnet_lite0}
    for name, path in list(paths.items()):
        if not os.path.exists(path):
            try:
                makers[name](path)
            except DatasetError:  # pretrained weights not installed
                del paths[name]
    return paths
