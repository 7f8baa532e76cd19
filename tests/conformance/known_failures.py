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
    "wasm": {},
    "wgpu": {
        "add/i64/overflow": "wgpu stores int64 as int32 (WGSL has no 64-bit ints); values "
        "beyond the int32 range are rejected by from_data",
    },
    "autodiff-numpy": {},
    "checked-numpy": {},
    "autodiff-python": {},
    "autodiff-wasm": {},
    "autodiff-wgpu": {
        "add/i64/overflow": "wgpu stores int64 as int32 (WGSL has no 64-bit ints); values "
        "beyond the int32 range are rejected by from_data",
    },
    "fusion-numpy": {},
    "fusion-wgpu": {
        "add/i64/overflow": "wgpu stores int64 as int32 (WGSL has no 64-bit ints); values "
        "beyond the int32 range are rejected by from_data",
    },
    "autodiff-fusion-wgpu": {
        "add/i64/overflow": "wgpu stores int64 as int32 (WGSL has no 64-bit ints); values "
        "beyond the int32 range are rejected by from_data",
    },
    "remote-wgpu": {
        "add/i64/overflow": "the server's wgpu stores int64 as int32 (WGSL has no 64-bit "
        "ints); values beyond the int32 range are rejected by from_data",
    },
}


def reason(backend: str, key: str) -> str | None:
    return KNOWN_FAILURES.get(backend, {}).get(key)
