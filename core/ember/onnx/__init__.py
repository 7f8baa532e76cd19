"""ONNX import: run an ONNX model with ember, or convert it to readable ember Python code.

Two ways in (Burn's approach for the second):

- ``ember.onnx.load("model.onnx")`` returns an :class:`OnnxModule` — an ``ember.nn.Module``
  whose forward runs the graph with ember ops, on any backend (``.to("python")``).
- ``ember.onnx.convert("model.onnx", "outdir/")`` (CLI: ``ember onnx convert``) writes
  ``model.py`` (an ``ember.nn.Module`` with a readable ``forward``) and ``model.safetensors``.

Parsing needs the optional ``onnx`` package (``pip install 'ember[onnx]'``).

>>> import ember.onnx
>>> "Conv" in ember.onnx.supported_ops()
True
"""

from __future__ import annotations

from ._graph import OnnxLoadError, OnnxRunError, OnnxUnsupportedError
from ._verify import ConvertCheckError, ConvertMismatchError


def supported_ops() -> list[str]:
    """The ONNX operators ember implements directly (ops the ONNX standard defines as
    functions of these run too).

    >>> {"Conv", "Gemm", "Relu"} <= set(supported_ops())
    True
    """
    from .ops import REGISTRY

    return sorted(REGISTRY)


def convert(source, out_dir, class_name: str = "Model", shapes: dict | None = None,
            check: bool = True, force: bool = False) -> tuple[str, str]:
    """Write ``out_dir/model.py`` and ``out_dir/model.safetensors``; returns both paths.
    ``out_dir`` must be missing, empty or written by an earlier convert, unless ``force``.

    ``shapes`` fixes dynamic input dims (``{"input_ids": (1, 128)}``) so shape arithmetic
    folds; ``check`` runs the written module against ``load`` on the declared input shapes
    and raises :class:`ConvertMismatchError` if they differ, :class:`ConvertCheckError` if
    the check cannot run (the message says why). Float weights are ``nn.Parameter``s, so the
    module fine-tunes as written.

    >>> import os, tempfile, ember, ember.onnx
    >>> from ember import nn
    >>> folder = tempfile.mkdtemp()
    >>> _ = ember.onnx.export(nn.Linear(2, 1), ember.ones(1, 2), os.path.join(folder, "m.onnx"))
    >>> out = os.path.join(folder, "net")
    >>> code, weights = convert(os.path.join(folder, "m.onnx"), out, class_name="Net")
    >>> os.path.basename(code), os.path.basename(weights)
    ('model.py', 'model.safetensors')
    >>> "class Net(nn.Module)" in open(code).read()
    True
    """
    from .codegen import convert as _convert

    return _convert(source, out_dir, class_name, shapes, check, force)


def __getattr__(name: str):
    # load and OnnxModule bring the operator table; it loads on first use, so the `ember`
    # command (which registers `ember onnx ...`) starts without it
    if name in ("load", "OnnxModule"):
        from . import runtime

        return getattr(runtime, name)
    if name == "export":  # tracing brings ember.jit; loaded on first use like load
        from .exporter import export

        return export
    raise AttributeError(f"module 'ember.onnx' has no attribute {name!r}")


__all__ = [
    "ConvertCheckError", "ConvertMismatchError", "OnnxLoadError", "OnnxModule", "OnnxRunError",
    "OnnxUnsupportedError", "convert",
    "export", "load", "supported_ops",
]
