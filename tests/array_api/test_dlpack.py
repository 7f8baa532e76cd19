"""DLPack: zero-copy exchange numpy ↔ Ember ↔ PyTorch on the numpy backend (asserted by
memory address), host copies with a ``copy=`` contract on the other backends, versioned and
unversioned capsules, and lifetimes (a freed producer, an unconsumed capsule)."""

import ctypes
import gc

import numpy as np
import pytest
import torch

import ember
from ember import dlpack

_name = ctypes.pythonapi.PyCapsule_GetName
_name.restype, _name.argtypes = ctypes.c_char_p, (ctypes.py_object,)


def capsule_name(capsule) -> str:
    return _name(capsule).decode()


# ------------------------------------------------------------------ zero copy (numpy backend)
def test_numpy_to_ember_to_torch_shares_memory():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = ember.from_dlpack(a, device="numpy")
    tt = torch.from_dlpack(t)
    assert tt.data_ptr() == a.ctypes.data
    assert np.from_dlpack(t).ctypes.data == a.ctypes.data
    a[0, 0] = 42.0  # one buffer: the write shows through both consumers
    assert t.tolist()[0][0] == 42.0 and tt[0, 0].item() == 42.0


def test_torch_to_ember_to_numpy_shares_memory():
    tt = torch.arange(6, dtype=torch.int64).reshape(2, 3)
    t = ember.from_dlpack(tt, device="numpy")
    back = np.from_dlpack(t)
    assert back.ctypes.data == tt.data_ptr()
    assert torch.from_dlpack(t).data_ptr() == tt.data_ptr()
    assert (t * 2).tolist() == (tt * 2).tolist()


def test_strided_views_stay_views():
    a = np.arange(20.0).reshape(4, 5)
    view = a[1:, ::2]
    t = ember.from_dlpack(view, device="numpy")
    tt = torch.from_dlpack(t)
    assert tt.data_ptr() == view.ctypes.data and tt.stride() == (5, 2)
    assert t.tolist() == view.tolist()


def test_freed_producer_still_readable_by_ember():
    tt = torch.arange(5, dtype=torch.float64) * 1.5
    t = ember.from_dlpack(tt, device="numpy")
    del tt
    gc.collect()
    assert t.tolist() == [0.0, 1.5, 3.0, 4.5, 6.0]


# ------------------------------------------------------------------ copies (other backends)
@pytest.mark.parametrize("device", ["python", "wasm"])
def test_host_copy_export_and_the_copy_contract(device):
    if device not in ember.available_backends():
        pytest.skip(f"{device} backend not available here")
    x = ember.tensor([[1.5, -2.0], [0.25, 8.0]], backend=device)
    assert x.__dlpack_device__() == (1, 0)
    assert torch.from_dlpack(x).tolist() == x.tolist()
    assert np.from_dlpack(x).tolist() == x.tolist()
    if device == "wasm":  # the module's memory can grow and move: never shared
        with pytest.raises(BufferError, match="copy=False"):
            x.__dlpack__(max_version=(1, 0), copy=False)
    with pytest.raises(BufferError, match="copy=False"):
        x.__dlpack__(copy=False)  # an unversioned capsule can't say read-only
    with pytest.raises(BufferError, match="copy=False"):
        ember.from_dlpack(np.zeros(2), device=device, copy=False)
    y = ember.from_dlpack(torch.tensor([3, 4], dtype=torch.int32), device=device)
    assert y.backend.name == device and y.tolist() == [3, 4] and y.dtype == ember.int32


@pytest.mark.parametrize("dtype", ["float32", "float64", "int8", "uint16", "int64", "bool"])
def test_python_backend_shares_its_storage_read_only(dtype):
    a = np.array([[1, 0, 3], [4, 5, 0]], dtype=dtype)
    x = ember.tensor(a, backend="python")
    shared = np.from_dlpack(x, copy=False)
    assert shared.dtype == a.dtype and np.array_equal(shared, a)
    assert shared.ctypes.data == x._prim.data.buffer_info()[0]  # the same memory, no copy
    assert not shared.flags.writeable
    before = dlpack.live_exports()
    del shared
    gc.collect()
    assert dlpack.live_exports() == before - 1 and x.numpy().tolist() == a.tolist()
    half = ember.tensor([1.0], dtype="float16", backend="python")  # held in float32 storage
    with pytest.raises(BufferError, match="copy=False"):
        half.__dlpack__(max_version=(1, 0), copy=False)


def test_wgpu_reports_webgpu_and_exports_a_host_copy():
    if "wgpu" not in ember.available_backends():
        pytest.skip("no wgpu adapter here")
    x = ember.tensor([1.0, 2.0, 3.0], backend="wgpu")
    assert x.__dlpack_device__() == (dlpack.KDL_WEBGPU, 0)
    assert np.from_dlpack(x).tolist() == [1.0, 2.0, 3.0]
    assert torch.from_dlpack(x).tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(BufferError, match="copy=False"):
        x.__dlpack__(copy=False)
    assert ember.from_dlpack(np.arange(3, dtype=np.float32), device="wgpu").tolist() == [0, 1, 2]


def test_copy_true_copies_even_on_the_numpy_backend():
    a = np.arange(3.0)
    t = ember.from_dlpack(a, device="numpy", copy=True)
    assert np.from_dlpack(t).ctypes.data != a.ctypes.data
    a[0] = 9.0
    assert t.tolist()[0] == 0.0


def test_freed_producer_still_readable_by_torch():
    x = ember.tensor([1.0, 2.0, 3.0], backend="python")
    before = dlpack.live_exports()
    tt = torch.from_dlpack(x)
    del x
    gc.collect()
    assert tt.tolist() == [1.0, 2.0, 3.0]
    assert dlpack.live_exports() == before + 1  # the copy lives while torch holds it
    del tt
    gc.collect()
    assert dlpack.live_exports() == before  # torch called the deleter


def test_unconsumed_capsule_releases_its_copy():
    x = ember.tensor([1, 2], backend="python")
    before = dlpack.live_exports()
    for kwargs in ({}, {"max_version": (1, 0)}):
        capsule = x.__dlpack__(**kwargs)
        assert dlpack.live_exports() == before + 1
        del capsule
        gc.collect()
        assert dlpack.live_exports() == before


# ------------------------------------------------------------------ capsule versions
@pytest.mark.parametrize("device", ["numpy", "python"])
def test_versioned_and_legacy_capsules(device):
    x = ember.tensor([1.0, 2.0], backend=device)
    assert capsule_name(x.__dlpack__()) == "dltensor"
    assert capsule_name(x.__dlpack__(max_version=(0, 8))) == "dltensor"
    assert capsule_name(x.__dlpack__(max_version=(1, 0))) == "dltensor_versioned"
    assert capsule_name(x.__dlpack__(max_version=(1, 3))) == "dltensor_versioned"


class LegacyProducer:
    """A producer from before DLPack 1.0: ``__dlpack__`` takes no keywords."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, stream=None):
        return self.array.__dlpack__()

    def __dlpack_device__(self):
        return (1, 0)


@pytest.mark.parametrize("device", ["numpy", "python"])
def test_legacy_producer(device):
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    t = ember.from_dlpack(LegacyProducer(a), device=device)
    assert t.tolist() == a.tolist() and t.backend.name == device


def test_a_capsule_is_read_once():
    capsule = np.arange(3.0).__dlpack__(max_version=(1, 0))
    assert dlpack.read_capsule(capsule).tolist() == [0.0, 1.0, 2.0]
    assert capsule_name(capsule) == "used_dltensor_versioned"
    with pytest.raises(BufferError, match="read once"):
        dlpack.read_capsule(capsule)


@pytest.mark.parametrize("view", [lambda a: a.T, lambda a: a[::-1, 1::2], lambda a: a[2:, :1]])
def test_strided_capsules_copied_into_the_python_backend(view):
    a = np.arange(20, dtype=np.int64).reshape(4, 5)
    assert ember.from_dlpack(view(a), device="python").tolist() == view(a).tolist()


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int8", "int32", "int64", "float16",
                                   "float32", "float64"])
def test_every_dtype_round_trips_through_our_capsules(dtype):
    a = (np.arange(6) % 3).astype(dtype).reshape(3, 2)
    t = ember.from_dlpack(a, device="python")
    assert t.dtype == getattr(ember, dtype)
    back = np.from_dlpack(t)
    assert back.dtype == a.dtype and back.tolist() == a.tolist()
    assert torch.from_dlpack(t).tolist() == a.tolist()


def test_device_requests():
    x = ember.tensor([1.0], backend="python")
    assert capsule_name(x.__dlpack__(max_version=(1, 0), dl_device=(1, 0))) == \
        "dltensor_versioned"
    with pytest.raises(BufferError, match="device"):
        x.__dlpack__(max_version=(1, 0), dl_device=(2, 0))
    with pytest.raises(BufferError, match="stream"):
        x.__dlpack__(stream=1)


def test_unsupported_dtype_is_named():
    with pytest.raises(ember.DTypeError, match="no Ember dtype"):
        ember.from_dlpack(np.zeros(2, dtype=np.complex64), device="python")
    if "wasm" in ember.available_backends():  # a dtype that backend has no storage for
        with pytest.raises(ember.DTypeError, match="uint16"):
            ember.from_dlpack(np.zeros(2, dtype=np.uint16), device="wasm")


@pytest.mark.parametrize("device", ["numpy", "python"])
@pytest.mark.parametrize("dtype", ["int16", "uint16", "uint32", "uint64"])
def test_wide_integer_dtypes_cross_dlpack(device, dtype):
    info = np.iinfo(dtype)
    a = np.array([info.min, 1, info.max], dtype=dtype)
    x = ember.from_dlpack(a, device=device)
    assert x.dtype.name == dtype and x.backend.name == device
    back = np.from_dlpack(x)
    assert back.dtype == a.dtype and np.array_equal(back, a)


def test_namespace_and_dlpack_without_numpy():
    """The standard library alone: the namespace and DLPack on the python backend."""
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['numpy'] = None\n"
        "import ember, ember.array_api as xp\n"
        "x = xp.asarray([[3.0, 1.0], [2.0, 4.0]])\n"
        "y = ember.from_dlpack(x)\n"
        "print(x.backend.name, xp.sort(y, axis=1).tolist(), xp.linalg.det(y).item(),\n"
        "      xp.unique_values(xp.asarray([2, 1, 2])).tolist())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.split("\n")[0] == "python [[1.0, 3.0], [2.0, 4.0]] 10.0 [1, 2]"
