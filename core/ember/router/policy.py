"""Where a :class:`~ember.router.Router` runs an op: the policies.

A policy is an object with ``choose(router, op, candidates, operands, dtype) -> index``:
``candidates`` are the indices (into ``router.backends``) of the backends whose caps accept
the op (its dtypes, held exactly where one can) and that implement it, in the Router's order;
``operands`` are the op's :class:`~ember.router.backend.Routed` tensor inputs; ``dtype`` is the
op's (first) result dtype. It returns one of ``candidates``.

>>> from ember.router import PinOp, Router
>>> r = Router("numpy", "python", policy=PinOp({"float_exp": "python"}))
>>> r.policy.choose(r, "float_exp", (0, 1), [], None)
1
"""

from __future__ import annotations

from .. import dtype as dt
from ..errors import EmberError


class FirstCapable:
    """The default: the first backend (in the Router's order) that can run the op.

    >>> from ember.router import Router
    >>> r = Router("numpy", "python")
    >>> FirstCapable().choose(r, "float_exp", (0, 1), [], None), r.policy
    (0, FirstCapable())
    """

    def choose(self, router, op: str, candidates: tuple, operands: list, dtype) -> int:
        """One of ``candidates`` (indices into ``router.backends``) to run ``op`` on."""
        return candidates[0]

    def __repr__(self) -> str:
        return "FirstCapable()"


class Cost:
    """Cost-based: the candidate where most operand bytes already are (a moved tensor keeps
    its copy, so it counts where it was moved to as well); ties go to the first candidate.

    >>> import ember
    >>> from ember.router import Router
    >>> r = Router("python", "numpy", policy="cost")
    >>> on_numpy = ember.tensor([1.0, 2.0], backend=r).to(r)  # created on python (the first)
    >>> r.policy.choose(r, "float_add", (0, 1), [on_numpy._prim, on_numpy._prim], None)
    0
    """

    def choose(self, router, op: str, candidates: tuple, operands: list, dtype) -> int:
        """The candidate holding the most operand bytes (own or moved copies); ties: the first."""
        if len(candidates) == 1 or not operands:
            return candidates[0]
        best, best_bytes = candidates[0], -1
        for c in candidates:
            here = sum(router.nbytes(x) for x in operands
                       if x.at == c or (x.copies is not None and c in x.copies))
            if here > best_bytes:
                best, best_bytes = c, here
        return best

    def __repr__(self) -> str:
        return "Cost()"


class _Pinned:
    """Shared by the pin policies: a key → backend table, and the policy used where the key
    is not pinned or its backend can't run the op."""

    def __init__(self, table: dict, then=None):
        self.table = dict(table)
        self.then = then if then is not None else FirstCapable()

    def _pick(self, router, key, op, candidates, operands, dtype) -> int:
        where = self.table.get(key)
        if where is not None:
            index = router.index(where)
            if index in candidates:
                return index
        return self.then.choose(router, op, candidates, operands, dtype)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.table!r})"


class PinDtype(_Pinned):
    """Ops whose result has a pinned dtype run on its backend (when it can):
    ``PinDtype({"float32": "wgpu"})``; the rest go to ``then`` (default :class:`FirstCapable`).

    >>> import ember
    >>> from ember.router import Router
    >>> r = Router("python", "numpy", policy=PinDtype({ember.float64: "numpy"}))
    >>> r.policy.choose(r, "float_add", (0, 1), [], ember.float64)
    1
    >>> r.policy.choose(r, "float_add", (0, 1), [], ember.float32)  # not pinned: FirstCapable
    0
    """

    def __init__(self, table: dict, then=None):
        super().__init__({dt.as_dtype(k): v for k, v in table.items()}, then)

    def choose(self, router, op: str, candidates: tuple, operands: list, dtype) -> int:
        """The backend pinned for ``dtype`` when it is a candidate, else what ``then`` chooses."""
        return self._pick(router, dtype, op, candidates, operands, dtype)


class PinOp(_Pinned):
    """Pinned ops run on their backend (when it can): ``PinOp({"float_matmul": "wgpu"})``;
    the rest go to ``then`` (default :class:`FirstCapable`).

    >>> from ember.router import Router
    >>> r = Router("python", "numpy", policy=PinOp({"float_matmul": "numpy"}))
    >>> r.policy.choose(r, "float_matmul", (0, 1), [], None)
    1
    >>> r.policy.choose(r, "float_exp", (0, 1), [], None)  # not pinned: FirstCapable
    0
    """

    def choose(self, router, op: str, candidates: tuple, operands: list, dtype) -> int:
        """The backend pinned for ``op`` when it is a candidate, else what ``then`` chooses."""
        return self._pick(router, op, op, candidates, operands, dtype)


POLICIES = {"caps": FirstCapable, "cost": Cost}


def resolve(policy):
    """A policy object from a name (``"caps"``, ``"cost"``) or an object with ``choose``."""
    if policy is None:
        return FirstCapable()
    if isinstance(policy, str):
        if policy not in POLICIES:
            raise EmberError(f"Router: unknown policy {policy!r}; valid: "
                             + ", ".join(repr(p) for p in POLICIES)
                             + ", or a PinDtype/PinOp/Cost object")
        return POLICIES[policy]()
    if not callable(getattr(policy, "choose", None)):
        raise EmberError(f"Router: policy {policy!r} has no choose(router, op, candidates, "
                         "operands, dtype) method")
    return policy
