# Runs inside Pyodide (ember's Web Worker, after ../predict.py): train the demo CNN with ember's
# Learner on the page's backend (Autodiff over WebGPU, wasm or python), reporting progress to
# the page; then the drawing pad's predict() uses the trained weights.
import json
import time
from pathlib import Path

import js
from pyodide.ffi import to_js

import ember
from ember import nn
from ember.autodiff import Autodiff
from ember.dataset import DataLoader, MnistDataset, PartialDataset
from ember.demos.mnist_model import MEAN, STD, mnist_cnn, preprocess
from ember.optim import Adam
from ember.train import Learner
from ember.train.metrics import Accuracy, Loss
from ember.train.renderers import Renderer

DIGITS = Path("/tmp/digits")  # the IDX files the page fetched (Pyodide's in-memory FS)
RUN = Path("/tmp/train-run")
CONFIG = {"architecture": "mnist_cnn", "channels": [16, 32], "hidden": 64, "mean": MEAN,
          "std": STD, "dataset": "mnist", "classes": list(range(10))}
LEARNER = None
TRAINED = None  # the trained model on the inner backend (what predict() and record() use)


def post(event: str, **data) -> None:
    """A progress message to the page (ember's worker passes ``{status}`` messages on)."""
    js.postMessage(js.JSON.parse(json.dumps({"status": {"train": event, **data}})))


def store_digits(files) -> dict:
    """Write the fetched IDX files (name -> Uint8Array) where ``MnistDataset`` reads them."""
    DIGITS.mkdir(parents=True, exist_ok=True)
    for name, data in files.to_py(depth=1).items():
        (DIGITS / name).write_bytes(data.to_bytes())
    return {split: len(MnistDataset(split, root=DIGITS)) for split in ("train", "test")}


class LiveAccuracy(Accuracy):
    """The epoch's training accuracy so far, passed to the renderer after every step (the
    curves); ``Accuracy`` itself is computed at the end of each split (the held-out one)."""

    name, per_step, tracked = "live_accuracy", True, False


class PageRenderer(Renderer):
    """The Learner's progress as messages: a point of the curves every ``every`` steps."""

    def __init__(self, every: int):
        self.every, self.started, self.steps_done = every, time.perf_counter(), 0

    def on_fit_start(self, info: dict) -> None:
        self.started = time.perf_counter()
        post("start", epochs=info["epochs"], steps=info["steps"], backend=info["backend"])

    def on_step(self, epoch, split, step, steps, live) -> None:
        if split != "train":
            return
        self.steps_done += 1
        if step % self.every == 0 or step == steps:
            post("step", epoch=epoch, step=step, steps=steps, total=self.steps_done,
                 seconds=time.perf_counter() - self.started,
                 loss=live.get("loss"), accuracy=live.get("live_accuracy"))

    def on_epoch_end(self, epoch, split, metrics, best) -> None:
        post("epoch", epoch=epoch, split=split, seconds=time.perf_counter() - self.started,
             total=self.steps_done, loss=metrics.get("loss"), accuracy=metrics.get("accuracy"))

    def on_message(self, text: str) -> None:
        post("message", text=text)


async def train(options) -> dict:
    """Train with ``options`` (train/test digit counts, epochs, batch, lr, every, seed, jit);
    the held-out test digits are the validation split. Returns the summary."""
    global LEARNER, TRAINED
    o = options.to_py() if hasattr(options, "to_py") else dict(options)
    ember.seed(int(o.get("seed", 0)))
    inner = ember.default_backend()
    backend = Autodiff(inner)
    train_set, test_set = (MnistDataset(s, root=DIGITS) for s in ("train", "test"))
    train_set = PartialDataset(train_set, 0, min(int(o["train"]), len(train_set)))
    test_set = PartialDataset(test_set, 0, min(int(o["test"]), len(test_set)))
    model = mnist_cnn().to(backend)

    def prepare(batch):
        x, y = batch
        return preprocess(x.to(backend)), y.to(backend)

    jit = None if o.get("jit") is None else bool(o["jit"])
    LEARNER = Learner(model, Adam(model.parameters(), lr=float(o["lr"])),
                      nn.loss.cross_entropy, folder=RUN, monitor="accuracy", prepare=prepare,
                      # what the curves show (the default set also reads the process's
                      # memory, which Pyodide has no module for)
                      metrics=[Loss(), Accuracy(), LiveAccuracy()],
                      renderer=PageRenderer(int(o["every"])), jit=jit)
    loader = DataLoader(train_set, batch_size=int(o["batch"]), shuffle=True,
                        seed=int(o.get("seed", 0)))
    started = time.perf_counter()
    result = await LEARNER.fit_async(loader, DataLoader(test_set, batch_size=500),
                                     epochs=int(o["epochs"]))
    seconds = time.perf_counter() - started
    TRAINED = model.to(inner).eval()
    use_for_drawing(TRAINED)
    valid = [h for h in result.history if h["split"] == "valid"]
    return {"epochs_run": result.epochs_run, "interrupted": result.interrupted,
            "seconds": seconds, "backend": backend.name, "jit": LEARNER.jit,
            "heldout_accuracy": valid[-1]["accuracy"] if valid else None,
            "history": result.history, "sizes": {"train": len(train_set), "test": len(test_set)}}


def stop() -> None:
    if LEARNER is not None:
        LEARNER.request_stop()


def use_for_drawing(model) -> None:
    """predict() (../predict.py, same namespace) runs ``model`` from now on."""
    global MODEL, FORWARD
    MODEL = model
    FORWARD = ember.jit(_probabilities)  # noqa: F821 (defined by ../predict.py)


async def predictions(count: int) -> dict:
    """Class probabilities of the trained model for the first ``count`` held-out digits (read
    asynchronously: no JSPI needed), for the tests' comparison with CPython."""
    test = MnistDataset("test", root=DIGITS)
    count = min(int(count), len(test))
    pixels = b"".join(test[i][0] for i in range(count))
    x = preprocess(ember.tensor(list(pixels), dtype="uint8").reshape(count, 784))
    with ember.no_grad():
        probs = (await TRAINED(x).softmax(dim=1).to_data_async()).tolist()
    return {"probs": probs, "labels": [test[i][1] for i in range(count)]}


async def record():
    """The trained model as an ember record (``ember.save``: safetensors, config in its
    header): the bytes the Download button saves. The weights are read with ``await
    to_data_async`` into a twin on the python backend, which ``ember.save`` reads (no JSPI)."""
    from ember.demos.classify_web import no_init

    path = Path("/tmp/mnist-cnn.safetensors")
    with no_init():
        twin = mnist_cnn(tuple(CONFIG["channels"]), CONFIG["hidden"]).to("python")
    twin.load_state_dict({name: ember.tensor(await value.to_data_async(), backend="python")
                          for name, value in TRAINED.state_dict().items()})
    ember.save(twin, path, config=CONFIG, metadata={"trained_in": "browser",
                                                   "backend": ember.default_backend().name})
    return to_js(path.read_bytes())  # a Uint8Array
