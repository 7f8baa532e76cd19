"""Reverse-mode automatic differentiation as a backend decorator (Burn's ``Autodiff<B>``).

``Autodiff(inner)`` wraps any backend; tensors on it record a graph when an input is tracked.
Registered names: ``"autodiff-numpy"``, ``"autodiff-python"`` and ``"autodiff-wgpu"``.

>>> import ember
>>> x = ember.tensor([1.0, 2.0, 3.0], backend="autodiff-numpy").require_grad()
>>> loss = (x * x).sum()
>>> grads = loss.backward()
>>> grads.get(x).tolist()           # Burn's explicit gradients: a Tensor on the inner backend
[2.0, 4.0, 6.0]
>>> x.grad.tolist()                 # PyTorch's attribute, filled by the same backward call
[2.0, 4.0, 6.0]

API
---
- ``t.require_grad()``: a tracked leaf (float tensors only; on a computed tensor: keep its
  gradient too). On a plain backend it raises, naming the Autodiff backend to use.
- ``loss.backward(gradient=None, *, into=None, retain_graph=False)`` → :class:`Gradients`,
  and each tracked leaf's ``.grad`` gets the gradient added. ``loss`` must be a one-element
  float unless ``gradient`` seeds it. The graph is released afterwards (saved values freed);
  ``retain_graph=True`` keeps it for a second call.
- ``x.grad`` (PyTorch's attribute): the gradient summed over backward calls, a Tensor on
  ``x``'s backend (untracked), or None; ``x.grad = None`` (``optimizer.zero_grad()``) clears.
- ``grads.get(x)`` (Burn's explicit gradients): the gradient of that call as a Tensor on the
  *inner* backend, or None when no gradient reached ``x``. ``grads.remove(x)`` takes it out;
  ``x in grads``; ``len(grads)``.
- Accumulation: a tensor used several times gets the sum. Across backward calls, ``.grad``
  sums until cleared; with explicit gradients, ``loss2.backward(into=grads)`` (adds into
  ``grads`` in place) or ``grads1 + grads2``.
- ``t.detach()`` (untracked, no copy), ``t.is_require_grad()``, ``t.inner()`` / ``t.to_inner()``
  (the inner-backend tensor, no graph), ``backend.from_inner(prim)`` (lift, untracked).
- ``ember.no_grad()`` / ``enable_grad()``: context managers (a contextvar) to stop/resume
  recording.
- Checkpointing: ``Autodiff(inner, checkpointing="balanced")`` or ``with checkpoint():``
  recomputes cheap elementwise ops in backward; ``graph_stats(t)`` reports what the graph keeps.

Semantics worth knowing: maximum/minimum and max/min reductions share the gradient evenly
between tied elements (as PyTorch); floor/ceil/round give zero gradients; casts between floats
pass the gradient, casts to int/bool stop it; ``scatter`` in replace mode gives overwritten
positions of ``x`` no gradient and every ``src`` element the gradient of its target position.

Writing a rule for a new primitive: one ``@op.gradient(...)`` entry next to the op's declaration
in :mod:`ember.contract`; Autodiff reads it from the registry.
"""

from ..backends import get_backend, register
from .backend import ADPrim, Autodiff
from .checkpoint import checkpoint, graph_stats
from .graph import Gradients, enable_grad, grad_enabled, no_grad

register("autodiff-numpy", lambda: Autodiff(get_backend("numpy")))
register("autodiff-python", lambda: Autodiff(get_backend("python")))
register("autodiff-wgpu", lambda: Autodiff(get_backend("wgpu")))

__all__ = [
    "ADPrim",
    "Autodiff",
    "Gradients",
    "checkpoint",
    "enable_grad",
    "grad_enabled",
    "graph_stats",
    "no_grad",
]
