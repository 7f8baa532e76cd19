"""Node chains that ``ember onnx convert`` writes as one readable call.

Exporters spell GELU as ``x * (erf(x / sqrt(2)) + 1) * 0.5`` (five nodes); when every link of
such a chain is read only by the next one, the chain becomes a single ``Gelu`` node, written
``F.gelu(x)``. (The generated module is checked against the runtime path either way.)
"""

from __future__ import annotations

import math

from ._graph import Node


def readers(nodes: list[Node]) -> dict[str, list[int]]:
    """Value name -> indices of the nodes (of this graph) that read it."""
    out: dict[str, list[int]] = {}
    for k, n in enumerate(nodes):
        for i in n.inputs:
            out.setdefault(i, []).append(k)
    return out


def _scalar(name: str, consts: dict) -> float | None:
    t = consts.get(name)
    if t is None or t.numel() != 1 or not t.dtype.is_float:
        return None
    return float(t.reshape(-1).tolist()[0])


def _only_reader(nodes, name: str, read: dict, uses: dict, op: str):
    """The one node reading ``name`` (and nothing else does), if it is an ``op``."""
    ks = read.get(name, [])
    if len(ks) != 1 or uses.get(name) != 1:
        return None, None
    n = nodes[ks[0]]
    arity = 1 if op == "Erf" else 2
    ok = (n.op_type == op and n.domain in ("", "ai.onnx") and len(n.outputs) == 1
          and len(n.inputs) == arity)
    return (ks[0], n) if ok else (None, None)


def _other(n: Node, name: str) -> str | None:
    rest = [i for i in n.inputs if i != name]
    return rest[0] if len(rest) == 1 else None


def gelu_at(nodes: list[Node], k: int, consts: dict, read: dict, uses: dict):
    """``(Gelu node, indices of the chain's later nodes)`` when ``nodes[k]`` starts an exact
    GELU chain, else None."""
    first = nodes[k]
    if first.op_type not in ("Div", "Mul") or len(first.inputs) != 2 or len(first.outputs) != 1:
        return None
    x, c = first.inputs
    s = _scalar(c, consts)
    want = math.sqrt(2) if first.op_type == "Div" else 1 / math.sqrt(2)
    if s is None or abs(s - want) > 1e-6:
        return None
    j1, erf = _only_reader(nodes, first.outputs[0], read, uses, "Erf")
    if erf is None:
        return None
    j2, add = _only_reader(nodes, erf.outputs[0], read, uses, "Add")
    if add is None or _scalar(_other(add, erf.outputs[0]) or "", consts) != 1.0:
        return None
    j3, mul = _only_reader(nodes, add.outputs[0], read, uses, "Mul")
    if mul is None or _other(mul, add.outputs[0]) != x:
        return None
    j4, half = _only_reader(nodes, mul.outputs[0], read, uses, "Mul")
    if half is None or _scalar(_other(half, mul.outputs[0]) or "", consts) != 0.5:
        return None
    return Node("Gelu", [x], half.outputs, {}, "", half.name), {j1, j2, j3, j4}
