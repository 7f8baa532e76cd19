"""Ember: a portable deep-learning toolkit.

>>> import ember
>>> x = ember.tensor([1.0, 2.0, 3.0])
>>> (x * 2).tolist()
[2.0, 4.0, 6.0]
"""

from . import dtype
from .contract import Backend, Caps
from .backends import (
    available as available_backends,
    default_backend,
    get_backend,
    register as register_backend,
    set_default_backend,
    use_backend,
)
from .tensordata import TensorData
from .dtype import (
    DType,
    bool_,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    promote_types,
    set_default_float,
    uint8,
    uint16,
    uint32,
    uint64,
)
from .errors import (
    BackendMismatchError,
    DeviceError,
    DimensionError,
    DTypeError,
    EmberError,
    ShapeError,
    TensorIndexError,
    UnsupportedOpError,
)
from .random import Generator, seed
from .tensor import Tensor
from .ops import *  # noqa: F401,F403  (the functional API: ember.zeros, ember.where, ...)
from . import tensor_methods  # noqa: F401  (binds every Tensor method, in one table)
from . import array_api  # noqa: F401  (the Array API namespace: binds __array_namespace__)
from .autodiff import Autodiff, no_grad
from .fusion import Fusion
from .router import Router
from . import router  # noqa: F401  (ember.router.PinOp, ...)
from . import limits

# loaded on first use, so `import ember` (and the CLI) don't read their modules
_LAZY = {
    "optim": ("ember.optim", None),
    "jit": ("ember.jit", None),  # the package, callable: ember.jit(fn), ember.jit.JitError
    "quantize": ("ember.quantize", None),  # callable too: ember.quantize(model, calibration)
    "io": ("ember.io", None),
    "load": ("ember.io", "load"),
    "save": ("ember.io", "save"),
    "load_weights": ("ember.io", "load_weights"),
    "Remote": ("ember.remote", "Remote"),
    "from_dlpack": ("ember.array_api", "from_dlpack"),
}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'ember' has no attribute {name!r}")
    import importlib

    module, attr = _LAZY[name]
    value = importlib.import_module(module)
    return value if attr is None else getattr(value, attr)

bool = bool_  # noqa: A001  (ember.bool, like torch.bool)
half = float16
float = float32  # noqa: A001
double = float64
int = int32  # noqa: A001
long = int64
short = int16

__version__ = "0.1.0"
