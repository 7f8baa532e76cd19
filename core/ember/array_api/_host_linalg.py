"""Matrix decompositions on the host, in Python floats (double precision), one matrix at a
time: the op contract has no factorisation primitive, and these keep ``xp.linalg`` whole
on every backend. Matrices are lists of rows. Sizes are what Array API consumers pass
(features × features); a backend with a native kernel would be the way to scale them.

>>> from ember.array_api._host_linalg import lu_solve, jacobi_eigh
>>> lu_solve([[2.0, 0.0], [0.0, 4.0]], [[2.0], [8.0]])[0]
[[1.0], [2.0]]
>>> [round(v, 12) for v in jacobi_eigh([[2.0, 1.0], [1.0, 2.0]])[0]]
[1.0, 3.0]
"""

from __future__ import annotations

import math


def lu(a: list[list[float]]):
    """Partial-pivot LU in place of a copy: (lu, permutation, sign); singular pivots are 0."""
    n = len(a)
    m = [row[:] for row in a]
    perm = list(range(n))
    sign = 1.0
    for k in range(n):
        p = max(range(k, n), key=lambda i: abs(m[i][k]))
        if p != k:
            m[k], m[p] = m[p], m[k]
            perm[k], perm[p] = perm[p], perm[k]
            sign = -sign
        pivot = m[k][k]
        if pivot == 0.0:
            continue
        for i in range(k + 1, n):
            f = m[i][k] / pivot
            m[i][k] = f
            if f:
                row, top = m[i], m[k]
                for j in range(k + 1, n):
                    row[j] -= f * top[j]
    return m, perm, sign


def lu_solve(a, b):
    """``a x = b`` (b a list of rows, one column per right-hand side): (x, singular)."""
    m, perm, _ = lu(a)
    n = len(m)
    if any(m[k][k] == 0.0 for k in range(n)):
        return None, True
    cols = len(b[0]) if b else 0
    x = [b[perm[i]][:] for i in range(n)]
    for c in range(cols):
        for i in range(n):
            x[i][c] -= sum(m[i][j] * x[j][c] for j in range(i))
        for i in reversed(range(n)):
            x[i][c] = (x[i][c] - sum(m[i][j] * x[j][c] for j in range(i + 1, n))) / m[i][i]
    return x, False


def slogdet(a):
    """(sign, log|det|) with sign 0 and -inf for a singular matrix."""
    m, _, sign = lu(a)
    logabs = 0.0
    for k in range(len(m)):
        d = m[k][k]
        if d == 0.0 or d != d:
            return (0.0, -math.inf) if d == 0.0 else (math.nan, math.nan)
        sign = sign if d > 0 else -sign
        logabs += math.log(abs(d))
    return sign, logabs


def cholesky(a, upper: bool = False):
    """Lower (or upper) factor; None when ``a`` is not positive-definite."""
    n = len(a)
    low = [[0.0] * n for _ in range(n)]
    for j in range(n):
        s = a[j][j] - sum(low[j][k] ** 2 for k in range(j))
        if not s > 0.0:
            return None
        low[j][j] = math.sqrt(s)
        for i in range(j + 1, n):
            low[i][j] = (a[i][j] - sum(low[i][k] * low[j][k] for k in range(j))) / low[j][j]
    return [list(r) for r in zip(*low)] if upper else low


def jacobi_eigh(a, sweeps: int = 60):
    """Eigenvalues (ascending) and eigenvectors (columns) of a symmetric matrix, by cyclic
    Jacobi rotations (accurate to a few ulps of the largest eigenvalue)."""
    n = len(a)
    m = [[(a[i][j] + a[j][i]) / 2 for j in range(n)] for i in range(n)]
    v = [[float(i == j) for j in range(n)] for i in range(n)]
    for _ in range(sweeps):
        off = sum(m[i][j] ** 2 for i in range(n) for j in range(n) if i != j)
        if off <= 1e-300 or off <= (1e-32 * sum(m[i][i] ** 2 for i in range(n))):
            break
        for p in range(n - 1):
            for q in range(p + 1, n):
                if m[p][q] == 0.0:
                    continue
                theta = (m[q][q] - m[p][p]) / (2 * m[p][q])
                t = math.copysign(1.0, theta) / (abs(theta) + math.sqrt(theta * theta + 1))
                c = 1 / math.sqrt(t * t + 1)
                s = t * c
                for k in range(n):
                    mkp, mkq = m[k][p], m[k][q]
                    m[k][p], m[k][q] = c * mkp - s * mkq, s * mkp + c * mkq
                for k in range(n):
                    mpk, mqk = m[p][k], m[q][k]
                    m[p][k], m[q][k] = c * mpk - s * mqk, s * mpk + c * mqk
                for k in range(n):
                    vkp, vkq = v[k][p], v[k][q]
                    v[k][p], v[k][q] = c * vkp - s * vkq, s * vkp + c * vkq
    order = sorted(range(n), key=lambda i: m[i][i])
    values = [m[i][i] for i in order]
    vectors = [[v[k][i] for i in order] for k in range(n)]
    return values, vectors


def svd(a, rows: int, cols: int, full: bool = False):
    """(U, S descending, Vᵀ) of a ``rows`` × ``cols`` matrix through one-sided Jacobi on the
    columns (of ``a`` or of ``aᵀ`` when it is wide): reduced, or with square U and Vᵀ when
    ``full``. The matrix is scaled to a largest magnitude of 1 first, so the rotations' dot
    products neither overflow nor underflow. U's and Vᵀ's vectors for zero singular values
    (and the extra ones of ``full``) complete them to orthonormal bases."""
    k = min(rows, cols)
    s, u_cols, v_rows = [], [], []
    if k:
        scale = max((abs(v) for row in a for v in row), default=0.0)
        if scale == 0.0 or not math.isfinite(scale):
            scale = 1.0
        u, s, v_rows = _svd_jacobi([[v / scale for v in row] for row in a])
        s = [v * scale for v in s]
        u_cols = [list(c) for c in zip(*u)]
    u_cols = orthonormal_completion(u_cols, rows, rows if full else k)
    v_rows = orthonormal_completion(v_rows, cols, cols if full else k)
    return [[c[i] for c in u_cols] for i in range(rows)], s, v_rows


def orthonormal_completion(vectors: list, m: int, total: int) -> list:
    """``vectors`` (length ``m``; the nonzero ones orthonormal) with each zero vector replaced
    and more appended, up to ``total`` orthonormal vectors: each new one is the standard basis
    vector least in the span of those so far, orthogonalised against them twice."""
    done = [v for v in vectors if any(v)]

    def fresh() -> list:
        done.append(_unit_orthogonal(done, m))
        return done[-1]

    out = [v if any(v) else fresh() for v in vectors]
    return out + [fresh() for _ in range(total - len(out))]


def _unit_orthogonal(done: list, m: int) -> list:
    """A unit vector of length ``m`` orthogonal to the orthonormal ``done``: the standard basis
    vector least in their span, orthogonalised against them twice."""
    best, best_norm = None, -1.0
    for e in range(m):
        v = [float(i == e) for i in range(m)]
        for _ in range(2):
            for c in done:
                d = sum(x * y for x, y in zip(c, v))
                v = [x - d * y for x, y in zip(v, c)]
        norm = math.hypot(*v)
        if norm > best_norm:
            best, best_norm = v, norm
    return [x / best_norm for x in best]


def _svd_jacobi(a):
    rows, cols = len(a), len(a[0]) if a else 0
    if cols > rows:
        u, s, vt = _svd_jacobi([list(r) for r in zip(*a)])
        return [list(r) for r in zip(*vt)], s, [list(r) for r in zip(*u)]
    w = [[a[i][j] for i in range(rows)] for j in range(cols)]  # columns
    v = [[float(i == j) for i in range(cols)] for j in range(cols)]  # columns of V
    for _ in range(60):
        rotated = False
        for p in range(cols - 1):
            for q in range(p + 1, cols):
                alpha = sum(x * x for x in w[p])
                beta = sum(x * x for x in w[q])
                gamma = sum(x * y for x, y in zip(w[p], w[q]))
                if abs(gamma) <= 1e-15 * math.sqrt(alpha * beta) or gamma == 0.0:
                    continue
                rotated = True
                zeta = (beta - alpha) / (2 * gamma)
                t = math.copysign(1.0, zeta) / (abs(zeta) + math.sqrt(1 + zeta * zeta))
                c = 1 / math.sqrt(1 + t * t)
                s = c * t
                for vec in (w, v):
                    xp, xq = vec[p], vec[q]
                    vec[p] = [c * x - s * y for x, y in zip(xp, xq)]
                    vec[q] = [s * x + c * y for x, y in zip(xp, xq)]
        if not rotated:
            break
    sing = [math.hypot(*col) for col in w]  # no underflow of squares near the tiniest floats
    order = sorted(range(cols), key=lambda i: -sing[i])
    u_cols = [[x / sing[i] if sing[i] else 0.0 for x in w[i]] for i in order]
    u = [[u_cols[j][i] for j in range(cols)] for i in range(rows)]
    return u, [sing[i] for i in order], [v[i] for i in order]


def qr(a, rows: int, cols: int, complete: bool = False):
    """QR by modified Gram–Schmidt with one re-orthogonalisation pass: reduced, or with a
    square Q (R padded with zero rows) when ``complete``. Q's columns for dependent columns
    of ``a`` (and the extra ones) complete it to an orthonormal basis."""
    k = min(rows, cols)
    q_cols: list[list[float]] = []
    r = [[0.0] * cols for _ in range(k)]
    for j in range(cols):
        v = [a[i][j] for i in range(rows)]
        for _ in range(2):
            for i, qc in enumerate(q_cols):
                d = sum(x * y for x, y in zip(qc, v))
                r[i][j] += d
                v = [x - d * y for x, y in zip(v, qc)]
        if j < k:
            norm = math.hypot(*v)
            r[j][j] = norm
            # a dependent column: any unit vector orthogonal to the others (its R entry is 0),
            # so the later columns still find their whole component in Q's span
            q_cols.append([x / norm for x in v] if norm else _unit_orthogonal(q_cols, rows))
    q_cols = orthonormal_completion(q_cols, rows, rows if complete else k)
    r += [[0.0] * cols for _ in range(len(q_cols) - k)]
    return [[c[i] for c in q_cols] for i in range(rows)], r
