"""A loaded module's compiled path on numpy (``ember.onnx._segments``: segments traced by
``ember.jit`` and replayed by ``NumpyBackend.compile_tape``, host nodes between them) against
the generic path it must reproduce.

Each case runs the generic path (``fast = False``, the reference), then the compiled path
twice (trace, replay), on every official node case that passes on numpy and on the real
models, and compares: integers and booleans exactly, floats to a few float32 ulps (in-place
reuse reorders nothing; the tolerance only absorbs BLAS).
"""

from __future__ import annotations

import os
import sys
import tempfile
import warnings

import pytest

pytest.importorskip("onnx")
np = pytest.importorskip("numpy")

import suite
from known_failures import KNOWN_FAILURES
from real_models import SHAPES, inputs_for, light_models, rapidocr_models

import ember
import ember.onnx
from ember.onnx import _segments

PASSING = sorted(n for n in suite.cases() if n not in KNOWN_FAILURES["numpy"])


def _same(got, want, where: str, rtol: float = 2e-6) -> None:
    if isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want)):
            _same(g, w, f"{where}[{i}]", rtol)
        return
    if want is None:
        assert got is None, where
        return
    g, w = got.numpy(), want.numpy()
    assert g.dtype == w.dtype and g.shape == w.shape, f"{where}: {g.dtype}{g.shape} vs " \
                                                      f"{w.dtype}{w.shape}"
    if w.dtype.kind == "f":
        atol = max(1e-6, rtol * float(np.nanmax(np.abs(w), initial=0.0)))
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True, err_msg=where)
    else:
        np.testing.assert_array_equal(g, w, err_msg=where)


def _generic_then_compiled(m, feeds: dict, rtol: float = 2e-6) -> dict:
    """Outputs of the generic path and of the compiled path (traced, then replayed) for
    ``feeds`` must agree; returns ``m.jit_stats()``. Real models compare with ``rtol`` of the
    output's magnitude: the conv fold puts constants into weights, which rounds differently."""
    m.fast = False
    want = m.run(feeds)
    m.fast = True
    for _ in range(2):
        got = m.run(feeds)
        for name in want:
            _same(got[name], want[name], f"output {name}", rtol)
    return m.jit_stats()


@pytest.mark.parametrize("name", PASSING)
def test_node_compiled_path_matches_generic(name):
    case = suite.cases()[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = ember.onnx.load(case.model, backend="numpy")
        graph_inputs = [i.name for i in case.model.graph.input]
        for inputs, _ in case.data_sets:
            feeds = {n: suite._to_ember_input(v) for n, v in zip(graph_inputs, inputs)
                     if n in m.input_names}
            for n in m.input_names:
                feeds.setdefault(n, None)
            _generic_then_compiled(m, feeds)


def test_most_node_cases_replay_compiled_segments():
    """Guards against the compiled path silently refusing everything (then the test above
    compares the generic path with itself). About a quarter of the cases are one node that
    reads an input's values (a Reshape's shape, Clip's bounds, ReduceSum's axes fed as graph
    inputs): that node runs on the host, and nothing is left to compile."""
    compiled = 0
    for name in PASSING[::10]:
        case = suite.cases()[name]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = ember.onnx.load(case.model, backend="numpy")
            inputs = case.data_sets[0][0]
            feeds = {n.name: suite._to_ember_input(v)
                     for n, v in zip(case.model.graph.input, inputs) if n.name in m.input_names}
            for n in m.input_names:
                feeds.setdefault(n, None)
            m.run(feeds)
            m.run(feeds)
            stats = m.jit_stats()
            compiled += stats is not None and stats["replays"] > 0
    assert compiled > len(PASSING[::10]) * 0.7


def _real(path: str, shape=None) -> dict:
    """The model compiles whole: one segment, no host node."""
    feeds = inputs_for(path, shape)
    m = ember.onnx.load(path, backend="numpy")
    stats = _generic_then_compiled(m, feeds, rtol=1e-5)
    assert (stats["segments"], stats["host_nodes"], stats["replays"]) == (1, 0, 1), stats
    return stats


RAPID = rapidocr_models()
LIGHT = light_models()


@pytest.mark.skipif(not RAPID, reason="pip install --no-deps rapidocr-onnxruntime==1.4.4")
@pytest.mark.parametrize("name", sorted(SHAPES))
def test_rapidocr_compiled_path_matches_generic(name):
    pytest.importorskip("onnxruntime")
    _real(RAPID[name], SHAPES[name])


@pytest.mark.parametrize("name", ["light_resnet50", "light_inception_v1", "light_squeezenet"])
def test_light_cnn_compiled_path_matches_generic(name):
    pytest.importorskip("onnxruntime")
    if name not in LIGHT:
        pytest.skip("no light models in this onnx wheel")
    _real(LIGHT[name])


@pytest.fixture(scope="module")
def built():
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
    from onnx_models import built as build

    return build(os.path.join(tempfile.gettempdir(), "ember-bench-onnx-models"))


@pytest.mark.parametrize("name", ["loop_rnn", "same_pool_cnn", "encoder",
                                  "efficientnet_lite0"])
def test_built_models_compiled_path_matches_generic(name, built):
    """A Loop whose body holds an If (unrolled into the trace), SiLU + SAME pooling, a
    transformer, and EfficientNet-Lite0 as ember exports it (the arithmetic batch norm after
    each Conv folded into it by compile_tape)."""
    pytest.importorskip("onnxruntime")
    if name == "encoder":
        pytest.importorskip("torch")
    if name not in built:
        pytest.skip(f"{name}: pretrained weights not installed")
    path = built[name]
    if name == "encoder":
        feeds = {"input_ids": np.random.default_rng(0).integers(0, 1000, (1, 128))}
        m = ember.onnx.load(path, backend="numpy")
        stats = _generic_then_compiled(m, feeds)
        assert (stats["segments"], stats["host_nodes"]) == (1, 0)
        return
    _real(path)
    if name == "efficientnet_lite0":
        m = ember.onnx.load(path, backend="numpy")
        for _ in range(2):
            m.run(inputs_for(path))
        (run,) = [e.run for seg in _segments_of(m) for e in seg.fn.entries.values()]
        names = [step.name for step in _tape(m).steps]
        # the exported batch norm's sub/mul/add after each conv, folded when compiled
        assert names.count("float_sub") >= 10 and run.steps < len(names) - 30


def _segments_of(m):
    return [seg for d in m._segments.values() for seg in d.segments() if seg.fn.entries]


def _tape(m):
    (tape,) = [t for seg in _segments_of(m) for t in seg.fn.tapes()]
    return tape


def test_in_place_reuse_spares_values_read_again():
    """An input read by two nodes, and a graph output read again, are never overwritten."""
    from onnx import TensorProto, helper

    f = TensorProto.FLOAT
    nodes = [helper.make_node("Relu", ["x"], ["r"]),  # r: graph output and read again
             helper.make_node("Sigmoid", ["r"], ["s"]),
             helper.make_node("Mul", ["x", "s"], ["y"]),  # x read twice
             helper.make_node("Reshape", ["y", "shape"], ["z"]),  # z views y
             helper.make_node("Relu", ["z"], ["w"])]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", f, [2, 3])],
        [helper.make_tensor_value_info(n, f, None) for n in ("r", "y", "w")],
        [helper.make_tensor("shape", TensorProto.INT64, [1], [6])])
    m = ember.onnx.load(helper.make_model(graph), backend="numpy")
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    for _ in range(3):
        r, y, w = m(x.copy())
        np.testing.assert_array_equal(r.numpy(), np.maximum(x, 0))
        want = x * (1 / (1 + np.exp(-np.maximum(x, 0))))
        np.testing.assert_allclose(y.numpy(), want, rtol=1e-6)
        np.testing.assert_allclose(w.numpy(), np.maximum(want, 0).reshape(6), rtol=1e-6)
    stats = m.jit_stats()
    assert (stats["segments"], stats["host_nodes"], stats["replays"]) == (1, 0, 2)


def test_new_input_dtypes_trace_again():
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["c"])], "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in "ab"],
        [helper.make_tensor_value_info("c", TensorProto.FLOAT, None)])
    m = ember.onnx.load(helper.make_model(graph), backend="numpy")
    for dt in (np.float32, np.float64, np.float32):
        a, b = np.arange(3, dtype=dt), np.ones(3, dtype=dt)
        m(a, b)
        c = m(a, b).numpy()
        assert c.dtype == dt and c.tolist() == [1, 2, 3]
    assert m.jit_stats()["traces"] == 2


@pytest.mark.parametrize("n,c,h,w,kh,kw,stride,pads,dil", [
    (2, 5, 7, 9, 3, 3, (1, 1), ((1, 1), (1, 1)), (1, 1)),
    (1, 4, 6, 5, 5, 3, (1, 1), ((2, 1), (0, 2)), (1, 1)),
    (3, 6, 11, 8, 3, 3, (1, 1), ((2, 2), (2, 2)), (2, 2)),
    (1, 7, 2, 9, 5, 5, (1, 1), ((2, 2), (2, 2)), (1, 1)),  # kernel rows reading only padding
    (1, 3, 1, 1, 3, 3, (1, 1), ((1, 1), (1, 1)), (1, 1)),
    (1, 2, 2, 2, 3, 3, (1, 1), ((3, 3), (1, 1)), (2, 1)),
    (2, 4, 7, 6, 5, 5, (2, 1), ((2, 2), (2, 2)), (1, 1)),
    (1, 8, 5, 5, 1, 1, (2, 2), ((0, 0), (0, 0)), (1, 1)),  # strided 1x1: one GEMM
])
def test_numpy_conv_paths_match_torch(n, c, h, w, kh, kw, stride, pads, dil):
    """The numpy conv paths the ONNX models lean on (depthwise stride 1 on a flat padded
    image, 1x1 as one GEMM) against PyTorch."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    depthwise = kh > 1
    wt = rng.standard_normal((c, 1 if depthwise else c, kh, kw)).astype(np.float32)
    b = rng.standard_normal(c).astype(np.float32)
    got = ember.get_backend("numpy").conv(x, wt, b, stride, pads, dil, c if depthwise else 1)
    xp = torch.nn.functional.pad(torch.tensor(x), (*pads[1], *pads[0]))
    want = torch.nn.functional.conv2d(xp, torch.tensor(wt), torch.tensor(b), stride=stride,
                                      dilation=dil, groups=c if depthwise else 1).numpy()
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_errors_on_the_compiled_path_are_the_generic_paths():
    """Same dtypes, a shape the graph cannot take: the error is the generic path's."""
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Reshape", ["x", "shape"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [helper.make_tensor("shape", TensorProto.INT64, [2], [2, 3])])
    m = ember.onnx.load(helper.make_model(graph), backend="numpy")
    ok = np.arange(6, dtype=np.float32)
    m(ok)
    assert m(ok).shape == (2, 3)  # replayed
    m.fast = False
    with pytest.raises(Exception) as generic:
        m(np.arange(5, dtype=np.float32))
    m.fast = True
    with pytest.raises(Exception) as fast:
        m(np.arange(5, dtype=np.float32))
    assert type(fast.value) is type(generic.value)
    assert str(fast.value) == str(generic.value)


def test_conv_affine_fusion_and_its_full_size_guard():
    """Pad -> Conv -> Mul by a per-channel constant stored at full 4x4 size -> Add
    per-channel: folded into the conv; an input whose conv output is not 4x4 cannot
    broadcast with it, and the fold must not hide that (the generic path's error, not a
    result)."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w = rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
    scale = np.broadcast_to(np.array([0.5, 2.0, -1.0], np.float32).reshape(1, 3, 1, 1),
                            (1, 3, 4, 4)).copy()
    shift = np.array([1.0, 0.0, -2.0], np.float32).reshape(3, 1, 1)
    inits = [numpy_helper.from_array(a, n) for a, n in ((w, "w"), (scale, "s"), (shift, "t"))]
    nodes = [helper.make_node("Pad", ["x", "p"], ["xp"]),
             helper.make_node("Conv", ["xp", "w"], ["c"]),
             helper.make_node("Mul", ["c", "s"], ["m"]),
             helper.make_node("Add", ["m", "t"], ["y"])]
    inits.append(numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "p"))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, None)], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, None)], inits)
    m = ember.onnx.load(helper.make_model(graph), backend="numpy")
    x = rng.standard_normal((1, 2, 4, 4)).astype(np.float32)
    m.fast = False
    want = m(x).numpy()
    m.fast = True
    m(x)
    np.testing.assert_allclose(m(x).numpy(), want, rtol=1e-5, atol=1e-5)
    (run,) = [e.run for seg in _segments_of(m) for e in seg.fn.entries.values()]
    assert run.steps == 2  # the pad and the conv: Mul and Add folded in
    small = rng.standard_normal((1, 2, 2, 2)).astype(np.float32)  # conv output 2x2
    m.fast = False
    with pytest.raises(Exception) as generic:
        m(small)
    m.fast = True
    with pytest.raises(Exception) as fast:
        m(small)
    assert type(fast.value) is type(generic.value)


@pytest.mark.parametrize("c,co,h,k,s,p", [(16, 32, 112, 3, 1, 1), (3, 64, 224, 7, 2, 3),
                                          (96, 24, 80, 3, 1, 1), (8, 8, 33, 3, 1, 0)])
def test_numpy_dense_conv_in_row_tiles_matches_torch(c, co, h, k, s, p):
    """Convs whose im2col passes 4 MB run in tiles of output rows (the last one short);
    the small case stays one GEMM."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, c, h, h)).astype(np.float32)
    w = rng.standard_normal((co, c, k, k)).astype(np.float32)
    got = ember.get_backend("numpy").conv(x, w, None, (s, s), ((p, p), (p, p)), (1, 1), 1)
    want = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), stride=s,
                                      padding=p).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))


def _model(nodes, inputs, outputs, inits=()):
    from onnx import helper

    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_a_node_reading_data_runs_on_the_host_between_compiled_segments():
    """NonZero's output shape is its input's data (more elements than a guard holds): it
    runs eagerly; the nodes before and after it replay compiled (the ones after per distinct
    count), each input checked against numpy."""
    from onnx import TensorProto, helper

    f = TensorProto.FLOAT
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("NonZero", ["r"], ["i"]),
             helper.make_node("Transpose", ["i"], ["t"]),
             helper.make_node("Cast", ["t"], ["tf"], to=f),
             helper.make_node("ReduceSum", ["tf"], ["y"], keepdims=0)]
    m = ember.onnx.load(_model(nodes, [helper.make_tensor_value_info("x", f, [40])],
                               [helper.make_tensor_value_info("y", f, None)]), backend="numpy")
    rng = np.random.default_rng(0)
    for k in range(12):
        x = rng.standard_normal(40).astype(np.float32) * (k % 3)
        want = np.nonzero(np.maximum(x, 0))[0].sum(dtype=np.float64)
        assert m(x).numpy() == pytest.approx(want)
    stats = m.jit_stats()
    assert (stats["segments"], stats["host_nodes"]) == (2, 1)
    assert stats["replays"] > stats["traces"]
    assert "(NonZero)" in m.jit_fallback and m.jit_fallback.count("\n") == 0


def _loop_model(trip_count_from_data: bool):
    """``h = tanh(h * w)`` repeated ``n`` times: ``n`` an int64 input, or the sum of a float
    input (more elements than a guard holds) cast to int64."""
    from onnx import TensorProto, helper

    f, i64 = TensorProto.FLOAT, TensorProto.INT64
    body = helper.make_graph(
        [helper.make_node("Mul", ["h_in", "w"], ["m"]), helper.make_node("Tanh", ["m"], ["h"]),
         helper.make_node("Identity", ["cond"], ["cond_out"])], "body",
        [helper.make_tensor_value_info("i", i64, []),
         helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_in", f, [3])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h", f, [3])])
    nodes = [helper.make_node("Loop", ["n", "", "h0"], ["y"], body=body)]
    n = helper.make_tensor_value_info("n", i64, [])
    if trip_count_from_data:
        nodes[:0] = [helper.make_node("ReduceSum", ["counts"], ["total"], keepdims=0),
                     helper.make_node("Cast", ["total"], ["n"], to=i64)]
        n = helper.make_tensor_value_info("counts", f, [_segments.GUARD_ELEMENTS + 4])
    w = np.array([0.5, -1.5, 2.0], np.float32)
    return _model(nodes, [n, helper.make_tensor_value_info("h0", f, [3])],
                  [helper.make_tensor_value_info("y", f, [3])],
                  [helper.make_tensor("w", f, [3], w)]), w


def _loop_reference(n: int, h0, w):
    want = h0.astype(np.float64)
    for _ in range(n):
        want = np.tanh(want * w)
    return want


def test_a_trip_count_fed_as_an_input_is_a_guard():
    """A Loop whose trip count is an int64 input unrolls into the trace with that count's
    value as part of the signature: each count traces once, then replays."""
    model, w = _loop_model(trip_count_from_data=False)
    m = ember.onnx.load(model, backend="numpy")
    h0 = np.array([0.1, 0.2, -0.3], np.float32)
    for n in (3, 5, 3, 2, 5):
        np.testing.assert_allclose(m(np.array(n), h0).numpy(), _loop_reference(n, h0, w),
                                   rtol=1e-6)
    stats = m.jit_stats()
    assert (stats["traces"], stats["replays"], stats["host_nodes"]) == (3, 2, 0)
    assert m.jit_fallback is None


def test_a_loop_with_a_data_trip_count_compiles_its_body():
    """A trip count computed from data too large to be a guard: the Loop runs on the host,
    and its body replays as a compiled segment at every iteration."""
    model, w = _loop_model(trip_count_from_data=True)
    m = ember.onnx.load(model, backend="numpy")
    h0 = np.array([0.1, 0.2, -0.3], np.float32)
    for n in (3, 5, 2):
        counts = (np.arange(_segments.GUARD_ELEMENTS + 4) < n).astype(np.float32)
        np.testing.assert_allclose(m(counts, h0).numpy(), _loop_reference(n, h0, w), rtol=1e-6)
    stats = m.jit_stats()
    assert stats["host_nodes"] == 1 and "(Loop)" in m.jit_fallback
    # the nodes before the Loop (traced once, replayed twice) and the body (10 iterations)
    assert stats["traces"] == 2 and stats["replays"] == 2 + 3 + 5 + 2 - 1


def test_shapes_from_data_past_the_signature_cap_run_eagerly():
    """A segment fed more distinct shapes than MAX_SIGNATURES runs further new ones eagerly
    (the values stay right; no tape per shape piles up)."""
    from onnx import TensorProto, helper

    f = TensorProto.FLOAT
    nodes = [helper.make_node("NonZero", ["x"], ["i"]), helper.make_node("Neg", ["i"], ["y"])]
    m = ember.onnx.load(_model(nodes, [helper.make_tensor_value_info("x", f, [40])],
                               [helper.make_tensor_value_info("y", TensorProto.INT64, None)]),
                        backend="numpy")
    for k in range(_segments.MAX_SIGNATURES + 4):
        x = (np.arange(40) < k).astype(np.float32)
        np.testing.assert_array_equal(m(x).numpy(), -np.nonzero(x)[0][None])
    assert m.jit_stats()["traces"] == _segments.MAX_SIGNATURES


def test_a_backend_recording_gradients_runs_the_generic_path():
    """A replay records no gradients: under Autodiff the module runs node by node, and the
    gradient reaches the input."""
    from onnx import TensorProto, helper

    f = TensorProto.FLOAT
    m = ember.onnx.load(_model([helper.make_node("Mul", ["x", "x"], ["y"])],
                               [helper.make_tensor_value_info("x", f, [3])],
                               [helper.make_tensor_value_info("y", f, None)]),
                        backend="autodiff-numpy")
    for _ in range(3):
        x = ember.tensor([1.0, 2.0, 3.0], backend="autodiff-numpy").require_grad()
        m(x).sum().backward()
        assert x.grad.tolist() == [2.0, 4.0, 6.0]
    assert m.jit_stats() is None

