"""safetensors read/write against the reference `safetensors` package; malformed files."""

import os
import signal
import stat
import struct
import subprocess
import sys
import time

import numpy as np
import pytest

import ember
from ember.errors import RecordError
from ember.io import SafeTensorsFile, atomic_write, load_file, save_file

safetensors_numpy = pytest.importorskip("safetensors.numpy")


def test_written_file_reads_in_reference(tmp_path):
    path = tmp_path / "w.safetensors"
    arrays = {
        "f32": np.arange(6, dtype=np.float32).reshape(2, 3),
        "f16": np.array([1.5, -2.25], dtype=np.float16),
        "i64": np.array([1, -2, 3], dtype=np.int64),
        "u8": np.array([0, 255], dtype=np.uint8),
        "b": np.array([True, False]),
    }
    save_file({k: ember.tensor(v) for k, v in arrays.items()}, path, metadata={"k": "v"})
    ref = safetensors_numpy.load_file(str(path))
    for k, v in arrays.items():
        assert ref[k].dtype == v.dtype and np.array_equal(ref[k], v)


def test_reference_file_reads_lazily(tmp_path):
    path = str(tmp_path / "r.safetensors")
    arrays = {
        "x": np.array([[1, -2]], dtype=np.int16),
        "y": np.linspace(0, 1, 5, dtype=np.float64),
        "z": np.array([7], dtype=np.uint32),
    }
    safetensors_numpy.save_file(arrays, path, metadata={"who": "reference"})
    f = SafeTensorsFile(path)
    assert sorted(f.keys()) == ["x", "y", "z"] and f.metadata == {"who": "reference"}
    assert f.info("x") == ("I16", (1, 2))
    assert f.get("x").tolist() == [[1, -2]] and f.get("x").dtype == ember.int32
    assert np.allclose(f.get("y").to_numpy(), arrays["y"])
    assert load_file(path)["z"].tolist() == [7]


def test_bf16_converts_to_float32(tmp_path):
    torch = pytest.importorskip("torch")
    from safetensors.torch import save_file as torch_save

    path = str(tmp_path / "bf.safetensors")
    t = torch.tensor([1.0, -3.5, 0.15625, 1e30], dtype=torch.bfloat16)
    torch_save({"t": t}, path)
    got = SafeTensorsFile(path).get("t")
    assert got.dtype == ember.float32
    assert got.values() == t.float().tolist()


def _valid_file(tmp_path):
    path = tmp_path / "ok.safetensors"
    save_file({"w": ember.ones(4, 4)}, path)
    return path, path.read_bytes()


@pytest.mark.parametrize(
    "corrupt, message",
    [
        (lambda raw: raw[:5], "truncated"),
        (lambda raw: struct.pack("<Q", 1 << 40) + raw[8:], "header"),
        (lambda raw: raw[:8] + b"{not json" + raw[17:], "corrupt JSON"),
        (lambda raw: raw[:-10], "data_offsets"),
        (lambda raw: raw.replace(b'"F32"', b'"F99"'), "unsupported dtype"),
        (lambda raw: raw.replace(b'"shape":[4,4]', b'"shape":[4,9]'), "data_offsets"),
    ],
)
def test_malformed_files_raise_clear_errors(tmp_path, corrupt, message):
    path, raw = _valid_file(tmp_path)
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(corrupt(raw))
    with pytest.raises(RecordError, match=message):
        SafeTensorsFile(bad).get("w")


def test_missing_file(tmp_path):
    with pytest.raises(RecordError, match="can't open"):
        SafeTensorsFile(tmp_path / "nope.safetensors")


def test_atomic_write_keeps_old_file_on_failure(tmp_path):
    path, raw = _valid_file(tmp_path)
    with pytest.raises(RuntimeError):
        with atomic_write(path) as f:
            f.write(b"partial")
            raise RuntimeError("interrupted")
    assert path.read_bytes() == raw
    assert [p.name for p in tmp_path.iterdir()] == ["ok.safetensors"]
    assert not any(n.startswith(".tmp-") for n in os.listdir(tmp_path))


_HOLD_WRITE = """
import sys, time
from ember.io import atomic_write
with atomic_write(sys.argv[1]) as f:
    f.write(bytes(1 << 20))
    f.flush()
    print("writing", flush=True)
    time.sleep(120)
"""


def _writer(path):
    """A real process stopped in the middle of an atomic write to ``path``."""
    proc = subprocess.Popen([sys.executable, "-c", _HOLD_WRITE, str(path)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "writing"
    return proc


def test_temporaries_of_killed_writers_are_removed_by_the_next_write(tmp_path):
    path = tmp_path / "net.safetensors"
    killed = _writer(path)
    killed.send_signal(signal.SIGKILL)
    killed.wait()
    left_behind = set(os.listdir(tmp_path))
    assert len(left_behind) == 1  # the killed writer's temporary file
    live = _writer(path)
    try:
        live_temporary = set(os.listdir(tmp_path)) - left_behind
        save_file({"w": ember.ones(3)}, path)
        assert set(os.listdir(tmp_path)) == live_temporary | {"net.safetensors"}
    finally:
        live.kill()
        live.wait()
    save_file({"w": ember.full((3,), 2.0)}, path)
    assert os.listdir(tmp_path) == ["net.safetensors"]
    assert load_file(path)["w"].tolist() == [2.0, 2.0, 2.0]


def test_old_unknown_temporaries_are_removed_and_others_kept(tmp_path):
    from ember.io.atomic import STALE_AFTER_S

    other_host = tmp_path / ".ember-tmp-00000000-1-abcdefgh"  # a pid we can't check
    recent = tmp_path / ".ember-tmp-00000000-2-abcdefgh"
    foreign = tmp_path / ".tmp-not-ours"
    for p in (other_host, recent, foreign):
        p.write_bytes(b"x")
    old = time.time() - STALE_AFTER_S - 60
    os.utime(other_host, (old, old))
    os.utime(foreign, (old, old))
    save_file({"w": ember.ones(1)}, tmp_path / "w.safetensors")
    assert sorted(os.listdir(tmp_path)) == sorted([recent.name, foreign.name, "w.safetensors"])


_WRITE_BOTH = """
import sys
from ember.io import atomic_write
with atomic_write(sys.argv[1] + "/atomic.bin") as f:
    f.write(b"x")
with open(sys.argv[1] + "/plain.bin", "wb") as f:
    f.write(b"x")
"""


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_atomic_write_gives_the_mode_open_gives(tmp_path, umask):
    subprocess.run([sys.executable, "-c", _WRITE_BOTH, str(tmp_path)], umask=umask, check=True)
    mode = {name: stat.S_IMODE((tmp_path / name).stat().st_mode)
            for name in ("atomic.bin", "plain.bin")}
    assert mode["atomic.bin"] == mode["plain.bin"] == 0o666 & ~umask
    # an existing file keeps its permissions, as open(path, "wb") keeps them
    for name in ("atomic.bin", "plain.bin"):
        os.chmod(tmp_path / name, 0o640)
    subprocess.run([sys.executable, "-c", _WRITE_BOTH, str(tmp_path)], umask=umask, check=True)
    assert {stat.S_IMODE((tmp_path / n).stat().st_mode) for n in mode} == {0o640}


_FULL_DISK = """
import resource, signal, sys
from ember.io.atomic import atomic_write
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails with EFBIG instead
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))  # files past 4 KB: like a full disk
try:
    with atomic_write(sys.argv[1]) as f:
        f.write(b"x" * 65536)
except OSError as e:
    print(repr(e.filename), e)
"""


@pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_FSIZE is POSIX")
def test_a_write_the_disk_refuses_names_the_file_and_keeps_the_old_one(tmp_path):
    path = tmp_path / "model.safetensors"
    path.write_bytes(b"old")
    out = subprocess.run([sys.executable, "-c", _FULL_DISK, str(path)], capture_output=True,
                         text=True, timeout=60, check=True).stdout
    assert f"'{path}'" in out and f"writing {path} (left as it was)" in out
    assert path.read_bytes() == b"old" and os.listdir(tmp_path) == ["model.safetensors"]
