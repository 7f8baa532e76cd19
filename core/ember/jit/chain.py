"""Walking a chain of decorator backends (``Autodiff(Fusion(wgpu))``) down to the backend
that runs the ops, and primitives with it.

A decorator exposes ``inner`` (the backend it wraps) and ``from_inner(prim)`` (an inner
primitive lifted, untracked, no copy); ``to_inner(prim)`` (or Fusion's ``materialise``) where
getting the inner primitive takes work, else the primitive's own ``inner`` attribute
(Autodiff's ``ADPrim``).
"""

from __future__ import annotations

from .errors import JitError


def innermost(backend):
    """The backend at the bottom of a decorator chain (the one whose ops ``jit`` records)."""
    while backend.inner is not None:
        backend = backend.inner
    return backend


def compiles(backend) -> bool:
    """Whether ``backend``'s innermost backend compiles a traced tape (``compile_tape``:
    numpy, wasm, wgpu), so that a replay runs the compiled program.

    >>> import ember
    >>> compiles(ember.get_backend("numpy")), compiles(ember.get_backend("python"))
    (True, False)
    """
    return hasattr(innermost(backend), "compile_tape")


def benefits(backend) -> bool:
    """Whether jit pays off by default on ``backend``: its innermost backend compiles a tape
    into one captured program (wgpu, natively and in the browser; wasm: recorded kernel
    calls, no Python per op in a page where each op costs tens of µs). Elsewhere the replay still
    skips the Python above the backend, but the kernels dominate (numpy, whose ``compile_tape``
    binds closures over arrays and declares ``caps.replays_per_op``: about 5% per MNIST
    training step), so the Learner and the demos leave it to ``jit=True``.

    >>> import ember
    >>> benefits(ember.get_backend("numpy"))
    False
    """
    return compiles(backend) and not innermost(backend).caps.replays_per_op


def lower(backend, prim):
    """``prim`` of ``backend`` as a primitive of :func:`innermost` ``(backend)``."""
    while backend.inner is not None:
        # Fusion's is materialise (a pending value is computed)
        to_inner = getattr(backend, "to_inner", None) or getattr(backend, "materialise", None)
        prim = to_inner(prim) if to_inner is not None else prim.inner
        backend = backend.inner
    return prim


def lift(backend, prim):
    """An innermost primitive as a primitive of ``backend`` (untracked)."""
    if backend.inner is None:
        return prim
    from_inner = getattr(backend, "from_inner", None)
    if from_inner is None:
        raise JitError(
            f"jit: backend {backend.name} has no from_inner(primitive), so a replayed value "
            f"can't be handed back through it; a decorator backend needs one for jit"
        )
    return from_inner(lift(backend.inner, prim))
