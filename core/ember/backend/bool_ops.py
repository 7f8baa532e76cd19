"""``bool_*`` ops: logic on bool tensors."""

from __future__ import annotations

from .. import dtype as dt
from .required import required


class BoolOps:
    @required
    def bool_and(self, a, b): ...

    @required
    def bool_or(self, a, b): ...

    @required
    def bool_not(self, x): ...

    # ---------------------------------------------------------------- composites
    def bool_xor(self, a, b):
        return self.bool_and(self.bool_or(a, b), self.bool_not(self.bool_and(a, b)))

    def bool_eq(self, a, b):
        return self.bool_not(self.bool_xor(a, b))

    def bool_ne(self, a, b):
        return self.bool_xor(a, b)

    def bool_any(self, x, dims: tuple[int, ...]):
        """True where any element over ``dims`` (kept) is true."""
        return self.cast(self.int_max(self.cast(x, dt.int32), dims), dt.bool_)

    def bool_all(self, x, dims: tuple[int, ...]):
        return self.cast(self.int_min(self.cast(x, dt.int32), dims), dt.bool_)
