"""Convert-time folding of shape arithmetic on static shapes (``ember onnx convert``).

Exporters write ``Shape -> Gather -> Unsqueeze -> Concat -> Reshape`` chains even when every
dim is known. Where ONNX shape inference proves a value's shape static, its ``Shape`` (and
``Size``) node becomes a constant, and the runtime's load-time folding (``OnnxModule._fold``)
then turns the rest of the chain into constants too, so the generated code reads
``x.reshape((1, 128, 12, 32))`` instead of a page of ``call('Shape', ...)``.
"""

from __future__ import annotations

from ._graph import Node


def _static_dims(vi) -> tuple[int, ...] | None:
    t = vi.type
    if not t.HasField("tensor_type") or not t.tensor_type.HasField("shape"):
        return None
    dims = []
    for d in t.tensor_type.shape.dim:
        if not d.HasField("dim_value") or d.dim_value < 0:
            return None
        dims.append(int(d.dim_value))
    return tuple(dims)


def inferred_shapes(source, shapes: dict) -> dict[str, tuple[int, ...]]:
    """ONNX name -> static shape for every value of the main graph that inference pins down
    (after fixing the input dims in ``shapes``); empty when inference fails."""
    import onnx

    from ._proto import _parse

    proto, *_ = _parse(source)
    copy = onnx.ModelProto()
    copy.CopyFrom(proto)
    for vi in copy.graph.input:
        if vi.name in shapes:
            dims = vi.type.tensor_type.shape.dim
            del dims[:]
            for d in shapes[vi.name]:
                dims.add().dim_value = int(d)
    try:
        inferred = onnx.shape_inference.infer_shapes(copy, data_prop=True)
    except Exception:  # noqa: BLE001 - no inference, no folding: the code stays correct
        return {}
    g = inferred.graph
    out = {}
    for vi in [*g.input, *g.value_info, *g.output]:
        dims = _static_dims(vi)
        if dims is not None:
            out[vi.name] = dims
    return out


def fix_input_shapes(module, shapes: dict) -> None:
    """Declare the given inputs' dims (name -> dims) in place of the file's."""
    graph = module.graph
    for name, dims in shapes.items():
        if name not in graph.inputs:
            raise ValueError(f"onnx convert: no graph input named {name!r}; the inputs are "
                             f"{graph.inputs}")
        elem, _ = graph.input_info.get(name, (None, None))
        graph.input_info[name] = (elem, tuple(int(d) for d in dims))


def fold_static(module, source, shapes: dict) -> None:
    """Turn ``Shape``/``Size`` of statically shaped values into constants, then fold."""
    import numpy as np

    graph = module.graph
    known = inferred_shapes(source, shapes)
    nodes = []
    for n in graph.nodes:
        dims = known.get(n.inputs[0]) if n.inputs and n.domain in ("", "ai.onnx") else None
        if dims is not None and n.op_type == "Shape":
            start, end = n.attrs.get("start", 0), n.attrs.get("end", None)
            value = np.array(dims[slice(start, end)], np.int64)
            n = Node("Constant", [], n.outputs, {"value": value}, n.domain, n.name)
        elif dims is not None and n.op_type == "Size":
            value = np.array(int(np.prod(dims, dtype=np.int64)), np.int64)
            n = Node("Constant", [], n.outputs, {"value": value}, n.domain, n.name)
        nodes.append(n)
    graph.nodes = nodes
    module._fold(graph)
