"""``ember.array_api``: the Python Array API standard (revision 2024.12) over Ember tensors.

Ember tensors are the array objects (``x.__array_namespace__()`` returns this module), so
array-agnostic code — scikit-learn with ``array_api_dispatch=True``, SciPy, array-api-extra —
runs on any Ember backend: python, numpy, wasm, wgpu, with the dtypes each holds (bool,
int8/32/64, uint8, float32/64; no int16, uint16-64 or complex, so no ``fft`` extension).
``docs/array_api.md`` lists what differs from the standard and why.

>>> import ember.array_api as xp
>>> x = xp.asarray([[1.0, 2.0], [3.0, 4.0]], device="python")
>>> xp.mean(x, axis=0).tolist(), x.__array_namespace__() is xp
([2.0, 3.0], True)
>>> xp.linalg.matrix_norm(x).dtype
ember.float32
"""

import math as _math

from ..dtype import bool_ as bool  # noqa: A001 - the standard's name
from ..dtype import float32, float64, int8, int32, int64, uint8
from ..tensor import Tensor as _Tensor
from ._creation import (
    arange, asarray, empty, empty_like, eye, full, full_like, linspace, meshgrid, ones,
    ones_like, tril, triu, zeros, zeros_like,
)
from ._dtypes import astype, can_cast, finfo, iinfo, isdtype, result_type
from ._elementwise import (
    abs, acos, acosh, add, asin, asinh, atan, atan2, atanh, bitwise_and, bitwise_invert,
    bitwise_left_shift, bitwise_or, bitwise_right_shift, bitwise_xor, ceil, clip, conj, copysign,
    cos, cosh, divide, equal, exp, expm1, floor, floor_divide, greater, greater_equal, hypot,
    imag, isfinite, isinf, isnan, less, less_equal, log, log1p, log2, log10, logaddexp,
    logical_and, logical_not, logical_or, logical_xor, maximum, minimum, multiply, negative,
    nextafter, not_equal, positive, pow, real, reciprocal, remainder, round, sign, signbit, sin,
    sinh, sqrt, square, subtract, tan, tanh, trunc,
)
from ._info import __array_namespace_info__
from ._interchange import from_dlpack
from ._manipulation import (
    broadcast_arrays, broadcast_to, concat, expand_dims, flip, moveaxis, permute_dims, repeat,
    reshape, roll, squeeze, stack, take, take_along_axis, tile, unstack,
)
from ._searching import (
    argmax, argmin, argsort, count_nonzero, nonzero, searchsorted, sort, unique_all,
    unique_counts, unique_inverse, unique_values, where,
)
from ._statistical import (
    all, any, cumulative_prod, cumulative_sum, diff, max, mean, min, prod, std, sum, var,
)
from . import linalg
from .linalg import matmul, matrix_transpose, tensordot, vecdot

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
    """The array on ``device`` (a backend, its name, or an array's ``.device``)."""
    from ._common import resolve_device

    if stream is not None:
        raise ValueError("to_device: Ember backends have no streams; pass stream=None")
    return self.to(resolve_device(device))


def _reflected(fn):
    def method(self, other, /):
        return fn(other, self)

    return method


# the array object's side of the standard, bound when `import ember` loads this package:
# the namespace entry point, device moves, and the shift operators (which, like the integer
# bitwise functions, have no op-contract primitive and run on the host)
_Tensor.__array_namespace__ = _array_namespace
_Tensor.to_device = _to_device
_Tensor.__lshift__ = bitwise_left_shift
_Tensor.__rshift__ = bitwise_right_shift
_Tensor.__rlshift__ = _reflected(bitwise_left_shift)
_Tensor.__rrshift__ = _reflected(bitwise_right_shift)
