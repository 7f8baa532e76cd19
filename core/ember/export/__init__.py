"""Export ember models for microcontrollers: a compact model file that ``embedded/ember_micro``
runs on MicroPython, optional int8 post-training quantisation, and a bridge to run the result on
the local MicroPython unix port.

>>> import os, tempfile
>>> from ember import nn
>>> from ember.export import export, load
>>> model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
...                       nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 3))
>>> path = os.path.join(tempfile.mkdtemp(), "tiny.emb")
>>> print(export(model, path, (1, 8, 8)).layers)
['conv2d+relu (1, 8, 8)->(4, 8, 8)', 'global_avg_pool (4, 8, 8)->(4, 1, 1)', 'linear (4, 1, 1)->(3, 1, 1)']
>>> load(path).output_shape
(3, 1, 1)

Supported layers and the file layout: see :mod:`ember.export.format` and :func:`lower`.
"""

from .api import ExportReport, export, model_logits
from .binary import decode, encode, load, save
from .budget import BudgetError, MemoryEstimate, check_budget, estimate_memory
from .ir import Layer, Program, lower
from .micropython import (
    MicroRun,
    embedded_dir,
    find_micropython,
    run_micropython_script,
    run_on_micropython,
)
from .reference import quantize
from .reference import run as run_reference
from .residual import Residual

__all__ = [
    "BudgetError",
    "ExportReport",
    "Layer",
    "MemoryEstimate",
    "MicroRun",
    "Program",
    "Residual",
    "check_budget",
    "decode",
    "embedded_dir",
    "encode",
    "estimate_memory",
    "export",
    "find_micropython",
    "load",
    "lower",
    "model_logits",
    "quantize",
    "run_micropython_script",
    "run_on_micropython",
    "run_reference",
    "save",
]
