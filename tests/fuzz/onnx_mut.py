"""Structure-aware ONNX mutations through onnx's Python API.

Each edit parses the model, changes one thing the protobuf layer cannot object to (a name, a
dim, an attribute, an op, an opset, a tensor's type or data, a subgraph, a function) and
serialises it again, so the mutation reaches Ember's reader and code generator instead of
dying in protobuf. Names become hostile strings that carry a payload: if the code generator
ever pastes one into ``model.py`` unescaped, importing the module creates the folder named by
``$FUZZ_SENTINEL`` (or leaves a ``__import__`` call the worker finds in the code).
"""

from __future__ import annotations

import random

from .mutate import INTERESTING

PAYLOAD = '__import__("os").mkdir(__import__("os").environ["FUZZ_SENTINEL"])'
HOSTILE_NAMES = [
    f'x"""\n    {PAYLOAD}\n    """', f'x"""\n{PAYLOAD}\n"""', f'x", {PAYLOAD}, "',
    f"x', {PAYLOAD}, '",
    f"x=1, y={PAYLOAD}, z", f"x\n{PAYLOAD}\n#", f"x) + {PAYLOAD} + (1", f'x"]; {PAYLOAD}; #',
    "\\", "'", '"', "\n", "\0", "\u2028", "é名", "", " ", "self", "class", "None", "__init__",
    "ember", "F", "call", "w", "x" * 5000, "a.b", "0abc", "../../etc/passwd", "%s{}",
]
OPS = ["Add", "Relu", "Conv", "Gemm", "MatMul", "Reshape", "Concat", "Gather", "Slice",
       "Transpose", "Softmax", "If", "Loop", "Scan", "Constant", "ConstantOfShape", "Expand",
       "Tile", "Range", "Pad", "Resize", "Einsum", "TopK", "NonZero", "Unique", "Split",
       "SequenceConstruct", "LSTM", "Where", "Cast", "OneHot", "Flatten", "Identity",
       "NotAnOp", "", "Add\n" + PAYLOAD]


def _graphs(g, out=None) -> list:
    """The graph and every subgraph reachable through attributes."""
    out = [] if out is None else out
    out.append(g)
    for n in g.node:
        for a in n.attribute:
            if a.HasField("g"):
                _graphs(a.g, out)
            for sub in a.graphs:
                _graphs(sub, out)
    return out


def _containers(m) -> list:
    """Everything holding nodes: graphs, subgraphs and function bodies."""
    return _graphs(m.graph) + list(m.functions)


def _names(m) -> set[str]:
    names = set()
    for c in _containers(m):
        for n in c.node:
            names.update(n.input)
            names.update(n.output)
        if hasattr(c, "initializer"):
            names.update(t.name for t in c.initializer)
            names.update(v.name for v in [*c.input, *c.output, *c.value_info])
    names.discard("")
    return names


def rename(m, rng: random.Random) -> None:
    """Rename a value everywhere (the model stays wired) or in one place, or rename an
    attribute, a node, a graph, a function; new names are hostile strings."""
    new = rng.choice(HOSTILE_NAMES)
    containers = _containers(m)
    kind = rng.randrange(4)
    if kind == 0 and _names(m):
        old = rng.choice(sorted(_names(m)))
        everywhere = rng.random() < 0.8
        for c in containers:
            for n in c.node:
                for field in (n.input, n.output):
                    for i, v in enumerate(field):
                        if v == old and (everywhere or rng.random() < 0.5):
                            field[i] = new
            if hasattr(c, "initializer"):
                for v in [*c.initializer, *c.input, *c.output, *c.value_info]:
                    if v.name == old:
                        v.name = new
        return
    nodes = [n for c in containers for n in c.node]
    if kind == 1 and nodes:
        node = rng.choice(nodes)
        if node.attribute:
            rng.choice(node.attribute).name = new
        else:
            node.name = new
    elif kind == 2 and m.functions:
        fn = rng.choice(m.functions)
        fn.name = new
    else:
        rng.choice(_graphs(m.graph)).name = new


def huge_dims(m, rng: random.Random) -> None:
    """Declare huge, negative or many dims on an initializer or a graph input/output."""
    dims = rng.choice([[2**40], [2**31, 2**31], [-1], [1] * 100, [0, 2**62], [2**63 - 1]])
    inits = [t for g in _graphs(m.graph) for t in g.initializer]
    if inits and rng.random() < 0.6:
        t = rng.choice(inits)
        del t.dims[:]
        t.dims.extend(dims)
        return
    values = [*m.graph.input, *m.graph.output]
    if values:
        shape = rng.choice(values).type.tensor_type.shape
        del shape.dim[:]
        for d in dims:
            shape.dim.add().dim_value = d


def bomb_node(m, rng: random.Random) -> None:
    """A node whose constant inputs ask for a huge output (folded at load time)."""
    from onnx import TensorProto, helper, numpy_helper

    import numpy as np

    big = rng.choice([[2**31, 2**31], [2**16, 2**16], [8192, 8192], [2**62], [-1, 4]])
    shape = numpy_helper.from_array(np.array(big, np.int64), "fz_shape")
    one = numpy_helper.from_array(np.ones((1, 1), np.float32), "fz_one")
    op = rng.choice(["ConstantOfShape", "Expand", "Tile", "Range", "Reshape"])
    inputs = {"ConstantOfShape": ["fz_shape"], "Expand": ["fz_one", "fz_shape"],
              "Tile": ["fz_one", "fz_shape"], "Reshape": ["fz_one", "fz_shape"],
              "Range": ["fz_zero", "fz_limit", "fz_step"]}[op]
    m.graph.initializer.extend([shape, one,
                                numpy_helper.from_array(np.array(0, np.int64), "fz_zero"),
                                numpy_helper.from_array(np.array(big[0], np.int64), "fz_limit"),
                                numpy_helper.from_array(np.array(1, np.int64), "fz_step")])
    m.graph.node.append(helper.make_node(op, inputs, ["fz_out"]))
    m.graph.output.append(helper.make_tensor_value_info("fz_out", TensorProto.FLOAT, None))


def attribute(m, rng: random.Random) -> None:
    """Change an attribute's value (interesting ints, non-finite floats, hostile strings),
    its declared type, or drop it."""
    attrs = [(n, a) for c in _containers(m) for n in c.node for a in n.attribute]
    if not attrs:
        return
    node, a = rng.choice(attrs)
    edit = rng.randrange(5)
    if edit == 0:
        a.i = rng.choice(INTERESTING) % 2**63 * rng.choice([1, -1])
        del a.ints[:]
        a.ints.extend(rng.choice([[2**40], [-(2**40), 0], [0] * 10, []]))
    elif edit == 1:
        a.f = rng.choice([float("nan"), float("inf"), -1e38, 0.0])
    elif edit == 2:
        a.s = rng.choice(HOSTILE_NAMES).encode("utf-8", "replace")
    elif edit == 3:
        a.type = rng.choice(list(range(0, 16)) + [99])
    else:
        node.attribute.remove(a)


def op_type(m, rng: random.Random) -> None:
    """Another op (or domain) for a node: unsupported, control flow, or hostile."""
    nodes = [n for c in _containers(m) for n in c.node]
    if nodes:
        node = rng.choice(nodes)
        if rng.random() < 0.8:
            node.op_type = rng.choice(OPS)
        else:
            node.domain = rng.choice(["local", "ai.onnx.ml", "com.microsoft", "x" * 300, ""])


def node_order(m, rng: random.Random) -> None:
    """Delete, duplicate or swap nodes (unwired or doubly-produced values)."""
    c = rng.choice(_containers(m))
    nodes = list(c.node)
    if not nodes:
        return
    i, j = rng.randrange(len(nodes)), rng.randrange(len(nodes))
    edit = rng.randrange(3)
    if edit == 0:
        del nodes[i]
    elif edit == 1:
        nodes.insert(i, nodes[i])
    else:
        nodes[i], nodes[j] = nodes[j], nodes[i]
    del c.node[:]
    c.node.extend(nodes)


def nesting(m, rng: random.Random) -> None:
    """Subgraphs nested deeply (If inside If) or a function that calls itself."""
    from onnx import TensorProto, helper

    if m.functions and rng.random() < 0.5:
        fn = rng.choice(m.functions)
        if fn.node:
            node = fn.node[rng.randrange(len(fn.node))]
            node.op_type, node.domain = fn.name, fn.domain
        return
    depth = rng.choice([10, 64, 99, 150, 400])
    out = helper.make_tensor_value_info("fz_nest", TensorProto.FLOAT, [1])
    leaf = helper.make_graph([helper.make_node("Constant", [], ["fz_nest"],
                                               value_float=1.0)], "leaf", [], [out])
    body = leaf
    for _ in range(depth):  # the chain goes down one branch: the model grows linearly
        node = helper.make_node("If", ["fz_cond"], ["fz_nest"], then_branch=body,
                                else_branch=leaf)
        body = helper.make_graph([node], "nest", [], [out])
    cond = helper.make_tensor("fz_cond", TensorProto.BOOL, [], [True])
    m.graph.initializer.append(cond)
    m.graph.node.extend(body.node)
    m.graph.output.append(out)


def opset(m, rng: random.Random) -> None:
    """Opset / IR versions out of range, or the default domain's import removed."""
    edit = rng.randrange(3)
    if edit == 0 and m.opset_import:
        rng.choice(m.opset_import).version = rng.choice([0, 1, 7, 99, 2**40, -1])
    elif edit == 1:
        m.ir_version = rng.choice([0, 1, 3, 99, -1])
    else:
        del m.opset_import[:]


def tensor_data(m, rng: random.Random) -> None:
    """A tensor's element type, its data truncated/extended, or its data made external
    (missing, outside the model's folder, a device that never ends)."""
    tensors = [t for g in _graphs(m.graph) for t in g.initializer]
    tensors += [a.t for c in _containers(m) for n in c.node for a in n.attribute
                if a.HasField("t")]
    if not tensors:
        return
    t = rng.choice(tensors)
    edit = rng.randrange(4)
    if edit == 0:
        t.data_type = rng.choice(list(range(0, 24)) + [99])
    elif edit == 1:
        t.raw_data = t.raw_data[: rng.randrange(len(t.raw_data) + 1)] if t.raw_data else b"\0"
    elif edit == 2:
        t.float_data.extend([1.0] * rng.choice([1, 1000]))
        t.int64_data.extend([2**62])
    else:
        from onnx import TensorProto

        t.data_location = TensorProto.EXTERNAL
        del t.external_data[:]
        for key, value in (("location", rng.choice(["missing.bin", "../../../etc/hostname",
                                                    "/dev/zero", "/proc/self/mem", "", "."])),
                           ("offset", str(rng.choice([0, 2**40, -1]))),
                           ("length", str(rng.choice([4, 2**40, -1])))):
            entry = t.external_data.add()
            entry.key, entry.value = key, value


EDITS = [rename, rename, huge_dims, bomb_node, attribute, attribute, op_type, node_order,
         nesting, opset, tensor_data]


def onnx_edit(data: bytes, rng: random.Random) -> bytes:
    """One structure-aware edit of a serialised ONNX model (unchanged if it doesn't parse)."""
    import onnx

    m = onnx.ModelProto()
    try:
        m.ParseFromString(data)
    except Exception:  # noqa: BLE001 - protobuf raises its own DecodeError and others
        return data
    if not m.HasField("graph"):
        return data
    rng.choice(EDITS)(m, rng)
    try:
        return m.SerializeToString()
    except Exception:  # noqa: BLE001 - e.g. nesting past protobuf's recursion limit
        return data
