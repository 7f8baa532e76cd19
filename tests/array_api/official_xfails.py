"""Expected failures of the official Array API suite (tests/array_api/test_official_suite.py)
on the numpy, python and wasm backends, at the test's default examples: test id -> why. None
is a silent wrong answer: each is a missing dtype, a typed error the standard asks for, or a
result numpy gives too (numpy 2.4.6 and array-api-strict fail the same floor_divide rows)."""

# the standard's dtypes, of which the suite skips those a backend doesn't hold
# (ARRAY_API_TESTS_SKIP_DTYPES): complex everywhere, int16 and uint16-64 on wasm
SPEC_DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
               "float32", "float64", "complex64", "complex128")


def missing_dtypes(backend: str) -> list[str]:
    """The standard's dtypes ``backend`` has no storage for."""
    import ember

    held = {d.name for d in ember.get_backend(backend).caps.dtypes}
    return [d for d in SPEC_DTYPES if d not in held]

_FFT = ("fft fftfreq fftn fftshift hfft ifft ifftn ifftshift ihfft irfft irfftn rfft rfftfreq "
        "rfftn").split()
_NO_FFT = ("no fft extension: its results are complex and Ember has no complex dtypes (the "
           "suite checks its names even with --disable-extension fft)")

# floor_divide of or by an infinity: numpy's results (NaN, -1.0/0.0), which Python's `//`
# gives too, where the standard asks for ±infinity and ±0
_FLOOR_ROWS = [
    "isfinite(x1_i) and x1_i < 0 and x2_i is +infinity) -> -0",
    "isfinite(x1_i) and x1_i > 0 and x2_i is -infinity) -> -0",
    "x1_i is +infinity and isfinite(x2_i) and x2_i < 0) -> -infinity",
    "x1_i is +infinity and isfinite(x2_i) and x2_i > 0) -> +infinity",
    "x1_i is -infinity and isfinite(x2_i) and x2_i < 0) -> +infinity",
    "x1_i is -infinity and isfinite(x2_i) and x2_i > 0) -> -infinity",
]
_NUMPY_FLOOR = ("floor division by or of an infinity follows numpy (NaN or -1.0/0.0 where the "
                "standard says ±inf or ±0); numpy 2.4.6 and array-api-strict fail it too")
_FLOOR_TESTS = {
    f"test_special_cases::{test}[{name}({row}]"
    for row in _FLOOR_ROWS
    for test, name in (("test_binary", "__floordiv__"), ("test_binary", "floor_divide"),
                       ("test_iop", "__ifloordiv__"))
}

COMMON = {
    **{f"test_has_names::test_has_names[fft-{name}]": _NO_FFT for name in _FFT},
    **{test: _NUMPY_FLOOR for test in _FLOOR_TESTS},
    "test_linalg::test_vecdot_conj": "the test builds complex arrays (xp.asarray([1j, ...])); "
    "Ember has no complex dtypes and refuses them with DTypeError",
}

PER_BACKEND = {
    # test_dunder_dlpack with copy=False and an unversioned capsule, which can't say read-only:
    # the numpy backend's ndarray capsule and the python backend's shared storage refuse it
    # (as numpy's own read-only arrays do); drawn at 20 examples, not at 5 since the draws
    # include the wider integer dtypes
    "numpy": {},
    "python": {},
    "wasm": {
        "test_dlpack::test_dunder_dlpack": "wasm-backend arrays live in the module's memory, so "
        "__dlpack__ exports a host copy and copy=False raises BufferError, as the standard asks "
        "when a copy is needed; the test expects copy=False to succeed",
    },
}


def expected_failures(backend: str) -> dict[str, str]:
    """test id (``module::name[params]``) -> the reason it fails on ``backend``."""
    return {**COMMON, **PER_BACKEND[backend]}
