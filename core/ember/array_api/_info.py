"""``__array_namespace_info__()``: what this namespace supports, per backend ("device").

Devices are backends, named as ``ember.available_backends()`` lists them; ``device=`` takes
a name, a Backend, or an array's ``.device`` string.

>>> import ember.array_api as xp
>>> info = xp.__array_namespace_info__()
>>> info.default_dtypes(device="numpy")["indexing"], "float64" in info.dtypes(device="wgpu")
(ember.int64, False)
"""

from __future__ import annotations

from .. import dtype as dt
from ..backends import available, default_backend
from ._common import resolve_device
from ._dtypes import isdtype


class Info:
    """The standard's inspection object."""

    __module__ = "ember.array_api"

    def capabilities(self) -> dict:
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 64}

    def default_device(self) -> str:
        return default_backend().name

    def devices(self) -> list[str]:
        return list(available())

    def default_dtypes(self, *, device=None) -> dict:
        b = resolve_device(device)
        floating = dt.default_float if dt.default_float in b.caps.dtypes else dt.float32
        return {"real floating": floating, "complex floating": None,
                "integral": dt.default_int, "indexing": dt.int64}

    def dtypes(self, *, device=None, kind=None) -> dict:
        b = resolve_device(device)
        return {d.name: d for d in dt.ALL if d in b.caps.dtypes and d != dt.float16
                and (kind is None or isdtype(d, kind))}


def __array_namespace_info__() -> Info:
    return Info()
