"""The backend a demo runs on: the one named, and on a GPU ``Fusion`` over it with
``ember.jit`` (fused kernels, captured programs), as Burn turns fusion on for its GPU backends.

>>> backend, jit = demo_backend("numpy", None)
>>> backend.name, jit
('numpy', False)
"""

from __future__ import annotations

from ..backends import get_backend
from ..fusion import Fusion
from ..jit import benefits


def demo_backend(name: str, jit: bool | None):
    """``(backend, use_jit)`` for a demo asked to run on ``name``. ``jit=None``: jit where
    the backend benefits (:func:`ember.jit.benefits`: wgpu), and there over ``Fusion``;
    ``False``: the backend as named, eager; ``True``: jit on any backend."""
    backend = get_backend(name)
    gpu = benefits(backend)
    use_jit = gpu if jit is None else jit
    if use_jit and gpu and not isinstance(backend, Fusion):
        backend = Fusion(backend)
    return backend, use_jit
