# Runs inside Pyodide (ember's worker): load the exported MNIST model and predict one drawing.
import time
from pathlib import Path

import ember
from ember.demos.mnist_model import mnist_cnn, preprocess
from ember.io import load_file
from pyodide.http import pyfetch

MODEL = None


async def load_model(base: str) -> dict:
    global MODEL
    config = await (await pyfetch(base + "model.json")).json()
    raw = await (await pyfetch(base + "model.safetensors")).bytes()
    Path("/tmp/mnist.safetensors").write_bytes(raw)  # Pyodide's in-memory file system
    backend = ember.default_backend()
    model = mnist_cnn(tuple(config["channels"]), config["hidden"]).to(backend)
    model.load_state_dict(load_file("/tmp/mnist.safetensors", backend=backend))
    MODEL = model.eval()
    predict([0] * 784)  # warm-up: compiles the GPU pipelines once
    return {"backend": backend.name, "dataset": config.get("dataset", "mnist")}


def predict(pixels) -> dict:
    """784 uint8 values (28×28, white digit on black, MNIST-centred) → class probabilities."""
    t0 = time.perf_counter()
    backend = ember.default_backend()
    x = preprocess(ember.tensor([list(pixels)], dtype="uint8", backend=backend))
    with ember.no_grad():
        probs = MODEL(x).softmax(dim=1).tolist()[0]
    return {"probs": probs, "ms": (time.perf_counter() - t0) * 1000.0, "backend": backend.name}

