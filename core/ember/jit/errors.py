"""The error of :mod:`ember.jit`."""

from __future__ import annotations

from ..errors import EmberError


class JitError(EmberError):
    """What ``ember.jit`` can't capture: a value read inside a traced function (data-dependent
    Python control flow), state it can't update in place, a backend it can't trace.

    >>> import ember
    >>> branchy = ember.jit(lambda x: x * 2 if x.sum().item() > 0 else x)
    >>> for _ in range(2):  # the first call runs eagerly, the second is traced
    ...     _ = branchy(ember.ones(1))
    Traceback (most recent call last):
    ...
    ember.jit.errors.JitError: jit: to_data of the result of float_sum...
    """
