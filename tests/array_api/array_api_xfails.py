"""The compliance suite's expected failures: test id (``*`` a wildcard) -> why.
Each is strict: a case that starts passing fails the run until its line is removed."""

_NO_DTYPE = "Ember has no {} dtype (no complex dtypes)"

XFAILS = {
    **{f"test_namespace_has[{d}]": _NO_DTYPE.format(d) for d in ("complex64", "complex128")},
    "test_array_attribute[*-size]": "Tensor.size is PyTorch's method size(dim=None), not the "
    "standard's attribute (array-api-compat's size(x) works)",
}
