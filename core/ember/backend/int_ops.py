"""``int_*`` ops on integer tensors. Results wrap around at the dtype's width like numpy;
integer division or remainder by zero gives 0 (numpy's result, without its warning)."""

from __future__ import annotations

from .required import required


class IntOps:
    @required
    def int_add(self, a, b): ...

    @required
    def int_sub(self, a, b): ...

    @required
    def int_mul(self, a, b): ...

    @required
    def int_floor_divide(self, a, b):
        """Floor division (rounds toward -inf, as Python's ``//``); x // 0 is 0."""

    @required
    def int_remainder(self, a, b):
        """Python ``%``: the result takes the divisor's sign; x % 0 is 0."""

    @required
    def int_pow(self, a, b):
        """``a ** b`` wrapping around; negative exponents raise ``ValueError`` like numpy."""

    @required
    def int_maximum(self, a, b): ...

    @required
    def int_minimum(self, a, b): ...

    @required
    def int_eq(self, a, b): ...

    @required
    def int_lt(self, a, b): ...

    @required
    def int_le(self, a, b): ...

    @required
    def int_neg(self, x): ...

    @required
    def int_abs(self, x): ...

    @required
    def int_sum(self, x, dims: tuple[int, ...]):
        """Sum over ``dims`` (kept) in the input dtype; the front end casts to int64 first."""

    @required
    def int_prod(self, x, dims: tuple[int, ...]): ...

    @required
    def int_max(self, x, dims: tuple[int, ...]): ...

    @required
    def int_min(self, x, dims: tuple[int, ...]): ...

    @required
    def int_argmax(self, x, dim: int): ...

    @required
    def int_argmin(self, x, dim: int): ...

    @required
    def int_cumsum(self, x, dim: int): ...

    @required
    def int_cumprod(self, x, dim: int): ...

    @required
    def int_sort(self, x, dim: int, descending: bool):
        """Stable sort along ``dim``: ``(values, int64 indices)``."""

    @required
    def int_matmul(self, a, b): ...

    # ---------------------------------------------------------------- composites
    def int_ne(self, a, b):
        return self.bool_not(self.int_eq(a, b))

    def int_gt(self, a, b):
        return self.int_lt(b, a)

    def int_ge(self, a, b):
        return self.int_le(b, a)

    def int_sign(self, x):
        zero = self.full(self.shape(x), 0, self.dtype(x))
        pos = self.cast(self.int_lt(zero, x), self.dtype(x))
        neg = self.cast(self.int_lt(x, zero), self.dtype(x))
        return self.int_sub(pos, neg)
