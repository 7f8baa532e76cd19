# Runs inside Pyodide (ember's worker): load EfficientNet-Lite0 (folded, float16 weights, or
# with ?int8 the int8 record of `ember demo classify --int8`) and classify centre-cropped RGBA
# pixels. The work is in ember.demos.classify_web (in the wheel).
import json
from pathlib import Path

import ember
from ember.demos.classify_web import classify_rgba, load_web_model

MODEL = None
LABELS = None


def load_model(config_json, labels_json, weights, int8: bool = False) -> dict:
    """The model from its files' bytes (Uint8Arrays the page fetched while ember started);
    ``int8``: the weights are the int8 record (``config["int8_weights"]``)."""
    global MODEL, LABELS
    config = json.loads(config_json.to_bytes())
    LABELS = json.loads(labels_json.to_bytes())
    raw = weights.to_bytes()
    path = Path("/tmp") / config["int8_weights" if int8 else "weights"]  # in-memory FS
    path.write_bytes(raw)
    MODEL = load_web_model(path, backend=ember.default_backend(), int8=bool(int8))
    path.unlink()
    return {"backend": ember.default_backend().name, "weights_bytes": len(raw),
            "dtype": "int8" if int8 else config["dtype"], "classes": len(LABELS)}


def classify(pixels, size: int) -> dict:
    """``pixels``: size×size RGBA (a Uint8Array / Uint8ClampedArray, or a list of ints)."""
    raw = pixels.to_bytes() if hasattr(pixels, "to_bytes") else bytes(pixels)
    return classify_rgba(MODEL, raw, int(size), LABELS)
