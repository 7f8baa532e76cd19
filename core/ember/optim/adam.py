"""Adam and AdamW, as ``torch.optim.Adam``/``AdamW`` (bias-corrected, optional AMSGrad)."""

from __future__ import annotations

import math
from typing import ClassVar

from ..tensor import Tensor
from .optimizer import Optimizer


class Adam(Optimizer):
    """Adam (bias-corrected moments; ``amsgrad``, L2 ``weight_decay``), as ``torch.optim.Adam``.

    The first step moves each parameter by about ``lr`` against the sign of its gradient:

    >>> import ember
    >>> from ember import nn, optim
    >>> w = nn.Parameter(ember.tensor([1.0, -1.0], backend="autodiff-python"))
    >>> opt = optim.Adam([w], lr=0.1, betas=(0.9, 0.999))
    >>> opt.step((w * w).sum().backward())
    >>> [round(v, 4) for v in w.tolist()]
    [0.9, -0.9]
    """

    defaults: ClassVar[dict] = {
        "lr": 1e-3,
        "betas": (0.9, 0.999),
        "eps": 1e-8,
        "weight_decay": 0.0,
        "amsgrad": False,
    }
    decoupled = False

    def _decay_and_count(self, value, grad, state, group):
        """Weight decay (into the gradient, or decoupled for AdamW) and the new step count; the
        same operations on Tensors (update) and on numpy arrays (update_numpy)."""
        wd = group["weight_decay"]
        if wd and self.decoupled:
            value = value * self.scalar(lambda: 1 - group["lr"] * group["weight_decay"], value)
        elif wd:
            grad = grad + wd * value
        step = state.get("step", 0) + 1
        state["step"] = step
        return value, grad, step

    def update(self, value, grad, state, group):
        # Values a scheduler or the step count change are scalar(...): plain numbers eagerly,
        # fed afresh at each replay of a jitted step.
        beta1, beta2 = group["betas"]
        value, grad, step = self._decay_and_count(value, grad, state, group)
        m = state.get("exp_avg")
        v = state.get("exp_avg_sq")
        m = grad * (1 - beta1) if m is None else m * beta1 + grad * (1 - beta1)
        v = grad * grad * (1 - beta2) if v is None else v * beta2 + grad * grad * (1 - beta2)
        m, v = self.keep(state, "exp_avg", m), self.keep(state, "exp_avg_sq", v)
        if group["amsgrad"]:
            vmax = state.get("max_exp_avg_sq")
            v = self.keep(state, "max_exp_avg_sq", v if vmax is None else vmax.maximum(v))
        root_bias2 = self.scalar(lambda: math.sqrt(1 - beta2 ** state["step"]), value)
        step_size = self.scalar(lambda: group["lr"] / (1 - beta1 ** state["step"]), value)
        denom = v.sqrt() / root_bias2 + group["eps"]
        return value - step_size * (m / denom)

    def update_numpy(self, value, grad, state, group, backend):
        # The same operations in the same order as update(), on arrays owned by the state.
        import numpy as np

        beta1, beta2 = group["betas"]
        lr = group["lr"]
        value, grad, step = self._decay_and_count(value, grad, state, group)
        m, v = state.get("exp_avg"), state.get("exp_avg_sq")
        if m is None:
            m = state["exp_avg"] = Tensor(grad * (1 - beta1), backend)
        else:
            m._prim *= beta1
            m._prim += grad * (1 - beta1)
        square = grad * grad
        square *= 1 - beta2
        if v is None:
            v = state["exp_avg_sq"] = Tensor(square, backend)
        else:
            v._prim *= beta2
            v._prim += square
        v = v._prim
        if group["amsgrad"]:
            vmax = state.get("max_exp_avg_sq")
            if vmax is None:
                state["max_exp_avg_sq"] = Tensor(v.copy(), backend)
            else:
                np.maximum(vmax._prim, v, out=vmax._prim)
                v = vmax._prim
        denom = np.sqrt(v)
        denom /= math.sqrt(1 - beta2**step)
        denom += group["eps"]
        out = m._prim / denom
        out *= lr / (1 - beta1**step)
        return value - out


class AdamW(Adam):
    """Adam with decoupled weight decay (default 0.01, as PyTorch).

    The decay shrinks the weight by ``lr * weight_decay`` before Adam's step:

    >>> import ember
    >>> from ember import nn, optim
    >>> w = nn.Parameter(ember.tensor([1.0, -1.0], backend="autodiff-python"))
    >>> opt = optim.AdamW([w], lr=0.1)
    >>> opt.step((w * w).sum().backward())
    >>> [round(v, 4) for v in w.tolist()]  # 1 - 0.1 * 0.01 - 0.1
    [0.899, -0.899]
    """

    defaults: ClassVar[dict] = {**Adam.defaults, "weight_decay": 1e-2}
    decoupled = True
