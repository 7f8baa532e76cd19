"""Records: modules, optimizer/scheduler states and checkpoints on disk (ember.save/load)."""

from __future__ import annotations

import json
import os
import struct

import ember
import numpy as np
import pytest
from ember import nn, optim
from ember.errors import RecordError
from ember.nn.config import LinearConfig
from ember.optim import lr_scheduler as S

AD = "autodiff-numpy"


class Net(nn.Module):
    def __init__(self, hidden: int = 5, out: int = 2, backend=AD):
        super().__init__()
        self.fc1 = nn.Linear(3, hidden, backend=backend)
        self.norm = nn.BatchNorm1d(hidden, backend=backend)
        self.fc2 = nn.Linear(hidden, out, backend=backend)

    def forward(self, x):
        return self.fc2(self.norm(self.fc1(x)).relu())


class Renamed(nn.Module):
    """Net's layers under other names (for key remapping)."""

    def __init__(self):
        super().__init__()
        self.encoder = nn.Linear(3, 5, backend=AD)
        self.bn = nn.BatchNorm1d(5, backend=AD)
        self.head = nn.Linear(5, 2, backend=AD)


def snapshot(module) -> dict[str, np.ndarray]:
    return {k: v.numpy().copy() for k, v in module.state_dict().items()}


def assert_same(a: dict, b: dict):
    assert list(a) == list(b)
    for k, value in a.items():
        np.testing.assert_array_equal(value, b[k], err_msg=k)


def trained_net() -> Net:
    net = Net()
    net(
        ember.tensor(np.random.default_rng(0).normal(size=(6, 3)).astype(np.float32), backend=AD)
    )  # moves the BatchNorm running stats off their defaults
    return net


@pytest.fixture
def saved(tmp_path):
    net = trained_net()
    path = tmp_path / "net.safetensors"
    ember.save(net, path)
    return net, path


# ---------------------------------------------------------------------------- modules
def test_module_round_trip(saved):
    net, path = saved
    fresh = Net()
    assert not np.array_equal(fresh.fc1.weight.numpy(), net.fc1.weight.numpy())
    result = ember.load(fresh, path)
    assert_same(snapshot(fresh), snapshot(net))
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert "norm.running_mean" in result.loaded_keys
    assert fresh.fc1.weight.backend.name == AD  # still a trainable parameter
    assert (fresh.fc1.weight.sum()).backward().get(fresh.fc1.weight) is not None


def test_file_is_standard_safetensors(saved):
    net, path = saved
    from safetensors.numpy import load_file, safe_open

    tensors = load_file(str(path))
    for k, v in snapshot(net).items():
        np.testing.assert_array_equal(tensors[k], v)
    with safe_open(str(path), "np") as f:
        meta = f.metadata()
    assert meta["format"] == "ember-record" and meta["kind"] == "module"


def test_loads_a_file_written_by_torch(tmp_path):
    torch = pytest.importorskip("torch")
    from safetensors.torch import save_file

    tnet = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    path = tmp_path / "torch.safetensors"
    save_file(tnet.state_dict(), str(path))
    net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    ember.load(net, path)
    x = np.random.default_rng(1).normal(size=(2, 3)).astype(np.float32)
    np.testing.assert_allclose(
        net(ember.tensor(x)).numpy(),
        tnet(torch.from_numpy(x)).detach().numpy(),
        rtol=1e-5,
        atol=1e-6,
    )


def test_load_path_alone_returns_state_dict(saved):
    net, path = saved
    state = ember.load(path)
    assert list(state) == list(net.state_dict())
    np.testing.assert_array_equal(state["fc2.bias"].numpy(), net.fc2.bias.numpy())


def test_metadata_config_and_user(tmp_path):
    layer = LinearConfig(3, 2).init()
    path = tmp_path / "m.safetensors"
    ember.save(layer, path, config=LinearConfig(3, 2), metadata={"epoch": 4, "note": "x"})
    meta = ember.io.read_metadata(path)
    assert meta["class"] == "Linear" and meta["dtype"] == "float32"
    assert meta["config"]["d_in"] == 3 and meta["config"]["type"] == "LinearConfig"
    assert meta["user"] == {"epoch": 4, "note": "x"}
    assert meta["format"] == "ember-record" and meta["version"] == "2"
    assert sorted(meta["keys"]) == ["bias", "weight"]


def test_strict_reports_every_problem_at_once(saved):
    _, path = saved
    other = Net(hidden=4, out=2)
    other.extra = nn.Linear(1, 1, backend=AD)
    before = snapshot(other)
    with pytest.raises(RecordError) as info:
        ember.load(other, path)
    msg = str(info.value)
    assert "missing keys (2): extra.weight, extra.bias" in msg
    assert "shape mismatches (7):\n    fc1.weight: file (5, 3) vs model (4, 3)\n" in msg
    assert "norm.running_var: file (5,) vs model (4,)" in msg
    assert "fc2.weight: file (2, 5) vs model (2, 4)" in msg
    assert_same(snapshot(other), before)


def test_unexpected_keys_strict_and_partial(saved):
    net, path = saved
    small = nn.Module()
    small.fc1 = nn.Linear(3, 5, backend=AD)
    small.lost = nn.Linear(2, 2, backend=AD)
    with pytest.raises(RecordError, match=r"missing keys \(2\): lost.weight, lost.bias") as info:
        ember.load(small, path)
    assert "unexpected keys (" in str(info.value) and "fc2.weight" in str(info.value)
    lost_before = small.lost.weight.numpy().copy()
    result = ember.load(small, path, strict=False)
    np.testing.assert_array_equal(small.fc1.weight.numpy(), net.fc1.weight.numpy())
    np.testing.assert_array_equal(small.lost.weight.numpy(), lost_before)
    assert result.missing_keys == ["lost.weight", "lost.bias"]
    assert "fc2.weight" in result.unexpected_keys and "norm.running_mean" in result.unexpected_keys


def test_partial_still_rejects_shape_mismatch(saved):
    _, path = saved
    other = Net(hidden=5, out=3)
    before = snapshot(other)
    with pytest.raises(RecordError, match=r"fc2.weight: file \(2, 5\) vs model \(3, 5\)"):
        ember.load(other, path, strict=False)
    assert_same(snapshot(other), before)


def test_remap_keys_by_regex(saved):
    net, path = saved
    target = Renamed()
    rules = [(r"^fc1\.", "encoder."), (r"^norm\.", "bn."), (r"^fc2\.", "head.")]
    ember.load(target, path, remap=rules)
    np.testing.assert_array_equal(target.encoder.weight.numpy(), net.fc1.weight.numpy())
    np.testing.assert_array_equal(target.bn.running_var.numpy(), net.norm.running_var.numpy())
    np.testing.assert_array_equal(target.head.bias.numpy(), net.fc2.bias.numpy())
    with pytest.raises(RecordError, match="remap sends both"):
        ember.load(target, path, remap={r"^fc\d\.": "encoder."})
    with pytest.raises(ValueError, match="bad remap pattern"):
        ember.load(target, path, remap=[("(", "x")])


def test_save_as_float16_and_load_into_float32(tmp_path):
    net = trained_net()
    path = tmp_path / "half.safetensors"
    ember.save(net, path, dtype=ember.float16)
    from safetensors import safe_open

    with safe_open(str(path), "np") as f:
        assert f.get_tensor("fc1.weight").dtype == np.float16
        assert f.get_tensor("norm.num_batches_tracked").dtype == np.int64  # ints untouched
    ember.save(net, tmp_path / "full.safetensors")
    assert os.path.getsize(path) < os.path.getsize(tmp_path / "full.safetensors")
    fresh = Net()
    ember.load(fresh, path)
    assert fresh.fc1.weight.dtype == ember.float32
    want = net.fc1.weight.numpy().astype(np.float16).astype(np.float32)
    np.testing.assert_array_equal(fresh.fc1.weight.numpy(), want)


def test_load_float32_file_into_float16_model(saved):
    net, path = saved
    half = Net(backend="numpy").to(dtype=ember.float16)
    ember.load(half, path)
    assert half.fc2.weight.dtype == ember.float16
    np.testing.assert_array_equal(
        half.fc2.weight.numpy(), net.fc2.weight.numpy().astype(np.float16)
    )


def test_load_path_with_dtype(saved):
    _, path = saved
    state = ember.load(path, dtype=ember.float64)
    assert state["fc1.weight"].dtype == ember.float64
    assert state["norm.num_batches_tracked"].dtype == ember.int64


# ---------------------------------------------------------------------------- damage
def _damaged(path, tmp_path, name, edit):
    raw = bytearray(path.read_bytes())
    out = tmp_path / name
    out.write_bytes(bytes(edit(raw)))
    return out


def header_size(raw) -> int:
    return struct.unpack("<Q", bytes(raw[:8]))[0]


DAMAGE = {
    "empty": lambda r: b"",
    "four-bytes": lambda r: r[:4],
    "mid-header": lambda r: r[: 8 + header_size(r) // 2],
    "header-only": lambda r: r[: 8 + header_size(r)],
    "mid-data": lambda r: r[: len(r) - 7],
    "flipped-data-byte": lambda r: r[:-5] + bytes([r[-5] ^ 0x40]) + r[-4:],
    "garbage-header": lambda r: r[:8] + b"{not json" + r[17:],
    "huge-header-size": lambda r: struct.pack("<Q", 1 << 40) + r[8:],
    "not-a-record": lambda r: b"PK\x03\x04 this is a zip file, not safetensors" * 3,
}


@pytest.mark.parametrize("kind", list(DAMAGE))
def test_corrupt_or_truncated_file_gives_clear_error_and_no_change(saved, tmp_path, kind):
    _, path = saved
    bad = _damaged(path, tmp_path, f"{kind}.safetensors", DAMAGE[kind])
    target = Net()
    before = snapshot(target)
    with pytest.raises(RecordError, match=r"truncated|corrupt|header|checksum"):
        ember.load(target, bad)
    assert_same(snapshot(target), before)
    with pytest.raises(RecordError):
        ember.load(bad)


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(RecordError, match="can't open"):
        ember.load(Net(), tmp_path / "nope.safetensors")
    with pytest.raises(RecordError, match="directory"):
        ember.load(Net(), tmp_path)


def test_record_from_newer_version(tmp_path):
    from ember.io import save_file

    path = tmp_path / "future.safetensors"
    save_file(
        {"w": ember.zeros(2)},
        path,
        metadata={"format": "ember-record", "version": "99", "kind": "module", "meta": "{}"},
    )
    with pytest.raises(RecordError, match="version 99.*newer Ember"):
        ember.load(path)


def test_failed_write_keeps_old_file(saved, tmp_path, monkeypatch):
    net, path = saved
    original = path.read_bytes()

    def disk_full(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("ember.io.atomic.os.fsync", disk_full)
    with pytest.raises(OSError, match="No space"):
        ember.save(Net(hidden=7), path)
    monkeypatch.undo()
    assert path.read_bytes() == original
    assert sorted(p.name for p in tmp_path.iterdir()) == ["net.safetensors"]  # no temp left
    with pytest.raises(RecordError, match="can't store a object"):
        ember.save({"model": net, "bad": object()}, path)
    assert path.read_bytes() == original


def test_wrong_kind_of_record(saved, tmp_path):
    net, path = saved
    opt = optim.SGD(net.parameters(), lr=0.1)
    with pytest.raises(RecordError, match="module's weights"):
        ember.load(opt, path)
    opt_path = tmp_path / "opt.safetensors"
    ember.save(opt, opt_path)
    with pytest.raises(RecordError, match="not a module's weights"):
        ember.load(net, opt_path)


# ---------------------------------------------------------------------------- states
def _xy():
    rng = np.random.default_rng(5)
    return (
        ember.tensor(rng.normal(size=(8, 3)).astype(np.float32), backend=AD),
        ember.tensor(rng.normal(size=(8, 2)).astype(np.float32), backend=AD),
    )


def _train(net, opt, sched, steps):
    x, y = _xy()
    for _ in range(steps):
        opt.step(((net(x) - y) ** 2).mean().backward())
        sched.step()


def _setup(seed_net=None):
    net = Net()
    if seed_net is not None:
        net.load_state_dict(seed_net.state_dict())
    opt = optim.AdamW(
        [
            {"params": net.fc1.parameters(), "lr": 0.01},
            {"params": list(net.norm.parameters()) + list(net.fc2.parameters())},
        ],
        lr=0.003,
        betas=(0.8, 0.9),
        amsgrad=True,
    )
    sched = S.warmup_cosine(opt, warmup_steps=3, total_steps=12)
    return net, opt, sched


def test_optimizer_and_scheduler_state_files_resume_exactly(tmp_path):
    start = Net()
    net, opt, sched = _setup(start)
    _train(net, opt, sched, 10)
    ember.save(opt, tmp_path / "opt.safetensors")
    ember.save(sched, tmp_path / "sched.safetensors")
    ember.save(net, tmp_path / "net.safetensors")

    from safetensors.numpy import load_file

    keys = load_file(str(tmp_path / "opt.safetensors"))
    assert "state.0.exp_avg" in keys and "state.5.max_exp_avg_sq" in keys

    net2, opt2, sched2 = _setup()
    ember.load(net2, tmp_path / "net.safetensors")
    ember.load(opt2, tmp_path / "opt.safetensors")
    ember.load(sched2, tmp_path / "sched.safetensors")
    assert opt2.param_groups[0]["betas"] == (0.8, 0.9)  # tuples come back as tuples
    assert sched2.get_last_lr() == sched.get_last_lr()
    _train(net2, opt2, sched2, 6)

    # the same 16 steps without interruption
    net3, opt3, sched3 = _setup(start)
    _train(net3, opt3, sched3, 16)
    assert_same(snapshot(net2), snapshot(net3))
    assert sched2.get_last_lr() == sched3.get_last_lr()


def test_checkpoint_dict(tmp_path):
    net, opt, sched = _setup()
    _train(net, opt, sched, 4)
    path = tmp_path / "ckpt.safetensors"
    ember.save(
        {"model": net, "optim": opt, "sched": sched, "epoch": 4, "best": [0.5, None]},
        path,
        metadata={"run": "demo"},
    )
    net2, opt2, sched2 = _setup()
    out = ember.load({"model": net2, "optim": opt2, "sched": sched2}, path)
    assert out["epoch"] == 4 and out["best"] == [0.5, None]
    assert_same(snapshot(net2), snapshot(net))
    assert opt2.state_dict()["state"][0]["step"] == 4
    assert sched2.last_epoch == sched.last_epoch
    plain = ember.load(path)
    assert set(plain) == {"model", "optim", "sched", "epoch", "best"}
    np.testing.assert_array_equal(plain["model"]["fc1.weight"].numpy(), net.fc1.weight.numpy())
    assert ember.io.read_metadata(path)["user"] == {"run": "demo"}


def test_checkpoint_with_mismatched_model_changes_nothing(tmp_path):
    net, opt, sched = _setup()
    _train(net, opt, sched, 2)
    path = tmp_path / "ckpt.safetensors"
    ember.save({"model": net, "optim": opt}, path)
    wrong = Net(hidden=6)
    wrong_opt = optim.SGD(wrong.parameters(), lr=0.5)
    before = snapshot(wrong)
    with pytest.raises(RecordError, match=r"(?s)\['model'\].*shape mismatches"):
        ember.load({"model": wrong, "optim": wrong_opt}, path)
    assert_same(snapshot(wrong), before)
    assert wrong_opt.param_groups[0]["lr"] == 0.5
    with pytest.raises(RecordError, match=r"no entries \['sched'\]"):
        ember.load({"sched": sched}, path)


def test_state_tree_round_trip_of_odd_values():
    from ember.io import flatten, unflatten

    state = {
        "a": (1, 2.5),
        3: {"t": ember.tensor([1.0]), "__tensor__": "x"},
        "nan": float("nan"),
        "s": "text",
    }
    tree, tensors = flatten(state)
    tree = json.loads(json.dumps(tree))
    back = unflatten(tree, {k: v for k, v in tensors.items()})
    assert back["a"] == (1, 2.5) and back["s"] == "text" and np.isnan(back["nan"])
    assert back[3]["__tensor__"] == "x" and back[3]["t"].tolist() == [1.0]
    assert list(tensors) == ["3.t"]
