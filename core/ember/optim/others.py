"""RMSProp, AdaGrad and Lion."""

from __future__ import annotations

from typing import ClassVar

from .optimizer import Optimizer


class RMSProp(Optimizer):
    """As ``torch.optim.RMSprop`` (alpha, eps, momentum, centered, weight decay).

    The first step divides the gradient by ``sqrt(1 - alpha) * |g|``, i.e. moves ``10 * lr``:

    >>> import ember
    >>> from ember import nn, optim
    >>> w = nn.Parameter(ember.tensor([1.0, -1.0], backend="autodiff-python"))
    >>> opt = optim.RMSProp([w], lr=0.01)
    >>> opt.step((w * w).sum().backward())
    >>> [round(v, 4) for v in w.tolist()]
    [0.9, -0.9]
    """

    defaults: ClassVar[dict] = {
        "lr": 1e-2,
        "alpha": 0.99,
        "eps": 1e-8,
        "weight_decay": 0.0,
        "momentum": 0.0,
        "centered": False,
    }

    def update(self, value, grad, state, group):
        if group["weight_decay"]:
            grad = grad + group["weight_decay"] * value
        alpha = group["alpha"]
        lr = self.scalar(lambda: group["lr"], value)
        sq = state.get("square_avg")
        sq = grad * grad * (1 - alpha) if sq is None else sq * alpha + grad * grad * (1 - alpha)
        sq = self.keep(state, "square_avg", sq)
        if group["centered"]:
            ga = state.get("grad_avg")
            ga = grad * (1 - alpha) if ga is None else ga * alpha + grad * (1 - alpha)
            ga = self.keep(state, "grad_avg", ga)
            avg = (sq - ga * ga).sqrt() + group["eps"]
        else:
            avg = sq.sqrt() + group["eps"]
        if group["momentum"]:
            buf = state.get("momentum_buffer")
            buf = grad / avg if buf is None else buf * group["momentum"] + grad / avg
            buf = self.keep(state, "momentum_buffer", buf)
            return value - lr * buf
        return value - lr * (grad / avg)


class AdaGrad(Optimizer):
    """As ``torch.optim.Adagrad`` (lr decay, initial accumulator, weight decay).

    The first step divides the gradient by its own magnitude, so moves ``lr``:

    >>> import ember
    >>> from ember import nn, optim
    >>> w = nn.Parameter(ember.tensor([1.0, -1.0], backend="autodiff-python"))
    >>> opt = optim.AdaGrad([w], lr=0.1)
    >>> opt.step((w * w).sum().backward())
    >>> [round(v, 4) for v in w.tolist()]
    [0.9, -0.9]
    """

    defaults: ClassVar[dict] = {
        "lr": 1e-2,
        "lr_decay": 0.0,
        "weight_decay": 0.0,
        "initial_accumulator_value": 0.0,
        "eps": 1e-10,
    }

    def update(self, value, grad, state, group):
        step = state.get("step", 0) + 1
        state["step"] = step
        if group["weight_decay"]:
            grad = grad + group["weight_decay"] * value
        acc = state.get("sum")
        if acc is None:
            acc = grad * 0 + group["initial_accumulator_value"]
        acc = self.keep(state, "sum", acc + grad * grad)
        clr = self.scalar(lambda: group["lr"] / (1 + (state["step"] - 1) * group["lr_decay"]),
                          value)
        return value - clr * (grad / (acc.sqrt() + group["eps"]))


class Lion(Optimizer):
    """Lion (Chen et al., 2023): sign of an interpolated momentum, decoupled weight decay.

    Every step moves each parameter by exactly ``lr`` (the sign of the update):

    >>> import ember
    >>> from ember import nn, optim
    >>> w = nn.Parameter(ember.tensor([1.0, -3.0], backend="autodiff-python"))
    >>> opt = optim.Lion([w], lr=0.1)
    >>> opt.step((w * w).sum().backward())
    >>> [round(v, 4) for v in w.tolist()]
    [0.9, -2.9]
    """

    defaults: ClassVar[dict] = {"lr": 1e-4, "betas": (0.9, 0.99), "weight_decay": 0.0}

    def update(self, value, grad, state, group):
        beta1, beta2 = group["betas"]
        m = state.get("exp_avg")
        if m is None:
            m = grad * 0
        if group["weight_decay"]:
            value = value * self.scalar(lambda: 1 - group["lr"] * group["weight_decay"], value)
        direction = (m * beta1 + grad * (1 - beta1)).sign()
        self.keep(state, "exp_avg", m * beta2 + grad * (1 - beta2))
        return value - self.scalar(lambda: group["lr"], value) * direction
