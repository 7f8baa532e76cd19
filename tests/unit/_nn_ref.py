"""Shared helpers for the nn tests: copy torch weights into ember modules and compare forward
and backward against torch (the independent reference)."""

from __future__ import annotations

import ember
import numpy as np
import pytest

torch = pytest.importorskip("torch")

AD = "autodiff-numpy"


def to_ember(a, backend=AD, dtype=None):
    if isinstance(a, torch.Tensor):
        a = a.detach().numpy()
    return ember.tensor(np.asarray(a), dtype=dtype, backend=backend)


def copy_weights(tmod, emod) -> None:
    emod.load_state_dict({k: to_ember(v, "numpy") for k, v in tmod.state_dict().items()})


def compare(tmod, emod, *inputs, grad_inputs=None, rtol=1e-6, atol=1e-8, seed=0,
            forward_kwargs=None, pick=None):
    """Run both modules on ``inputs`` (numpy arrays), in float64 on the Autodiff backend, and
    check outputs, input gradients and parameter gradients."""
    forward_kwargs = forward_kwargs or {}
    tmod = tmod.double()
    tmod.zero_grad(set_to_none=True)
    emod.to(AD, dtype=ember.float64)
    copy_weights(tmod, emod)
    rng = np.random.default_rng(seed)
    t_in, e_in = [], []
    for i, a in enumerate(inputs):
        a = np.asarray(a)
        track = a.dtype.kind == "f" and (grad_inputs is None or i in grad_inputs)
        if a.dtype.kind == "f":
            a = a.astype(np.float64)
        t = torch.tensor(a, requires_grad=track)
        e = to_ember(a)
        t_in.append(t)
        e_in.append(e.require_grad() if track else e)
    kw = forward_kwargs.items()
    tk = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw}
    ek = {k: to_ember(v) if isinstance(v, np.ndarray) else v for k, v in kw}
    t_out = tmod(*t_in, **tk)
    e_out = emod(*e_in, **ek)
    if pick is not None:
        t_out, e_out = pick(t_out), pick(e_out)
    np.testing.assert_allclose(e_out.numpy(), t_out.detach().numpy(), rtol=rtol, atol=atol)
    seed_grad = rng.standard_normal(tuple(t_out.shape))
    (t_out * torch.tensor(seed_grad)).sum().backward()
    grads = (e_out * to_ember(seed_grad)).sum().backward()
    for i, (t, e) in enumerate(zip(t_in, e_in)):
        if t.requires_grad:
            g = grads.get(e)
            got = g.numpy() if g is not None else np.zeros(t.shape)
            expected = t.grad.numpy() if t.grad is not None else np.zeros(t.shape)
            np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol,
                                       err_msg=f"input {i} grad")
    e_params = dict(emod.named_parameters())
    for name, p in tmod.named_parameters():
        assert name in e_params, f"missing parameter {name}"
        g = grads.get(e_params[name])
        expected = p.grad.numpy() if p.grad is not None else np.zeros(p.shape)
        got = g.numpy() if g is not None else np.zeros(p.shape)
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol, err_msg=name)
    return e_out, t_out
