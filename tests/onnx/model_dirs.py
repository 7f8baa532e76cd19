"""Models with reference data shipped inside the onnx wheel (onnx/backend/test/data/*)."""

from __future__ import annotations

import glob
import os


def data_root() -> str | None:
    try:
        import onnx
    except ImportError:
        return None
    return os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")


def model_dirs(kinds=("pytorch-converted", "pytorch-operator", "simple")) -> list[str]:
    root = data_root()
    if root is None:
        return []
    out = []
    for kind in kinds:
        for d in sorted(glob.glob(os.path.join(root, kind, "*"))):
            if os.path.exists(os.path.join(d, "model.onnx")):
                out.append(d)
    return out


def load_pb(path):
    import onnx
    from onnx import numpy_helper

    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return t.name, numpy_helper.to_array(t)


def data_sets(d: str):
    """[(inputs, outputs)] with lists of (name, array) per test_data_set_N folder."""
    out = []
    for ds in sorted(glob.glob(os.path.join(d, "test_data_set_*"))):
        ins = [load_pb(p) for p in sorted(glob.glob(os.path.join(ds, "input_*.pb")),
                                           key=lambda p: int(p.rsplit("_", 1)[1][:-3]))]
        outs = [load_pb(p) for p in sorted(glob.glob(os.path.join(ds, "output_*.pb")),
                                            key=lambda p: int(p.rsplit("_", 1)[1][:-3]))]
        out.append((ins, outs))
    return out
