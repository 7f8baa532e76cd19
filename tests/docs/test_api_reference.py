"""Every public name of the packages the API reference covers has an entry in the built site
(docs/api/*.md through mkdocstrings): a heading whose id names that object — under the
package (``ember.nn.Module``) or anywhere it is documented (``ember.autodiff.Autodiff`` for
``ember.Autodiff``). mkdocstrings leaves out, without a warning, an imported name missing from
``__all__`` and an object with no docstring; this test is what notices.

The public names of a module are its ``__all__``; without one, the attributes not starting
with ``_`` that it defines (a package: that it or its submodules define), modules aside.
"""

from __future__ import annotations

import importlib
import re
import types

import pytest

PACKAGES = [
    "ember",
    "ember.nn",
    "ember.nn.functional",
    "ember.nn.loss",
    "ember.nn.init",
    "ember.nn.utils",
    "ember.optim",
    "ember.optim.lr_scheduler",
    "ember.train",
    "ember.dataset",
    "ember.io",
    "ember.onnx",
    "ember.jit",
    "ember.quantize",
    "ember.export",
    "ember.distributed",
    "ember.limits",
    "ember.array_api",
    "ember.autodiff",
    "ember.fusion",
    "ember.router",
    "ember.remote",
]


def public_names(module: types.ModuleType) -> list[str]:
    """``__all__``; without one, the names not starting with ``_`` (modules aside) of what
    the module defines, or for a package, of what it or its submodules define."""
    names = getattr(module, "__all__", None)
    if names is not None:
        return list(names)
    inside = module.__name__ + "." if hasattr(module, "__path__") else module.__name__
    out = []
    for name in dir(module):
        obj = getattr(module, name)
        home = getattr(obj, "__module__", None) or type(obj).__module__
        if not name.startswith("_") and not isinstance(obj, types.ModuleType) and (
            home == module.__name__ or home.startswith(inside)
        ):
            out.append(name)
    return out


def resolve(path: str):
    """The object a dotted id names, or None."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr, None)
            if obj is None:
                return None
        return obj
    return None


@pytest.fixture(scope="module")
def documented(built_site) -> list:
    """The objects that have a heading in the API reference."""
    assert built_site.returncode == 0, built_site.log
    ids = set()
    for page in (built_site.path / "api").rglob("*.html"):
        ids |= set(re.findall(r'<h\d id="(ember(?:\.\w+)+)"', page.read_text()))
    return [obj for obj in map(resolve, sorted(ids)) if obj is not None]


@pytest.mark.parametrize("package", PACKAGES)
def test_every_public_name_has_an_entry(package, documented):
    module = importlib.import_module(package)
    missing = [
        name for name in public_names(module)
        if not any(obj is getattr(module, name) for obj in documented)
    ]
    assert not missing, (
        f"{package}: {len(missing)} public names have no entry in the API reference: "
        f"{missing}. Give each a docstring (a constant: a string literal on the line after "
        f"it) and list it in {package}.__all__, or add a '::: <path>' line to docs/api/"
    )


def test_the_check_finds_a_missing_entry(documented):
    """A name no page documents is reported (the test above can fail)."""
    fresh = types.FunctionType((lambda: None).__code__, {}, "undocumented")
    assert not any(obj is fresh for obj in documented)
    assert any(obj is importlib.import_module("ember.nn").Module for obj in documented)
