"""Load-time graph rewrites that keep the results and save work at every call.

- ``Conv -> BatchNormalization`` (inference mode, constant weights, the convolution read only
  by the normalization) becomes one ``Conv`` with the normalization folded into its weight
  and bias (``ember.contract.batchnorm_fold``, in float64), as onnxruntime and every
  exporter's "fuse" option do: one pass over the activations instead of three.
- The five-node GELU exporters write (``x * (erf(x / sqrt 2) + 1) * 0.5``) becomes one
  ``Gelu`` (see ``_patterns``): one fused activation instead of five tensor ops.
"""

from __future__ import annotations

from ..contract.batchnorm_fold import batchnorm_affine, fold_affine_into
from ._graph import Graph, Node
from ._patterns import gelu_at, readers
from ._types import numpy_to_tensor


def _readers(graph: Graph) -> dict[str, int]:
    count: dict[str, int] = {}
    for n in graph.walk():
        for i in n.inputs:
            count[i] = count.get(i, 0) + 1
    for o in graph.outputs:
        count[o] = count.get(o, 0) + 1
    return count


def fuse_conv_bn(module, graph: Graph) -> int:
    """Fold each eligible BatchNormalization into the Conv before it; returns how many."""
    consts = {k: getattr(module, v) for k, v in module._consts.get(id(graph), {}).items()}
    readers = _readers(graph)
    producer = {o: n for n in graph.nodes for o in n.outputs}
    fused: dict[int, Node] = {}  # id(conv node) -> its replacement
    dropped: set[int] = set()
    for bn in graph.nodes:
        if (bn.op_type != "BatchNormalization" or bn.domain not in ("", "ai.onnx")
                or len(bn.outputs) != 1 or bn.attrs.get("training_mode")
                or len(bn.inputs) != 5 or not all(i in consts for i in bn.inputs[1:])):
            continue
        conv = producer.get(bn.inputs[0])
        if (conv is None or conv.op_type != "Conv" or conv.domain not in ("", "ai.onnx")
                or readers.get(bn.inputs[0]) != 1 or len(conv.inputs) < 2
                or not all(i in consts for i in conv.inputs[1:] if i)):
            continue
        w = consts[conv.inputs[1]]
        if not w.dtype.is_float:
            continue
        weight = w.numpy()
        scale, b, mean, var = (consts[i].numpy() for i in bn.inputs[1:])
        bias = consts[conv.inputs[2]].numpy() if len(conv.inputs) > 2 and conv.inputs[2] else None
        if any(v.shape != weight.shape[:1] for v in (scale, b, mean, var, bias) if v is not None):
            continue  # not one value per output channel: no fold, the nodes run as written
        eps = float(bn.attrs.get("epsilon", 1e-5))
        folded = fold_affine_into(weight, bias, *batchnorm_affine(mean, var, eps, scale, b))
        names = (f"{conv.inputs[1]}::bn_fused", f"{bn.inputs[2]}::bn_fused_bias")
        for name, value in zip(names, folded):
            module._add_const(graph, name, numpy_to_tensor(value.astype(weight.dtype),
                                                           module.backend, name))
        fused[id(conv)] = Node("Conv", [conv.inputs[0], *names], bn.outputs, conv.attrs,
                               conv.domain, conv.name)
        dropped.add(id(bn))
    graph.nodes = [fused.get(id(n), n) for n in graph.nodes if id(n) not in dropped]
    return len(fused)


def fuse_gelu(module, graph: Graph) -> int:
    """Replace each exact GELU chain by one Gelu node; returns how many."""
    consts = {k: getattr(module, v) for k, v in module._consts.get(id(graph), {}).items()}
    uses, read = _readers(graph), readers(graph.nodes)
    nodes, skip, found = [], set(), 0
    for k, n in enumerate(graph.nodes):
        if k in skip:
            continue
        chain = gelu_at(graph.nodes, k, consts, read, uses)
        if chain is not None and all(j > k and j not in skip for j in chain[1]):
            n, found = chain[0], found + 1
            skip |= chain[1]
        nodes.append(n)
    graph.nodes = nodes
    return found
