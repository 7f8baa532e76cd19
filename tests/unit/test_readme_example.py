"""The README's training example runs exactly as written; a second save/load example too."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import ember
import numpy as np

EXAMPLE = """\
import ember
from ember import nn, optim

ember.seed(0)
ember.set_default_backend("autodiff-numpy")          # numpy + reverse-mode autodiff
x = ember.tensor([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
y = ember.tensor([[0.0], [1.0], [1.0], [0.0]])
model = nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 1))
opt = optim.Adam(model.parameters(), lr=0.05)
for step in range(300):
    loss = ((model(x) - y) ** 2).mean()
    opt.step(loss.backward())                         # grads in, parameters updated
ember.save(model, "xor.safetensors")                  # safetensors + JSON metadata, atomic

twin = nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 1))
ember.load(twin, "xor.safetensors")                   # strict: every key, every shape
print(twin(x).tolist())                               # ≈ [[0.0], [1.0], [1.0], [0.0]]
"""

README = os.path.join(os.path.dirname(__file__), "..", "..", "README.md")


def test_readme_example_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    previous = ember.default_backend()
    scope: dict = {}
    try:
        exec(compile(EXAMPLE, "README example", "exec"), scope)  # noqa: S102
    finally:
        ember.set_default_backend(previous)
    assert (tmp_path / "xor.safetensors").exists()
    printed = np.array(eval(capsys.readouterr().out.strip()))
    np.testing.assert_allclose(printed.ravel(), [0.0, 1.0, 1.0, 0.0], atol=0.1)
    assert scope["loss"].item() < 1e-2
    np.testing.assert_array_equal(scope["twin"][2].weight.numpy(), scope["model"][2].weight.numpy())


def readme_training_block() -> str:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from tests.docs.blocks import python_blocks

    blocks = [b for b in python_blocks(Path(README)) if "ember.save(" in b]
    assert blocks, "README.md lost its training example (a python block calling ember.save)"
    return blocks[0]


def test_readme_training_block_runs_as_written(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    previous = ember.default_backend()
    try:
        exec(compile(readme_training_block(), "README.md", "exec"), {})  # noqa: S102
    finally:
        ember.set_default_backend(previous)
    assert capsys.readouterr().out.strip().splitlines()[-1] == "[0, 1, 1, 0]"
