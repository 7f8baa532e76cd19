"""Hostile PyTorch checkpoints: every one is refused with a RecordError naming the problem (and
the limit, when a bound of :mod:`ember.limits` is passed) before the reader allocates or loops
on what the file declares. Each test reproduces a file that once cost the reader gigabytes,
minutes, a bare exception or the interpreter itself; small copies of those files live in
tests/fuzz/regressions/pt_zip and pt_legacy.

Limits are lowered with ``ember.limits.override`` where the default would only be reached by a
large file, so that each test stays small and fast.
"""

import pickle
import struct
import zipfile

import ember
import numpy as np
import pytest
from ember.errors import RecordError
from ember.io import PyTorchFile, read_pytorch
from test_pytorch_reader import _glob, _state_pickle, _tensor, _val, _write_legacy, _write_zip

torch = pytest.importorskip("torch")


def _saved(tmp_path, obj, zip_format=True):
    path = tmp_path / "ckpt.pt"
    torch.save(obj, path, _use_new_zipfile_serialization=zip_format)
    return path


def _zip_with_pickle(tmp_path, pkl: bytes, storages=None):
    path = tmp_path / "crafted.pt"
    _write_zip(path, pkl, storages or {})
    return path


def _one_tensor_pickle(expr: bytes = b"") -> bytes:
    """A pickle whose object is a 3-element float32 tensor of storage "0", then ``expr``."""
    return b"\x80\x02" + _tensor("0", "float32", 3, 0, (3,), (1,), legacy=False) + expr


_STORAGE = np.arange(3, dtype=np.float32).tobytes()


# ---------------------------------------------------------------------------- strided views
@pytest.mark.parametrize("zip_format", [True, False])
def test_modest_expanded_views_load_as_torch_has_them(tmp_path, zip_format):
    state = {"ones": torch.ones(3).expand(4, 3), "ramp": torch.arange(3.0)[:, None].expand(3, 5),
             "scalar": torch.tensor(7.0).expand(2, 2)}
    f = PyTorchFile(_saved(tmp_path, state, zip_format))
    for name, t in state.items():
        assert np.array_equal(f.get(name).to_numpy(), t.contiguous().numpy()), name


def test_zero_stride_expand_30000x30000_is_refused_by_the_expansion_limit(tmp_path):
    """1.3 KB on disk, 3.6 GB once materialised (7.1 GB at the peak, before): refused under
    the default limits, before allocating."""
    path = _saved(tmp_path, torch.ones(1).expand(30000, 30000))
    f = PyTorchFile(path)
    assert f.info("tensor") == ("float32", (30000, 30000))  # the header is fine to read
    with pytest.raises(RecordError, match="max_expansion_bytes") as e:
        f.get("tensor")
    assert "(30000, 30000)" in str(e.value)


def test_zero_stride_expand_past_max_tensor_bytes_is_refused(tmp_path):
    """4 TiB from one float: a bare MemoryError before."""
    path = _saved(tmp_path, torch.ones(1).expand(2**20, 2**20))
    with pytest.raises(RecordError, match="max_tensor_bytes"):
        read_pytorch(path)


def test_expansion_limit_counts_from_the_file_size(tmp_path):
    path = _saved(tmp_path, torch.ones(1).expand(1000, 1000))  # 4 MB from ~1 KB
    with ember.limits.override(max_expansion_bytes=1 << 20), \
            pytest.raises(RecordError, match="max_expansion_bytes"):
        read_pytorch(path)
    with ember.limits.override(max_expansion_bytes=8 << 20):
        assert np.array_equal(read_pytorch(path)["tensor"].to_numpy(), np.ones((1000, 1000)))


@pytest.mark.parametrize("shape,stride,offset,match", [
    ((3,), (-1,), 2, "ints >= 0"),          # a negative stride
    ((-1,), (1,), 0, "ints >= 0"),          # a negative size
    ((2,), (1,), -1, "offset"),             # a negative offset
    ((2, 2), (1,), 0, "has 1 strides"),     # rank mismatch
    ((2,), (3,), 0, "reaches element 3"),   # past the end of a 3-element storage
    ((4,), (0,), 3, "reaches element 3"),   # a zero stride past the end
])
def test_views_outside_their_storage_are_refused(tmp_path, shape, stride, offset, match):
    pkl = b"\x80\x02" + _tensor("0", "float32", 3, offset, shape, stride, legacy=False) + b"."
    with pytest.raises(RecordError, match=match):
        PyTorchFile(_zip_with_pickle(tmp_path, pkl, {"0": _STORAGE}))


def test_build_opcode_cannot_rewrite_a_checked_tensor(tmp_path):
    """BUILD sets slots on an object without __setstate__: it would swap the checked
    geometry for a zero-stride 4 x 3 view of a 3-element storage."""
    state = (b"(N}(" + _val("shape") + _val((4, 3)) + _val("stride") + _val((0, 0)) + b"ut")
    path = _zip_with_pickle(tmp_path, _one_tensor_pickle(state + b"b."), {"0": _STORAGE})
    with pytest.raises(RecordError, match="BUILD"):
        read_pytorch(path)


# ---------------------------------------------------------------------------- the pickle
def test_memo_index_2e28_in_an_8_byte_pickle_is_refused(tmp_path):
    """``N`` then LONG_BINPUT 0x0fffffff: the C unpickler sized its memo to 2**28 slots."""
    pkl = b"\x80\x02Nr\xff\xff\xff\x0f"
    assert len(pkl) == 8
    with pytest.raises(RecordError, match="max_pickle_memo"):
        PyTorchFile(_zip_with_pickle(tmp_path, pkl))
    with ember.limits.override(max_pickle_memo=1000), \
            pytest.raises(RecordError, match="max_pickle_memo"):
        PyTorchFile(_zip_with_pickle(tmp_path, b"\x80\x02Nr\x88\x13\x00\x00."))  # index 5000


def test_memo_index_beyond_the_pickle_opcodes_is_refused(tmp_path):
    pkl = b"\x80\x02Nr\x00\x00\x10\x00."  # index 2**20, under max_pickle_memo, at opcode 3
    with pytest.raises(RecordError, match="one object per opcode"):
        PyTorchFile(_zip_with_pickle(tmp_path, pkl))


def _shared_lists(levels: int, leaf) -> bytes:
    """``levels`` lists, each holding the one below twice: tiny, with 2**levels paths."""
    obj = [leaf]
    for _ in range(levels):
        obj = [obj, obj]
    return pickle.dumps(obj, protocol=2)


def test_shared_lists_are_walked_once_each(tmp_path):
    """473 bytes of lists that share their items made the walk follow 2**60 paths."""
    pkl = _shared_lists(60, None)
    assert len(pkl) < 600
    f = PyTorchFile(_zip_with_pickle(tmp_path, pkl))
    assert f.keys() == []


def test_shared_lists_naming_too_many_tensors_are_refused(tmp_path):
    # 12 levels as above with a tensor at the bottom: 4096 names for one tensor (each level
    # is MARK, memo 0 twice, LIST, and the new list memoised as 0)
    pkl = _one_tensor_pickle(b"q\x00" + b"(h\x00h\x00lq\x00" * 12 + b".")
    with ember.limits.override(max_tensors=1000), \
            pytest.raises(RecordError, match="max_tensors"):
        PyTorchFile(_zip_with_pickle(tmp_path, pkl, {"0": _STORAGE}))
    f = PyTorchFile(_zip_with_pickle(tmp_path, pkl, {"0": _STORAGE}))
    assert len(f.keys()) == 4096 and f.keys()[0] == "0.0.0.0.0.0.0.0.0.0.0.0"
    assert f.get("1.1.1.1.1.1.1.1.1.1.1.1").tolist() == [0.0, 1.0, 2.0]


@pytest.mark.parametrize("container", ["list", "dict"])
def test_a_container_holding_itself_is_refused(tmp_path, container):
    """A self-containing list was a RecursionError."""
    obj = [] if container == "list" else {}
    if container == "list":
        obj.append(obj)
    else:
        obj["me"] = obj
    with pytest.raises(RecordError, match="cycle"):
        PyTorchFile(_zip_with_pickle(tmp_path, pickle.dumps(obj, protocol=2)))


def test_deeply_nested_lists_are_refused_by_max_nesting(tmp_path):
    pkl = b"\x80\x02" + b"]" * 1001 + b"a" * 1000 + b"."  # each list appended to the one below
    with pytest.raises(RecordError, match="max_nesting"):
        PyTorchFile(_zip_with_pickle(tmp_path, pkl))


def test_deeply_nested_tuples_are_refused_before_they_are_hashed(tmp_path):
    """A million nested tuples used as a dict key overflowed the C stack while hashing (a
    segfault); a thousand are enough to show the check."""
    pkl = b"\x80\x02}N" + b"\x85" * 1000 + b"Ns."
    with pytest.raises(RecordError, match="tuple nesting.*max_nesting"):
        PyTorchFile(_zip_with_pickle(tmp_path, pkl))


def test_open_marks_are_bounded_by_max_nesting(tmp_path):
    with pytest.raises(RecordError, match="marks.*max_nesting"):
        PyTorchFile(_zip_with_pickle(tmp_path, b"\x80\x02" + b"(" * 300 + b"N."))


def test_opcodes_are_bounded_by_max_pickle_ops(tmp_path):
    pkl = pickle.dumps(list(range(500)), protocol=2)
    PyTorchFile(_zip_with_pickle(tmp_path, pkl))
    with ember.limits.override(max_pickle_ops=100), \
            pytest.raises(RecordError, match="max_pickle_ops"):
        PyTorchFile(_zip_with_pickle(tmp_path, pkl))


def test_elements_copied_by_constructors_count_as_operations(tmp_path):
    """One 1000-element list memoised, then turned into a set 1000 times: a few kB of
    pickle, a million elements copied."""
    pkl = (b"\x80\x02" + _val(list(range(1000))) + b"q\x00" + b"(" + b"".join(
        _glob("builtins", "set") + b"h\x00\x85R" for _ in range(1000)) + b"l.")
    with ember.limits.override(max_pickle_ops=100_000), \
            pytest.raises(RecordError, match="elements copied.*max_pickle_ops"):
        PyTorchFile(_zip_with_pickle(tmp_path, pkl))


@pytest.mark.parametrize("opcode", ["LONG1", "LONG text"])
def test_integer_digits_are_bounded(tmp_path, opcode):
    big = 7 ** 600  # 508 digits
    arg = _val(big) if opcode == "LONG1" else b"L" + str(big).encode() + b"L\n"
    with pytest.raises(RecordError, match="digits.*max_int_digits"):
        PyTorchFile(_zip_with_pickle(tmp_path, b"\x80\x02" + arg + b"."))


def test_truncated_pickle_with_a_huge_declared_length(tmp_path):
    """BINBYTES8 declaring 2**40 bytes: no read may trust it."""
    pkl = b"\x80\x04\x8e" + struct.pack("<Q", 1 << 40) + b"abc."
    with pytest.raises(RecordError, match="corrupt pickle"):
        PyTorchFile(_zip_with_pickle(tmp_path, pkl))
    legacy = tmp_path / "legacy.pt"
    legacy.write_bytes(pkl + b"\0" * 64)
    with pytest.raises(RecordError, match="corrupt pickle"):
        PyTorchFile(legacy)


def test_legacy_pickles_are_bounded_by_max_header_bytes(tmp_path):
    path = _saved(tmp_path, {f"w{i}": torch.ones(2) for i in range(50)}, zip_format=False)
    with ember.limits.override(max_header_bytes=1000), \
            pytest.raises(RecordError, match="pickle size.*max_header_bytes"):
        PyTorchFile(path)


def test_legacy_memo_bomb_is_refused(tmp_path):
    path = tmp_path / "legacy.pt"
    path.write_bytes(b"\x80\x02Nr\xff\xff\xff\x0f" + b"\0" * 16)
    with pytest.raises(RecordError, match="max_pickle_memo"):
        PyTorchFile(path)


# ---------------------------------------------------------------------------- the zip archive
def _rezip(path, out, compress_type=zipfile.ZIP_DEFLATED):
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(out, "w", compress_type) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info.filename))
    return out


def test_deflated_checkpoint_loads_within_the_limits(tmp_path):
    t = torch.arange(4096, dtype=torch.float32).reshape(64, 64) % 7
    path = _rezip(_saved(tmp_path, {"w": t}), tmp_path / "deflated.pt")
    assert np.array_equal(read_pytorch(path)["w"].to_numpy(), t.numpy())


def test_zip_bomb_storage_is_refused_before_reading(tmp_path):
    """A deflated 64 MB storage of zeros: 64 kB on disk."""
    path = _rezip(_saved(tmp_path, {"w": torch.zeros(1 << 24)}), tmp_path / "bomb.pt")
    assert path.stat().st_size < 200_000
    with ember.limits.override(max_expansion_bytes=1 << 20), \
            pytest.raises(RecordError, match="beyond the file.*max_expansion_bytes"):
        PyTorchFile(path)
    with ember.limits.override(max_zip_member_bytes=1 << 20), \
            pytest.raises(RecordError, match="max_zip_member_bytes"):
        PyTorchFile(path)


def test_zip_bomb_pickle_is_refused_before_reading(tmp_path):
    """data.pkl inflating to 50 MB (a valid pickle, then zeros): it was read whole."""
    path = tmp_path / "bomb.pt"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("archive/data.pkl", pickle.dumps({}, protocol=2) + bytes(50 << 20))
    with ember.limits.override(max_header_bytes=1 << 20), \
            pytest.raises(RecordError, match="data.pkl.*max_header_bytes"):
        PyTorchFile(path)


def _patch_central(raw: bytes, name: bytes, offset: int, fmt: str, value: int) -> bytes:
    """Overwrite one field of ``name``'s central directory record (what ZipInfo reads)."""
    at = 0
    while True:
        at = raw.index(b"PK\x01\x02", at)
        (n,) = struct.unpack_from("<H", raw, at + 28)
        if raw[at + 46:at + 46 + n] == name:
            return raw[:at + offset] + struct.pack(fmt, value) + raw[at + offset
                                                                     + struct.calcsize(fmt):]
        at += 4


def _patched_zip(tmp_path, offset, fmt, value, name=b"archive/data.pkl", pkl=None):
    plain = tmp_path / "plain.pt"
    with zipfile.ZipFile(plain, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("archive/data.pkl", pkl or pickle.dumps({"a": 1}, protocol=2))
        z.writestr("archive/byteorder", "little")
    path = tmp_path / "patched.pt"
    path.write_bytes(_patch_central(plain.read_bytes(), name, offset, fmt, value))
    return path


def test_declared_size_is_checked_before_reading(tmp_path):
    path = _patched_zip(tmp_path, 24, "<I", 0xFFFFFFF0)  # data.pkl "inflates to 4 GB"
    with pytest.raises(RecordError, match="data.pkl.*max_(header|expansion)_bytes"):
        PyTorchFile(path)


@pytest.mark.parametrize("declared", [3, 10_000])
def test_a_lying_declared_size_is_caught(tmp_path, declared):
    path = _patched_zip(tmp_path, 24, "<I", declared, pkl=pickle.dumps(list(range(100))))
    with pytest.raises(RecordError, match="data.pkl"):
        PyTorchFile(path)


def test_unsupported_compression_is_a_record_error(tmp_path):
    """Method 99 (AES) made zipfile raise NotImplementedError."""
    with pytest.raises(RecordError, match="compression method 99"):
        PyTorchFile(_patched_zip(tmp_path, 10, "<H", 99))


def test_encrypted_entry_is_a_record_error(tmp_path):
    """Bit 0 of the flags made zipfile raise RuntimeError (password required)."""
    with pytest.raises(RecordError, match="encrypted"):
        PyTorchFile(_patched_zip(tmp_path, 8, "<H", 0x1))


@pytest.mark.parametrize("raw", [b"\xff\xfe", b"middle"])
def test_bad_byteorder_is_a_record_error(tmp_path, raw):
    """Non-UTF-8 bytes were a UnicodeDecodeError."""
    path = tmp_path / "m.pt"
    _write_zip(path, _state_pickle({}, legacy=False), {}, byteorder=raw)
    with pytest.raises(RecordError, match="byteorder"):
        PyTorchFile(path)


def test_undecodable_entry_name_is_a_record_error(tmp_path):
    """Any exception escaping the reader becomes a RecordError, chained to the original: here
    a name flagged UTF-8 that is not (a UnicodeDecodeError from zipfile)."""
    path = _patched_zip(tmp_path, 8, "<H", 0x800, name=b"archive/byteorder")
    raw = path.read_bytes().replace(b"archive/byteorder", b"archive/byteord\xff\xfe")
    path.write_bytes(raw)
    with pytest.raises(RecordError) as e:
        PyTorchFile(path)
    assert isinstance(e.value.__cause__, UnicodeDecodeError)


def test_unhashable_legacy_storage_key_is_a_record_error(tmp_path):
    """A storage key list holding a list was a TypeError."""
    path = tmp_path / "m.pth"
    _write_legacy(path, _state_pickle({}, legacy=True), {}, {})
    raw = path.read_bytes()
    keys = pickle.dumps([], protocol=2)
    assert raw.endswith(keys)
    path.write_bytes(raw[:-len(keys)] + pickle.dumps([[1]], protocol=2))
    with pytest.raises(RecordError, match="storage key"):
        PyTorchFile(path)


def test_reader_never_runs_code_from_a_pickle_under_the_new_checks(tmp_path):
    """The bounded scan happens first, the allow-list still decides: os.system is refused
    whether it comes through GLOBAL, STACK_GLOBAL or INST."""
    marker = tmp_path / "pwned"
    cmd = _val(f"touch {marker}")
    for pkl in (b"\x80\x02" + _glob("os", "system") + b"(" + cmd + b"tR.",
                b"\x80\x04" + _val("os") + _val("system") + b"\x93(" + cmd + b"tR.",
                b"\x80\x02(" + cmd + b"ios\nsystem\n."):
        with pytest.raises(RecordError, match="os.system"):
            PyTorchFile(_zip_with_pickle(tmp_path, pkl))
    assert not marker.exists()



# ---------------------------------------------------------------------------- hash collisions
_MODULUS = 2**61 - 1  # CPython hashes an int by its value modulo this: k * _MODULUS all collide


def test_colliding_int_keys_are_refused(tmp_path):
    """20 000 int keys with one hash took 6 s (a million would take hours): each insertion
    walks every key before it."""
    keys = b"".join(_val(k * _MODULUS) + b"N" for k in range(20_000))
    pkl = b"\x80\x02}(" + keys + b"u."
    assert len(pkl) < 300_000
    with pytest.raises(RecordError, match="hash collisions.*max_pickle_ops"):
        PyTorchFile(_zip_with_pickle(tmp_path, pkl))


def test_colliding_float_set_elements_are_refused(tmp_path):
    """Floats x * 2**61k share a hash too; here they reach ``set()`` through REDUCE."""
    floats = [1.5 * 2.0 ** (61 * k) for k in range(16)]
    assert len({hash(x) for x in floats}) == 1
    pkl = (b"\x80\x02" + _val(floats) + b"q\x00(" + b"".join(
        _glob("builtins", "set") + b"h\x00\x85R" for _ in range(50)) + b"l.")
    PyTorchFile(_zip_with_pickle(tmp_path, pkl))
    with ember.limits.override(max_pickle_ops=2000), \
            pytest.raises(RecordError, match="hash collisions.*max_pickle_ops"):
        PyTorchFile(_zip_with_pickle(tmp_path, pkl))


def test_ordinary_keys_cost_nothing_extra(tmp_path):
    """Optimizer states use small int keys, state dicts str keys: neither can collide."""
    model = torch.nn.Linear(3, 2)
    opt = torch.optim.Adam(model.parameters())
    model(torch.ones(1, 3)).sum().backward()
    opt.step()
    state = {"model": model.state_dict(), "optim": opt.state_dict(),
             "ids": {k: k for k in range(5000)}}
    with ember.limits.override(max_pickle_ops=60_000):
        f = PyTorchFile(_saved(tmp_path, state))
    assert np.array_equal(f.get("optim.state.0.exp_avg").to_numpy(),
                          opt.state_dict()["state"][0]["exp_avg"].numpy())
    assert np.array_equal(f.get("model.weight").to_numpy(), model.weight.detach().numpy())


def test_build_on_an_ordered_dict_costs_nothing(tmp_path):
    """BUILD copied a memoised state dict into the OrderedDict's attributes each time."""
    state = _val({f"k{i}": i for i in range(1000)})
    pkl = (b"\x80\x02" + state + b"q\x00(" + b"".join(
        _glob("collections", "OrderedDict") + b")Rh\x00b" for _ in range(1000)) + b"l.")
    f = PyTorchFile(_zip_with_pickle(tmp_path, pkl))
    assert len(f.obj) == 1000 and not vars(f.obj[0])
