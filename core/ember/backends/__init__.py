"""Backend registry and the default backend.

numpy is the default when it imports, else the pure-Python reference backend.

>>> import ember
>>> with ember.use_backend("python"):
...     ember.ones(2).backend.name
'python'
"""

from __future__ import annotations

import contextlib
import contextvars
import importlib
from collections.abc import Callable, Iterator

from ..contract import Backend
from ..errors import EmberError

# name → "module:Class" (imported on first use, so optional dependencies stay optional)
_FACTORIES: dict[str, str | Callable[[], Backend]] = {
    "python": "ember.backends.python:PythonBackend",
    "numpy": "ember.backends.numpy:NumpyBackend",
    "wgpu": "ember.backends.wgpu:WgpuBackend",
    "wasm": "ember.backends.wasm:WasmBackend",
}
_INSTANCES: dict[str, Backend] = {}
_default: Backend | None = None
_override: contextvars.ContextVar[Backend | None] = contextvars.ContextVar("ember_backend", default=None)


def register(name: str, factory: str | Callable[[], Backend]) -> None:
    """Make a backend available by name; ``factory`` is a callable or ``"module:Class"``."""
    _FACTORIES[name] = factory
    _INSTANCES.pop(name, None)


def available() -> list[str]:
    """Names of registered backends (whether or not their dependencies are installed)."""
    return sorted(_FACTORIES)


def get_backend(spec: str | Backend) -> Backend:
    """A backend instance from a name (``"numpy"``) or an instance (returned as is)."""
    if isinstance(spec, Backend):
        return spec
    if not isinstance(spec, str):
        raise TypeError(f"backend must be a name or a Backend, got {type(spec).__name__}")
    if spec not in _INSTANCES:
        factory = _FACTORIES.get(spec)
        if factory is None:
            raise EmberError(f"unknown backend {spec!r}; registered: {', '.join(available())}")
        if isinstance(factory, str):
            module, _, cls = factory.partition(":")
            factory = getattr(importlib.import_module(module), cls)
        _INSTANCES[spec] = factory()
    return _INSTANCES[spec]


def default_backend() -> Backend:
    """The backend new tensors go to (set by ``set_default_backend``/``use_backend``)."""
    current = _override.get()
    if current is not None:
        return current
    global _default
    if _default is None:
        try:
            import numpy  # noqa: F401

            _default = get_backend("numpy")
        except ImportError:
            _default = get_backend("python")
    return _default


def set_default_backend(spec: str | Backend) -> Backend:
    """Make ``spec`` (a name or a Backend) the backend new tensors go to, for the whole process
    (``use_backend`` sets it for a block); returns the backend.

    >>> import ember
    >>> before = ember.default_backend()
    >>> set_default_backend("python").name, ember.ones(1).backend.name
    ('python', 'python')
    >>> _ = set_default_backend(before)
    """
    global _default
    _default = get_backend(spec)
    return _default


@contextlib.contextmanager
def use_backend(spec: str | Backend) -> Iterator[Backend]:
    """Within the block, new tensors go to ``spec``."""
    token = _override.set(get_backend(spec))
    try:
        yield _override.get()
    finally:
        _override.reset(token)
