"""PyTorch CPU gradients of the differentiable cases (the cross-check of the gradient suite).

``TORCH_OPS`` maps each case op to its PyTorch equivalent: a ``torch.X`` function, a
``Tensor.X`` method, a ``F.X`` function of ``torch.nn.functional``, an ``operator``/``builtins``
function applied to torch tensors, or an adapter below where the signatures differ. Ops that
are not in the table are checked by finite differences only.

Inputs become float64 torch tensors (integer and bool tensors keep int64/bool), so PyTorch's
gradients carry no float32 rounding; the leaf is the stored data with the case's
transpose/slice/expand applied on top, as on the Ember side.
"""

from __future__ import annotations

import operator
import warnings

import numpy as np

from .grad_runner import GradCheck
from .spec import Case, T


def _prod(x, dim=None, keepdim=False):
    """torch.prod takes one dim; reduce several one at a time (highest first)."""
    if dim is None:
        return x.prod()
    dims = dim if isinstance(dim, (tuple, list)) else (dim,)
    for d in sorted((d % x.dim() for d in dims), reverse=True):
        x = x.prod(d, keepdim=keepdim)
    return x


def _names(text: str) -> list[str]:
    return text.split()


# op in the catalog -> PyTorch callable path ("torch.", "Tensor.", "F.", "operator.",
# "builtins.") or an adapter function.
TORCH_OPS: dict[str, object] = {
    # elementwise arithmetic and operators
    **{f"operator.{n}": f"operator.{n}" for n in ("add", "sub", "mul", "truediv", "pow", "neg")},
    "operator.matmul": "operator.matmul",
    "operator.getitem": "operator.getitem",
    "builtins.abs": "builtins.abs",
    "ember.add": "torch.add",
    "ember.sub": "torch.sub",
    "Tensor.sub": "Tensor.sub",
    "ember.mul": "torch.mul",
    "ember.pow": "torch.pow",
    "Tensor.pow": "Tensor.pow",
    "ember.where": "torch.where",
    "ember.clamp": "torch.clamp",
    "Tensor.clamp": "Tensor.clamp",
    "ember.maximum": "torch.maximum",
    "ember.minimum": "torch.minimum",
    "ember.atan2": "torch.atan2",
    "Tensor.atan2": "Tensor.atan2",
    # unary math: same name as a torch function and a Tensor method
    **{
        f"{p}.{n}": f"{'torch' if p == 'ember' else p}.{n}"
        for p in ("ember", "Tensor")
        for n in _names(
            "exp expm1 log log1p log2 sqrt rsqrt reciprocal sin cos tan tanh sinh cosh asin acos "
            "atan erf sigmoid"
        )
    },
    # reductions and scans
    **{f"Tensor.{n}": f"Tensor.{n}" for n in ("sum", "mean", "logsumexp", "max", "min", "var")},
    **{f"ember.{n}": f"torch.{n}" for n in ("sum", "mean", "logsumexp", "var", "std", "norm")},
    "Tensor.std": "Tensor.std",
    "Tensor.norm": "Tensor.norm",
    "Tensor.prod": _prod,
    "ember.prod": _prod,
    "Tensor.cumsum": "Tensor.cumsum",
    "Tensor.cumprod": "Tensor.cumprod",
    "ember.cumsum": "torch.cumsum",
    "ember.cumprod": "torch.cumprod",
    # linear algebra
    "ember.matmul": "torch.matmul",
    "Tensor.matmul": "Tensor.matmul",
    "ember.dot": "torch.dot",
    "ember.outer": "torch.outer",
    "ember.tril": "torch.tril",
    "ember.triu": "torch.triu",
    "ember.einsum": "torch.einsum",
    # shape ops
    **{
        f"Tensor.{n}": f"Tensor.{n}"
        for n in _names(
            "reshape flatten squeeze permute transpose expand repeat split chunk flip roll"
        )
    },
    **{
        f"ember.{n}": f"torch.{n}"
        for n in _names("flatten unsqueeze permute transpose broadcast_to tile cat stack flip roll")
    },
    "ember.pad": "F.pad",
    # indexing, sorting
    **{
        f"Tensor.{n}": f"Tensor.{n}"
        for n in ("gather", "scatter", "scatter_add", "index_select", "masked_fill", "sort", "topk")
    },
    "ember.gather": "torch.gather",
    "ember.take_along_dim": "torch.take_along_dim",
    # nn.functional
    **{
        f"F.{n}": f"F.{n}"
        for n in _names(
            "conv1d conv2d conv_transpose1d conv_transpose2d max_pool1d max_pool2d avg_pool1d "
            "avg_pool2d adaptive_avg_pool1d adaptive_avg_pool2d interpolate softmax log_softmax "
            "relu relu6 leaky_relu elu gelu silu softplus mish sigmoid tanh layer_norm batch_norm"
        )
    },
    "F.hard_sigmoid": "F.hardsigmoid",
    "F.hard_swish": "F.hardswish",
    "Tensor.softmax": "Tensor.softmax",
    "Tensor.log_softmax": "Tensor.log_softmax",
    "Tensor.relu": "Tensor.relu",
}


def mapped(case: Case) -> bool:
    return case.op in TORCH_OPS


def _resolve(target, torch):
    if callable(target):
        return target
    head, _, name = target.partition(".")
    if head == "torch":
        return getattr(torch, name)
    if head == "F":
        return getattr(torch.nn.functional, name)
    if head == "operator":
        return getattr(operator, name)
    if head == "builtins":
        return abs
    return lambda self, *a, **k: getattr(self, name)(*a, **k)  # "Tensor."


def _transform(x, transform):
    if not transform:
        return x
    if transform[0] == "transpose":
        return x.transpose(-1, -2)
    if transform[0] == "slice":
        return x[..., ::2]
    return x.expand(*transform[1])


def torch_grads(case: Case, check: GradCheck):
    """(float64 outputs, gradients per leaf) from PyTorch for the check's cotangents."""
    import torch

    wanted = set(check.leaves)
    leaves: dict = {}

    def build(v, path):
        if isinstance(v, T):
            a = np.asarray(v.data)
            if a.dtype.kind == "f":
                a = a.astype(np.float64)
            elif a.dtype.kind in "iu":
                a = a.astype(np.int64)
            x = torch.from_numpy(np.array(a))
            if path in wanted:
                x.requires_grad_(True)
                leaves[path] = x
            return _transform(x, v.transform)
        if isinstance(v, (list, tuple)):
            return type(v)(build(x, path + (j,)) for j, x in enumerate(v))
        if isinstance(v, dict):
            return {k: build(x, path + (k,)) for k, x in v.items()}
        return v

    args = tuple(build(a, (i,)) for i, a in enumerate(case.args))
    kwargs = build(dict(case.kwargs), ("kw",))
    with warnings.catch_warnings():  # e.g. padding='same' with an even kernel: a perf note
        warnings.simplefilter("ignore", UserWarning)
        result = _resolve(TORCH_OPS[case.op], torch)(*args, **kwargs)
    outs = list(result) if case.multi else [result]
    loss = 0
    for out, cot in zip(outs, check.cotangents):
        if cot is not None:
            c = torch.from_numpy(np.asarray(cot, dtype=np.float64))
            loss = loss + (out * c).sum()
    inputs = [leaves[p] for p in check.leaves]
    got = torch.autograd.grad(loss, inputs, allow_unused=True)
    grads = [
        np.zeros(tuple(x.shape)) if g is None else g.detach().numpy().astype(np.float64)
        for g, x in zip(got, inputs)
    ]
    values = [o.detach().numpy().astype(np.float64) for o in outs]
    return values, grads
