"""Bounds that every reader checks before it allocates or loops on what a file declares.

A malformed or hostile file (weights, a record, a ``.pt`` checkpoint, an ONNX model, an MCU
model, an image) must never take unbounded memory or time: each reader compares what the file
declares (sizes, counts, nesting, indices) with these limits and with the file's own size,
and raises its typed error naming the limit when a bound is passed. The defaults admit every
real model we know of; raise one for a larger model, lower them to sandbox untrusted input.

>>> import ember
>>> ember.limits.current().max_tensors
1000000
>>> with ember.limits.override(max_tensors=10):
...     ember.limits.current().max_tensors
10
>>> ember.limits.current().max_tensors
1000000
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator


@dataclasses.dataclass(frozen=True)
class Limits:
    """The bounds readers enforce. Byte sizes are in bytes; ``max_*_elements`` count values."""

    #: one tensor's materialised size (also caps zero-stride / broadcast views in ``.pt`` files)
    max_tensor_bytes: int = 8 << 30
    #: how many bytes a file may make a reader allocate beyond the file's own size
    max_expansion_bytes: int = 1 << 30
    #: JSON / protobuf headers and metadata blobs
    max_header_bytes: int = 256 << 20
    #: tensors (or entries) one header may declare
    max_tensors: int = 1_000_000
    #: dims of one tensor (numpy allows 64; real models stay under 10)
    max_ndim: int = 32
    #: nesting of JSON, pickle containers and ONNX subgraphs / function calls
    max_nesting: int = 200
    #: digits in one integer read from JSON or a pickle
    max_int_digits: int = 100
    #: pickle: memo entries and opcodes executed
    max_pickle_memo: int = 10_000_000
    max_pickle_ops: int = 100_000_000
    #: one member of a zip archive, uncompressed
    max_zip_member_bytes: int = 16 << 30
    #: ONNX constant folding: the largest tensor folded at load time, in elements
    max_folded_elements: int = 1 << 26
    #: ONNX: nodes one run executes once function calls are expanded (loop bodies once)
    max_expanded_nodes: int = 250_000
    #: images decoded by demos and datasets, in pixels (width × height)
    max_image_pixels: int = 64_000_000
    #: images: decoded bytes per byte of the file, past the 64 MiB any image may decode to
    #: (photos compress 3-20x; a flat image of a few KB declaring 8000×8000 is a bomb)
    max_image_ratio: int = 1024
    #: MCU model files: the activation buffer a header may ask for, in elements
    max_activation_elements: int = 1 << 26

    def describe(self, name: str) -> str:
        """``"max_tensors=1000000"`` with the way to change it, for error messages."""
        return (
            f"{name}={getattr(self, name)} (ember.limits.override({name}=...) raises it for "
            f"trusted files)"
        )


_current = Limits()


def current() -> Limits:
    """The limits in force."""
    return _current


def set_limits(**changes: int) -> Limits:
    """Change limits process-wide; returns the previous ones. Unknown names raise TypeError."""
    global _current
    previous = _current
    _current = _validated(dataclasses.replace(_current, **changes))
    return previous


@contextlib.contextmanager
def override(**changes: int) -> Iterator[Limits]:
    """Change limits inside a ``with`` block only."""
    previous = set_limits(**changes)
    try:
        yield _current
    finally:
        _restore(previous)


def _restore(limits: Limits) -> None:
    global _current
    _current = limits


def _validated(limits: Limits) -> Limits:
    for field in dataclasses.fields(limits):
        value = getattr(limits, field.name)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(f"ember.limits: {field.name} must be an int >= 0, got {value!r}")
    return limits


def check(error: type[Exception], what: str, value: int, name: str) -> None:
    """Raise ``error`` when ``value`` passes the limit ``name``: the message names both."""
    limit = getattr(_current, name)
    if value > limit:
        # a hostile file's numbers may have more digits than int -> str converts
        shown = value if value < 10**30 else f"about 2**{value.bit_length()}"
        raise error(f"{what}: {shown} exceeds the limit {_current.describe(name)}")


def check_shape(error: type[Exception], what: str, shape) -> None:
    """A declared shape's rank (``max_ndim``) and each dim (``max_tensor_bytes``: an empty
    tensor passes the byte limit whatever its other dims, but none may be absurd)."""
    check(error, f"{what}: dims of the shape", len(shape), "max_ndim")
    check(error, f"{what}: a dim of the shape", max(shape, default=0), "max_tensor_bytes")

