"""``Router(*backends, policy=...)``: a backend whose tensors live on one of several backends
(Burn's ``Router``).

Generic over the op registry: every op looks at its tensor operands' dtypes and the dtypes it
makes, keeps the *candidates* — the inner backends that implement the op and whose caps hold
those dtypes (exactly, where one can: wgpu's int64 is stored as int32, see ``Caps.narrow``) —
and lets the policy (:mod:`ember.router.policy`) pick one. Operands that live elsewhere are
moved there explicitly (``to_data`` then ``from_data``): every move is counted
(``router.moves``, ``router.moved_bytes``), kept in ``router.log`` and logged at DEBUG level on
the ``ember.router`` logger. A moved tensor keeps its copy (primitives are immutable), so a
weight used by every step moves once.

Narrow dtypes are fine where values are known to fit: index arguments (``index``: values in
range by contract) and results computed from exactly-held inputs (an argmax's int64 indices).
Exactness is required of the other tensor inputs and of values an op is *given*: ``from_data``
and ``dtype`` parameters (cast, full, arange).
"""

from __future__ import annotations

import collections
import sys

from ..contract import Backend, Caps, registry
from ..contract.registry import Spec
from ..errors import DTypeError, EmberError, UnsupportedOpError
from .policy import resolve

Move = collections.namedtuple("Move", "op src dst shape dtype nbytes")
Move.__doc__ = """One move of a tensor between two inner backends, as kept in ``Router.log``: the op
that needed it, the source and destination backends' names, the shape, dtype and bytes moved.

>>> import ember
>>> r = ember.Router("python", "numpy", policy=ember.router.PinOp({"float_exp": "numpy"}))
>>> _ = ember.tensor([0.0, 1.0], backend=r).exp()
>>> r.log[0]
Move(op='float_exp', src='python', dst='numpy', shape=(2,), dtype='float32', nbytes=8)
"""


class Routed:
    """A Router primitive: the index of the inner backend it lives on (``at``), its primitive
    there (``value``), and the copies moves have made on other backends (index → primitive).

    >>> import ember
    >>> r = ember.Router("python", "numpy", policy=ember.router.PinOp({"float_exp": "numpy"}))
    >>> x = ember.tensor([0.0, 1.0], backend=r)
    >>> x._prim.at, x.exp()._prim.at, x._prim.copies is not None  # x was copied to numpy
    (0, 1, True)
    """

    __slots__ = ("__weakref__", "at", "copies", "value")

    def __init__(self, at: int, value):
        self.at, self.value, self.copies = at, value, None

    def __repr__(self) -> str:
        return f"Routed(at={self.at}, value={self.value!r})"


class Router(Backend):
    """A backend over several backends: each op runs on one the ``policy`` picks among those
    that can run it (default: the first whose caps accept it), operands moved there visibly.

    >>> import ember
    >>> r = ember.Router("python", "numpy")
    >>> x = ember.tensor([1.5, 2.5], backend=r)          # float32: python holds it, first
    >>> y = x.to(ember.float64) * 2                      # float64 runs where it is held
    >>> y.tolist(), r.moves
    ([3.0, 5.0], 0)
    """

    def __init__(self, *backends, policy=None):
        from ..backends import get_backend

        if not backends:
            raise EmberError("Router needs at least one backend, e.g. Router('wgpu', 'numpy')")
        self.backends = tuple(get_backend(b) for b in backends)
        for b in self.backends:
            if b.caps.gradients:
                raise EmberError(f"Router({b.name}): put Autodiff outside the Router, "
                                 f"Autodiff(Router(...)), so gradients flow across backends")
        self.name = "router-" + "-".join(b.name for b in self.backends)
        dtypes = frozenset().union(*(b.caps.dtypes for b in self.backends))
        narrow = frozenset(d for d in dtypes if not any(
            d in b.caps.dtypes and d not in b.caps.narrow for b in self.backends))
        self.caps = Caps(dtypes=dtypes, narrow=narrow)
        self.device = "+".join(b.device for b in self.backends)
        self.policy = resolve(policy)
        self.moves = 0  # tensors moved between inner backends
        self.moved_bytes = 0
        self.log: collections.deque[Move] = collections.deque(maxlen=1000)  # the latest moves
        self.runs = [0] * len(self.backends)  # ops run on each inner backend
        self._candidates: dict[tuple, list] = {}

    # ------------------------------------------------------------------ plumbing
    def index(self, where) -> int:
        """The index of an inner backend given by name, instance or index."""
        for i, b in enumerate(self.backends):
            if where is b or where == b.name or where == i:
                return i
        raise EmberError(f"{self.name}: no inner backend {where!r}; inner backends: "
                         + ", ".join(b.name for b in self.backends))

    def nbytes(self, x: Routed) -> int:
        """The size of ``x``'s values in bytes (what moving it costs)."""
        b = self.backends[x.at]
        n = 1
        for s in b.shape(x.value):
            n *= s
        return n * b.dtype(x.value).itemsize

    def location(self, x: Routed) -> str:
        """The name of the inner backend ``x`` lives on."""
        return self.backends[x.at].name

    def _on(self, x: Routed, j: int, op: str):
        """``x``'s primitive on backend ``j``, moved there (and kept) if it lives elsewhere."""
        if x.at == j:
            return x.value
        copies = x.copies
        if copies is not None and j in copies:
            return copies[j]
        src, dst = self.backends[x.at], self.backends[j]
        data = src.to_data(x.value)
        value = dst.from_data(data)
        nbytes = data.size * data.dtype.itemsize
        self.moves += 1
        self.moved_bytes += nbytes
        move = Move(op, src.name, dst.name, tuple(data.shape), data.dtype.name, nbytes)
        self.log.append(move)
        _debug("%s: moved %s %s (%d bytes) from %s to %s", op, move.dtype, move.shape,
               nbytes, src.name, dst.name)
        if copies is None:
            x.copies = copies = {}
        copies[j] = value
        return value

    def _choices(self, op: registry.Op, args: tuple, operands, dtypes: tuple, given):
        """``(candidates, result dtype)`` for ``op`` on operands of ``dtypes`` (and the dtype
        it is ``given``: a ``dtype`` parameter, from_data's data), cached per op and dtypes."""
        key = (op.name, dtypes, given)
        hit = self._candidates.get(key)
        if hit is not None:
            return hit
        specs = [self._spec(a) for a in args]
        out = op.infer(*specs) if op.kind is not registry.Kind.DATA else None
        outs = (out,) if out is None or isinstance(out, Spec) else tuple(out)
        need = set(dtypes) | {s.dtype for s in outs if s is not None}
        exact = _exact(op, args, self.backends) | ({given} if given is not None else set())
        able = [i for i, b in enumerate(self.backends)
                if not getattr(getattr(type(b), op.name, None), "is_required", False)]
        if not able:
            raise UnsupportedOpError(f"{op.name}: none of {self.name}'s backends implements it")
        held = [i for i in able if need <= self.backends[i].caps.dtypes]
        if not held:
            names = ", ".join(sorted(d.name for d in need))
            raise DTypeError(f"{op.name}: no backend of {self.name} that implements it holds "
                             f"{names} (they hold: " + "; ".join(
                                 f"{self.backends[i].name}: "
                                 + ", ".join(sorted(d.name for d in self.backends[i].caps.dtypes))
                                 for i in able) + ")")
        candidates = [i for i in held if not exact & self.backends[i].caps.narrow] or held
        hit = self._candidates[key] = (tuple(candidates), outs[0].dtype if outs[0] else None)
        return hit

    def _spec(self, a):
        if isinstance(a, Routed):
            b = self.backends[a.at]
            return Spec(tuple(b.shape(a.value)), b.dtype(a.value))
        if isinstance(a, list) and a and isinstance(a[0], Routed):
            return [self._spec(x) for x in a]
        return a

    def _run(self, op: registry.Op, args: tuple, operands, dtypes: tuple, given, call):
        """Run ``call(backend, j)`` on the backend ``j`` the policy picks, trying the next
        candidate when a backend turns out not to support the op for these operands."""
        name = op.name
        candidates, dtype = (self._candidates.get((name, dtypes, given))
                             or self._choices(op, args, operands, dtypes, given))
        while True:
            j = (candidates[0] if len(candidates) == 1
                 else self.policy.choose(self, name, candidates, operands, dtype))
            try:
                out = call(self.backends[j], j)
            except UnsupportedOpError:
                if len(candidates) == 1:
                    raise
                _debug("%s: %s does not support it here; next candidate", name,
                       self.backends[j].name)
                candidates = tuple(c for c in candidates if c != j)
                self._candidates[(name, dtypes, given)] = (candidates, dtype)
                continue
            self.runs[j] += 1
            if op.outputs > 1:
                return tuple(Routed(j, o) for o in out)
            return Routed(j, out)

    # ------------------------------------------------------------------ data
    def from_data(self, data):
        op = registry.REGISTRY["from_data"]
        return self._run(op, (data,), (), (), data.dtype, lambda b, j: b.from_data(data))

    def to_data(self, x):
        return self.backends[x.at].to_data(x.value)

    async def to_data_async(self, x):
        return await self.backends[x.at].to_data_async(x.value)

    def shape(self, x):
        return self.backends[x.at].shape(x.value)

    def dtype(self, x):
        return self.backends[x.at].dtype(x.value)


def _debug(*args) -> None:
    """Log on ``ember.router`` at DEBUG level; without ``logging`` imported nobody listens,
    so ``import ember`` doesn't import it."""
    logging = sys.modules.get("logging")
    if logging is not None:
        logging.getLogger("ember.router").debug(*args)


def _exact(op: registry.Op, args: tuple, backends) -> set:
    """Dtypes of ``op``'s tensor inputs that must be held exactly (all but index arguments)."""
    out = set()
    for i in op.tensor_positions:
        a = args[i]
        if a is None or op.args[i] == "index":
            continue
        for x in (a if isinstance(a, (list, tuple)) else (a,)):
            out.add(backends[x.at].dtype(x.value))
    return out


def _method(op: registry.Op):
    """Route ``op``: pick a backend, move the operands there, run it there."""
    name, positions, nargs = op.name, op.tensor_positions, len(op.args)
    dtype_at = op.args.index("dtype") if "dtype" in op.args else None
    if op.args == op.tensors and "xs" not in op.args:
        return _tensors_only(op)

    def method(self, *args, **kwargs):
        if kwargs or len(args) != nargs:
            args = op.bind(args, kwargs)
        operands = []
        for i in positions:
            a = args[i]
            if isinstance(a, Routed):
                operands.append(a)
            elif a is not None:
                operands.extend(a)
        backends = self.backends
        dtypes = tuple([backends[x.at].dtype(x.value) for x in operands])

        def call(b, j):
            real = list(args)
            for i in positions:
                a = real[i]
                if isinstance(a, Routed):
                    real[i] = a.value if a.at == j else self._on(a, j, name)
                elif a is not None:
                    real[i] = type(a)(self._on(x, j, name) for x in a)
            return getattr(b, name)(*real)

        given = None if dtype_at is None else args[dtype_at]
        return self._run(op, args, operands, dtypes, given, call)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = op.doc
    return method


def _tensors_only(op: registry.Op):
    """The hot path (elementwise ops, matmul, where): every argument a tensor."""
    name = op.name

    def method(self, *xs):
        backends = self.backends
        dtypes = tuple([backends[x.at].dtype(x.value) for x in xs])

        def call(b, j):
            return getattr(b, name)(*[x.value if x.at == j else self._on(x, j, name)
                                      for x in xs])

        return self._run(op, xs, xs, dtypes, None, call)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = op.doc
    return method


def _install() -> None:
    own = set(vars(Router))
    for op in registry.ops():
        if op.name not in own:
            setattr(Router, op.name, _method(op))


_install()
