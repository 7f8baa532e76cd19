"""``__array_namespace_info__()``: what this namespace supports, per device.

A device is a backend (``x.device`` is a :class:`~ember.tensor.Device` for ``x``'s backend);
``devices()`` lists the backends that can be created here (wgpu only with wgpu-py and a GPU
adapter, wasm only with its kernels); ``device=`` takes one of them, any backend name
(decorated ones too) or a Backend.

>>> import ember.array_api as xp
>>> info = xp.__array_namespace_info__()
>>> info.default_dtypes(device="numpy")["indexing"], info.default_device() in info.devices()
(ember.int64, True)
>>> str(xp.asarray([1.0], device="python").device) in [str(d) for d in info.devices()]
True
"""

from __future__ import annotations

from .. import dtype as dt
from ..backends import available, default_backend, get_backend
from ..tensor import Device
from ._common import resolve_device
from ._dtypes import isdtype


def _creatable() -> list[Device]:
    """The registered backends that hold arrays themselves (decorators such as autodiff-numpy
    or router-wgpu-numpy wrap them) and can be created here."""
    out = []
    for name in available():
        try:
            b = get_backend(name)
        except Exception:  # noqa: BLE001 - a backend whose dependency or hardware is missing
            continue
        if b.inner is None and not getattr(b, "backends", None):  # not a Router of backends
            out.append(Device(b))
    return out


class Info:
    """The standard's inspection object."""

    __module__ = "ember.array_api"

    def capabilities(self) -> dict:
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 64}

    def default_device(self) -> Device:
        return Device(default_backend())

    def devices(self) -> list[Device]:
        return _creatable()

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
