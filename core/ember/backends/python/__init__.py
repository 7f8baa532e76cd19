"""The pure-Python reference backend (``array.array`` storage, the standard library only).

``backend`` holds the class (data, layout, indexing, creation), ``ops`` the math, ``array`` the
primitive :class:`~ember.backends.python.pyarray.PyArray` and ``scalar_math`` numpy's IEEE results
for one scalar at a time.
"""

from .backend import PythonBackend

__all__ = ["PythonBackend"]
