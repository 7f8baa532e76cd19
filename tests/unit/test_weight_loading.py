"""``ember.io.load_weights``: safetensors and PyTorch checkpoints into ember modules, with
regex key remapping, strict/partial modes, one error listing every problem, and no change to
the module when a load fails. Expected values are the numpy arrays written to the files."""

import ember
import numpy as np
import pytest
from ember import nn
from ember.errors import RecordError
from ember.io import detect_format, load_weights, save_file


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(2, 3, 3, bias=False), nn.BatchNorm2d(3))
        self.fc = nn.Linear(3, 4)


# torch-style names, as a model written with differently named attributes would save them
RULES = [(r"^features\.conv\.", "body.0."), (r"^features\.bn\.", "body.1."),
         (r"^classifier\.", "fc.")]


def _arrays(seed=0):
    rng = np.random.default_rng(seed)
    return {
        "features.conv.weight": rng.standard_normal((3, 2, 3, 3)).astype(np.float32),
        "features.bn.weight": rng.standard_normal(3).astype(np.float32),
        "features.bn.bias": rng.standard_normal(3).astype(np.float32),
        "features.bn.running_mean": rng.standard_normal(3).astype(np.float32),
        "features.bn.running_var": rng.uniform(0.5, 2, 3).astype(np.float32),
        "features.bn.num_batches_tracked": np.array(7, dtype=np.int64),
        "classifier.weight": rng.standard_normal((4, 3)).astype(np.float32),
        "classifier.bias": rng.standard_normal(4).astype(np.float32),
    }


def _renamed(arrays):
    out = {}
    for k, v in arrays.items():
        for pat, rep in (("features.conv.", "body.0."), ("features.bn.", "body.1."),
                         ("classifier.", "fc.")):
            k = k.replace(pat, rep)
        out[k] = v
    return out


def _state(model):
    return {k: v.numpy().copy() for k, v in model.state_dict().items()}


def _assert_state(model, expected):
    got = _state(model)
    assert sorted(got) == sorted(expected)
    for k, v in expected.items():
        assert np.array_equal(got[k], v), k


@pytest.fixture
def st_file(tmp_path):
    arrays = _arrays()
    path = tmp_path / "w.safetensors"
    save_file({k: ember.tensor(v) for k, v in arrays.items()}, path)
    return path, arrays


@pytest.fixture
def pt_files(tmp_path):
    torch = pytest.importorskip("torch")
    arrays = _arrays(1)
    state = {k: torch.from_numpy(v.copy()) for k, v in arrays.items()}
    # a transposed view stored as such: the reader must gather strided data
    state["classifier.weight"] = torch.from_numpy(arrays["classifier.weight"].T.copy()).t()
    paths = []
    for zip_format in (True, False):
        p = tmp_path / f"w_{zip_format}.pth"
        torch.save(state, p, _use_new_zipfile_serialization=zip_format)
        paths.append(p)
    return paths, arrays


def test_safetensors_with_remap(st_file):
    path, arrays = st_file
    model = Net()
    result = load_weights(model, path, remap=RULES)
    assert detect_format(path) == "safetensors"
    assert result.missing_keys == [] and result.unexpected_keys == []
    _assert_state(model, _renamed(arrays))


def test_safetensors_whose_header_length_starts_with_a_pickle_byte(tmp_path):
    """A header of 0x80 + 256 k bytes begins with 0x80, a pickle's protocol byte: still
    safetensors (a 6-layer transformer's checkpoint was read as a corrupt PyTorch pickle)."""
    for name_len in range(1, 300):  # find a tensor name giving a header length of 0x..80
        path = tmp_path / "w.safetensors"
        save_file({"w" * name_len: ember.zeros(1)}, path)
        if path.read_bytes()[0] == 0x80:
            break
    else:
        pytest.fail("no header length ending in 0x80 found")
    assert detect_format(path) == "safetensors"


def test_pytorch_zip_and_legacy_with_remap(pt_files):
    paths, arrays = pt_files
    for path in paths:
        model = Net()
        assert detect_format(path) == "pytorch"
        load_weights(model, path, remap=RULES)
        _assert_state(model, _renamed(arrays))


def test_loaded_model_computes_like_numpy(st_file):
    path, arrays = st_file
    model = Net()
    load_weights(model, path, remap=RULES)
    x = np.random.default_rng(5).standard_normal((2, 3)).astype(np.float32)
    want = x.astype(np.float64) @ arrays["classifier.weight"].T.astype(np.float64)
    want += arrays["classifier.bias"]
    np.testing.assert_allclose(model.fc(ember.tensor(x)).numpy(), want, rtol=1e-5, atol=1e-5)


def test_one_error_lists_every_problem_and_changes_nothing(tmp_path):
    arrays = _arrays()
    arrays.pop("features.bn.running_var")  # missing
    arrays["features.extra"] = np.zeros(2, np.float32)  # unexpected
    arrays["classifier.weight"] = np.zeros((4, 5), np.float32)  # shape mismatch
    path = tmp_path / "bad.safetensors"
    save_file({k: ember.tensor(v) for k, v in arrays.items()}, path)
    model = Net()
    before = _state(model)
    with pytest.raises(RecordError) as e:
        load_weights(model, path, remap=RULES)
    msg = str(e.value)
    assert "body.1.running_var" in msg and "features.extra" in msg
    assert "fc.weight: file (4, 5) vs model (4, 3)" in msg
    _assert_state(model, before)


def test_partial_mode_reports_and_loads_the_rest(st_file):
    path, arrays = st_file
    model = Net()
    before = _state(model)
    result = load_weights(model, path, remap=RULES[:2], strict=False)  # no classifier rule
    assert sorted(result.missing_keys) == ["fc.bias", "fc.weight"]
    assert sorted(result.unexpected_keys) == ["classifier.bias", "classifier.weight"]
    got = _state(model)
    assert np.array_equal(got["body.0.weight"], arrays["features.conv.weight"])
    assert np.array_equal(got["fc.weight"], before["fc.weight"])


def test_partial_mode_still_refuses_shape_mismatch_and_changes_nothing(pt_files):
    paths, _ = pt_files
    model = Net()
    model.fc = nn.Linear(3, 5)
    before = _state(model)
    with pytest.raises(RecordError, match=r"fc\.weight: file \(4, 3\) vs model \(5, 3\)"):
        load_weights(model, paths[1], remap=RULES, strict=False)
    _assert_state(model, before)


def test_strict_without_remap_names_torch_keys(pt_files):
    paths, _ = pt_files
    with pytest.raises(RecordError) as e:
        load_weights(Net(), paths[0])
    msg = str(e.value)
    assert "missing keys (8)" in msg and "unexpected keys (8)" in msg
    assert "classifier.weight" in msg and "body.0.weight" in msg


def test_mapping_source_and_dtype_conversion(tmp_path):
    model = nn.Linear(2, 2)
    w = np.array([[1.5, -2.0], [0.25, 4.0]], dtype=np.float16)
    load_weights(model, {"weight": ember.tensor(w), "bias": ember.tensordata.TensorData.from_numpy(
        np.array([1, 2], dtype=np.float64))})
    assert model.weight.dtype == ember.float32
    assert model.weight.numpy().tolist() == w.astype(np.float32).tolist()
    assert model.bias.numpy().tolist() == [1.0, 2.0]
    with pytest.raises(TypeError, match="not a Tensor"):
        load_weights(model, {"weight": [[1.0, 2.0], [3.0, 4.0]]})


def test_bad_rules_and_remap_collisions(st_file):
    path, _ = st_file
    with pytest.raises(ValueError, match="bad remap pattern"):
        load_weights(Net(), path, remap=[("(", "x")])
    with pytest.raises(RecordError, match="remap sends both"):
        load_weights(Net(), path, remap=[(r"^features\.bn\.(weight|bias)$", "fc.bias")],
                     strict=False)


def test_malformed_files_give_record_errors(tmp_path):
    path = tmp_path / "junk.bin"
    path.write_bytes(b"\x00" * 40)
    with pytest.raises(RecordError, match="neither a safetensors file nor a PyTorch"):
        load_weights(Net(), path)
    path.write_bytes(b"PK\x03\x04 truncated")
    with pytest.raises(RecordError, match="zip"):
        load_weights(Net(), path)
    with pytest.raises(ValueError, match="format must be"):
        load_weights(Net(), path, format="onnx")
