"""Running the official ONNX backend node test cases through ember.onnx (shared by the pytest
suite and the coverage-table generator)."""

from __future__ import annotations

import warnings
from functools import lru_cache

import numpy as np


@lru_cache(maxsize=1)
def cases() -> dict:
    """name -> onnx TestCase, for every generated single-operator case."""
    from onnx.backend.test.case.node import collect_testcases

    # the generators draw their inputs from numpy's global generator: seed it so every run
    # (and the known-failures list) sees the same data
    np.random.seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {c.name: c for c in collect_testcases(None)}


def tested_op(case) -> str:
    """The op under test: the graph's op when it has one; the last node otherwise."""
    nodes = case.model.graph.node
    kinds = [n.op_type for n in nodes]
    if len(set(kinds)) == 1:
        return kinds[0]
    # expanded (function-body) cases are named after their op; match by name
    name = case.name.removeprefix("test_").replace("_", "").lower()
    best = [k for k in set(kinds) if name.startswith(k.lower())]
    return max(best, key=len) if best else kinds[-1]


def _to_ember_input(v):
    """Data sets hold numpy arrays, lists (sequences), None, or raw TensorProtos."""
    if isinstance(v, list):
        return [_to_ember_input(x) for x in v]
    if hasattr(v, "SerializeToString") and hasattr(v, "data_type"):
        from onnx import numpy_helper

        return numpy_helper.to_array(v)
    return v


def _compare(name, got, want, rtol, atol):
    from ember.onnx._types import _NUMPY_WIDEN

    if isinstance(want, list):
        assert isinstance(got, list), f"output {name}: expected a sequence, got {type(got)}"
        assert len(got) == len(want), f"output {name}: sequence length {len(got)} != {len(want)}"
        for i, (g, w) in enumerate(zip(got, want)):
            _compare(f"{name}[{i}]", g, w, rtol, atol)
        return
    if want is None:
        assert got is None, f"output {name}: expected an empty optional"
        return
    want = np.asarray(_to_ember_input(want))
    g = got.numpy()
    expect_dtype = _NUMPY_WIDEN.get(want.dtype.name, want.dtype.name)
    assert g.dtype.name == expect_dtype, f"output {name}: dtype {g.dtype} != {expect_dtype}"
    assert g.shape == want.shape, f"output {name}: shape {g.shape} != {want.shape}"
    if want.dtype.kind == "f" or want.dtype.name == "bfloat16":
        np.testing.assert_allclose(g.astype(np.float64), want.astype(np.float64), rtol=rtol,
                                   atol=atol, equal_nan=True, err_msg=f"output {name}")
    else:
        np.testing.assert_array_equal(g, want.astype(g.dtype), err_msg=f"output {name}")


def run_case(case, backend: str = "numpy") -> None:
    """Load the case's model with ember.onnx and check every data set; raises on mismatch."""
    import ember.onnx

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = ember.onnx.load(case.model, backend=backend)
        graph_inputs = [i.name for i in case.model.graph.input]
        out_names = [o.name for o in case.model.graph.output]
        for inputs, outputs in case.data_sets:
            feeds = {n: _to_ember_input(v) for n, v in zip(graph_inputs, inputs)
                     if n in m.input_names}
            for n in m.input_names:
                feeds.setdefault(n, None)
            got = m.run(feeds)
            for n, want in zip(out_names, outputs):
                _compare(n, got[n], want, case.rtol, case.atol)


def run_all(backend: str = "numpy", names=None) -> dict[str, str | None]:
    """name -> None (pass) or 'ErrorType: message' for every case (or the given names)."""
    out = {}
    for name, case in cases().items():
        if names is not None and name not in names:
            continue
        try:
            run_case(case, backend)
            out[name] = None
        except Exception as e:  # noqa: BLE001 - a report of every case, whatever fails
            msg = str(e).strip().splitlines()
            out[name] = f"{type(e).__name__}: {msg[0][:300] if msg else ''}"
    return out




def python_subset(every: int = 4) -> list[str]:
    """A fixed, spread-out sample for the (slow) pure-Python backend: about one case in
    ``every``, drawn by a hash of the name (so a case that starts passing joins the sample
    without reshuffling it) among those that pass on numpy and have small inputs."""
    import zlib

    from known_failures import KNOWN_FAILURES

    skip = KNOWN_FAILURES["numpy"]
    out = []
    for name in sorted(n for n in cases() if n not in skip):
        if zlib.crc32(name.encode()) % every:
            continue
        case = cases()[name]
        sizes = [getattr(a, "size", 0) for ins, _ in case.data_sets for a in ins
                 if hasattr(a, "size")]
        if sum(sizes) <= 4096:
            out.append(name)
    return out
