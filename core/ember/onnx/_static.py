"""Convert-time folding of shape arithmetic on static shapes (``ember onnx convert``).

Exporters write ``Shape -> Gather -> Unsqueeze -> Concat -> Reshape`` chains even when every
dim is known. Where ONNX shape inference proves a value's shape static, its ``Shape`` (and
``Size``) node becomes a constant, and the runtime's load-time folding (``OnnxModule._fold``)
then turns the rest of the chain into constants too, so the generated code reads
``x.reshape((1, 128, 12, 32))`` instead of a page of ``call('Shape', ...)``.
"""

from __future__ import annotations

import os

from ._graph import Node


def _static_info(vi) -> tuple[int | None, tuple | None]:
    """(element type or None, dims or None) of a value_info; a dim is None where it is not
    a fixed number."""
    t = vi.type
    if not t.HasField("tensor_type"):
        return None, None
    elem = t.tensor_type.elem_type or None
    if not t.tensor_type.HasField("shape"):
        return elem, None
    return elem, tuple(int(d.dim_value) if d.HasField("dim_value") and d.dim_value >= 0
                       else None for d in t.tensor_type.shape.dim)


def static_dims(info: dict, name: str) -> tuple[int, ...] | None:
    """``name``'s dims when every one is a fixed number, else None."""
    dims = info.get(name, (None, None))[1]
    return None if dims is None or None in dims else dims


def _infer(blob: bytes) -> bytes:
    import onnx

    model = onnx.ModelProto()
    model.ParseFromString(blob)
    return onnx.shape_inference.infer_shapes(model, data_prop=True).SerializeToString()


def _infer_isolated(blob: bytes) -> bytes | None:
    """onnx's C++ shape inference of a serialized model, in a forked child where the platform
    forks: a malformed model can trip an assertion there (``std::clamp``'s, an abort), which
    must not take this interpreter down. None when inference fails or the child dies."""
    if not hasattr(os, "fork"):  # Windows, the browser: in this process
        try:
            return _infer(blob)
        except Exception:  # noqa: BLE001 - inference refused the model
            return None
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: infer, write, leave without running the parent's cleanup
        status = 1
        try:
            os.close(read)
            os.dup2(os.open(os.devnull, os.O_WRONLY), 2)  # an assertion's text: not the user's
            with os.fdopen(write, "wb") as out:
                out.write(_infer(blob))
            status = 0
        finally:
            os._exit(status)
    os.close(write)
    with os.fdopen(read, "rb") as result:
        blob = result.read()
    _, status = os.waitpid(pid, 0)
    return blob if os.waitstatus_to_exitcode(status) == 0 else None


def inferred_info(source, shapes: dict) -> dict[str, tuple]:
    """ONNX name -> (element type or None, dims or None; see :func:`_static_info`) for every
    value of the main graph that inference describes (after fixing the input dims in ``shapes``); empty when
    inference fails."""
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
    blob = _infer_isolated(copy.SerializeToString())
    if blob is None:  # no inference, no folding: the code stays correct
        return {}
    inferred = onnx.ModelProto()
    inferred.ParseFromString(blob)
    g = inferred.graph
    return {vi.name: _static_info(vi) for vi in [*g.input, *g.value_info, *g.output]}


def fix_input_shapes(module, shapes: dict) -> None:
    """Declare the given inputs' dims (name -> dims) in place of the file's; they must agree
    with what the graph declares (its rank, its fixed dims)."""
    graph = module.graph
    for name, dims in shapes.items():
        if name not in graph.inputs:
            raise ValueError(f"onnx convert: no graph input named {name!r}; the inputs are "
                             f"{graph.inputs}")
        dims = tuple(int(d) for d in dims)
        elem, declared = graph.input_info.get(name, (None, None))
        given = f"shape {name}={','.join(map(str, dims))}"
        if any(d < 1 for d in dims):
            raise ValueError(f"onnx convert: {given}: every dim must be at least 1")
        if declared is not None:
            shown = "(" + ", ".join(str(d) if isinstance(d, int) and d > 0 else repr(d)
                                    if isinstance(d, str) and d else "?" for d in declared) + ")"
            if len(declared) != len(dims):
                raise ValueError(f"onnx convert: {given} has {len(dims)} dims; the graph "
                                 f"declares {name} with {len(declared)}: {shown}")
            fixed = [k for k, d in enumerate(declared)
                     if isinstance(d, int) and d > 0 and d != dims[k]]
            if fixed:
                raise ValueError(f"onnx convert: {given}: dim {fixed[0]} is fixed to "
                                 f"{declared[fixed[0]]} in the graph: {shown}")
        graph.input_info[name] = (elem, dims)


def fold_static(module, source, shapes: dict) -> dict[str, tuple]:
    """Turn ``Shape``/``Size`` of statically shaped values into constants, then fold.
    Returns what inference knows of each value (see :func:`inferred_info`)."""
    import numpy as np

    graph = module.graph
    info = inferred_info(source, shapes)
    nodes = []
    for n in graph.nodes:
        dims = static_dims(info, n.inputs[0]) if n.inputs and n.domain in (
            "", "ai.onnx") else None
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
    return info
