# ember_micro: run ember models exported with ember.export on MicroPython (and CPython).
#
#   import ember_micro
#   m = ember_micro.Model("model.emb")        # or Model(path, tier="pure"|"native"|"ulab")
#   print(m.tier, m.predict(image_bytes))
from .kernels import available
from .kernels import get as get_kernels
from .model import Model, ModelError

__all__ = ["Model", "ModelError", "available", "get_kernels", "load"]
__version__ = "0.1.0"


def load(path, tier=None, **kw):
    return Model(path, tier, **kw)
