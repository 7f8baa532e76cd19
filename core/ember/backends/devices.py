"""PyTorch's device strings for ``Tensor.to`` and ``Module.to``: which backend ``"cpu"`` or
``"cuda"`` means, next to backend names and dtypes.

- ``"cpu"``: the tensor's own backend when it already runs on the host, else the default
  backend when that one runs on the host, else numpy (python without numpy);
- ``"cuda"``, ``"gpu"``, ``"webgpu"`` (and ``":0"`` after any of them): the tensor's own
  backend when it already runs on a GPU, else ``wgpu`` (WebGPU: Vulkan, Metal, DX12 or the
  browser's ``navigator.gpu``; Ember has no CUDA backend);
- a backend name (``"numpy"``, ``"autodiff-wgpu"``...), a Backend or a tensor's ``device``:
  that backend.

Moving a tensor of an Autodiff backend to a device keeps it on an Autodiff backend (``"cuda"``
from ``autodiff-numpy`` is ``autodiff-wgpu``), so ``model.to("cuda")`` still trains.

>>> import ember
>>> from ember.backends.devices import resolve
>>> x = ember.ones(2, backend="autodiff-numpy")
>>> resolve("cpu", x.backend).name, resolve("numpy", x.backend).name
('autodiff-numpy', 'numpy')
"""

from __future__ import annotations

from ..contract import Backend, Device
from ..errors import DeviceError
from . import available, default_backend, get_backend

HOST = ("cpu",)
GPU = ("cuda", "gpu", "webgpu")


def device_names() -> tuple[str, ...]:
    """The device strings :func:`resolve` accepts (besides backend names)."""
    return HOST + GPU


def _base(spec: str) -> str | None:
    """``"cuda:0"`` → ``"cuda"``; None when ``spec`` is no device string."""
    name, _, index = spec.partition(":")
    if name not in HOST + GPU or index not in ("", "0"):
        return None
    return name


def is_target(spec) -> bool:
    """Whether ``spec`` names a backend or device (a dtype is not one).

    >>> is_target("cuda:0"), is_target("numpy"), is_target("float16"), is_target("cuda:1")
    (True, True, False, False)
    """
    return isinstance(spec, (Backend, Device)) or (
        isinstance(spec, str) and (spec in available() or _base(spec) is not None)
    )


def split(target, dtype, op: str) -> tuple:
    """``(target, dtype)`` of a ``to(target, dtype)`` call whose ``target`` may be a dtype
    (``t.to(ember.float16)``, ``t.to("int32")``); a name that is neither raises the error
    listing the valid devices, backends and dtypes.

    >>> import ember
    >>> split("cuda", None, "to"), split("float16", None, "to")
    (('cuda', None), (None, ember.float16))
    """
    if target is None or is_target(target):
        return target, dtype
    from ..dtype import as_dtype
    from ..errors import DTypeError

    try:
        as_dt = as_dtype(target)
    except DTypeError:
        raise unknown_target(target, op) from None
    if dtype is not None:
        raise TypeError(f"{op}: got two dtypes ({target!r} and {dtype!r})")
    return None, as_dt


def resolve(spec: str | Backend | Device, current: Backend) -> Backend:
    """The backend that ``spec`` (a device string, backend name, Backend or a tensor's
    ``device``) means for a tensor on ``current``."""
    if isinstance(spec, Device):
        return spec.backend
    if isinstance(spec, Backend) or spec in available():
        return get_backend(spec)
    base = _base(spec) if isinstance(spec, str) else None
    if base is None:
        raise unknown_target(spec, "to")
    if base in HOST:
        if current.device == "cpu":
            return current
        host = default_backend()
        if host.device != "cpu":
            host = _host_default()
        return _keep_gradients(host, current)
    if current.device.startswith("gpu"):
        return current
    return _keep_gradients(get_backend("wgpu"), current)


def _host_default() -> Backend:
    try:
        import numpy  # noqa: F401
    except ImportError:
        return get_backend("python")
    return get_backend("numpy")


def _keep_gradients(target: Backend, current: Backend) -> Backend:
    name = f"autodiff-{target.name}"
    if current.caps.gradients and not target.caps.gradients and name in available():
        return get_backend(name)
    return target


def unknown_target(spec, op: str) -> DeviceError:
    """The error for ``spec`` that is no device, backend or dtype, listing the valid ones."""
    from ..dtype import ALL

    return DeviceError(
        f"{op}: {spec!r} is no device, backend or dtype; devices: "
        f"{', '.join(device_names())} (and 'cuda:0'); backends: {', '.join(available())}; "
        f"dtypes: {', '.join(d.name for d in ALL)}"
    )
