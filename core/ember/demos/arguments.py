"""argparse ``type=`` checks shared by the ``ember`` subcommands: a bad value is a usage error
that names the option and what would be valid, before any work starts.

>>> import argparse
>>> p = argparse.ArgumentParser()
>>> _ = p.add_argument("--epochs", type=positive_int)
>>> p.parse_args(["--epochs", "3"]).epochs
3
"""

from __future__ import annotations

import argparse
from collections.abc import Callable


def int_between(low: int, high: int | None = None) -> Callable[[str], int]:
    """An argparse type accepting integers in ``low..high`` (no upper bound when ``None``)."""
    valid = f"an integer >= {low}" if high is None else f"an integer in {low}..{high}"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {valid}") from None
        if value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"{value} is out of range: expected {valid}")
        return value

    parse.__name__ = valid  # argparse names the type in some messages
    return parse


positive_int = int_between(1)
port = int_between(0, 65535)


def backend_name(text: str) -> str:
    """An argparse type accepting the name of a registered backend."""
    from ..backends import available

    if text not in available():
        raise argparse.ArgumentTypeError(
            f"unknown backend {text!r}; registered backends: {', '.join(available())}")
    return text


def add_jit_flag(parser: argparse.ArgumentParser) -> None:
    """``--no-jit``: run eagerly. Without it, ``args.jit`` is None: Fusion + jit where the
    backend benefits (:func:`~ember.demos.acceleration.demo_backend`)."""
    parser.add_argument("--no-jit", dest="jit", action="store_const", const=False, default=None,
                        help="run every op eagerly (default on wgpu: fused kernels, the step "
                             "captured by ember.jit)")
