"""One client's state on a Remote server, and the reader of its batches.

A :class:`Session` holds the connection's tensors by the ids the client chose; it can reach
no other table, so a client can only touch its own tensors. Every record is checked before
anything runs: its shape, the op (a registry op, never a data op), each argument's type (plain
JSON values, dtypes by name, this session's handles at the op's tensor positions only), the
size of each result (from the op's shape rule) against the tensor and session limits, and the
op's working memory and work (:mod:`~ember.remote.cost`) against the per-op limits.

A frame that breaks the protocol raises :class:`~ember.remote.errors.ProtocolError` (the
server closes that connection). An op that fails (a limit, a backend error) is not a protocol
error: its results become *failed* handles holding the error, ops on them fail the same way,
and a read of one answers the error, which the client raises as its original type.

>>> from ember.backends import get_backend
>>> from ember.remote import protocol
>>> s = Session(get_backend("numpy"))
>>> frame = protocol.encode_batch([
...     ["put", 1, "float32", [2], 0, 8],
...     ["op", "float_add", [2], [{"t": 1}, {"t": 1}]],
...     ["read", 5, 2]], [bytes(memoryview(bytearray(8)).cast("B"))])
>>> [protocol.decode_reply(r)[1] for r in s.handle(frame)]
[{'shape': [2], 'dtype': 'float32'}]
"""

from __future__ import annotations

from collections.abc import Callable, Generator

from .. import dtype as dt
from ..contract import registry
from ..contract.registry import Kind, Spec
from ..errors import ShapeError
from ..tensordata import TensorData
from . import protocol
from .cost import op_cost
from .errors import LimitError, ProtocolError
from .limits import ServerLimits
from .scheduler import LIGHT_WORK

_MAX_ID = 1 << 53
_DTYPES = {d.name: d for d in dt.ALL}
_NO_OPS = frozenset({"from_data", "to_data", "to_data_async", "shape", "dtype"})


class Session:
    """The tensors of one connection and the reader of its frames (see the module doc).

    >>> import struct
    >>> from ember.backends import get_backend
    >>> s = Session(get_backend("numpy"))
    >>> frame = protocol.encode_batch([["put", 1, "float32", [2], 0, 8],
    ...                                ["op", "float_add", [2], [{"t": 1}, {"t": 1}]],
    ...                                ["read", 5, 2]], [struct.pack("<2f", 1.0, 2.0)])
    >>> request, header, payload = protocol.decode_reply(s.handle(frame)[0])
    >>> request, struct.unpack("<2f", payload), len(s.tensors)
    (5, (2.0, 4.0), 2)
    >>> s.close(); len(s.tensors), s.bytes
    (0, 0)
    """

    def __init__(self, backend, limits: ServerLimits | None = None,
                 offload: Callable[[list, int, str], list] | None = None):
        self.backend = backend
        self.limits = limits or ServerLimits()
        #: runs the batch of an op of more than LIGHT_WORK elsewhere and returns its replies
        #: (:meth:`~ember.remote.opworker.OpWorker.run`); None: such ops run here
        self.offload = offload
        self.tensors: dict[int, tuple] = {}  # id → (primitive, Spec, nbytes)
        self.failed: dict[int, tuple[str, str]] = {}  # id → (error type name, message)
        self.bytes = 0  # live tensor bytes
        self.ops = 0  # ops run
        self._plans: dict[tuple, tuple] = {}

    # ------------------------------------------------------------------ frames
    def handle(self, frame) -> list[bytes]:
        """Run one batch; return the replies to its reads."""
        steps = self.steps(frame)
        while True:
            try:
                next(steps)
            except StopIteration as done:
                return done.value

    def steps(self, frame) -> Generator[None, None, list[bytes]]:
        """:meth:`handle` one record at a time: a generator that pauses before each record,
        yielding its work (:meth:`work`), and returns the replies, so that the server's
        scheduler can run other connections' records in between (one client's long batch
        does not hold the others up) and small records beside a large one.

        >>> from ember.backends import get_backend
        >>> s = Session(get_backend("numpy"))
        >>> steps = s.steps(protocol.encode_batch([["free", []], ["free", []]], []))
        >>> next(steps), next(steps)  # a pause before each of the two records
        (0, 0)
        >>> try:
        ...     next(steps)
        ... except StopIteration as done:
        ...     print(done.value)  # the replies to its reads: none
        []
        """
        records, blobs = protocol.decode_batch(frame)
        replies = []
        for rec in records:
            yield self.work(rec)
            if not isinstance(rec, list) or not rec or not isinstance(rec[0], str):
                raise ProtocolError("a record must be a list starting with its kind")
            kind = rec[0]
            if kind == "op":
                self._op(rec)
            elif kind == "put":
                self._put(rec, blobs)
            elif kind == "read":
                replies.append(self._read(rec))
            elif kind == "free":
                self._free(rec)
            else:
                raise ProtocolError(f"unknown record kind {kind[:20]!r}; valid: op, put, "
                                    "read, free")
        return replies

    def close(self) -> None:
        """Free every tensor of the session (the connection ended)."""
        self.tensors.clear()
        self.failed.clear()
        self.bytes = 0

    def closing(self) -> Generator[None, None, None]:
        """:meth:`close` as a one-step job for the scheduler: tensors are freed on the thread
        that runs the backend.

        >>> from ember.backends import get_backend
        >>> s = Session(get_backend("numpy"))
        >>> list(s.closing()), s.bytes
        ([0], 0)
        """
        self.close()
        yield 0

    def work(self, rec) -> int:
        """The work of record ``rec`` (multiply-adds or element visits of an op, bytes of a
        put or a read), from shapes alone, for the scheduler; 0 for a record that will fail
        its checks (it takes no time).

        >>> from ember.backends import get_backend
        >>> s = Session(get_backend("numpy"))
        >>> s.work(["put", 1, "float32", [64, 64], 0, 16384]), s.work(["free", []])
        (16384, 0)
        """
        try:
            if rec[0] == "op":
                op = registry.REGISTRY[rec[1]]
                return self._plan(op, self._args(op, rec[3])[1])[2]
            if rec[0] == "put":
                return int(rec[5])
            if rec[0] == "read":
                return self._get(rec[2])[2]
        except Exception:  # noqa: BLE001 - the record's own checks will say what is wrong
            return 0
        return 0

    # ------------------------------------------------------------------ records
    def _new_id(self, i) -> int:
        if type(i) is not int or not 0 < i < _MAX_ID:
            raise ProtocolError("a tensor id must be an integer in [1, 2**53)")
        if i in self.tensors or i in self.failed:
            raise ProtocolError(f"tensor id {i} is already in use")
        if len(self.tensors) + len(self.failed) >= self.limits.max_handles:
            raise ProtocolError(f"more than max_handles={self.limits.max_handles} live tensors")
        return i

    def _get(self, i):
        """The entry of handle ``i``, or the error it failed with (raised as _Failed)."""
        entry = self.tensors.get(i) if type(i) is int else None
        if entry is None:
            if type(i) is int and i in self.failed:
                raise _Failed(self.failed[i])
            raise ProtocolError(f"unknown tensor id {i!r} (not created, or freed)")
        return entry

    def _spec_ok(self, spec, what: str) -> int:
        """The byte size of a result ``spec``; LimitError past the limits."""
        shape, dtype = spec
        lim = self.limits
        if len(shape) > lim.max_ndim:
            raise LimitError(f"{what}: {len(shape)} dims; max_ndim is {lim.max_ndim}")
        n = dt.as_dtype(dtype).itemsize
        for s in shape:
            if type(s) is not int or s < 0:
                raise LimitError(f"{what}: invalid dimension {s!r}")
            n *= s
        if n > lim.max_tensor_bytes:
            raise LimitError(f"{what}: a tensor of {n} bytes; the server's max_tensor_bytes "
                             f"is {lim.max_tensor_bytes}")
        return n

    def _reserve(self, n: int, what: str) -> None:
        if self.bytes + n > self.limits.max_session_bytes:
            raise LimitError(f"{what}: {n} more bytes would pass the session's memory limit "
                             f"(max_session_bytes={self.limits.max_session_bytes}, "
                             f"{self.bytes} in use); free tensors or ask for a higher limit")

    def _put(self, rec: list, blobs: memoryview) -> None:
        if len(rec) != 6:
            raise ProtocolError("put: expected [put, id, dtype, shape, offset, nbytes]")
        _, i, name, shape, offset, nbytes = rec
        i = self._new_id(i)
        if not isinstance(name, str) or name not in _DTYPES or not isinstance(shape, list):
            raise ProtocolError("put: bad dtype or shape")
        if type(offset) is not int or type(nbytes) is not int or not (
                0 <= offset and 0 <= nbytes and offset + nbytes <= len(blobs)):
            raise ProtocolError("put: the byte range is outside the message's blobs")
        try:
            spec = Spec(tuple(shape), _DTYPES[name])
            n = self._spec_ok(spec, "from_data")
            if n != nbytes:
                raise ProtocolError(f"put: {nbytes} bytes for a tensor of {n}")
            self.backend.caps.check_dtype(spec.dtype, "from_data", self.backend.name)
            self._reserve(n, "from_data")
            data = TensorData(bytes(blobs[offset:offset + nbytes]), spec.shape, spec.dtype)
            prim = self.backend.from_data(data)
        except ProtocolError:
            raise
        except Exception as e:  # a limit or a backend's error: this tensor fails, not the link
            self.failed[i] = (type(e).__name__, str(e))
            return
        self.tensors[i] = (prim, spec, n)
        self.bytes += n

    def _op(self, rec: list) -> None:
        if len(rec) != 4 or not isinstance(rec[1], str) or not isinstance(rec[2], list) \
                or not isinstance(rec[3], list):
            raise ProtocolError("op: expected [op, name, [out ids], [args]]")
        _, name, outs, raw = rec
        op = registry.REGISTRY.get(name)
        if op is None or name in _NO_OPS:
            raise ProtocolError(f"op: {name[:40]!r} is not an op the server runs")
        if len(raw) != len(op.args) or len(outs) != op.outputs:
            raise ProtocolError(f"op {name}: expected {len(op.args)} arguments and "
                                f"{op.outputs} result ids")
        outs = [self._new_id(i) for i in outs]
        if len(set(outs)) != len(outs):
            raise ProtocolError(f"op {name}: repeated result ids")
        try:
            args, specs = self._args(op, raw)
            _operands_fit(op, specs)
            out_specs, sizes, work, scratch = self._plan(op, specs)
            self._reserve(sum(sizes), name)
            if self.offload is not None and work > LIGHT_WORK:
                results = self._offloaded(op, rec, sum(sizes), scratch)
            else:
                result = getattr(self.backend, name)(*args)
                results = [result] if op.outputs == 1 else list(result)
            for prim, spec in zip(results, out_specs):
                if tuple(self.backend.shape(prim)) != spec.shape:
                    raise LimitError(f"{name}: a result of shape {self.backend.shape(prim)} "
                                     f"where the op's rule gives {spec.shape} (operands that "
                                     "break the op's contract)")
        except ProtocolError:
            raise
        except _Failed as f:
            for i in outs:
                self.failed[i] = f.error
            return
        except Exception as e:  # the op's own error: its results fail, the link stays up
            text = str(e) if str(e).startswith(name) else f"{name}: {e}"
            for i in outs:
                self.failed[i] = (type(e).__name__, text)
            return
        for i, prim, spec, n in zip(outs, results, out_specs, sizes):
            self.tensors[i] = (prim, spec, n)
            self.bytes += n
        self.ops += 1

    def _offloaded(self, op: registry.Op, rec: list, result_bytes: int, scratch: int) -> list:
        """Run op record ``rec`` in the worker process: its operands go there as puts, its
        results come back as reads. The worker may grow by three times its operands' and
        ``result_bytes`` (received, held as arrays, encoded) plus the op's ``scratch``; an
        error there fails the op's results here."""
        ids = dict.fromkeys(i for k in op.tensor_positions if rec[3][k] is not None
                            for i in map(_ref, _listed(rec[3][k])))
        records, blobs, offset = [], [], 0
        for i in ids:
            prim, spec, _ = self.tensors[i]
            blobs.append(self.backend.to_data(prim).buffer)
            records.append(["put", i, spec.dtype.name, list(spec.shape), offset, len(blobs[-1])])
            offset += len(blobs[-1])
        records += [rec, *(["read", k, i] for k, i in enumerate(rec[2]))]
        budget = 3 * (offset + result_bytes) + scratch
        results = []
        for reply in self.offload(protocol.batch_parts(records, blobs), budget, op.name):
            _, header, payload = protocol.decode_reply(reply)
            if "error" in header:
                raise _Failed(tuple(header["error"]))
            data = TensorData(payload, tuple(header["shape"]), _DTYPES[header["dtype"]])
            results.append(self.backend.from_data(data))
        return results

    def _plan(self, op: registry.Op, specs: list) -> tuple[list, list, int, int]:
        """The op's result Specs (from its shape rule), byte sizes, work and scratch bytes,
        checked against the limits with its work and intermediates
        (:func:`~ember.remote.cost.op_cost`); cached per (op, input specs, parameters): a
        model's ops repeat."""
        try:
            key = (op.name, *specs)
            hit = self._plans.get(key)
        except TypeError:  # a list among the arguments (cat): not hashable, not cached
            key = hit = None
        if hit is not None:
            return hit
        out = op.infer(*specs)
        out_specs = [Spec(tuple(s.shape), dt.as_dtype(s.dtype))
                     for s in ([out] if op.outputs == 1 else out)]
        sizes = [self._spec_ok(s, op.name) for s in out_specs]
        work, scratch = op_cost(op, specs, out_specs)
        lim = self.limits
        if sum(sizes) + scratch > lim.max_op_bytes:
            raise LimitError(f"{op.name}: {sum(sizes)} bytes of results and {scratch} bytes of "
                             f"intermediates; the server's max_op_bytes is {lim.max_op_bytes} "
                             "(split the op into smaller ones)")
        if work > lim.max_op_work:
            raise LimitError(f"{op.name}: about {work} multiply-adds; the server's max_op_work "
                             f"is {lim.max_op_work} (split the op into smaller ones)")
        hit = out_specs, sizes, work, scratch
        if key is not None:
            if len(self._plans) >= 4096:
                self._plans.clear()
            self._plans[key] = hit
        return hit

    def _args(self, op: registry.Op, raw: list) -> tuple[list, list]:
        """The op's arguments (handles resolved) and the same with Specs for its shape rule."""
        args, specs = [], []
        positions = op.tensor_positions
        for k, a in enumerate(raw):
            if k in positions:
                if a is None:
                    args.append(None)
                    specs.append(None)
                elif isinstance(a, list):  # a list of tensors (cat)
                    entries = [self._get(_ref(x)) for x in a]
                    args.append([e[0] for e in entries])
                    specs.append([e[1] for e in entries])
                else:
                    prim, spec, _ = self._get(_ref(a))
                    args.append(prim)
                    specs.append(spec)
            else:
                v = _value(a, 0)
                args.append(v)
                specs.append(v)
        if "dtype" in op.args:  # cast, creation: the result's dtype must be one it holds
            d = args[op.args.index("dtype")]
            if not isinstance(d, dt.DType):
                raise ProtocolError(f"op {op.name}: dtype must be {{\"d\": name}}")
            self.backend.caps.check_dtype(d, op.name, self.backend.name)
        return args, specs

    def _read(self, rec: list) -> bytes:
        if len(rec) != 3 or type(rec[1]) is not int or not 0 <= rec[1] < 1 << 32:
            raise ProtocolError("read: expected [read, request (u32), id]")
        _, request, i = rec
        try:
            prim, spec, _ = self._get(i)
        except _Failed as f:
            return protocol.encode_reply(request, {"error": list(f.error)})
        try:
            data = self.backend.to_data(prim)
        except Exception as e:
            return protocol.encode_reply(request, {"error": [type(e).__name__, str(e)]})
        header = {"shape": list(data.shape), "dtype": data.dtype.name}
        return protocol.encode_reply(request, header, data.buffer)

    def _free(self, rec: list) -> None:
        if len(rec) != 2 or not isinstance(rec[1], list):
            raise ProtocolError("free: expected [free, [ids]]")
        for i in rec[1]:
            entry = self.tensors.pop(i, None) if type(i) is int else None
            if entry is not None:
                self.bytes -= entry[2]
            elif type(i) is not int or self.failed.pop(i, None) is None:
                raise ProtocolError(f"free: unknown tensor id {i!r}")


def _operands_fit(op: registry.Op, specs: list) -> None:
    """The contract's promises about operand shapes, which the Tensor front end keeps and a
    hostile client might not (numpy would broadcast them into a result far larger than the
    op's rule, and the limits, say): elementwise operands of one shape; index tensors of the
    rank of ``x`` and no larger except along ``dim`` (index_select: 1-d); matmul operands with
    the same batch dims and matching inner dims. Other ops are caught after running, when a
    result's shape is not their rule's."""
    if op.kind is Kind.ELEMENTWISE and len(op.tensors) > 1:
        shapes = {tuple(specs[i].shape) for i in op.tensor_positions}
        if len(shapes) > 1:
            raise ShapeError(f"{op.name}: operands of shapes {sorted(shapes)}; the contract "
                             "needs one shape (broadcast them first)")
    elif op.kind is Kind.INDEX and "index" in op.args and "dim" in op.args:
        x, index = specs[op.args.index("x")].shape, specs[op.args.index("index")].shape
        dim = specs[op.args.index("dim")]
        if op.name == "index_select":
            ok = len(index) == 1
        else:  # gather, scatter: the rank of x, no larger than x except along dim
            ok = len(index) == len(x) and all(
                i <= s for d, (i, s) in enumerate(zip(index, x)) if d != dim)
        if not ok:
            raise ShapeError(f"{op.name}: an index of shape {tuple(index)} for x of shape "
                             f"{tuple(x)} along dim {dim}")
    elif op.kind is Kind.CONTRACTION:
        a, b = (tuple(specs[i].shape) for i in op.tensor_positions)
        if len(a) < 2 or len(a) != len(b) or a[:-2] != b[:-2] or a[-1] != b[-2]:
            raise ShapeError(f"{op.name}: shapes {a} and {b}; the contract needs (..., n, k) "
                             "and (..., k, m) with the same batch dims")


class _Failed(Exception):
    """An op's input came from a failed op: the op fails with the same error."""

    def __init__(self, error: tuple[str, str]):
        self.error = error


def _listed(a) -> list:
    """A tensor argument as a list of tensor arguments (``cat`` takes a list)."""
    return a if isinstance(a, list) else [a]


def _ref(a) -> int:
    if isinstance(a, dict) and len(a) == 1 and "t" in a:
        return a["t"]
    raise ProtocolError("a tensor argument must be {\"t\": id}")


def _value(a, depth: int):
    """A non-tensor argument: JSON scalars, lists (as tuples), dtypes by name."""
    if a is None or isinstance(a, (bool, int, float, str)):
        return a
    if depth > 8:
        raise ProtocolError("an argument nested deeper than 8 lists")
    if isinstance(a, list):
        return tuple(_value(x, depth + 1) for x in a)
    name = a.get("d") if isinstance(a, dict) and len(a) == 1 else None
    if isinstance(name, str) and name in _DTYPES:
        return _DTYPES[name]
    raise ProtocolError("an argument must be a number, string, list, null or {\"d\": dtype}")
