"""Where ember's non-Python runtime files are: inside the installed package (the wheel carries
them under ``ember/_data/``) or, when ember runs from a checkout, in the repository folders
they come from. Every lookup of these files goes through :func:`resource_dir`.

=============  ==============================  ===========================================
name           in the wheel                    in the checkout
=============  ==============================  ===========================================
``micro``      ``ember/_data/micro``           ``embedded/``: ``ember_micro/``,
                                               ``run_batch.py``, ``build/native/<arch>/``
``web``        ``ember/_data/web``             ``web/``: ``ember.js``, ``ember-worker.js``,
                                               ``index.html``, ``build_dist.py`` …
``mnist-page`` ``ember/_data/pages/mnist``     ``demos/mnist/web/``: the drawing page
=============  ==============================  ===========================================

>>> resource_dir("micro").joinpath("ember_micro", "__init__.py").is_file()
True
>>> resource_dir("disk")
Traceback (most recent call last):
    ...
ember.errors.EmberError: resource_dir: unknown resource 'disk'; one of: micro, web, mnist-page
"""

from __future__ import annotations

from pathlib import Path

from .errors import EmberError

PACKAGE = Path(__file__).resolve().parent
_CHECKOUT = PACKAGE.parents[1]  # core/ember -> the repository, when ember runs from one
# name -> (folder inside the installed package, folder in the checkout, a file it must hold)
_PLACES = {
    "micro": ("_data/micro", "embedded", "ember_micro/__init__.py"),
    "web": ("_data/web", "web", "ember.js"),
    "mnist-page": ("_data/pages/mnist", "demos/mnist/web", "index.html"),
}


def from_checkout() -> bool:
    """True when ember is imported from a repository checkout (``pip install -e .``), not from
    an installed wheel.

    >>> isinstance(from_checkout(), bool)
    True
    """
    return not (PACKAGE / "_data").is_dir() and (_CHECKOUT / "pyproject.toml").is_file()


def resource_dir(name: str) -> Path:
    """The folder holding the runtime files ``name`` (see the module's table): the installed
    package's copy, else the checkout's. Raises :class:`~ember.errors.EmberError` naming both
    places when neither holds them.

    >>> resource_dir("web").joinpath("ember.js").is_file()
    True
    """
    if name not in _PLACES:
        raise EmberError(f"resource_dir: unknown resource {name!r}; one of: {', '.join(_PLACES)}")
    installed, checkout, marker = _PLACES[name]
    for folder in (PACKAGE / installed, _CHECKOUT / checkout):
        if (folder / marker).is_file():
            return folder
    raise EmberError(
        f"resource_dir: ember's {name!r} files are neither in the installed package "
        f"({PACKAGE / installed}) nor in a checkout ({_CHECKOUT / checkout}); reinstall ember "
        f"from its wheel or run it from the repository")
