"""The check ``ember onnx convert`` runs: the written module against the runtime path.

:func:`verify` feeds the same random inputs of the model's declared shapes to the generated
module and to ``ember.onnx.load``'s module, and raises :class:`ConvertMismatchError` when an
output differs. A check that cannot run (an input without a declared type or shape, inputs
beyond ``ember.limits``, a runtime that fails on random data) raises
:class:`ConvertCheckError` with the reason: an unchecked module is never reported as a
success.
"""

from __future__ import annotations

import importlib.util

from .. import limits
from ..errors import EmberError


class ConvertCheckError(EmberError, ValueError):
    """``ember onnx convert`` could not check the generated module against the runtime path
    (the message says why and which ``shapes`` would let it), or the check failed.

    >>> import ember, ember.onnx
    >>> issubclass(ember.onnx.ConvertCheckError, ember.EmberError)
    True
    """


class ConvertMismatchError(ConvertCheckError):
    """The generated module does not reproduce the runtime path (``ember.onnx.load``).

    >>> import ember, ember.onnx
    >>> issubclass(ember.onnx.ConvertMismatchError, ember.onnx.ConvertCheckError)
    True
    """


def example_inputs(module, seed: int = 0) -> list:
    """Random inputs of the declared shapes and types. A dynamic dim is 1 when it leads (a
    batch), else 64 (an image side, a sequence length). An input without a declared tensor
    type or shape raises :class:`ConvertCheckError`."""
    import numpy as np

    from ._types import onnx_dtype

    rng = np.random.default_rng(seed)
    out = []
    for n in module.graph.inputs:
        elem, shape = module.graph.input_info.get(n, (None, None))
        if elem is None or shape is None:
            raise ConvertCheckError(
                f"onnx convert: cannot check the generated module: input {n!r} has no "
                f"declared {'tensor type' if elem is None else 'shape'}; give its shape "
                f"(--shape {n}=D1,D2,... or shapes={{{n!r}: (...)}})")
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


def _unchecked(why: str, arrays) -> ConvertCheckError:
    shapes = ", ".join(str(tuple(a.shape)) for a in arrays)
    return ConvertCheckError(f"onnx convert: cannot check the generated module: {why} (inputs "
                             f"of shapes {shapes}); give realistic input shapes with --shape "
                             "NAME=D1,D2,...")


def verify(module, py_path: str, rtol: float = 1e-4, atol: float = 1e-5) -> None:
    """Run the generated module and the runtime path on :func:`example_inputs`; raise
    :class:`ConvertMismatchError` if they differ, :class:`ConvertCheckError` if they cannot
    run."""
    import numpy as np

    from ._types import numpy_to_tensor

    arrays = example_inputs(module)
    bound = limits.current()
    if sum(a.size for a in arrays) > bound.max_activation_elements:
        raise _unchecked("the declared inputs hold more elements than "
                         + bound.describe("max_activation_elements"), arrays)
    feeds = [numpy_to_tensor(a, module.backend) for a in arrays]
    try:
        want = module(*feeds)
    except MemoryError:
        raise _unchecked("running the model on these shapes runs out of memory",
                         arrays) from None
    except Exception as e:  # noqa: BLE001 - nothing to compare with
        raise _unchecked(f"ember.onnx.load's module fails on random inputs "
                         f"({type(e).__name__}: {e})", arrays) from e
    spec = importlib.util.spec_from_file_location("ember_onnx_generated", py_path)
    gen = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(gen)
        got = gen.load(backend=module.backend)(*feeds)
    except MemoryError:
        raise _unchecked("running the generated module on these shapes runs out of memory",
                         arrays) from None
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
