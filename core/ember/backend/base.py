"""Backend base class and capabilities (the ``@required`` marker lives in required.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

from .. import dtype as dt
from ..errors import DTypeError
from .activation_ops import ActivationOps
from .bool_ops import BoolOps
from .float_ops import FloatOps
from .int_ops import IntOps
from .module_ops import ModuleOps
from .tensor_ops import TensorOps


@dataclass(frozen=True)
class Caps:
    """What a backend can do; code branches on caps, never on backend names."""

    dtypes: frozenset = field(default_factory=lambda: frozenset(dt.ALL))
    max_dims: int = 32
    float16: bool = True
    float64: bool = True
    asynchronous: bool = False  # reads may need ``await`` (browser without JSPI)

    def check_dtype(self, dtype: dt.DType, op: str, backend: str) -> None:
        if dtype not in self.dtypes:
            valid = ", ".join(sorted(d.name for d in self.dtypes))
            raise DTypeError(f"{op}: backend '{backend}' has no {dtype.name} (it has: {valid})")


class Backend(TensorOps, FloatOps, IntOps, BoolOps, ModuleOps, ActivationOps):
    """Base of every backend; see the package docstring for the contract."""

    name: str = "abstract"
    caps: Caps = Caps()
    device: str = "cpu"

    @classmethod
    def required_ops(cls) -> list[str]:
        """Names of the required primitives (those a new backend must implement)."""
        names = []
        for klass in Backend.__mro__:
            for attr, value in vars(klass).items():
                if getattr(value, "is_required", False):
                    names.append(attr)
        return sorted(set(names))

    @classmethod
    def missing_ops(cls) -> list[str]:
        """Required primitives this backend class still lacks."""
        return [n for n in cls.required_ops() if getattr(getattr(cls, n), "is_required", False)]

    def __repr__(self) -> str:
        return f"<ember backend {self.name} on {self.device}>"
