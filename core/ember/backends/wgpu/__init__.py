"""The wgpu backend: WGSL compute shaders through wgpu-py, or ``navigator.gpu`` in a browser.

Layers: ``adapter`` (the GPU interface: wgpu-py in ``native``, ``navigator.gpu`` in
``browser``), ``kernels`` (WGSL files from ``shaders/``, placeholder rendering, pipeline cache),
``allocator`` (size-class buffer cache), ``engine`` (submits as it goes), ``capture``
(recorded programs replayed with one submit; ``replay`` runs ``ember.jit`` tapes on them),
``launch``/``compute`` (kernel launchers), then the backend in the same files as every backend: ``backend`` (the
class: data, layout, indexing, creation), ``ops`` (the math) and ``nn`` (module ops).

>>> import ember
>>> with ember.use_backend("wgpu"):          # doctest: +SKIP
...     ember.tensor([1.0, 2.0]).exp().tolist()
"""

from .backend import WgpuBackend

__all__ = ["WgpuBackend"]
