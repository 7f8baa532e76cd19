"""Linear algebra: matmul (``@``), dot, outer, mm, bmm, tril/triu, diagonal/trace, einsum.

>>> import ember
>>> a = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
>>> (a @ a).tolist()
[[7.0, 10.0], [15.0, 22.0]]
"""

from __future__ import annotations

from .. import dtype as dt
from ..errors import DimensionError, ShapeError
from ..shape import broadcast_shapes, normalize_dim, numel
from ..contract import families as fam
from ..tensor import Tensor, check_same_backend
from ._dispatch import as_tensor, backend_op, broadcast_to, full_like_shape, result_dtype, wrap
from .shape_ops import permute, reshape


def _promote(op: str, *xs: Tensor) -> list[Tensor]:
    check_same_backend(op, *xs)
    target = result_dtype(op, *xs)
    if target.is_bool:
        target = dt.int64  # as arithmetic: sums of bools count
    xs[0].backend.caps.check_dtype(target, op, xs[0].backend.name)
    return [x.astype(target) for x in xs]


def matmul(self: Tensor, other: Tensor) -> Tensor:
    """Matrix product with numpy semantics: 1-d operands are vectors (their dim is removed
    from the result), leading dims are batch dims and broadcast; ints promote like arithmetic.

    >>> import ember
    >>> ember.ones(5, 2, 3).matmul(ember.ones(3)).shape
    (5, 2)
    """
    a, b = as_tensor(self), as_tensor(other, self)
    if a.ndim == 0 or b.ndim == 0:
        raise ShapeError(
            f"matmul: both operands need at least 1 dim, got shapes {a.shape} and {b.shape}"
        )
    k_a = a.shape[-1]
    k_b = b.shape[-2] if b.ndim > 1 else b.shape[0]
    if k_a != k_b:
        raise ShapeError(f"matmul: shapes {a.shape} and {b.shape} don't align: {k_a} != {k_b}")
    if (a.backend is b.backend and a.ndim == b.ndim >= 2 and a.shape[:-2] == b.shape[:-2]
            and a.dtype == b.dtype and not a.dtype.is_bool):
        return wrap(a, backend_op(a, fam.MATMUL)(a._prim, b._prim))  # nothing to promote
    a, b = _promote("matmul", a, b)
    a2 = reshape(a, (1,) + a.shape) if a.ndim == 1 else a
    b2 = reshape(b, b.shape + (1,)) if b.ndim == 1 else b
    try:
        batch = broadcast_shapes(a2.shape[:-2], b2.shape[:-2], op="matmul")
    except ShapeError:
        raise ShapeError(
            f"matmul: batch dims of shapes {a.shape} and {b.shape} can't be broadcast: "
            f"{a2.shape[:-2]} vs {b2.shape[:-2]} (sizes must match or be 1)"
        ) from None
    a2 = broadcast_to(a2, batch + a2.shape[-2:], "matmul")
    b2 = broadcast_to(b2, batch + b2.shape[-2:], "matmul")
    out = wrap(a2, backend_op(a2, fam.MATMUL)(a2._prim, b2._prim))
    shape = batch + a.shape[-2:-1] + (b.shape[-1:] if b.ndim > 1 else ())
    return reshape(out, shape)


def rmatmul(self: Tensor, other) -> Tensor:
    return matmul(as_tensor(other, self), self)


def mm(self: Tensor, mat2: Tensor) -> Tensor:
    """Product of two 2-d matrices.

    >>> import ember
    >>> ember.mm(ember.tensor([[1.0, 2.0]]), ember.tensor([[3.0], [4.0]])).tolist()
    [[11.0]]
    """
    if self.ndim != 2 or mat2.ndim != 2:
        raise DimensionError(f"mm: needs two 2-d tensors, got shapes {self.shape} and {mat2.shape}")
    return matmul(self, mat2)


def bmm(self: Tensor, mat2: Tensor) -> Tensor:
    """Batched product of (b, n, k) and (b, k, m) tensors (no broadcasting).

    >>> import ember
    >>> a, b = ember.ones(2, 1, 3), ember.ones(2, 3, 4)
    >>> ember.bmm(a, b).shape
    (2, 1, 4)
    """
    if self.ndim != 3 or mat2.ndim != 3 or self.shape[0] != mat2.shape[0]:
        raise ShapeError(
            f"bmm: needs (b, n, k) and (b, k, m) tensors with one batch size, got shapes "
            f"{self.shape} and {mat2.shape}"
        )
    return matmul(self, mat2)


def dot(self: Tensor, other: Tensor) -> Tensor:
    """Inner product of two 1-d tensors of one size (0-d result).

    >>> import ember
    >>> ember.dot(ember.tensor([1, 2, 3]), ember.tensor([4, 5, 6])).item()
    32
    """
    if self.ndim != 1 or other.ndim != 1:
        raise DimensionError(
            f"dot: needs two 1-d tensors, got shapes {self.shape} and {other.shape}"
        )
    if self.shape != other.shape:
        raise ShapeError(f"dot: sizes differ: {self.shape[0]} != {other.shape[0]}")
    return matmul(self, other)



def outer(self: Tensor, vec2: Tensor) -> Tensor:
    """``out[i, j] = self[i] * vec2[j]`` for 1-d tensors.

    >>> import ember
    >>> ember.outer(ember.tensor([1, 2]), ember.tensor([1, 10, 100])).tolist()
    [[1, 10, 100], [2, 20, 200]]
    """
    if self.ndim != 1 or vec2.ndim != 1:
        raise DimensionError(
            f"outer: needs two 1-d tensors, got shapes {self.shape} and {vec2.shape}"
        )
    return reshape(self, (-1, 1)) * reshape(vec2, (1, -1))


ger = outer


# ---------------------------------------------------------------------- triangles, diagonals
def _tri_mask(x: Tensor, k: int, upper: bool) -> Tensor:
    b = x.backend
    n, m = x.shape[-2:]
    rows = reshape(wrap(x, b.arange(n, dt.int64)), (n, 1))
    cols = reshape(wrap(x, b.arange(m, dt.int64)), (1, m))
    return (cols - rows >= k) if upper else (cols - rows <= k)


def tril(self: Tensor, diagonal: int = 0) -> Tensor:
    """The lower triangle (``j - i <= diagonal``) of the last two dims; the rest zeroed.

    >>> import ember
    >>> ember.ones(2, 3).tril().tolist()
    [[1.0, 0.0, 0.0], [1.0, 1.0, 0.0]]
    """
    return _tri(self, diagonal, upper=False)


def triu(self: Tensor, diagonal: int = 0) -> Tensor:
    """The upper triangle (``j - i >= diagonal``) of the last two dims; the rest zeroed.

    >>> import ember
    >>> ember.ones(3, 3).triu(diagonal=1).tolist()
    [[0.0, 1.0, 1.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]]
    """
    return _tri(self, diagonal, upper=True)


def _tri(x: Tensor, k: int, upper: bool) -> Tensor:
    from .where import where

    if x.ndim < 2:
        raise DimensionError(f"{'triu' if upper else 'tril'}: needs at least 2 dims, got {x.shape}")
    return where(_tri_mask(x, k, upper), x, full_like_shape(x, 0, x.dtype, ()))


def diagonal(self: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The diagonal of dims ``dim1``/``dim2`` (removed), appended as the last dim.

    >>> import ember
    >>> ember.tensor([[1, 2], [3, 4]]).diagonal().tolist()
    [1, 4]
    """
    d1 = normalize_dim(dim1, self.ndim, "diagonal")
    d2 = normalize_dim(dim2, self.ndim, "diagonal")
    if d1 == d2:
        raise DimensionError(f"diagonal: dim1 and dim2 are the same dim ({d1})")
    rest = [i for i in range(self.ndim) if i not in (d1, d2)]
    x = permute(self, rest + [d1, d2])
    if offset >= 0:
        x = x[..., :, offset:]
    else:
        x = x[..., -offset:, :]
    return _main_diagonal(x)


def _main_diagonal(x: Tensor) -> Tensor:
    """The main diagonal of the last two dims: flatten them and take every (m+1)-th element."""
    n, m = x.shape[-2:]
    k = max(min(n, m), 0)
    lead = x.shape[:-2]
    flat = reshape(x, lead + (n * m,))
    if k == 0:
        return reshape(flat[..., :0], lead + (0,))
    ranges = tuple((0, s, 1) for s in lead) + ((0, (k - 1) * (m + 1) + 1, m + 1),)
    return wrap(x, x.backend.slice(flat._prim, ranges))


def trace(self: Tensor) -> Tensor:
    """Sum of the main diagonal of a 2-d tensor.

    >>> import ember
    >>> ember.tensor([[1, 2], [3, 4]]).trace().item()
    5
    """
    if self.ndim != 2:
        raise DimensionError(f"trace: needs a 2-d tensor, got shape {self.shape}")
    return _sum(_main_diagonal(self), (0,))


def _sum(x: Tensor, dims: tuple[int, ...]) -> Tensor:
    """Sum over ``dims`` (removed), keeping float/int dtypes (bools count as int64)."""
    if not dims:
        return x
    if x.dtype.is_bool:
        x = x.astype(dt.int64)
    out = wrap(x, backend_op(x, fam.SUM)(x._prim, tuple(sorted(dims))))
    return reshape(out, tuple(s for i, s in enumerate(x.shape) if i not in dims))


# ---------------------------------------------------------------------- einsum
def _parse_operand(spec: str, t: Tensor, eq: str) -> list[str]:
    """Letters of one operand, ``...`` expanded to names that align batch dims from the right."""
    if "..." in spec:
        before, _, after = spec.partition("...")
        if "." in before + after:
            raise ValueError(f"einsum: malformed ellipsis in {eq!r}")
        n_ell = t.ndim - len(before) - len(after)
        if n_ell < 0:
            raise ShapeError(f"einsum: operand '{spec}' has more letters than its {t.ndim} dims")
        return list(before) + [f"...{i}" for i in range(n_ell, 0, -1)] + list(after)
    if not all(c.isalpha() for c in spec):
        raise ValueError(f"einsum: subscripts must be letters or '...', got {spec!r} in {eq!r}")
    if len(spec) != t.ndim:
        raise ShapeError(
            f"einsum: operand '{spec}' has {len(spec)} subscripts but {t.ndim} dims "
            f"(shape {t.shape})"
        )
    return list(spec)


def _take_diagonals(t: Tensor, letters: list[str]) -> tuple[Tensor, list[str]]:
    """Repeated letters within an operand select its diagonal (``ii->i``)."""
    while len(set(letters)) != len(letters):
        c = next(c for c in letters if letters.count(c) > 1)
        i = letters.index(c)
        j = letters.index(c, i + 1)
        if t.shape[i] != t.shape[j]:
            raise ShapeError(f"einsum: subscript {c!r} has sizes {t.shape[i]} and {t.shape[j]}")
        t = diagonal(t, 0, i, j)
        letters = [x for k, x in enumerate(letters) if k not in (i, j)] + [c]
    return t, letters


def einsum(equation: str, *operands: Tensor) -> Tensor:
    """Einstein summation over any number of operands, reduced pairwise with matmul.

    Supported subset: letter subscripts (``a-zA-Z``), an explicit output after ``->`` or the
    implicit one (letters that appear once, sorted), ``...`` for broadcast batch dims,
    repeated letters inside one operand (diagonals: ``'ii->i'``, traces: ``'ii'``), size-1
    dims broadcast against the same letter elsewhere. Operands combine left to right; letters
    no longer needed are summed out as early as possible.

    >>> import ember
    >>> a, b = ember.ones(2, 3), ember.ones(3, 4)
    >>> ember.einsum("ij,jk->ik", a, b).shape, ember.einsum("ii", ember.ones(3, 3)).item()
    ((2, 4), 3.0)
    """
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        raise ValueError("einsum: needs at least one operand")
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    specs = lhs.split(",")
    if len(specs) != len(operands):
        raise ValueError(
            f"einsum: {equation!r} names {len(specs)} operands but {len(operands)} were given"
        )
    tensors = _promote("einsum", *(as_tensor(o) for o in operands))
    parsed = [_parse_operand(spec, t, equation) for spec, t in zip(specs, tensors)]
    all_letters = [c for ls in parsed for c in ls]
    terms = [_take_diagonals(t, ls) for t, ls in zip(tensors, parsed)]
    if arrow:
        out = _parse_output(rhs, all_letters, equation)
    else:
        ell = sorted({c for c in all_letters if c.startswith("...")}, key=lambda c: -int(c[3:]))
        out = ell + sorted(c for c in set(all_letters) if not c.startswith("...")
                           and all_letters.count(c) == 1)
    sizes: dict[str, int] = {}
    for t, ls in terms:
        for c, s in zip(ls, t.shape):
            if sizes.get(c, 1) != 1 and s != 1 and sizes[c] != s:
                raise ShapeError(
                    f"einsum: subscript {c!r} has sizes {sizes[c]} and {s} in {equation!r}"
                )
            sizes[c] = s if sizes.get(c, 1) == 1 else sizes[c]
    # sum out letters each operand alone holds, then contract pairwise
    acc_t, acc_l = _reduce_alone(*terms[0], terms[1:], out)
    for k in range(1, len(terms)):
        t, ls = _reduce_alone(*terms[k], terms[k + 1 :] + [(acc_t, acc_l)], out)
        acc_t, acc_l = _contract(acc_t, acc_l, t, ls, terms[k + 1 :], out, sizes)
    acc_t, acc_l = _reduce_alone(acc_t, acc_l, [], out)
    result = permute(acc_t, [acc_l.index(c) for c in out])
    return broadcast_to(result, tuple(sizes[c] for c in out), "einsum")


def _parse_output(rhs: str, all_letters: list[str], eq: str) -> list[str]:
    n_ell = max([int(c[3:]) for c in all_letters if c.startswith("...")], default=0)
    if "..." in rhs:
        before, _, after = rhs.partition("...")
        out = list(before) + [f"...{i}" for i in range(n_ell, 0, -1)] + list(after)
    else:
        out = list(rhs)
    for c in out:
        if not c.startswith("...") and (not c.isalpha() or c not in all_letters):
            raise ValueError(
                f"einsum: output subscript {c!r} does not appear in the inputs of {eq!r}"
            )
    if len(set(out)) != len(out):
        raise ValueError(f"einsum: output subscripts repeat in {eq!r}")
    return out


def _reduce_alone(t: Tensor, ls: list[str], others: list, out: list[str]):
    needed = set(out) | {c for _, o in others for c in o}
    dims = tuple(i for i, c in enumerate(ls) if c not in needed)
    return _sum(t, dims), [c for c in ls if c in needed]


def _contract(a: Tensor, al: list[str], b: Tensor, bl: list[str], later: list, out: list[str],
              sizes: dict[str, int]):
    needed = set(out) | {c for _, o in later for c in o}
    shared = [c for c in al if c in bl]
    batch = [c for c in shared if c in needed]
    summed = [c for c in shared if c not in needed]
    a_only = [c for c in al if c not in bl]
    b_only = [c for c in bl if c not in al]

    def arrange(t, ls, order):
        t = permute(t, [ls.index(c) for c in order])
        return broadcast_to(t, tuple(sizes[c] if c in shared else t.shape[i]
                                     for i, c in enumerate(order)), "einsum")

    a = arrange(a, al, batch + a_only + summed)
    b = arrange(b, bl, batch + summed + b_only)
    bs = tuple(sizes[c] for c in batch)
    n_a = numel(a.shape[len(batch) : len(batch) + len(a_only)])
    n_b = numel(b.shape[len(batch) + len(summed) :])
    n_k = numel(tuple(sizes[c] for c in summed))
    prod = matmul(reshape(a, bs + (n_a, n_k)), reshape(b, bs + (n_k, n_b)))
    a_sizes = a.shape[len(batch) : len(batch) + len(a_only)]
    b_sizes = b.shape[len(batch) + len(summed) :]
    return reshape(prod, bs + a_sizes + b_sizes), batch + a_only + b_only

