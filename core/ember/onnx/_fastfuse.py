"""Conv fusions for the numpy fast plan (``_fastnp``), on a graph's resolved steps.

- ``Pad -> Conv``: a constant zero Pad of the spatial dims read only by a Conv becomes the
  Conv's own (asymmetric) padding: TF-style exports (EfficientNet-Lite) pad explicitly before
  every strided conv; the conv pads anyway, so one copy of the activations is saved.
- ``Conv -> Sub/Add/Mul/Div by per-channel constants``: exporters that write inference
  BatchNormalization as arithmetic (``(y - mean) * inv * scale + bias``, ember's own export
  among them) leave four passes over the activations after every conv; they fold into the
  conv's weight and bias. A constant may be stored at full activation size (constant over
  the spatial dims); the fused step checks at run time that it broadcasts onto the conv's
  output without enlarging it, and otherwise runs the chain unfused, exactly as written.

- ``Sigmoid -> Mul`` by the sigmoid's own input (SiLU) becomes one ``Swish`` and
  ``x * Clip(x + 3, 0, 6) / 6`` one ``HardSwish``: one blocked pass each instead of two or
  four full passes (PP-OCR's exports write HardSwish out).

Only what the fast plan will run as a numpy Conv is rewritten (float, constant weights);
the generic path never sees these nodes (the activation nodes are valid ONNX ops it runs
too).
"""

from __future__ import annotations

import numpy as np

from ..contract.batchnorm_fold import fold_chain_into, per_channel
from ._graph import Function, Node

_STD = ("", "ai.onnx")
_AFFINE = {"Add", "Sub", "Mul", "Div"}


def fuse_convs(steps: list, consts: dict, types: dict, uses: dict) -> tuple[list, dict]:
    """``steps`` ((node, fn, opset) per node) with the fusions applied, and for each fused
    Conv node (by id) its chain: ``(weight, bias, [(op, constant), ...])``."""
    producer = {o: k for k, (n, _, _) in enumerate(steps) for o in n.outputs}
    readers: dict[str, list[int]] = {}
    for k, (n, _, _) in enumerate(steps):
        for i in n.inputs:
            readers.setdefault(i, []).append(k)
    out, drop, chains = list(steps), set(), {}
    for k, (n, fn, opset) in enumerate(steps):
        if not _fast_conv(n, fn, consts, types):
            continue
        p = producer.get(n.inputs[0])
        if p is not None and uses.get(n.inputs[0]) == 1:
            merged = _merge_pad(steps[p][0], n, consts)
            if merged is not None:
                n = merged
                drop.add(p)
        w = consts[n.inputs[1]]
        bias = consts.get(n.inputs[2]) if len(n.inputs) > 2 and n.inputs[2] else None
        cur, chain = n.outputs[0], []
        while uses.get(cur) == 1 and len(readers.get(cur, ())) == 1:
            r = readers[cur][0]
            rn = steps[r][0]
            if (rn.op_type not in _AFFINE or rn.domain not in _STD or len(rn.inputs) != 2
                    or rn.attrs or len(rn.outputs) != 1 or isinstance(steps[r][1], Function)):
                break
            other = rn.inputs[1] if rn.inputs[0] == cur else rn.inputs[0]
            if other == cur or (rn.op_type in ("Sub", "Div") and rn.inputs[0] != cur):
                break
            c = consts.get(other)
            if c is None or c.dtype != w.dtype or per_channel(c, w) is None:
                break
            chain.append((rn.op_type, c))
            drop.add(r)
            cur = rn.outputs[0]
        if chain:
            n = Node("Conv", list(n.inputs), [cur], dict(n.attrs), n.domain, n.name)
            chains[id(n)] = _fold(w, bias, chain)
        out[k] = (n, fn, opset)
    return [s for k, s in enumerate(out) if k not in drop], chains


def _fast_conv(n, fn, consts, types) -> bool:
    if n.op_type != "Conv" or n.domain not in _STD or isinstance(fn, Function):
        return False
    w = consts.get(n.inputs[1])
    b = n.inputs[2] if len(n.inputs) > 2 else ""
    return (w is not None and w.ndim in (3, 4) and types.get(n.inputs[0]) == w.dtype
            and w.dtype.kind == "f" and (not b or (b in consts and consts[b].dtype == w.dtype
                                                   and consts[b].shape == w.shape[:1])))


def _merge_pad(pad: Node, conv: Node, consts) -> Node | None:
    if (pad.op_type != "Pad" or pad.domain not in _STD or pad.attrs.get("mode", "constant")
            != "constant" or conv.attrs.get("auto_pad", "NOTSET") not in ("NOTSET", "VALID")):
        return None
    ins = list(pad.inputs) + [""] * 4
    amounts = consts.get(ins[1]) if ins[1] else pad.attrs.get("pads")
    value = consts.get(ins[2]) if ins[2] else None
    if amounts is None or ins[3] or (ins[2] and (value is None or np.any(value != 0))):
        return None
    if pad.attrs.get("value", 0.0) != 0.0:
        return None
    amounts = [int(a) for a in np.asarray(amounts).reshape(-1)]
    nd = consts[conv.inputs[1]].ndim - 2
    if len(amounts) != 2 * (nd + 2) or min(amounts) < 0:
        return None
    begins, ends = amounts[:nd + 2], amounts[nd + 2:]
    if any(begins[:2]) or any(ends[:2]):  # batch or channel padding: not a conv's
        return None
    own = [0] * (2 * nd) if conv.attrs.get("auto_pad", "NOTSET") == "VALID" else list(
        conv.attrs.get("pads") or [0] * (2 * nd))
    pads = [a + b for a, b in zip(own, begins[2:] + ends[2:])]
    attrs = {k: v for k, v in conv.attrs.items() if k != "auto_pad"}
    attrs["pads"] = pads
    return Node("Conv", [pad.inputs[0], *conv.inputs[1:]], list(conv.outputs), attrs,
                conv.domain, conv.name)


def _fold(w, bias, chain):
    """y = conv(x) then the chain, as one conv (its weight, bias and the chain as written)."""
    w2, b2 = fold_chain_into(w, bias, [(op.lower(), c) for op, c in chain])
    return w2, b2, chain


def fuse_activations(steps: list, consts: dict, types: dict, uses: dict) -> list:
    """SiLU and written-out HardSwish chains as single Swish / HardSwish nodes."""
    from .ops import REGISTRY

    producer = {o: k for k, (n, _, _) in enumerate(steps) for o in n.outputs}
    readers: dict[str, list[int]] = {}
    for k, (n, _, _) in enumerate(steps):
        for i in n.inputs:
            readers.setdefault(i, []).append(k)

    def only_reader(name):
        r = readers.get(name, [])
        return steps[r[0]][0] if uses.get(name) == 1 and len(r) == 1 else None

    def scalar(name, value):
        c = consts.get(name)
        return c is not None and c.size == 1 and float(c.reshape(-1)[0]) == value

    def std(n, op):
        return n is not None and n.op_type == op and n.domain in _STD and not any(
            k in n.attrs for k in ("broadcast", "axis"))

    replace: dict[int, Node] = {}
    drop: set[int] = set()
    for k, (n, _, _) in enumerate(steps):
        x = n.inputs[0] if n.inputs else ""
        if types.get(x) is None or types[x].kind != "f":
            continue
        if std(n, "Sigmoid"):
            m = only_reader(n.outputs[0])
            if std(m, "Mul") and sorted(m.inputs) == sorted([x, n.outputs[0]]):
                replace[k] = Node("Swish", [x], list(m.outputs), {}, n.domain, n.name)
                drop.add(producer[m.outputs[0]])
        elif std(n, "Add") and len(n.inputs) == 2 and scalar(n.inputs[1], 3.0):
            c = only_reader(n.outputs[0])
            if not (std(c, "Clip") and c.inputs[0] == n.outputs[0] and len(c.inputs) == 3
                    and scalar(c.inputs[1], 0.0) and scalar(c.inputs[2], 6.0)):
                continue
            m = only_reader(c.outputs[0])
            if not (std(m, "Mul") and sorted(m.inputs) == sorted([x, c.outputs[0]])):
                continue
            d = only_reader(m.outputs[0])
            if not (std(d, "Div") and d.inputs[0] == m.outputs[0] and scalar(d.inputs[1], 6.0)):
                continue
            replace[k] = Node("HardSwish", [x], list(d.outputs), {}, n.domain, n.name)
            drop |= {producer[c.outputs[0]], producer[m.outputs[0]], producer[d.outputs[0]]}
    out = []
    for k, (n, fn, opset) in enumerate(steps):
        if k in drop:
            continue
        if k in replace:
            n = replace[k]
            fn = REGISTRY[n.op_type]
        out.append((n, fn, opset))
    return out
