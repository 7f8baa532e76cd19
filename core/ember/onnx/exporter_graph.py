"""The ONNX graph an export builds (see :mod:`.exporter`): value names of the tape's slots,
their static and symbolic shapes, initializers and nodes; the export's errors; :class:`Dim`,
a size that follows the batch. The per-op emitters are in :mod:`.exporter_ops`.

>>> Dim(1, 0) == Dim(1, 0), follows((2, Dim(1, 0)))
(True, True)
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import EmberError, UnsupportedOpError
from ..contract.program import Slot

class OnnxExportError(EmberError, ValueError):
    """A module or inputs that can't be exported (see the message for what would be valid)."""


class OnnxExportUnsupportedError(OnnxExportError, UnsupportedOpError):
    """The traced module calls an op (or op setting) the ONNX exporter has no mapping for."""


@dataclass(frozen=True)
class Dim:
    """A size that follows the batch: ``k * batch + c`` (see :mod:`.exporter_batch`).

    >>> Dim(3, 0).at(5)
    15
    """

    k: int
    c: int

    def at(self, batch: int) -> int:
        return self.k * batch + self.c


def follows(value) -> bool:
    """Whether a literal (or a nest of them) holds a :class:`Dim`."""
    if isinstance(value, (list, tuple)):
        return any(follows(v) for v in value)
    return isinstance(value, Dim)


#: ops whose emitters take batch-dependent literals (shapes, slice bounds)
_SYMBOLIC_OPS = ("reshape", "expand", "full", "slice")

class Graph:
    """Nodes, initializers and the value names of a tape's slots."""

    def __init__(self, backend, opset: int):
        import numpy as np
        from onnx import helper

        self.np, self.helper = np, helper
        self.backend, self.opset = backend, opset
        #: value name -> its shape with :class:`Dim` where it follows the batch
        self.symbolic: dict[str, tuple] = {}
        self._batch: str | None = None
        self.nodes, self.initializers, self.inputs, self.outputs = [], [], [], []
        self.names: dict[int, str] = {}  # slot -> value name
        self.shapes: dict[str, tuple] = {}
        self.dtypes: dict[str, str] = {}  # value name -> numpy dtype name
        self.arrays: dict = {}  # initializer name -> its numpy array
        self.first_input: str | None = None
        self._count = 0

    # ------------------------------------------------------------------ values
    def fresh(self, stem: str) -> str:
        self._count += 1
        return f"{stem}_{self._count}"

    def _array(self, prim):
        return self.backend.to_data(prim).to_numpy()

    def _value_info(self, name: str, prim):
        array_type = self.helper.np_dtype_to_tensor_dtype(self._array_dtype(prim))
        # the batch itself is "batch"; other sizes that follow it are left unnamed
        dims = [("batch" if d == Dim(1, 0) else None) if isinstance(d, Dim) else d
                for d in self.symbolic[name]]
        return self.helper.make_tensor_value_info(name, array_type, dims)

    def _array_dtype(self, prim):
        return self.np.dtype(self.backend.dtype(prim).name)

    def add_input(self, slot: int, name: str, prim, symbolic: tuple | None = None) -> None:
        self.names[slot], self.shapes[name] = name, tuple(self.backend.shape(prim))
        self.symbolic[name] = symbolic or self.shapes[name]
        self.dtypes[name] = self.backend.dtype(prim).name
        self.first_input = self.first_input or name
        self.inputs.append(self._value_info(name, prim))

    def add_constant(self, slot: int, prim) -> None:
        self.names[slot] = self.const(self._array(prim), "weight")

    def const(self, array, stem: str = "const") -> str:
        """An initializer holding ``array`` (a numpy array or a list of ints)."""
        np = self.np
        array = np.asarray(array, dtype=np.int64) if isinstance(array, (list, tuple)) else array
        name = self.fresh(stem)
        self.initializers.append(self.helper.make_tensor(
            name, self.helper.np_dtype_to_tensor_dtype(array.dtype), array.shape,
            array.tobytes(), raw=True,
        ))
        self.shapes[name], self.dtypes[name] = tuple(array.shape), array.dtype.name
        self.symbolic[name] = self.shapes[name]
        self.arrays[name] = array
        return name

    def scalar(self, value: float, like: str) -> str:
        """A 0-d initializer of the dtype ``like``'s elements have (float32 by default)."""
        return self.const(self.np.asarray(value, dtype=self.dtypes[like]))

    def node(self, op_type: str, inputs: list, outputs: int = 1, **attrs):
        """Append a node; returns its output name (or names when ``outputs`` > 1)."""
        names = [self.fresh(op_type.lower()) for _ in range(outputs)]
        inputs = ["" if i is None else i for i in inputs]
        self.nodes.append(self.helper.make_node(op_type, inputs, names, **attrs))
        return names[0] if outputs == 1 else names

    # ------------------------------------------------------------------ steps
    def add_step(self, emitters: dict, step, keep, args: tuple | None = None,
                 shapes: dict | None = None):
        """Emit ``step`` with its entry in ``emitters``; ``args`` are its arguments with
        batch-dependent literals as :class:`Dim` and ``shapes`` the slots' symbolic shapes (a
        dynamic batch)."""
        emit = emitters.get(step.name)
        if emit is None:
            raise OnnxExportUnsupportedError(
                f"onnx export: no ONNX mapping for the backend op {step.name!r} (ops with one: "
                f"{', '.join(sorted(emitters))})"
            )
        args = step.args if args is None else args
        if step.name not in _SYMBOLIC_OPS and follows(args):
            raise OnnxExportUnsupportedError(
                f"onnx export: {step.name} with an argument that depends on the batch size "
                f"({args}) has no dynamic-batch mapping; export with dynamic_batch=False"
            )
        result = emit(self, *(self._arg(a) for a in args))
        outs = (result,) if isinstance(step.out, int) else tuple(result)
        for slot, name in zip(step.outputs(), outs):
            self.names[slot] = name
            self.shapes[name] = tuple(self.backend.shape(keep[slot]))
            self.symbolic[name] = (shapes or {}).get(slot) or self.shapes[name]
            self.dtypes[name] = self.backend.dtype(keep[slot]).name

    def _arg(self, a):
        if isinstance(a, Slot):
            return self.names[a.id]
        if isinstance(a, (list, tuple)) and any(isinstance(v, Slot) for v in a):
            return type(a)(self._arg(v) for v in a)
        return a

    def add_output(self, slot: int, name: str, prim) -> None:
        value = self.names[slot]
        producer = next((n for n in self.nodes if value in n.output), None)
        if producer is None or value in [o.name for o in self.outputs]:
            # a graph input, an initializer or another output: an Identity gives it its name
            self.nodes.append(self.helper.make_node("Identity", [value], [name]))
        else:
            for node in self.nodes:
                for field in (node.input, node.output):
                    field[:] = [name if v == value else v for v in field]
            self.names = {s: name if v == value else v for s, v in self.names.items()}
        self.symbolic[name] = self.symbolic[value]
        self.outputs.append(self._value_info(name, prim))

    def model(self, graph_name: str):
        h = self.helper
        graph = h.make_graph(self.nodes, graph_name, self.inputs, self.outputs,
                             self.initializers)
        opset = [h.make_opsetid("", self.opset)]
        model = h.make_model(graph, opset_imports=opset, producer_name="ember",
                             ir_version=h.find_min_ir_version_for(opset))
        return model

    # ------------------------------------------------------------------ shape vectors
    def batch(self) -> str:
        """The runtime batch size (dim 0 of the first input), a 1-element int64 vector."""
        if self._batch is None:
            self._batch = self.node("Shape", [self.first_input], start=0, end=1)
        return self._batch

    def dims(self, dims) -> str:
        """An int64 vector of ``dims``: a constant, or with each :class:`Dim` computed from
        the runtime batch."""
        if not follows(dims):
            return self.const(list(dims))
        parts, fixed = [], []
        for d in dims:
            if not isinstance(d, Dim):
                fixed.append(d)
                continue
            if fixed:
                parts.append(self.const(fixed))
                fixed = []
            size = self.batch()
            if d.k != 1:
                size = self.node("Mul", [size, self.const([d.k])])
            if d.c:
                size = self.node("Add", [size, self.const([d.c])])
            parts.append(size)
        if fixed:
            parts.append(self.const(fixed))
        return parts[0] if len(parts) == 1 else self.node("Concat", parts, axis=0)
