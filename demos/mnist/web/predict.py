# Runs inside Pyodide (ember's worker): load the exported MNIST model and predict one drawing.
import json
import time
from pathlib import Path

import ember
from ember.demos.classify_web import no_init
from ember.demos.mnist_model import mnist_cnn, preprocess
from ember.io import load_file

MODEL = None
FORWARD = None  # MODEL's forward to probabilities, through ember.jit unless ?jit=0
REMOTE = None  # the Remote backend the model runs on, with ?remote=ws://...&token=...


async def connect_remote(url, token) -> None:
    """Run the model on an ``ember serve`` server from now on (the browser's WebSocket)."""
    global REMOTE
    from ember.remote.browser import connect

    REMOTE = await connect(url, token)


def _backend():
    return REMOTE if REMOTE is not None else ember.default_backend()


def load_model(config_json, weights, jit: bool = True, int8: bool = False) -> dict:
    """The model from its files' bytes (Uint8Arrays the page fetched while ember started);
    ``int8``: the weights are an ``ember.quantize`` record (int8 codes and scales)."""
    global MODEL, FORWARD
    config = json.loads(config_json.to_bytes())
    Path("/tmp/mnist.safetensors").write_bytes(weights.to_bytes())  # Pyodide's in-memory FS
    backend = _backend()
    with no_init():  # the weights are loaded right after: no random numbers drawn
        model = mnist_cnn(tuple(config["channels"]), config["hidden"]).to(backend)
    if int8:
        model = ember.quantize.load(model, "/tmp/mnist.safetensors")
    else:
        model.load_state_dict(load_file("/tmp/mnist.safetensors", backend=backend))
    MODEL = model.eval()
    FORWARD = ember.jit(_probabilities) if jit else _probabilities
    return {"backend": backend.name, "dataset": config.get("dataset", "mnist"), "jit": jit,
            "int8": bool(int8)}


def _probabilities(x):
    return MODEL(x).softmax(dim=1)


def _forward(pixels):
    """``(start time, backend, probabilities tensor)`` of one drawing."""
    t0 = time.perf_counter()
    backend = _backend()
    x = preprocess(ember.tensor([list(pixels)], dtype="uint8", backend=backend))
    with ember.no_grad():
        return t0, backend, FORWARD(x)


def _answer(t0, backend, probs) -> dict:
    return {"probs": probs[0], "ms": (time.perf_counter() - t0) * 1000.0,
            "backend": backend.name}


def predict(pixels) -> dict:
    """784 uint8 values (28×28, white digit on black, MNIST-centred) → class probabilities."""
    t0, backend, probs = _forward(pixels)
    return _answer(t0, backend, probs.tolist())


async def predict_async(pixels) -> dict:
    """:func:`predict` reading the result with ``await to_data_async`` (no JSPI needed)."""
    t0, backend, probs = _forward(pixels)
    return _answer(t0, backend, (await probs.to_data_async()).tolist())

