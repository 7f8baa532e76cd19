"""The ulab tier on real ulab firmware (``_ulab_firmware.py``: MicroPython 1.25 unix builds with
ulab 6.12 in 2-D and 4-D float32, float64, and 2-D float32 without reverse operators), against
the numpy float64 reference of the written file (``run_reference``). Skipped, naming the
folder, where the checkout has no ``shared/ulab`` beside it.

Goals (issue 35), on 100 MNIST test digits fed as uint8 bytes:
- argmax equal to the reference's on every digit;
- float32 and weight-only files: |logit - reference| <= 1e-5 × max |reference logit|;
- int8 files: |logit - reference| <= one int8 step of the last layer (one input code times its
  largest weight: a float32 value on the other side of a rounding tie moves one code).
"""

from __future__ import annotations

import ember
import numpy as np
import pytest
from _models import seeded, zoo
from _ulab_firmware import F32_BUILDS, run_logits
from test_board import boards  # noqa: F401 - the emulated boards' fixture
from ember.export import export, load, run_micropython_script, run_on_micropython, run_reference
from ember.export import format as fmt

DIGITS = 100
FEWER = 30  # digits on the builds besides 2d-f32: the same code, fewer seconds
KINDS = ("f32", "int8", "int4")


@pytest.fixture(scope="module")
def mnist_files(tmp_path_factory, mnist, trained_mlp, trained_cnn):
    """{(model, kind): path} for the briefly trained MNIST MLP and CNN in float32, int8 and
    int4 weight-only (ember.quantize's "int4" preset), uint8 pixels in; and the test digits."""
    from ember.demos.mnist_embedded import INPUT_TRANSFORM, normalize

    (tx, _), (vx, _) = mnist
    folder = tmp_path_factory.mktemp("ulab")
    files = {}
    for name, model in (("mlp", trained_mlp), ("cnn", trained_cnn)):
        for kind in KINDS:
            path = folder / f"{name}_{kind}.emb"
            if kind == "int4":
                export(ember.quantize(model, None, "int4"), path, (1, 28, 28),
                       input_transform=INPUT_TRANSFORM)
            else:
                export(model, path, (1, 28, 28), int8=kind == "int8",
                       input_transform=INPUT_TRANSFORM,
                       calibration=normalize(tx[:200]) if kind == "int8" else None)
            files[name, kind] = path
    return files, vx[:DIGITS], normalize(vx[:DIGITS])


def int8_step(path) -> float:
    """The logit change one input code of the last int8 layer can make."""
    last = [la for la in load(path).layers if la.op in (fmt.LINEAR, fmt.CONV2D)][-1]
    rows = np.abs(last.w_q.reshape(len(last.w_scale), -1)).max(axis=1)
    return float(last.in_scale * (np.abs(last.w_scale) * rows).max())


def assert_matches(got, want, path, kind):
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want)
    assert got.shape == want.shape
    assert got.argmax(1).tolist() == want.argmax(1).tolist()
    err = np.abs(got - want).max()
    limit = int8_step(path) if kind == "int8" else 1e-5 * np.abs(want).max()
    assert err <= limit, f"max |logit diff| {err:.3g} > {limit:.3g}"


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("which", ["mlp", "cnn"])
@pytest.mark.parametrize("build", F32_BUILDS)
def test_mnist_on_real_ulab_matches_the_reference(ulab, mnist_files, build, which, kind):
    files, images, x = mnist_files
    n = DIGITS if build == "2d-f32" else FEWER
    path = files[which, kind]
    run = run_on_micropython(path, images[:n], tier="ulab", logits=True, heapsize="1M",
                             micropython=ulab[build])
    assert run.tier == "ulab"
    assert_matches(run.logits, run_reference(load(path), x[:n]), path, kind)


# the no-out path is the same Python on every build: run on one
LAYER_RUNS = [(b, m) for b in F32_BUILDS for m in ("default", "streamed")] + [("2d-f32", "no-out")]


@pytest.mark.parametrize("int8", [False, True], ids=["f32", "int8"])
@pytest.mark.parametrize(("build", "mode"), LAYER_RUNS, ids=[f"{b}-{m}" for b, m in LAYER_RUNS])
def test_every_layer_kind_on_real_ulab(ulab, tmp_path, build, mode, int8):
    """The zoo (every layer kind: depthwise and grouped convs, every pool and activation,
    nested residuals) and TF "SAME" padding, float inputs; "streamed": tiny resident and chunk
    sizes, so every weighted layer streams in chunks of one to a few rows; "no-out": the code
    path for ulab builds whose tanh takes no out=."""
    from test_budget import same_pad_net

    for name, (model, shape) in (("zoo", zoo()), ("same", same_pad_net())):
        rng = np.random.default_rng(5)
        x = rng.standard_normal((3, *shape)).astype(np.float32)
        path = tmp_path / f"{name}.emb"
        export(model, path, shape, int8=int8, calibration=rng.standard_normal(
            (16, *shape)).astype(np.float32))
        small = mode == "streamed"
        got = run_logits(build, path, x, resident=64 if small else 16384,
                         chunk=64 if small else None, mode=mode)
        want = run_reference(load(path), x)
        err = np.abs(got - want).max()
        limit = int8_step(path) if int8 else 1e-5 * max(1.0, np.abs(want).max())
        assert err <= limit, (name, err, limit)


def test_the_builds_are_what_they_claim(ulab):
    """The no-reverse build refuses `1.0 - ndarray` (so the tier passing there proves it never
    needs it), the others accept it; the f64 build's float is 8 bytes; the 4-D build makes
    3-D arrays and the 2-D ones don't; and float -> int8 assignment rounds half away."""
    code = ("from ulab import numpy as np\n"
            "a = np.zeros(2, dtype=np.float)\n"
            "try:\n    1.0 - a\n    print('reverse yes')\n"
            "except TypeError:\n    print('reverse no')\n"
            "print('itemsize', a.itemsize)\n"
            "try:\n    np.zeros((2, 2, 2))\n    print('3d yes')\n"
            "except Exception:\n    print('3d no')\n"
            "q = np.zeros(4, dtype=np.int8)\nq[:] = np.array([0.5, -0.5, 1.5, 2.4])\n"
            "print('int8', list(q))\n")
    want = {"2d-f32": ("reverse yes", "itemsize 4", "3d no"),
            "4d-f32": ("reverse yes", "itemsize 4", "3d yes"),
            "2d-f64": ("reverse yes", "itemsize 8", "3d no"),
            "2d-f32-noreverse": ("reverse no", "itemsize 4", "3d no")}
    for build, lines in want.items():
        proc = run_micropython_script(["-c", code], native=False, micropython=ulab[build])
        assert proc.returncode == 0, proc.stderr
        for line in (*lines, "int8 [1, -1, 2, 2]"):
            assert line in proc.stdout, (build, proc.stdout)


def test_automatic_order_on_real_firmware(ulab, tmp_path):
    """native first where its kernels import, then ulab; on the float64 build the ulab tier is
    refused with the reason and the choice falls back (to pure without native kernels)."""
    from ember import nn

    path = tmp_path / "m.emb"
    export(seeded(nn.Sequential(nn.Linear(4, 3))), path, (4,))
    code = ("import ember_micro\ni = ember_micro.info()\n"
            "print('tier', i['tier'])\nprint('available', ','.join(i['available']))\n"
            "print('why', i['why'])\n"
            f"print('model', ember_micro.Model({str(path)!r}).tier)\n"
            "try:\n"
            f"    ember_micro.Model({str(path)!r}, 'ulab')\n    print('forced ulab')\n"
            "except ImportError as e:\n    print('refused', e)\n")

    def info(build, native):
        proc = run_micropython_script(["-c", code], native=native, micropython=ulab[build])
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return proc.stdout

    out = info("2d-f32", True)
    assert "tier native" in out and "available native,ulab,pure" in out, out
    assert "model native" in out and "forced ulab" in out, out
    out = info("2d-f32", False)
    assert "tier ulab" in out and "why ulab: faster tiers unavailable: native (" in out, out
    out = info("2d-f64", False)
    assert "tier pure" in out and "model pure" in out, out
    assert ("refused ember_micro: kernel tier 'ulab' unavailable: ulab tier needs "
            "single-precision float firmware (this ulab's float is 8 bytes") in out, out
    assert "ulab (ulab tier needs single-precision float firmware" in out, out


@pytest.mark.parametrize("tier", ["native", "ulab", "pure"])
def test_every_tier_takes_a_list_and_names_what_it_needs(request, micropython, tmp_path, tier):
    """Model.run takes uint8 bytes, an array('f') or a list of floats, with the same result;
    anything else is refused naming those."""
    from ember import nn

    binary = request.getfixturevalue("ulab")["2d-f32"] if tier == "ulab" else micropython
    path = tmp_path / "m.emb"
    model = seeded(nn.Sequential(nn.Flatten(), nn.Linear(12, 5), nn.ReLU(), nn.Linear(5, 3)))
    export(model, path, (1, 3, 4))
    x = np.random.default_rng(2).standard_normal(12).astype(np.float32)
    code = ("from array import array\nimport ember_micro\n"
            f"m = ember_micro.Model({str(path)!r}, {tier!r})\n"
            f"x = {x.tolist()!r}\n"
            "print('l', 0, ' '.join(['%.7g' % v for v in m.run(x)]))\n"
            "print('l', 1, ' '.join(['%.7g' % v for v in m.run(array('f', x))]))\n"
            "print('l', 2, ' '.join(['%.7g' % v for v in m.run(tuple(x))]))\n"
            "try:\n    m.run({1: 2})\nexcept TypeError as e:\n    print('refused', e)\n")
    proc = run_micropython_script(["-c", code], native=tier == "native", micropython=binary)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    from ember.export.micropython import parse_run

    got = np.asarray(parse_run(proc.stdout).logits)
    want = run_reference(load(path), x.reshape(1, 1, 3, 4))
    np.testing.assert_allclose(got, np.repeat(want, 3, axis=0), rtol=1e-5, atol=1e-6)
    assert ("refused ember_micro: input must be bytes or bytearray (uint8, scaled by the "
            "model's input transform), array('f') or a list of floats (already scaled); got "
            "dict") in proc.stdout, proc.stdout


def test_dense_rows_must_come_in_order(ulab):
    """The tier keeps a streamed layer's views from its first chunk to its last: rows out of
    order are refused, and nothing is held after the refusal or after the layer."""
    code = ("from array import array\nfrom ember_micro import _ulab\n"
            "x = array('f', [1.0] * 4)\nw = array('f', [0.5] * 8)\nb = array('f', [0.0] * 6)\n"
            "out = array('f', [0.0] * 6)\n"
            "for r0 in (0, 2, 4):\n    _ulab.dense(out, r0, x, w, 2, 4, b, 0)\n"
            "print('out', list(out), _ulab._layer is None)\n"
            "_ulab.dense(out, 0, x, w, 2, 4, b, 0)\n"
            "try:\n    _ulab.dense(out, 4, x, w, 2, 4, b, 0)\n"
            "except ValueError as e:\n    print('refused', e, _ulab._layer is None)\n")
    proc = run_micropython_script(["-c", code], native=False, micropython=ulab["2d-f32"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "out [2.0, 2.0, 2.0, 2.0, 2.0, 2.0] True" in proc.stdout, proc.stdout
    assert ("refused ulab dense: a layer's rows come in order from row 0 (got row 4) True"
            in proc.stdout), proc.stdout


@pytest.fixture(scope="module")
def ulab_board(ulab, boards):  # noqa: F811 - the fixture imported above
    """The emulated Cortex-M4F with ulab built in (an386u: build_micropython.sh --qemu makes it
    from ../shared/ulab's source)."""
    import subprocess

    from ember.export import embedded_dir

    try:
        boards.firmware("an386u")
    except FileNotFoundError:
        proc = subprocess.run(["bash", str(embedded_dir() / "build_micropython.sh"), "--qemu"],
                              capture_output=True, text=True, timeout=900, check=False)
        if proc.returncode != 0:
            pytest.fail("build_micropython.sh --qemu failed:\n" + proc.stderr[-3000:])
        boards.firmware("an386u")
    return boards


@pytest.mark.parametrize("kind", ["f32", "int8"])
@pytest.mark.parametrize("which", ["mlp", "cnn"])
def test_ulab_on_the_emulated_cortex_m4f(ulab_board, mnist_files, which, kind):
    """ulab 6.12 built into the an386 firmware (Cortex-M4F, hard float, 256 KB heap): the ulab
    tier matches the reference there too, and both MLPs make at most 16 KB of garbage per
    inference on this 32-bit port (instructions per inference printed; beside the native
    kernels' in benchmarks/bench_embedded_ulab.py)."""
    files, images, x = mnist_files
    path = files[which, kind]
    n = 3 if which == "mlp" else 1
    run = ulab_board.run_on_qemu(path, images[:n], board="an386u", tier="ulab", logits=True)
    assert run.tier == "ulab"
    assert_matches(run.logits, run_reference(load(path), x[:n]), path, kind)
    garbage = "over the heap" if run.garbage_bytes is None else f"{run.garbage_bytes} B"
    print(f"\nan386u {which} {kind}: ulab {run.insn_per_image / 1e6:.1f} M instructions, "
          f"garbage {garbage}")
    if which == "mlp":
        assert 0 <= run.garbage_bytes <= 16 * 1024
