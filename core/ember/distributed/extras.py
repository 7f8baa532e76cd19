"""The optional packages ``ember.distributed`` uses, imported where used.

Ray (Ray Train, Ray Data) and torch (its ``torch.distributed`` gloo collective, which Ray Train
sets up on each worker) come with the ``ray`` extra; without them everything here still runs
in-process on one worker, and asking for more names the extra to install.

>>> from ember.distributed.extras import INSTALL
>>> INSTALL
"pip install 'ember[ray]'"
"""

from __future__ import annotations

import importlib
import importlib.util

INSTALL = "pip install 'ember[ray]'"
"""The command that installs Ray for ``ember.distributed`` (errors name it)."""


def ray_available() -> bool:
    """Whether Ray is importable (without importing it: that takes seconds).

    >>> import importlib.util
    >>> ray_available() == (importlib.util.find_spec("ray") is not None)
    True
    """
    return importlib.util.find_spec("ray") is not None


def require(module: str, what: str):
    """``import module``, or an ImportError saying that ``what`` needs it and how to get it."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise ImportError(f"{what} needs {module.split('.')[0]!r}: {INSTALL}") from e
