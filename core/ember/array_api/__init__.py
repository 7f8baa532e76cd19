"""``ember.array_api``: the Python Array API standard (revision 2024.12) over Ember tensors.

Ember tensors are the array objects (``x.__array_namespace__()`` returns this module), so
array-agnostic code — scikit-learn with ``array_api_dispatch=True``, SciPy, array-api-extra —
runs on any Ember backend: python, numpy, wasm, wgpu, with the dtypes each holds (bool,
int8-64, uint8-64, float32/64 on numpy and python; no int16 or uint16-64 on wasm and wgpu; no
complex anywhere, so no ``fft`` extension).
``docs/array_api.md`` lists what differs from the standard and why.

>>> import ember.array_api as xp
>>> x = xp.asarray([[1.0, 2.0], [3.0, 4.0]], device="python")
>>> xp.mean(x, axis=0).tolist(), x.__array_namespace__() is xp
([2.0, 3.0], True)
>>> xp.linalg.matrix_norm(x).dtype
ember.float32
"""

import importlib as _importlib
import math as _math

from ..dtype import bool_ as bool  # noqa: A001 - the standard's name
from ..dtype import float32, float64, int8, int16, int32, int64, uint8, uint16, uint32, uint64
from ..tensor import Tensor as _Tensor

# where each function lives; a submodule is imported on first use of one of its names, so
# `import ember` (which imports this package for the Tensor's bindings below) stays cheap
_MODULES = {
    "_creation": "arange asarray empty empty_like eye full full_like linspace meshgrid ones "
                 "ones_like tril triu zeros zeros_like",
    "_dtypes": "astype can_cast finfo iinfo isdtype result_type",
    "_elementwise": "abs acos acosh add asin asinh atan atan2 atanh bitwise_and bitwise_invert "
                    "bitwise_left_shift bitwise_or bitwise_right_shift bitwise_xor ceil clip conj "
                    "copysign cos cosh divide equal exp expm1 floor floor_divide greater "
                    "greater_equal hypot imag isfinite isinf isnan less less_equal log log1p "
                    "log2 log10 logaddexp logical_and logical_not logical_or logical_xor maximum "
                    "minimum multiply negative nextafter not_equal positive pow real reciprocal "
                    "remainder round sign signbit sin sinh sqrt square subtract tan tanh trunc",
    "_info": "__array_namespace_info__",
    "_interchange": "from_dlpack",
    "_manipulation": "broadcast_arrays broadcast_to concat expand_dims flip moveaxis "
                     "permute_dims repeat reshape roll squeeze stack take take_along_axis tile "
                     "unstack",
    "_searching": "argmax argmin argsort count_nonzero nonzero searchsorted sort unique_all "
                  "unique_counts unique_inverse unique_values where",
    "_statistical": "all any cumulative_prod cumulative_sum diff max mean min prod std sum var",
    "linalg": "matmul matrix_transpose tensordot vecdot",
}
_WHERE = {name: module for module, names in _MODULES.items() for name in names.split()}


def __getattr__(name: str):
    if name == "linalg":
        value = _importlib.import_module(f"{__name__}.linalg")
    elif name in _WHERE:
        value = getattr(_importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE) | {"linalg"})


__array_api_version__ = "2024.12"
_VERSIONS = ("2021.12", "2022.12", "2023.12", "2024.12")

e = _math.e
inf = _math.inf
nan = _math.nan
pi = _math.pi
newaxis = None


def _array_namespace(self, /, *, api_version=None):
    """This namespace, for the standard revision ``api_version`` (None: the newest)."""
    if api_version is not None and api_version not in _VERSIONS:
        raise ValueError(f"__array_namespace__: api_version {api_version!r} is not supported; "
                         f"valid: {', '.join(_VERSIONS)}")
    import sys

    return sys.modules[__name__]


def _to_device(self, device, /, *, stream=None):
    """The array on ``device`` (a backend, its name, or an array's ``.device``).

    >>> import ember.array_api as xp
    >>> x = xp.asarray([1.0, 2.0], device="numpy")
    >>> x.to_device("python").backend.name, x.to_device(x.device).tolist()
    ('python', [1.0, 2.0])
    """
    from ._common import resolve_device

    if stream is not None:
        raise ValueError("to_device: Ember backends have no streams; pass stream=None")
    return self.to(resolve_device(device))


# the array object's side of the standard, bound when `import ember` loads this package:
# the namespace entry point and device moves
_Tensor.__array_namespace__ = _array_namespace
_Tensor.to_device = _to_device
