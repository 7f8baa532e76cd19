"""numpy standing in for ``ulab.numpy`` so the ulab tier runs on CPython.

Honest label: real ulab is in no package registry this project can reach, so the ulab tier is
exercised against numpy with ulab's names (``np.float`` is float32 as on single-precision
firmware). This checks the tier's logic, not ulab's own behaviour.
"""

from __future__ import annotations

import sys
import types

import numpy


def install() -> types.ModuleType:
    """Register ``ulab`` and ``ulab.numpy`` in sys.modules; returns the ``ulab`` module."""
    shim = types.ModuleType("ulab.numpy")
    for name in ("frombuffer", "array", "zeros", "dot", "maximum", "clip", "exp", "tanh",
                 "floor", "where", "mean", "int8", "uint8"):
        setattr(shim, name, getattr(numpy, name))
    shim.float = numpy.float32
    ulab = types.ModuleType("ulab")
    ulab.numpy = shim
    sys.modules["ulab"], sys.modules["ulab.numpy"] = ulab, shim
    return ulab


def uninstall() -> None:
    sys.modules.pop("ulab", None)
    sys.modules.pop("ulab.numpy", None)
