"""Known failures per backend: test key → reason.

A key is a case id (``"add/f32/broadcast"``) or, for the non-catalog tests, the test function
name with its parameter id (``"test_error[shape_mismatch_add]"``). A listed test that fails is
xfail(strict=True); one that passes fails the run, so remove its entry when it is fixed.

Don't list ops that are simply not implemented yet; list behaviour a backend can't or won't
match, with the reason.
"""

KNOWN_FAILURES: dict[str, dict[str, str]] = {
    "numpy": {},
    "python": {},
    "wgpu": {
        "add/i64/overflow": "wgpu stores int64 as int32 (WGSL has no 64-bit ints); values "
        "beyond the int32 range are rejected by from_data",
    },
    "autodiff-numpy": {},
    "autodiff-python": {},
    # (gradient entries shared by every Autodiff backend are added below)
    "autodiff-wgpu": {
        "add/i64/overflow": "wgpu stores int64 as int32 (WGSL has no 64-bit ints); values "
        "beyond the int32 range are rejected by from_data",
    },
}


# Gradient-suite failures that hold on every Autodiff backend (the frontend, not a backend).
_EMPTY_SUM = (
    "sum over an empty tensor returns an untracked constant (ops/reduction.py _accumulate "
    "short-circuits to full(identity)), so (out * cotangent).sum() has no graph and backward() "
    "raises; PyTorch tracks it and gives a zero gradient"
)
AUTODIFF_ALL: dict[str, str] = {
    "test_gradient[getitem/slice_empty]": _EMPTY_SUM,
    "test_gradient_torch[getitem/slice_empty]": _EMPTY_SUM,
}
for _name in ("autodiff-numpy", "autodiff-python", "autodiff-wgpu"):
    KNOWN_FAILURES[_name].update(AUTODIFF_ALL)


def reason(backend: str, key: str) -> str | None:
    return KNOWN_FAILURES.get(backend, {}).get(key)
