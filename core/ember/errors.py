"""Typed exceptions. Each also derives from the builtin users already catch."""

import contextlib


class EmberError(Exception):
    """Base class of every error Ember raises on purpose."""


class ShapeError(EmberError, ValueError):
    """Shapes that don't fit the op: ``matmul: shapes (2, 3) and (4, 5) don't align: 3 != 4``."""


class DTypeError(EmberError, TypeError):
    """A dtype the op can't take, or an unknown dtype name."""


class DimensionError(EmberError, IndexError):
    """A dim out of range for the tensor's rank."""


class TensorIndexError(EmberError, IndexError):
    """An index out of range for the size of its dim."""


class BackendMismatchError(EmberError, ValueError):
    """Tensors of two backends (or devices) in one op; move one with ``.to(backend)``."""


class UnsupportedOpError(EmberError, NotImplementedError):
    """The backend lacks the op, or lacks it for this dtype (see its ``caps``)."""


class RecordError(EmberError, ValueError):
    """A model record, weights file or checkpoint that is missing, truncated, corrupt or
    doesn't match the module it is loaded into."""


class DatasetError(EmberError, ValueError):
    """A dataset that is missing (the message says where Ember looked and how to get it) or
    whose files are malformed."""


@contextlib.contextmanager
def malformed_file(error: type[EmberError], what: str):
    """Inside the block, re-raise any unexpected exception as ``error`` naming ``what``.

    A reader's own checks raise its typed error with a precise message; this catches the rest
    (a TypeError from a value of a type nobody anticipated), so callers handle one error type.
    MemoryError and KeyboardInterrupt are not about the file and pass through.

    >>> with malformed_file(RecordError, "weights.bin"):
    ...     int("x")
    Traceback (most recent call last):
    ...
    ember.errors.RecordError: weights.bin: corrupt or malformed file (ValueError: ...)
    """
    try:
        yield
    except (error, MemoryError):
        raise
    except Exception as e:
        raise error(f"{what}: corrupt or malformed file ({type(e).__name__}: {e})") from e

