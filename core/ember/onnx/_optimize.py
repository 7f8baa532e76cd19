"""Load-time graph rewrites that keep the results and save work at every call.

- ``Conv -> BatchNormalization`` (inference mode, constant weights, the convolution read only
  by the normalization) becomes one ``Conv`` with the normalization folded into its weight
  and bias, as onnxruntime and every exporter's "fuse" option do: one pass over the
  activations instead of three.
- The five-node GELU exporters write (``x * (erf(x / sqrt 2) + 1) * 0.5``) becomes one
  ``Gelu`` (see ``_patterns``): one fused activation instead of five tensor ops.
"""

from __future__ import annotations

from ._graph import Graph, Node
from ._patterns import gelu_at, readers


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
        scale, b, mean, var = (consts[i].astype(w.dtype) for i in bn.inputs[1:])
        eps = float(bn.attrs.get("epsilon", 1e-5))
        inv = scale / (var + eps).sqrt()
        nd = w.ndim - 1
        w2 = w * inv.reshape([-1] + [1] * nd)
        bias = consts[conv.inputs[2]] if len(conv.inputs) > 2 and conv.inputs[2] else None
        b2 = b + ((bias.astype(w.dtype) if bias is not None else 0.0) - mean) * inv
        names = (f"{conv.inputs[1]}::bn_fused", f"{bn.inputs[2]}::bn_fused_bias")
        for name, value in zip(names, (w2, b2)):
            module._add_const(graph, name, value)
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
