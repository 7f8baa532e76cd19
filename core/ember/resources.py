"""Where ember's non-Python runtime files are: inside the installed package (the wheel carries
them under ``ember/_data/``) or, when ember runs from a checkout, in the repository folders
they come from. Every lookup of these files goes through :func:`resource_dir`; by name, in
the wheel or in the checkout:

- ``micro``: ``ember/_data/micro`` or ``embedded/`` (``ember_micro/``, ``run_batch.py``,
  ``build/native/<arch>/ember_kernels.mpy``);
- ``web``: ``ember/_data/web`` or ``web/`` (``ember.js``, ``ember-worker.js``, ``index.html``,
  ``build_dist.py``, ``devserver.py`` …);
- ``mnist-page``, ``classify-page``, ``embed-page``: ``ember/_data/pages/{mnist,classify,embed}``
  or ``demos/mnist/web/``, ``demos/image_classification/web/``, ``demos/embed/web/``.

Files ember derives once and keeps (a page's exported model) go to :func:`work_dir`.

>>> resource_dir("micro").joinpath("ember_micro", "__init__.py").is_file()
True
>>> resource_dir("disk")  # doctest: +ELLIPSIS
Traceback (most recent call last):
    ...
ember.errors.EmberError: resource_dir: unknown resource 'disk'; one of: micro, web, mnist-page, ...
"""

from __future__ import annotations

import os
from pathlib import Path

from .errors import EmberError

PACKAGE = Path(__file__).resolve().parent
_CHECKOUT = PACKAGE.parents[1]  # core/ember -> the repository, when ember runs from one
# name -> (folder inside the installed package, folder in the checkout, a file it must hold)
_PLACES = {
    "micro": ("_data/micro", "embedded", "ember_micro/__init__.py"),
    "web": ("_data/web", "web", "ember.js"),
    "mnist-page": ("_data/pages/mnist", "demos/mnist/web", "index.html"),
    "classify-page": ("_data/pages/classify", "demos/image_classification/web", "index.html"),
    "embed-page": ("_data/pages/embed", "demos/embed/web", "index.html"),
}


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


def work_dir(name: str) -> Path:
    """A folder for files ember derives once and reuses wherever it runs from: ``runs/<name>``
    of the checkout, or for an installed ember ``$XDG_CACHE_HOME/ember/<name>`` (default
    ``~/.cache/ember/<name>``). Not created here.

    >>> work_dir("classify-web").name
    'classify-web'
    """
    if not (PACKAGE / "_data").is_dir() and (_CHECKOUT / "pyproject.toml").is_file():
        return _CHECKOUT / "runs" / name
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ember" / name
