"""The numpy backend, Ember's CPU default.

``backend`` holds the class (data, layout, indexing, creation), ``ops`` the math, ``nn`` the
module-op overrides and ``philox`` the vectorised random stream.
"""

from .backend import NumpyBackend, tune_malloc

__all__ = ["NumpyBackend", "tune_malloc"]
