"""Expected gradients of the differentiable cases: central finite differences in float64.

For a case with outputs ``y_k = ref(*args)`` the gradient check differentiates the scalar
``L = sum_k sum(y_k * c_k)`` where each ``c_k`` is a fixed, seeded random cotangent of the
output's shape (integer outputs such as indices get none). The inputs differentiated are the
case's ``grad_inputs`` (an index naming a list of tensors, as for ``cat``, means each float
tensor in it); a gradient is taken with respect to the tensor's *stored* data (``T.data``),
before the runner's transpose/slice/expand transform, so those backward rules are checked too.

Non-smooth points (relu or abs at 0, max ties, clamp bounds...) are found numerically: where
the one-sided differences disagree, the element is marked in ``undefined`` and the finite
difference comparison skips it (the PyTorch cross-check, when torch is installed, still checks
the subgradient convention there). Outputs that are not finite at the base point get a zero
cotangent (their derivative is undefined).

CPython + numpy only; the result, a :class:`GradCheck`, is plain data that serializes to JSON
(``grad_runner``) so runners without numpy can replay it.
"""

from __future__ import annotations

import zlib
from functools import cache

import numpy as np

from .build import REFS, _ref_value
from .grad_runner import GradCheck, grad_tolerance
from .spec import TOLERANCES, Case, T

# Central-difference step, relative to max(1, |x|): truncation error ~ h^2 f''' and rounding
# error ~ 1e-16 |L| / h stay near 1e-10 for the catalog's O(1) values.
STEP = 1e-6
# A one-sided difference jump above this (relative to the gradient's scale) marks a kink; smooth
# functions give h |f''|, so curvature up to ~1e3 x scale is not mistaken for one.
KINK = 1e-3

FLOAT_NAMES = ("float16", "float32", "float64")


def leaf_paths(case: Case) -> list[tuple[int, ...]]:
    """Paths (indices into ``args``, then into a list/tuple argument) of the tensors to
    differentiate."""
    paths: list[tuple[int, ...]] = []

    def visit(v, path):
        if isinstance(v, T):
            if np.asarray(v.data).dtype.kind == "f":
                paths.append(path)
        elif isinstance(v, (list, tuple)):
            for j, x in enumerate(v):
                visit(x, path + (j,))

    for i in case.grad_inputs:
        visit(case.args[i], (i,))
    return paths


def get_path(args, path):
    v = args[path[0]]
    for j in path[1:]:
        v = v[j]
    return v


def _replace(args, path, new):
    """``args`` with the value at ``path`` replaced (lists/tuples rebuilt, nothing mutated)."""
    head, rest = path[0], path[1:]
    seq = list(args)
    seq[head] = new if not rest else type(args[head])(_replace(args[head], rest, new))
    return type(args)(seq)


def _outputs(case: Case, args) -> list[np.ndarray]:
    with np.errstate(all="ignore"):
        result = REFS[case.id](*(_ref_value(a) for a in args))
    outs = list(result) if case.multi else [result]
    return [np.asarray(o, dtype=np.float64) for o in outs]


def _seed(case_id: str) -> int:
    return zlib.crc32(case_id.encode("utf-8"))  # stable across runs (str hash is salted)


def grad_dtype(case: Case) -> str:
    """The least precise float dtype among the leaves and outputs: it sets the tolerance."""
    found = {e.dtype for e in case.expected if e.dtype in FLOAT_NAMES}
    for p in leaf_paths(case):
        found.add(np.asarray(get_path(case.args, p).data).dtype.name)
    for d in ("float16", "float32", "float64"):
        if d in found:
            return d
    return "float64"


def _tol_factor(case: Case) -> float:
    """The case's forward tolerance factor (``tol=`` in the catalog) carries over."""
    d = case.expected[0].dtype
    base = TOLERANCES.get(d, (0.0, 0.0))[0]
    return max(1.0, case.rtol / base) if base else 1.0


@cache
def _check_for(case_id: str) -> GradCheck:
    from .catalog import all_cases

    case = next(c for c in all_cases() if c.id == case_id)
    return build_check(case)


def grad_check(case: Case) -> GradCheck:
    """The (cached) expected gradients of a catalog case."""
    return _check_for(case.id)


def cotangents(case: Case, base: list[np.ndarray]) -> list[np.ndarray | None]:
    g = np.random.default_rng(_seed(case.id))
    cots: list[np.ndarray | None] = []
    for e, y in zip(case.expected, base):
        if e.dtype not in FLOAT_NAMES:
            cots.append(None)
            continue
        c = g.standard_normal(y.shape).astype(e.dtype)  # exactly representable in the output
        c[~np.isfinite(y)] = 0
        cots.append(c)
    return cots


def build_check(case: Case) -> GradCheck:
    """Finite-difference gradients of one differentiable case (see the module docstring)."""
    if case.id not in REFS:
        raise KeyError(f"{case.id}: no reference function recorded (decoded from JSON?)")
    args = tuple(case.args)
    base = _outputs(case, args)
    cots = cotangents(case, base)
    finite = [np.isfinite(y) for y in base]

    def loss(a) -> float:
        total = 0.0
        for y, c, f in zip(_outputs(case, a), cots, finite):
            if c is not None:
                total += float(np.sum(np.where(f, y, 0.0) * c))
        return total

    l0 = loss(args)
    paths = leaf_paths(case)
    grads, undefined = [], []
    for path in paths:
        spec = get_path(args, path)
        x = np.asarray(spec.data, dtype=np.float64).copy()
        g = np.zeros(x.shape)
        jump = np.zeros(x.shape)
        flat, gflat, jflat = x.reshape(-1), g.reshape(-1), jump.reshape(-1)
        for i in range(flat.size):
            if not np.isfinite(flat[i]):
                gflat[i], jflat[i] = np.nan, np.inf
                continue
            h = STEP * max(1.0, abs(flat[i]))
            old = flat[i]
            flat[i] = old + h
            lp = loss(_replace(args, path, T(x.copy(), spec.transform)))
            flat[i] = old - h
            lm = loss(_replace(args, path, T(x.copy(), spec.transform)))
            flat[i] = old
            gflat[i] = (lp - lm) / (2 * h)
            jflat[i] = abs((lp - l0) - (l0 - lm)) / h
        grads.append(g)
        undefined.append(jump)
    scale = max([1.0] + [float(np.nanmax(np.abs(g))) for g in grads if g.size])
    masks = [j > KINK * scale for j in undefined]
    rtol, atol = grad_tolerance(grad_dtype(case), _tol_factor(case))
    return GradCheck(
        id=case.id,
        leaves=tuple(paths),
        cotangents=tuple(cots),
        grads=tuple(np.where(m, 0.0, g) for g, m in zip(grads, masks)),
        undefined=tuple(m if m.any() else None for m in masks),
        dtype=grad_dtype(case),
        rtol=rtol,
        atol=atol * scale,
    )
