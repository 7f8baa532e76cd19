"""The ``ember`` command line.

    ember backends        list backends and whether they load here
    ember info            version, default backend, optional dependencies
"""

from __future__ import annotations

import argparse
import importlib.util
import sys


def _backends(_: argparse.Namespace) -> int:
    from .backends import available, get_backend

    for name in available():
        try:
            backend = get_backend(name)
            print(f"{name:16} ok       {backend.device}")
        except Exception as e:  # noqa: BLE001 - report why a backend can't load, keep going
            print(f"{name:16} missing  {type(e).__name__}: {e}")
    return 0


def _info(_: argparse.Namespace) -> int:
    from . import __version__
    from .backends import default_backend

    print(f"ember {__version__} on Python {sys.version.split()[0]}")
    print(f"default backend: {default_backend().name}")
    for extra, module in [("numpy", "numpy"), ("gpu", "wgpu"), ("train", "rich"), ("onnx", "onnx")]:
        found = importlib.util.find_spec(module) is not None
        print(f"  {module:8} {'installed' if found else f'not installed (pip install ember[{extra}])'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ember", description="Ember command line")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("backends", help="list backends and whether they load").set_defaults(run=_backends)
    sub.add_parser("info", help="version and optional dependencies").set_defaults(run=_info)
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
