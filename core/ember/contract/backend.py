"""The Backend base class and its capabilities.

``Backend`` has one method per declared op (:mod:`ember.contract.registry`): the op's default
body for composites, a method raising :class:`~ember.errors.UnsupportedOpError` for required
primitives. A backend overrides them by defining methods of the ops' names, or with
:meth:`Backend.implement`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .. import dtype as dt
from ..errors import DTypeError
from . import registry
from .registry import Op

# the op families: importing them declares every op
from . import float_math, int_bool, movement, reductions  # noqa: F401,E402
from . import activations, convolution, normalization, pooling  # noqa: F401,E402
from . import quantized  # noqa: F401,E402


@dataclass(frozen=True)
class Caps:
    """What a backend can do; code branches on caps, never on backend names."""

    dtypes: frozenset = field(default_factory=lambda: frozenset(dt.ALL))
    #: records gradients (an Autodiff backend; its ``inner`` is the backend it decorates)
    gradients: bool = False
    #: dtypes held in fewer bits than their name says (wgpu's int64, stored as int32): values
    #: must fit the narrower type; a Router sends them to a backend that holds them exactly
    narrow: frozenset = frozenset()
    #: ops on distinct tensors may run on two threads at once (a Remote server then runs
    #: small ops beside a large one); a decorator that keeps state between ops clears it
    threadsafe: bool = False
    #: its ``compile_tape`` still runs Python per op when it replays (numpy: closures over
    #: arrays), unlike a captured program (wgpu, wasm): ``ember.jit`` then helps less, and
    #: the Learner and the demos don't use it by default (``ember.jit.benefits``)
    replays_per_op: bool = False

    def check_dtype(self, dtype: dt.DType, op: str, backend: str) -> None:
        if dtype not in self.dtypes:
            valid = ", ".join(sorted(d.name for d in self.dtypes))
            raise DTypeError(f"{op}: backend '{backend}' has no {dtype.name} (it has: {valid})")


class Backend:
    """Base of every backend; see :mod:`ember.contract` for the contract."""

    name: str = "abstract"
    caps: Caps = Caps()
    device: str = "cpu"
    #: the backend a decorator (Autodiff, ...) wraps; None for a backend of its own
    inner: Backend | None = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for attr in vars(cls):
            if attr.startswith(("float_", "int_", "bool_")) and attr not in registry.REGISTRY:
                raise TypeError(
                    f"{cls.__name__}.{attr}: no op of that name is declared in "
                    "ember.contract (declare it there first, or fix the name)"
                )

    @classmethod
    def implement(cls, op: Op, fn) -> None:
        """Use ``fn(self, *args)`` as this backend's implementation of ``op``."""
        if registry.REGISTRY.get(op.name) is not op:
            raise TypeError(f"implement: {op!r} is not a declared op")
        setattr(cls, op.name, fn)

    @classmethod
    def required_ops(cls) -> list[str]:
        """Names of the required primitives (those a new backend must implement)."""
        return sorted(op.name for op in registry.ops() if op.required)

    @classmethod
    def missing_ops(cls) -> list[str]:
        """Required primitives this backend class still lacks."""
        return [n for n in cls.required_ops() if getattr(getattr(cls, n), "is_required", False)]

    def __repr__(self) -> str:
        return f"<ember backend {self.name} on {self.device}>"


for _op in registry.ops():
    setattr(Backend, _op.name, _op.default if _op.default is not None else _op.missing())


class Device:
    """Where a tensor lives: its backend. ``t.device`` is one; ``t.to(device)``,
    ``module.to(device)`` and every ``device=`` of ``ember.array_api`` take it back, so code
    that makes arrays on ``x.device`` keeps them on ``x``'s backend. Two devices are equal when
    they are the same backend; ``type`` is the hardware the backend runs on (``"cpu"``,
    ``"gpu:<adapter>"``...).

    >>> import ember
    >>> t = ember.tensor([1.0], backend="python")
    >>> t.device, str(t.device), t.device.type
    (Device('python', 'cpu'), 'python', 'cpu')
    >>> t.device == ember.tensor([2], backend="python").device, t.device == ember.tensor([2]).device
    (True, False)
    >>> ember.tensor([3.0]).to(t.device).backend.name
    'python'
    """

    __slots__ = ("backend",)

    def __init__(self, backend):
        self.backend = backend

    @property
    def type(self) -> str:
        """The hardware of the backend: ``"cpu"``, ``"gpu:<adapter name>"``, ``"remote:<url>"``."""
        return self.backend.device

    def __eq__(self, other) -> bool:
        return isinstance(other, Device) and other.backend is self.backend

    def __hash__(self) -> int:
        return hash(id(self.backend))

    def __repr__(self) -> str:
        return f"Device({self.backend.name!r}, {self.backend.device!r})"

    def __str__(self) -> str:
        return self.backend.name
