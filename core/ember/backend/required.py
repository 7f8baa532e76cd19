"""The ``@required`` marker for primitives every backend must implement."""

from ..errors import UnsupportedOpError


def required(fn):
    """Mark a primitive every backend must implement; the default body raises."""

    name = fn.__name__

    def missing(self, *args, **kwargs):
        raise UnsupportedOpError(
            f"{name}: backend '{self.name}' does not implement this required primitive"
        )

    missing.__name__ = name
    missing.__doc__ = fn.__doc__
    missing.__qualname__ = fn.__qualname__
    missing.is_required = True
    return missing
