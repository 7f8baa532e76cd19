"""Gradients of every differentiable catalog case, on Autodiff backends.

``test_gradient[ID]``: Ember's ``backward`` against central finite differences in float64 on
the case's numpy reference (:mod:`grad_reference`). ``test_gradient_torch[ID]``: the same
gradients against PyTorch CPU in float64, for cases whose op has a torch equivalent
(:data:`torch_reference.TORCH_OPS`); it also checks that the torch mapping reproduces the case's
expected values and the finite differences, so a wrong mapping can't pass silently. PyTorch's
conventions at non-smooth points (relu at 0, ties) are checked there, where finite differences
are undefined.

Known failures: ``known_failures.py`` keys ``test_gradient[ID]`` / ``test_gradient_torch[ID]``.
"""

from __future__ import annotations

import numpy as np
import pytest

from .catalog import all_cases
from .grad_reference import grad_check
from .grad_runner import assert_grads, backward_grads, compare_grad
from .runner import missing_dtypes
from .torch_reference import mapped, torch_grads

GRAD_CASES = [c for c in all_cases() if c.differentiable]
TORCH_CASES = [c for c in GRAD_CASES if mapped(c)]


def _require_autodiff(case, backend) -> None:
    from ember.autodiff import Autodiff

    if not isinstance(backend, Autodiff):
        pytest.skip(f"gradients are checked on Autodiff backends, not {backend.name}")
    missing = missing_dtypes(case, backend)
    if missing:
        pytest.skip(f"backend {backend.name} has no {', '.join(missing)} (caps)")


@pytest.mark.parametrize("grad_case", GRAD_CASES, ids=[c.id for c in GRAD_CASES])
def test_gradient(grad_case, backend):
    _require_autodiff(grad_case, backend)
    check = grad_check(grad_case)
    assert check.leaves, f"{grad_case.id}: differentiable but no float input to differentiate"
    compared = assert_grads(grad_case, check, backward_grads(grad_case, check, backend))
    # a case whose every element sits on a kink would check nothing by finite differences
    assert compared > 0 or all(np.size(g) == 0 for g in check.grads), (
        f"{grad_case.id}: every element is at a non-smooth point; pick other inputs"
    )


def _assert_close(case, label, got, want, rtol, atol):
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape, f"{case.id}: {label}: shape {got.shape} != {want.shape}"
    ok = np.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    if not ok.all():
        idx = np.argwhere(~ok)[:4].tolist()
        raise AssertionError(
            f"{case.id}: {label}: {int((~ok).sum())}/{ok.size} differ at {idx}: "
            f"got {got[~ok][:4].tolist()} want {want[~ok][:4].tolist()}"
        )


@pytest.mark.parametrize("grad_case", TORCH_CASES, ids=[c.id for c in TORCH_CASES])
def test_gradient_torch(grad_case, backend):
    _require_autodiff(grad_case, backend)
    pytest.importorskip("torch")
    from .build import REFS, _ref_value

    case, check = grad_case, grad_check(grad_case)
    values, want = torch_grads(case, check)
    # the mapping must be the same function: forward values, then finite differences
    ref = REFS[case.id](*(_ref_value(a) for a in case.args))
    for k, (v, r) in enumerate(zip(values, list(ref) if case.multi else [ref])):
        _assert_close(case, f"torch output {k} vs reference", v, r, 1e-9, 1e-12)
    for k, (w, g, und) in enumerate(zip(want, check.grads, check.undefined)):
        defined = np.ones(w.shape, bool) if und is None else ~np.asarray(und)
        label = f"torch d/d args{list(check.leaves[k])} vs finite diff."
        _assert_close(case, label, w[defined], np.asarray(g)[defined], check.rtol, check.atol)
    got = backward_grads(case, check, backend)
    for k, (g, w) in enumerate(zip(got, want)):
        compare_grad(case, check, k, g, w, source="torch")


def test_gradient_json_replay(backend):
    """The checks survive JSON (what a runner without numpy receives) and replay the same."""
    from .grad_runner import dumps_checks, loads_checks
    from .known_failures import expected
    from .spec import dumps, loads

    if GRAD_CASES:
        _require_autodiff(GRAD_CASES[0], backend)
    cases = [
        c
        for c in GRAD_CASES
        if not missing_dtypes(c, backend) and expected(backend.name, f"test_gradient[{c.id}]") is None
    ]
    decoded_cases = loads(dumps(cases))
    decoded = loads_checks(dumps_checks([grad_check(c) for c in cases]))
    assert [c.id for c in decoded] == [c.id for c in cases]
    for case, check in zip(decoded_cases, decoded):
        assert_grads(case, check, backward_grads(case, check, backend))


def _case(case_id):
    return next(c for c in GRAD_CASES if c.id == case_id)


def test_finite_differences_match_analytic_gradients():
    """The reference itself: sin's finite differences are cos(x) * cotangent, and relu's kink
    at 0 is detected (and only that element)."""
    from .build import logical

    case = _case("sin/f64")
    check = grad_check(case)
    x = logical(case.args[0])
    np.testing.assert_allclose(check.grads[0], np.cos(x) * check.cotangents[0], rtol=1e-8)
    assert check.undefined == (None,)
    case = _case("F.relu/f32")
    check = grad_check(case)
    x = np.asarray(case.args[0].data)
    np.testing.assert_array_equal(check.undefined[0], x == 0)
    defined = x != 0
    want = np.where(x > 0, 1.0, 0.0) * check.cotangents[0]
    np.testing.assert_allclose(check.grads[0][defined], want[defined], rtol=1e-8, atol=1e-9)
