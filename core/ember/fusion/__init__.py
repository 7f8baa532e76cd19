"""Lazy elementwise fusion as a backend decorator (Burn's ``Fusion<B>``); see docs/fusion.md.

``Fusion(inner)`` records chains of elementwise ops and runs each as one program on the inner
backend: one generated WGSL kernel on wgpu (with the reduction or the matmul the chain feeds
or follows), ufuncs writing into reused temporaries on numpy.
Registered names: ``"fusion-numpy"``, ``"fusion-wgpu"`` and ``"autodiff-fusion-wgpu"``
(``Autodiff(Fusion(wgpu))``).

>>> import ember
>>> x = ember.tensor([0.5, 1.5], backend="fusion-numpy")
>>> ((x - 0.5) * 2).tolist()
[0.0, 2.0]
"""

from ..autodiff import Autodiff
from ..backends import get_backend, register
from .backend import Fusion, FusionPrim
from .program import Program

register("fusion-numpy", lambda: Fusion(get_backend("numpy")))
register("fusion-wgpu", lambda: Fusion(get_backend("wgpu")))
register("autodiff-fusion-wgpu", lambda: Autodiff(get_backend("fusion-wgpu")))

__all__ = ["Fusion", "FusionPrim", "Program"]
