"""SGD (momentum, dampening, Nesterov, weight decay), as ``torch.optim.SGD``."""

from __future__ import annotations

from typing import ClassVar

from ..tensor import Tensor
from .optimizer import Optimizer


class SGD(Optimizer):
    """Stochastic gradient descent (momentum, dampening, Nesterov, weight decay, ``maximize``),
    as ``torch.optim.SGD``.

    >>> import ember
    >>> from ember import nn, optim
    >>> w = nn.Parameter(ember.tensor([1.0], dtype=ember.float64, backend="autodiff-python"))
    >>> opt = optim.SGD([w], lr=0.1, momentum=0.9)
    >>> for _ in range(2):
    ...     opt.step((w * w).sum().backward())
    >>> round(w.item(), 6)  # 1 - 0.1 * 2; then momentum 0.9 * 2 + 1.6 = 3.4: 0.8 - 0.34
    0.46
    """

    defaults: ClassVar[dict] = {
        "lr": 1e-3,
        "momentum": 0.0,
        "dampening": 0.0,
        "weight_decay": 0.0,
        "nesterov": False,
        "maximize": False,
    }

    @staticmethod
    def _signed_decayed(value, grad, group):
        """The gradient negated for ``maximize`` and with L2 weight decay; the same operations on
        Tensors (update) and on numpy arrays (update_numpy)."""
        if group["maximize"]:
            grad = -grad
        if group["weight_decay"]:
            grad = grad + group["weight_decay"] * value
        return grad

    def update(self, value, grad, state, group):
        grad = self._signed_decayed(value, grad, group)
        momentum = group["momentum"]
        if momentum:
            buf = state.get("momentum_buffer")
            buf = grad if buf is None else buf * momentum + (1 - group["dampening"]) * grad
            buf = self.keep(state, "momentum_buffer", buf)
            grad = grad + momentum * buf if group["nesterov"] else buf
        return value - self.scalar(lambda: group["lr"], value) * grad

    def update_numpy(self, value, grad, state, group, backend):
        # update() on arrays: the momentum buffer is updated in place.
        grad = self._signed_decayed(value, grad, group)
        momentum = group["momentum"]
        if momentum:
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = Tensor(grad.copy(), backend)
            else:
                buf._prim *= momentum
                dampening = group["dampening"]
                buf._prim += (1 - dampening) * grad if dampening else grad
            grad = grad + momentum * buf._prim if group["nesterov"] else buf._prim
        step = grad * group["lr"]
        return value - step
