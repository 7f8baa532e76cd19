"""The Optimizer base: parameter groups, gradient clipping, state save/load.

A training step, PyTorch's way (``.grad`` filled by ``backward``)::

    opt = ember.optim.Adam(model.parameters(), lr=1e-3)
    opt.zero_grad()
    loss.backward()
    opt.step()             # reads p.grad for each parameter, updates p in place

or Burn's way, with the explicit gradients ``backward`` returns::

    opt.step(loss.backward())   # reads grads.get(p); the step consumes them (.grad cleared)

Parameter groups take their own hyper-parameters::

    ember.optim.SGD([{"params": body.parameters()}, {"params": head.parameters(), "lr": 0.1}],
                    lr=0.01, momentum=0.9)

The step replaces each parameter's value with a fresh tracked leaf (Burn's model); a
parameter keeps its ``.grad`` across it, as after PyTorch's step, while a Gradients object
is keyed by the old leaves: read ``grads.get(p)`` before ``opt.step(grads)``.

A subclass implements :meth:`update` for one parameter; the math runs on the parameter's
inner (non-autodiff) backend, so the update itself is never recorded.
"""

from __future__ import annotations

import math
import sys
from typing import ClassVar

from ..autodiff.graph import Gradients
from ..errors import EmberError
from ..ops import state as _state
from ..ops.autograd import clear_grads
from ..tensor import Tensor


class Optimizer:
    """Base of every optimizer: parameter groups, gradient clipping, state, steps.

    A subclass lists its hyper-parameters in ``defaults`` and implements :meth:`update` (one
    parameter's new value, computed on the inner backend); ``grad_clip_norm=`` and
    ``grad_clip_value=`` clip the gradients before each step.

    >>> import ember
    >>> from ember import nn, optim
    >>> class SignSGD(optim.Optimizer):
    ...     defaults = {"lr": 0.1}
    ...     def update(self, value, grad, state, group):
    ...         self.keep(state, "count", state.get("count", value * 0) + 1)
    ...         return value - self.scalar(lambda: group["lr"], value) * grad.sign()
    >>> w = nn.Parameter(ember.tensor([1.0, -2.0], dtype=ember.float64, backend="autodiff-python"))
    >>> opt = SignSGD([w])
    >>> opt.zero_grad(); opt.step((w * w).sum().backward())
    >>> w.tolist(), opt.lr, opt.steps, len(opt.parameters())
    ([0.9, -1.9], 0.1, 1, 1)
    >>> saved = opt.state_dict()
    >>> saved["steps"], saved["state"][0]["count"].tolist()
    (1, [1.0, 1.0])
    >>> fresh = SignSGD([w]); fresh.load_state_dict(saved); fresh.steps
    1
    >>> bias = nn.Parameter(ember.zeros(1, backend="autodiff-python"))
    >>> opt.add_param_group({"params": [bias], "lr": 0.5})
    >>> [group["lr"] for group in opt.param_groups]
    [0.1, 0.5]
    """
    defaults: ClassVar[dict] = {}

    def __init__(
        self,
        params,
        grad_clip_norm: float | None = None,
        grad_clip_value: float | None = None,
        **hyper,
    ):
        unknown = set(hyper) - set(self.defaults)
        if unknown:
            raise TypeError(
                f"{type(self).__name__}: unknown options {sorted(unknown)}; "
                f"valid: {sorted(self.defaults)}"
            )
        options = {**self.defaults, **hyper}
        groups = list(params)
        if not groups:
            raise ValueError(f"{type(self).__name__}: got no parameters to optimise")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        self.param_groups: list[dict] = []
        for group in groups:
            group = dict(group)
            if "params" not in group:
                raise ValueError(f"{type(self).__name__}: a parameter group needs 'params'")
            group["params"] = list(group["params"])
            for p in group["params"]:
                if not hasattr(p, "assign"):
                    raise TypeError(
                        f"{type(self).__name__}: parameters must be nn.Parameter "
                        f"(got {type(p).__name__})"
                    )
            self._check_params(group["params"])
            for k, v in options.items():
                group.setdefault(k, v)
            if group["lr"] < 0:
                raise ValueError(f"{type(self).__name__}: invalid learning rate {group['lr']}")
            self.param_groups.append(group)
        self.grad_clip_norm, self.grad_clip_value = grad_clip_norm, grad_clip_value
        # Keyed by id(param): a Parameter keeps its identity across assign(), so the key is
        # stable; state_dict() renames entries to positions, as PyTorch does.
        self.state: dict[int, dict] = {}
        self.steps = 0

    def _check_params(self, params: list) -> None:
        seen = {id(p) for g in getattr(self, "param_groups", []) for p in g["params"]}
        for p in params:
            if id(p) in seen:
                raise ValueError(
                    f"{type(self).__name__}: a parameter appears in more than one group"
                )
            seen.add(id(p))

    def add_param_group(self, group: dict) -> None:
        """Add a group (``{"params": [...], "lr": ...}``); missing options take defaults."""
        group = dict(group)
        group["params"] = list(group["params"])
        self._check_params(group["params"])
        for k, v in self.defaults.items():
            group.setdefault(k, v)
        for k, v in self.param_groups[0].items():
            if k not in ("params", "initial_lr"):
                group.setdefault(k, v)
        self.param_groups.append(group)
        _state.state_replaced()  # a jitted step must trace again to update the new group

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear every parameter's ``.grad`` (None; zeros with ``set_to_none=False``), as
        PyTorch's ``zero_grad``: ``backward`` adds to ``.grad`` until it is cleared."""
        clear_grads(self.parameters(), set_to_none)

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, g in enumerate(self.param_groups):
            opts = ", ".join(f"{k}={v}" for k, v in g.items() if k != "params")
            lines.append(f"  group {i}: {len(g['params'])} params, {opts}")
        return "\n".join(lines + [")"])

    # ------------------------------------------------------------------ stepping
    def parameters(self) -> list:
        """Every parameter of every group, in order."""
        return [p for g in self.param_groups for p in g["params"]]

    def step(self, grads: Gradients | None = None) -> None:
        """Apply one update from each parameter's ``.grad`` (PyTorch's ``step()``), or from
        ``grads``, the Gradients ``loss.backward()`` returned (Burn's ``step(grads)``), which
        the step consumes: the parameters' ``.grad`` is cleared too, so a loop that never
        calls ``zero_grad()`` doesn't sum gradients across steps."""
        if grads is not None and not isinstance(grads, Gradients):
            raise TypeError(
                f"{type(self).__name__}.step: expected the Gradients from loss.backward() or "
                f"nothing (then each parameter's .grad is read), got {type(grads).__name__}"
            )
        pairs = []
        for group in self.param_groups:
            for p in group["params"]:
                if not getattr(p, "requires_grad", True):
                    continue
                if grads is not None:
                    g = grads.get(p)
                else:
                    g = p.grad
                    g = None if g is None else g.inner()
                if g is not None:
                    pairs.append((group, p, g))
        if grads is None and not pairs:
            raise EmberError(
                f"{type(self).__name__}.step: no parameter has a .grad; call loss.backward() "
                "before optimizer.step() (and zero_grad() before backward, not between them)"
            )
        grads_only = [g for _, _, g in pairs]
        if self.grad_clip_value is not None:
            grads_only = clip_grad_value(grads_only, self.grad_clip_value)
        if self.grad_clip_norm is not None:
            grads_only = clip_grad_norm(grads_only, self.grad_clip_norm)
        self.steps += 1
        np = sys.modules.get("numpy")  # no numpy imported ⇒ no numpy arrays to fuse
        traced = _state.tracing()
        states = []
        for (group, p, _), g in zip(pairs, grads_only):
            state = self.state.setdefault(id(p), {})
            states.append(state)
            value = p.inner()
            if (
                self.fused
                and not traced  # a trace records the portable update, state kept in place
                and np is not None
                and isinstance(value._prim, np.ndarray)
                and isinstance(g._prim, np.ndarray)
                and g._prim.dtype == value._prim.dtype
            ):
                new = self.update_numpy(value._prim, g._prim, state, group, value.backend)
                if new is not NotImplemented:
                    p.assign(Tensor(new, value.backend))
                    continue
            p.assign(self.update(value, g, state, group))
        if traced and pairs:
            self._count_on_replay(states, pairs[0][2])
        if grads is not None:
            clear_grads(self.parameters(), set_to_none=True)

    def _count_on_replay(self, states: list[dict], like: Tensor) -> None:
        """Traced: the Python counters this step advanced advance again at every replay
        (before its steps, so the feeds that read them see the new count)."""
        counted = [s for s in states if "step" in s]

        def advance() -> None:
            self.steps += 1
            for s in counted:
                s["step"] += 1

        _state.on_replay(advance, like)

    @staticmethod
    def scalar(fn, like: Tensor):
        """``fn()``, a number computed from hyper-parameters and counters; inside a traced
        function a tensor fed with ``fn()`` at every replay (a scheduler's new ``lr``, the
        bias correction of the new step count), so a replayed update stays right."""
        return _state.feed(fn, like)

    def keep(self, state: dict, name: str, value: Tensor) -> Tensor:
        """``state[name] = value``; inside a traced function the value is written into the
        existing state tensor in place, so every replay updates what ``state_dict`` sees."""
        old = state.get(name)
        if isinstance(old, Tensor) and _state.assign(old, value):
            old._prim = value._prim  # the same tensor object stays in the state
            return old
        _state.new_state(value, f"{type(self).__name__}: state {name!r}")
        state[name] = value
        return value

    # A backend whose primitives are numpy arrays lets an optimizer update its own state in
    # place (no temporaries per op); ``update`` stays the portable reference.
    fused = True

    def update_numpy(self, value, grad, state: dict, group: dict, backend):
        """Optional fast path: the new value as a numpy array, state updated in place
        (state tensors wrap arrays this optimizer owns). NotImplemented → use ``update``.

        >>> import ember, numpy as np
        >>> from ember import nn, optim
        >>> opt = optim.SGD([nn.Parameter(ember.zeros(1))], lr=0.1)
        >>> value, grad = np.array([1.0]), np.array([2.0])
        >>> numpy_backend = ember.get_backend("numpy")
        >>> opt.update_numpy(value, grad, {}, opt.param_groups[0], numpy_backend).tolist()
        [0.8]
        """
        return NotImplemented

    def update(self, value: Tensor, grad: Tensor, state: dict, group: dict) -> Tensor:
        """The new value of one parameter (all tensors on the inner backend).

        >>> import ember
        >>> from ember import nn, optim
        >>> opt = optim.SGD([nn.Parameter(ember.zeros(1))], lr=0.1)
        >>> value = ember.tensor([1.0], dtype=ember.float64)
        >>> grad = ember.tensor([2.0], dtype=ember.float64)
        >>> opt.update(value, grad, {}, opt.param_groups[0]).tolist()
        [0.8]
        """
        raise NotImplementedError

    @property
    def lr(self) -> float:
        """The learning rate of the first parameter group."""
        return self.param_groups[0]["lr"]

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict:
        """``{"state": {index: {name: Tensor | number}}, "param_groups": [...], "steps": n}``
        with parameters named by their position, as PyTorch does."""
        index = {id(p): i for i, p in enumerate(self.parameters())}
        groups = []
        for g in self.param_groups:
            entry = {k: v for k, v in g.items() if k != "params"}
            entry["params"] = [index[id(p)] for p in g["params"]]
            groups.append(entry)
        # Copies: the fast path updates state tensors in place, a snapshot must not move.
        state = {
            index[pid]: {k: _copy(v) for k, v in s.items()}
            for pid, s in self.state.items()
            if pid in index
        }
        return {"state": state, "param_groups": groups, "steps": self.steps}

    def load_state_dict(self, state: dict) -> None:
        """Restore what :meth:`state_dict` saved (hyper-parameters, per-parameter state, steps)."""
        params = self.parameters()
        groups = state.get("param_groups", [])
        if len(groups) != len(self.param_groups) or any(
            len(a["params"]) != len(b["params"]) for a, b in zip(groups, self.param_groups)
        ):
            raise EmberError(
                f"{type(self).__name__}.load_state_dict: the saved state has "
                f"{[len(g['params']) for g in groups]} parameters per group, this optimizer has "
                f"{[len(g['params']) for g in self.param_groups]}"
            )
        for saved, group in zip(groups, self.param_groups):
            for k, v in saved.items():
                if k != "params":
                    group[k] = v
        new_state = {}
        for i, s in state.get("state", {}).items():
            p = params[int(i)]
            inner = p.inner().backend
            new_state[id(p)] = {
                k: (_copy(v.to(inner)) if isinstance(v, Tensor) else v) for k, v in s.items()
            }
        self.state = new_state
        self.steps = int(state.get("steps", 0))
        _state.state_replaced()  # a jitted step reading the old state tensors re-traces


def _copy(value):
    """An independent copy of a state tensor (other values are immutable)."""
    if not isinstance(value, Tensor):
        return value
    return Tensor(value.backend.from_data(value.to_data()), value.backend)


def clip_grad_value(grads: list[Tensor], clip: float) -> list[Tensor]:
    """Clamp every gradient element to ``[-clip, clip]``.

    >>> import ember
    >>> from ember.optim import clip_grad_value
    >>> [g.tolist() for g in clip_grad_value([ember.tensor([-3.0, 0.5])], 1.0)]
    [[-1.0, 0.5]]
    """
    return [g.clamp(-clip, clip) for g in grads]


def grad_norm(grads: list[Tensor], norm_type: float = 2.0) -> Tensor:
    """The joint ``norm_type``-norm of all the gradients, a 0-d tensor (``inf``: the largest
    magnitude), computed on the device.

    >>> import ember
    >>> from ember.optim.optimizer import grad_norm
    >>> grad_norm([ember.tensor([3.0]), ember.tensor([4.0])]).item()
    5.0
    """
    if math.isinf(norm_type):
        total = grads[0].abs().max()
        for g in grads[1:]:
            total = total.maximum(g.abs().max())
        return total
    return sum((g.abs() ** norm_type).sum() for g in grads) ** (1.0 / norm_type)


def scale_to_norm(grads: list[Tensor], max_norm: float, total: Tensor) -> list[Tensor]:
    """``grads`` scaled by ``max_norm / (total + 1e-6)`` when that is below 1 (PyTorch's rule;
    ``total`` is their joint norm); inside a traced function the scale is a tensor op, read
    nowhere, so a replay clips by the norm of its own gradients.

    >>> import ember
    >>> from ember.optim.optimizer import scale_to_norm
    >>> (g,) = scale_to_norm([ember.tensor([3.0, 4.0])], 1.0, total=ember.tensor(5.0))
    >>> [round(v, 4) for v in g.tolist()]
    [0.6, 0.8]
    """
    if _state.tracing(grads[0]):
        scale = (max_norm / (total + 1e-6)).clamp(max=1.0)
        return [g * scale for g in grads]
    scale = max_norm / (total.item() + 1e-6)
    return grads if scale >= 1.0 else [g * scale for g in grads]


def clip_grad_norm(grads: list[Tensor], max_norm: float, norm_type: float = 2.0) -> list[Tensor]:
    """Scale gradients so their joint norm is at most ``max_norm`` (PyTorch's rule).

    >>> import ember
    >>> from ember.optim import clip_grad_norm
    >>> (g,) = clip_grad_norm([ember.tensor([3.0, 4.0])], max_norm=1.0)  # norm 5 -> 1
    >>> [round(v, 4) for v in g.tolist()]
    [0.6, 0.8]
    """
    if not grads:
        return grads
    return scale_to_norm(grads, max_norm, grad_norm(grads, norm_type))
