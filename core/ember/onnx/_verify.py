"""The check ``ember onnx convert`` runs: the written module against the runtime path.

:func:`verify` feeds the same random inputs of the model's declared shapes to the generated
module and to ``ember.onnx.load``'s module, and raises :class:`ConvertMismatchError` when an
output differs; it returns why it could not check (an undeclared shape, inputs beyond
``ember.limits``, a runtime that fails on random data) so the caller can warn.
"""

from __future__ import annotations

import importlib.util

from .. import limits
from ..errors import EmberError


class ConvertMismatchError(EmberError, ValueError):
    """The generated module does not reproduce the runtime path (``ember.onnx.load``).

    >>> import ember, ember.onnx
    >>> issubclass(ember.onnx.ConvertMismatchError, ember.EmberError)
    True
    """


def example_inputs(module, seed: int = 0) -> list | None:
    """Random inputs of the declared shapes and types, or None when an input's type is not a
    plain tensor. A dynamic dim is 1 when it leads (a batch), else 64 (an image side, a
    sequence length)."""
    import numpy as np

    from ._types import onnx_dtype

    rng = np.random.default_rng(seed)
    out = []
    for n in module.graph.inputs:
        elem, shape = module.graph.input_info.get(n, (None, None))
        if elem is None or shape is None:
            return None
        dims = [d if isinstance(d, int) and d > 0 else (64 if k else 1)
                for k, d in enumerate(shape)]
        kind = onnx_dtype(elem).name
        if kind.startswith("float"):
            a = rng.standard_normal(dims).astype(kind)
        elif kind == "bool":
            a = rng.random(dims) < 0.5
        else:
            a = rng.integers(0, 3, dims).astype(kind)
        out.append(a)
    return out


def verify(module, py_path: str, rtol: float = 1e-4, atol: float = 1e-5) -> str | None:
    """Run the generated module and the runtime path on :func:`example_inputs`; raise
    :class:`ConvertMismatchError` if they differ. Returns why it could not check, or None."""
    import numpy as np

    from ._types import numpy_to_tensor

    feeds = example_inputs(module)
    if feeds is None:
        return "an input has no declared tensor shape"
    bound = limits.current()
    if sum(a.size for a in feeds) > bound.max_activation_elements:
        return ("the declared inputs hold more elements than "
                + bound.describe("max_activation_elements"))
    feeds = [numpy_to_tensor(a, module.backend) for a in feeds]
    try:
        want = module(*feeds)
    except MemoryError:
        return "running the model on its declared shapes runs out of memory"
    except Exception as e:  # noqa: BLE001 - nothing to compare with
        return f"the runtime path fails on random inputs ({type(e).__name__}: {e})"
    spec = importlib.util.spec_from_file_location("ember_onnx_generated", py_path)
    gen = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(gen)
        got = gen.load(backend=module.backend)(*feeds)
    except MemoryError:
        return "running the model on its declared shapes runs out of memory"
    except Exception as e:
        raise ConvertMismatchError(
            f"onnx convert: the generated {py_path} fails where ember.onnx.load runs: "
            f"{type(e).__name__}: {e}") from e
    want = want if isinstance(want, tuple) else (want,)
    got = got if isinstance(got, tuple) else (got,)
    if len(got) != len(want):
        raise ConvertMismatchError(f"onnx convert: the generated module returns {len(got)} "
                                   f"outputs, the model {len(want)}")
    for k, (g, w) in enumerate(zip(got, want)):
        if isinstance(w, list) or w is None:
            continue
        gn, wn = np.asarray(g.numpy()), np.asarray(w.numpy())
        if gn.shape != wn.shape or gn.dtype != wn.dtype or not _close(gn, wn, rtol, atol):
            raise ConvertMismatchError(
                f"onnx convert: output {k} of the generated module differs from "
                f"ember.onnx.load: {gn.dtype}{gn.shape} vs {wn.dtype}{wn.shape}, largest "
                f"difference {_diff(gn, wn)}")
    return None


def _close(got, want, rtol: float, atol: float) -> bool:
    """``allclose`` with ``atol`` relative to the output's magnitude, a chunk at a time (an
    output may be as large as the model makes it)."""
    import numpy as np

    g, w = got.reshape(-1), want.reshape(-1)
    scale = atol * max(1.0, float(np.abs(w).max(initial=0)))
    step = 1 << 20
    return all(np.allclose(g[i:i + step], w[i:i + step], rtol=rtol, atol=scale,
                           equal_nan=True) for i in range(0, g.size, step))


def _diff(a, b) -> str:
    import numpy as np

    if a.shape != b.shape:
        return "n/a (shapes differ)"
    return f"{float(np.nanmax(np.abs(a.astype(np.float64) - b.astype(np.float64)))):.3g}"
