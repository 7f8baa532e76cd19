"""Real models through ``ember onnx convert``: the issue's done-when list, on a cheap set.

Each converted module imports, matches ``ember.onnx.load`` (convert's own check), has every
float weight in ``parameters()``, survives ``eval/train/to/state_dict/load_state_dict``,
gets a gradient for every parameter and one SGD step from them, and exports back to ONNX with
onnxruntime giving the original file's outputs. (``benchmarks/onnx_models.py`` and every
rapidocr and "light" model went through the same steps for issue 42; figures in the report.)
"""

from __future__ import annotations

import importlib.util
import os
import sys
import warnings

import pytest

np = pytest.importorskip("numpy")
onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import ember
import ember.onnx
from real_models import rapidocr_models

HERE = os.path.dirname(__file__)


def _models(folder) -> dict:
    """name -> (path, shapes) of the cheap set; missing packages leave models out."""
    sys.path.insert(0, os.path.join(HERE, "..", "..", "benchmarks"))
    import onnx_models

    cnn = os.path.join(folder, "same_pool_cnn.onnx")
    if not os.path.exists(cnn):
        onnx_models._same_pool_cnn(cnn)
    out = {"same_pool_cnn": (cnn, None)}
    cls = rapidocr_models().get("ch_ppocr_mobile_v2.0_cls_infer")
    if cls:  # a real PaddleOCR classifier, its dynamic image size given as convert --shape
        out["rapidocr_cls"] = (cls, {"x": (1, 3, 48, 192)})
    return out


NAMES = ["same_pool_cnn", "rapidocr_cls"]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    return _models(str(tmp_path_factory.mktemp("models")))


def _feeds(path, shapes, seed=0):
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(seed)
    return {i.name: rng.random((shapes or {}).get(i.name, i.shape), dtype=np.float32)
            for i in sess.get_inputs()}


@pytest.mark.parametrize("name", NAMES)
def test_converted_model_trains_and_exports_back(name, models, tmp_path):
    if name not in models:
        pytest.skip(f"{name}: its registry package is not installed")
    path, shapes = models[name]
    py, _ = ember.onnx.convert(path, tmp_path / "out", shapes=shapes)  # checks vs load
    spec = importlib.util.spec_from_file_location(f"real_{name}", py)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    m = mod.load()
    params = dict(m.named_parameters())
    floats = [k for k, v in m.state_dict().items() if v.dtype.is_float]
    stats = {k for k, _ in m.named_buffers()}
    assert params and set(floats) - stats == set(params)

    assert m.train() is m and m.eval() is m and m.to("numpy") is m
    state = m.state_dict()
    m.load_state_dict(state)
    assert list(m.state_dict()) == list(state)

    feeds = _feeds(path, shapes)
    x = [ember.tensor(v) for v in feeds.values()]
    with ember.use_backend("autodiff-numpy"):
        tuned = mod.load()  # eval: no dropout noise between the two losses
        xs = [v.to("autodiff-numpy") for v in x]
        out = tuned(*xs)
        loss = (out * out).mean()
        grads = loss.backward()
    named = dict(tuned.named_parameters())
    assert not [k for k, p in named.items() if grads.get(p) is None]
    want_after = {k: p.numpy() - 0.5 * grads.get(p).numpy() for k, p in named.items()}
    ember.optim.SGD(tuned.parameters(), lr=0.5).step(grads)
    for k, p in tuned.named_parameters():
        np.testing.assert_allclose(p.numpy(), want_after[k], rtol=1e-6, atol=1e-7, err_msg=k)

    back = tmp_path / "back.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ember.onnx.export(m.eval(), tuple(x), str(back))
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)
    sess = ort.InferenceSession(str(back), providers=["CPUExecutionProvider"])
    got = sess.run(None, dict(zip([i.name for i in sess.get_inputs()], feeds.values())))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)
