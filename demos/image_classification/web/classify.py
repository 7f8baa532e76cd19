# Runs inside Pyodide (ember's worker): load EfficientNet-Lite0 (folded, float16 weights) and
# classify centre-cropped RGBA pixels. The work is in ember.demos.classify_web (in the wheel).
import json
from pathlib import Path

import ember
from ember.demos.classify_web import classify_rgba, load_web_model

MODEL = None
LABELS = None


def load_model(config_json, labels_json, weights) -> dict:
    """The model from its files' bytes (Uint8Arrays the page fetched while ember started)."""
    global MODEL, LABELS
    config = json.loads(config_json.to_bytes())
    LABELS = json.loads(labels_json.to_bytes())
    raw = weights.to_bytes()
    path = Path("/tmp") / config["weights"]  # Pyodide's in-memory file system
    path.write_bytes(raw)
    MODEL = load_web_model(path, backend=ember.default_backend())
    path.unlink()
    return {"backend": ember.default_backend().name, "weights_bytes": len(raw),
            "dtype": config["dtype"], "classes": len(LABELS)}


def classify(pixels, size: int) -> dict:
    """``pixels``: size×size RGBA (a Uint8Array / Uint8ClampedArray, or a list of ints)."""
    raw = pixels.to_bytes() if hasattr(pixels, "to_bytes") else bytes(pixels)
    return classify_rgba(MODEL, raw, int(size), LABELS)
