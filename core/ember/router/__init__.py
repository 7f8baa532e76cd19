"""One program over several backends (Burn's ``Router``); see docs/router_remote.md.

``Router(*backends, policy=...)`` runs each op on one of its inner backends: by default the
first whose caps accept the op, so ``Router("wgpu", "numpy")`` does the float32 work on the GPU
and the float64 / int64 work on numpy, moving tensors between them explicitly and countably.
Policies: ``"caps"`` (the default), ``"cost"`` (prefer where the operands are),
``PinDtype({...})``, ``PinOp({...})``. Registered name: ``"router-wgpu-numpy"``.

>>> import ember
>>> r = ember.Router("python", "numpy", policy=ember.router.PinOp({"float_exp": "numpy"}))
>>> x = ember.tensor([0.0, 1.0], backend=r)
>>> y = x.exp() + 1       # exp on numpy (pinned); the add on python, the first that can
>>> [round(v, 3) for v in y.tolist()], r.moves, [m.dst for m in r.log]
([2.0, 3.718], 2, ['numpy', 'python'])
"""

from ..backends import register
from .backend import Move, Routed, Router
from .policy import Cost, FirstCapable, PinDtype, PinOp

register("router-wgpu-numpy", lambda: Router("wgpu", "numpy"))

__all__ = ["Cost", "FirstCapable", "Move", "PinDtype", "PinOp", "Routed", "Router"]
