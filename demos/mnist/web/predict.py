# Runs inside Pyodide (ember's worker): load the exported MNIST model and predict one drawing.
import time
from pathlib import Path

import ember
from ember.demos.mnist_model import mnist_cnn, preprocess
from ember.io import load_file
from pyodide.http import pyfetch

MODEL = None
FORWARD = None  # MODEL's forward to probabilities, through ember.jit unless ?jit=0


async def load_model(base: str, jit: bool = True) -> dict:
    global MODEL, FORWARD
    config = await (await pyfetch(base + "model.json")).json()
    raw = await (await pyfetch(base + "model.safetensors")).bytes()
    Path("/tmp/mnist.safetensors").write_bytes(raw)  # Pyodide's in-memory file system
    backend = ember.default_backend()
    model = mnist_cnn(tuple(config["channels"]), config["hidden"]).to(backend)
    model.load_state_dict(load_file("/tmp/mnist.safetensors", backend=backend))
    MODEL = model.eval()
    FORWARD = ember.jit(_probabilities) if jit else _probabilities
    for _ in range(2 if jit else 1):  # warm-up: GPU pipelines compiled, the forward traced
        predict([0] * 784)
    return {"backend": backend.name, "dataset": config.get("dataset", "mnist"), "jit": jit}


def _probabilities(x):
    return MODEL(x).softmax(dim=1)


def predict(pixels) -> dict:
    """784 uint8 values (28×28, white digit on black, MNIST-centred) → class probabilities."""
    t0 = time.perf_counter()
    backend = ember.default_backend()
    x = preprocess(ember.tensor([list(pixels)], dtype="uint8", backend=backend))
    with ember.no_grad():
        probs = FORWARD(x).tolist()[0]
    return {"probs": probs, "ms": (time.perf_counter() - t0) * 1000.0, "backend": backend.name}

