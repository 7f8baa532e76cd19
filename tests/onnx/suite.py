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


# the numpy dtypes ember holds as they are; the rest (int16, uint16, uint32, uint64,
# bfloat16, float8...) it holds in a wider dtype of the same family
_NATIVE = {"float16", "float32", "float64", "int8", "uint8", "int32", "int64", "bool"}


def _family(d) -> str:
    if d.kind == "f" or d.name.startswith(("float", "bfloat")):
        return "float"
    return "int" if d.kind in "iu" or d.name.startswith(("int", "uint")) else d.name


def _compare(name, got, want, rtol, atol):
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
    # the dtype: exactly the expected one where ember has it, else one of its family; the
    # values: exactly (integers as Python ints, so a wrapped or negative unsigned shows)
    if want.dtype.name in _NATIVE:
        assert g.dtype == want.dtype, f"output {name}: dtype {g.dtype} != {want.dtype}"
    else:
        assert _family(g.dtype) == _family(want.dtype), (
            f"output {name}: dtype {g.dtype} can't hold {want.dtype} values")
    assert g.shape == want.shape, f"output {name}: shape {g.shape} != {want.shape}"
    if _family(want.dtype) == "float":
        np.testing.assert_allclose(g.astype(np.float64), want.astype(np.float64), rtol=rtol,
                                   atol=atol, equal_nan=True, err_msg=f"output {name}")
    else:
        exact = want if want.dtype.name == "uint64" else want.astype(np.int64)
        np.testing.assert_array_equal(g.astype(object), exact.astype(object),
                                      err_msg=f"output {name}")


def run_case(case, backend: str = "numpy") -> None:
    """Load the case's model with ember.onnx and check every data set; raises on mismatch."""
    import ember.onnx
    from ember.jit import compiles

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
            # a backend that compiles (numpy, wasm, wgpu) traces on the first call and replays the
            # program on the second: both are checked
            for _ in range(2 if compiles(m.backend) else 1):
                got = m.run(feeds)
                for n, want in zip(out_names, outputs):
                    _compare(n, got[n], want, case.rtol, case.atol)


def failure(case, backend: str = "numpy") -> Exception | None:
    """What running ``case`` raises (None: it passes)."""
    try:
        run_case(case, backend)
    except Exception as e:  # noqa: BLE001 - a report of every case, whatever fails
        return e
    return None


def run_all(backend: str = "numpy", names=None) -> dict[str, str | None]:
    """name -> None (pass) or 'ErrorType: message' for every case (or the given names)."""
    out = {}
    for name, case in cases().items():
        if names is not None and name not in names:
            continue
        e = failure(case, backend)
        msg = str(e).strip().splitlines() if e is not None else []
        out[name] = None if e is None else f"{type(e).__name__}: {msg[0][:300] if msg else ''}"
    return out


def listed_failure(e: Exception, why: str, random: bool = False):
    """The known-failure entry for exception ``e``: its class and a pattern specific to this
    case (the message's first line up to the list of supported ops; for wrong values, the
    output and the count of values that differ, with the measured error in the reason;
    ``random``: the count varies from run to run)."""
    import re

    from conformance.expected import Fails

    def escape(text: str) -> str:
        return re.escape(text).replace("\\ ", " ")

    text = str(e).strip()
    wrong = re.search(r"(output \S+)\n(Mismatched elements: (\d+) / \d+ \([\d.]+%\))", text)
    if isinstance(e, AssertionError) and wrong:
        pattern = escape(f"{wrong.group(1)}\n{wrong.group(2)}")
        if random:
            pattern = pattern.replace(wrong.group(3), r"\d+", 1)
            pattern = pattern[:pattern.index(r"\(")]
        worst = re.search(r"Max absolute difference among violations: (\S+)", text)
        measured = f"{wrong.group(2)}, max abs difference {worst.group(1) if worst else '?'}"
        if random:
            measured = "a different count each run"
        return Fails("AssertionError", pattern, f"wrong values ({measured}): {why}")
    first = text.splitlines()[0] if text else ""
    first = first.split(". Supported")[0][:100]
    return Fails(type(e).__name__, escape(first), why)


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
