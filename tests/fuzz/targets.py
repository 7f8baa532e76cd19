"""The fuzz targets: for each format, its seed corpus, mutations, checksum fixup, the reader it
exercises and the typed errors that reader may raise.

The ``load_*`` functions run inside a worker process (:mod:`.worker`) on one input file each;
whatever they raise besides the target's typed errors is a bug. ``mcu_micropython`` has no
CPython load function: its worker is the MicroPython binary running ``mp_worker.py``.
"""

from __future__ import annotations

import ast
import importlib.util
import math
import os
from collections.abc import Callable
from dataclasses import dataclass

from . import formats, onnx_mut, pt, remote_mut, seeds
from .mutate import Mutation


@dataclass(frozen=True)
class Target:
    """One format's fuzz set-up."""

    name: str
    suffix: str
    seeds: Callable[[], dict[str, bytes]]
    load: Callable[[str, str], None] | None
    #: typed errors as ``module:qualname`` (resolved inside the worker)
    expected: tuple[str, ...]
    structured: tuple[Mutation, ...] = ()
    fixup: Callable[[bytes], bytes] | None = None
    #: how often a structured mutation is picked instead of a byte-level one
    structured_rate: float = 0.5
    engine: str = "cpython"


# ------------------------------------------------------------------ readers (worker side)
def load_safetensors(path: str, workdir: str) -> None:
    from ember.io import load_file

    load_file(path)


def load_record(path: str, workdir: str) -> None:
    """``ember.load(path)``, ``read_metadata``, then the record loaded into the objects it
    was saved from (a fresh module, or a module and an optimizer for a checkpoint)."""
    import ember
    from ember import optim
    from ember.io import read_metadata

    state = ember.load(path)
    read_metadata(path)
    net = seeds.small_net("numpy")
    if isinstance(state, dict) and "optim" in state:
        ember.load({"model": net, "optim": optim.Adam(net.parameters(), lr=1e-3)}, path)
    else:
        ember.load(net, path)


def load_pytorch(path: str, workdir: str) -> None:
    from ember.io import read_pytorch

    read_pytorch(path)


def onnx_feeds(graph, most: int = 1 << 16) -> list | None:
    """Inputs for a loaded graph from its declared input types: ones of each input's dtype,
    a dynamic dim 1 for the batch (the first) and 64 elsewhere (an image's side); None when
    the inputs are not plain tensors, have more than 32 dims or would pass ``most`` elements
    (a model can declare any shape: the run's own bounds are under test, not numpy's)."""
    import numpy as np
    from onnx import helper

    feeds = []
    for name in graph.inputs:
        elem, shape = graph.input_info.get(name, (None, None))
        if not elem or shape is None:
            return None
        try:
            dtype = np.dtype(helper.tensor_dtype_to_np_dtype(elem))
        except (KeyError, TypeError, ValueError):
            return None
        dims = [d if isinstance(d, int) and 0 <= d else 64 if i else 1
                for i, d in enumerate(shape)]
        if len(dims) > 32 or math.prod(max(d, 1) for d in dims) > most or \
                dtype.kind not in "biuf":
            return None
        feeds.append(np.ones(dims, dtype))
    return feeds


def load_onnx(path: str, workdir: str) -> None:
    """``ember.onnx.load``, then one run on inputs of the declared types and shapes."""
    import ember.onnx

    module = ember.onnx.load(path, backend="numpy")
    feeds = onnx_feeds(module.graph)
    if feeds is not None:
        module(*feeds)


_imported = 0


def convert_onnx(path: str, workdir: str) -> None:
    """``ember onnx convert``, then import the generated ``model.py``, build the model and run
    it once (:func:`onnx_feeds`).

    Injected code shows up two ways: running at import (the payload creates
    ``$FUZZ_SENTINEL``, which the worker checks) or sitting in ``forward`` (a ``__import__``
    call anywhere in the generated code's syntax tree).
    """
    import ember.onnx

    global _imported
    out = os.path.join(workdir, "convert")
    # check=False: convert's own check runs the model on its declared shapes, and a hostile
    # model may declare huge shapes or loop forever; this target looks for injected code
    py, _weights = ember.onnx.convert(path, out, check=False)
    with open(py, encoding="utf-8") as f:
        code = f.read()
    tree = ast.parse(code)  # a SyntaxError here is a bug: the generator wrote broken Python
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == "__import__":
            raise InjectionError(f"generated model.py calls __import__ at line {node.lineno}")
    _imported += 1
    spec = importlib.util.spec_from_file_location(f"fuzz_generated_{_imported}", py)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model = module.load()
    feeds = onnx_feeds(ember.onnx.load(path, backend="numpy").graph)
    if feeds is not None:  # and the generated module runs
        model(*[ember.from_numpy(f) for f in feeds])


class InjectionError(Exception):
    """Text from the model became code in the generated module."""


def load_selftest(path: str, workdir: str) -> None:
    """Does what the input says, so tests/fuzz/test_harness.py can check every outcome."""
    import signal
    import time

    from ember.errors import RecordError

    with open(path, "rb") as f:
        command = f.read()
    if command == b"typed":
        raise RecordError("a typed error")
    if command == b"untyped":
        raise KeyError("an untyped error")
    if command == b"hang":
        time.sleep(3600)
    if command == b"memory":
        bytearray(4 << 30)
    if command == b"crash":
        os.kill(os.getpid(), signal.SIGSEGV)
    if command == b"inject":
        exec(onnx_mut.PAYLOAD)  # what a code generator that pastes names would do


def load_mcu(path: str, workdir: str) -> None:
    from ember.export import load

    load(path)


def load_image(path: str, workdir: str) -> None:
    from ember.dataset import load_image as load

    load(path)


def load_remote_frame(path: str, workdir: str) -> None:
    """A Remote server's reader: one batch frame into a fresh session on numpy, with small
    limits (its op errors become failed tensors; only a ProtocolError may escape)."""
    from ember.backends import get_backend
    from ember.remote import ServerLimits, Session

    with open(path, "rb") as f:
        frame = f.read()
    limits = ServerLimits(max_tensor_bytes=1 << 20, max_session_bytes=4 << 20, max_handles=1000)
    Session(get_backend("numpy"), limits).handle(frame)


# ------------------------------------------------------------------ the table
_RECORD = ("ember.errors:RecordError",)
# a run on inputs the model declares may fail with any of ember's typed errors (a ShapeError,
# an OnnxRunError...); anything else is a finding
_ONNX = ("ember.onnx:OnnxLoadError", "ember.errors:UnsupportedOpError", "ember.errors:EmberError")
_ST = (formats.safetensors_header,)

TARGETS: dict[str, Target] = {t.name: t for t in [
    Target("safetensors", ".safetensors", seeds.safetensors_seeds, load_safetensors, _RECORD,
           _ST),
    Target("record", ".ember", seeds.record_seeds, load_record, _RECORD,
           (*_ST, formats.record_metadata, formats.record_metadata), formats.record_checksum,
           structured_rate=0.75),  # byte damage to the header is the safetensors target's
    Target("pt_zip", ".pt", seeds.pt_zip_seeds, load_pytorch, _RECORD,
           (pt.zip_member_edit, pt.zip_member_edit, pt.zip_header_edit), pt.zip_checksum,
           structured_rate=0.7),
    Target("pt_legacy", ".pt", seeds.pt_legacy_seeds, load_pytorch, _RECORD,
           (pt.pickle_edit, pt.pickle_edit, pt.legacy_object)),
    # protobuf rejects most byte-level damage before Ember sees it: mostly structured edits
    Target("onnx_load", ".onnx", seeds.onnx_seeds, load_onnx, _ONNX, (onnx_mut.onnx_edit,),
           structured_rate=0.8),
    Target("onnx_convert", ".onnx", seeds.onnx_convert_seeds, convert_onnx, _ONNX,
           (onnx_mut.onnx_edit,), structured_rate=0.8),
    Target("mcu", ".emb", seeds.mcu_seeds, load_mcu, _RECORD, (formats.mcu_fields,),
           formats.mcu_checksum),
    # embedded/ember_micro on the MicroPython unix port: load, then inference (mp_worker.py)
    Target("mcu_micropython", ".emb", seeds.mcu_seeds, None, ("ModelError",),
           (formats.mcu_fields,), formats.mcu_checksum, engine="micropython"),
    Target("image", ".img", seeds.image_seeds, load_image, ("ember.errors:DatasetError",),
           (formats.png_structure,), formats.png_checksum),
    Target("remote_frame", ".bin", remote_mut.remote_frame_seeds, load_remote_frame,
           ("ember.remote.errors:ProtocolError",), (remote_mut.remote_records,),
           structured_rate=0.6),
]}
#: the harness's own test target (not a format: ``run`` never fuzzes it)
SELFTEST = Target("selftest", ".txt", dict, load_selftest, _RECORD)
WORKER_TARGETS = {**TARGETS, SELFTEST.name: SELFTEST}
