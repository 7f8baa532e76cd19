"""Typed exceptions. Each also derives from the builtin users already catch."""

import contextlib


class EmberError(Exception):
    """Base class of every error Ember raises on purpose.

    Catch it to handle any of Ember's own errors; each subclass also derives from the builtin
    exception users already catch (``ValueError``, ``TypeError``, ``IndexError``...).

    >>> import ember
    >>> try:
    ...     ember.zeros(2, 3) @ ember.zeros(4, 5)
    ... except ember.EmberError as e:
    ...     print(type(e).__name__, isinstance(e, ValueError))
    ShapeError True
    """


class ShapeError(EmberError, ValueError):
    """Shapes that don't fit the op: ``matmul: shapes (2, 3) and (4, 5) don't align: 3 != 4``.

    >>> import ember
    >>> ember.zeros(2) + ember.zeros(3)
    Traceback (most recent call last):
    ...
    ember.errors.ShapeError: ...can't be broadcast...
    """


class DTypeError(EmberError, TypeError):
    """A dtype the op can't take, or an unknown dtype name.

    >>> import ember
    >>> ember.zeros(2, dtype="complex64")
    Traceback (most recent call last):
    ...
    ember.errors.DTypeError: unknown dtype 'complex64'; valid dtypes: ...
    """


class DimensionError(EmberError, IndexError):
    """A dim out of range for the tensor's rank.

    >>> import ember
    >>> ember.zeros(2, 3).sum(dim=2)
    Traceback (most recent call last):
    ...
    ember.errors.DimensionError: ...dim 2 is out of range for a tensor with 2 dims (valid: -2 to 1)
    """


class TensorIndexError(EmberError, IndexError):
    """An index out of range for the size of its dim.

    >>> import ember
    >>> ember.zeros(3)[5]
    Traceback (most recent call last):
    ...
    ember.errors.TensorIndexError: ...
    """


class BackendMismatchError(EmberError, ValueError):
    """Tensors of two backends (or devices) in one op; move one with ``.to(backend)``.

    >>> import ember
    >>> ember.zeros(2, backend="numpy") + ember.zeros(2, backend="python")
    Traceback (most recent call last):
    ...
    ember.errors.BackendMismatchError: ...move one with .to(backend)
    """


class DeviceError(EmberError, ValueError):
    """A device, backend or dtype name that ``.to()`` doesn't know; the message lists the
    valid ones.

    >>> import ember
    >>> ember.zeros(2).to("tpu")
    Traceback (most recent call last):
    ...
    ember.errors.DeviceError: to: 'tpu' is no device, backend or dtype; devices: cpu, ...
    """


class UnsupportedOpError(EmberError, NotImplementedError):
    """The backend lacks the op, or lacks it for this dtype (see its ``caps``).

    >>> import ember
    >>> issubclass(ember.UnsupportedOpError, NotImplementedError)
    True
    """


class RecordError(EmberError, ValueError):
    """A model record, weights file or checkpoint that is missing, truncated, corrupt or
    doesn't match the module it is loaded into.

    >>> import ember.io
    >>> ember.io.load("no-such-file.emb")
    Traceback (most recent call last):
    ...
    ember.errors.RecordError: ...
    """


class SchemeError(EmberError, ValueError):
    """A quantization scheme with a field out of range or fields that don't go together;
    the message names the field and what would be valid.

    >>> from ember.quantize import Representation
    >>> Representation(weights="int2")
    Traceback (most recent call last):
    ...
    ember.errors.SchemeError: Representation: weights must be one of 'int8', 'int4', got 'int2'
    """


class DatasetError(EmberError, ValueError):
    """A dataset that is missing (the message says where Ember looked and how to get it) or
    whose files are malformed.

    >>> from ember.errors import DatasetError
    >>> issubclass(DatasetError, ValueError)
    True
    """


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

