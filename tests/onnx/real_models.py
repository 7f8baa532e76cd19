"""Real ONNX models available from registries, and running them next to onnxruntime."""

from __future__ import annotations

import glob
import importlib.util
import os

import numpy as np


def rapidocr_models() -> dict[str, str]:
    """name -> path of the models in PyPI ``rapidocr-onnxruntime`` (install it ``--no-deps``)."""
    spec = importlib.util.find_spec("rapidocr_onnxruntime")
    if spec is None or not spec.submodule_search_locations:
        return {}
    folder = os.path.join(next(iter(spec.submodule_search_locations)), "models")
    return {os.path.basename(p)[:-5]: p for p in sorted(glob.glob(os.path.join(folder, "*.onnx")))}


# a realistic input shape per model (dynamic dims resolved)
SHAPES = {
    "ch_ppocr_mobile_v2.0_cls_infer": (1, 3, 48, 192),
    "ch_PP-OCRv4_rec_infer": (1, 3, 48, 320),
    "ch_PP-OCRv4_det_infer": (1, 3, 320, 320),
}


def light_models() -> dict[str, str]:
    """The architecture-only 'light' CNNs in the onnx wheel (onnx/backend/test/data/light)."""
    from model_dirs import data_root

    root = data_root()
    if root is None:
        return {}
    return {os.path.basename(p)[:-5]: p
            for p in sorted(glob.glob(os.path.join(root, "light", "*.onnx")))}


def inputs_for(path: str, shape=None, seed: int = 0) -> dict:
    """Random inputs matching the model's declared inputs (float in [0, 1), like images)."""
    import onnxruntime as ort

    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(seed)
    feeds = {}
    for i in sess.get_inputs():
        dims = list(shape) if shape else [d if isinstance(d, int) else 1 for d in i.shape]
        feeds[i.name] = rng.random(dims, dtype=np.float32)
    return feeds


def reference(path: str, feeds: dict) -> list:
    import onnxruntime as ort

    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)
