"""The wgpu backend: WGSL compute shaders through wgpu-py (and, later, ``navigator.gpu``).

Layers: ``adapter`` (the GPU interface: wgpu-py in ``native``), ``kernels`` (WGSL files from
``shaders/``, placeholder rendering, pipeline cache), ``allocator`` (size-class buffer cache),
``engine`` (batched submits), ``launch``/``compute`` (kernel launchers) and ``backend``.

>>> import ember
>>> with ember.use_backend("wgpu"):          # doctest: +SKIP
...     ember.tensor([1.0, 2.0]).exp().tolist()
"""

from .backend import WgpuBackend

__all__ = ["WgpuBackend"]
