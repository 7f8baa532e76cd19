"""Known failures per backend: test key → :class:`~.expected.Fails` (the exception class, a
message pattern and the reason).

A key is a case id (``"add/f32/broadcast"``) or, for the non-catalog tests, the test function
name with its parameter id (``"test_error[shape_mismatch_add]"``). A listed test must fail
with that exception and message; one that passes, or fails another way, fails the run
(remove or correct its entry).

Don't list ops that are simply not implemented yet; list behaviour a backend can't or won't
match, with the reason.
"""

from .expected import Fails

_INT32_STORAGE = "wgpu stores int64 as int32 (WGSL has no 64-bit ints)"
_UPLOAD = _INT32_STORAGE + ": int64 inputs beyond the int32 range are refused by from_data"
_RESULT = _INT32_STORAGE + ": an int64 result that may leave the int32 range is refused"


def _result(op: str, value: int) -> Fails:
    return Fails("DTypeError", rf"^{op}: the int64 result may reach {value}, outside the int32",
                 _RESULT)


# every backend that runs on the wgpu backend's int64
_WGPU = {
    "add/i64/overflow": Fails("DTypeError", r"^from_data: int64 value -?9223372036854775\d+ is "
                              "outside the range", _UPLOAD),
    "cast/i64_to_i32/wraps": Fails("DTypeError", r"^from_data: int64 value -?21474836(48|49) "
                                   "is outside the range", _UPLOAD),
    "sum/i32/beyond_i32": _result("int_sum", 8000000000),
    "sum/i64/beyond_i32": _result("int_sum", 8000000000),
    "prod/i32/beyond_i32": _result("int_prod", 1000000000000000),
    "prod/i64/beyond_i32": _result("int_prod", 1000000000000000),
    "cumsum/i32/beyond_i32": _result("int_cumsum", 8000000000),
    "cumsum/i64/beyond_i32": _result("int_cumsum", 8000000000),
    "matmul/i64/accumulate_beyond_i32": _result("int_matmul", 3000000000000000000),
    "mul/i64/beyond_i32": _result("int_mul", 100000000000),
    "add/i64/beyond_i32": _result("int_add", -4000000000),
    "sub/i64/beyond_i32": _result("int_sub", -4000000000),
    "cast/f32_to_i64/beyond_i32": _result("cast", -3000000000),
}

KNOWN_FAILURES: dict[str, dict[str, Fails]] = {
    "numpy": {},
    "python": {},
    "wasm": {},
    "wgpu": _WGPU,
    "autodiff-numpy": {},
    "checked-numpy": {},
    "autodiff-python": {},
    "autodiff-wasm": {},
    "autodiff-wgpu": _WGPU,
    "fusion-numpy": {},
    "fusion-wgpu": _WGPU,
    "autodiff-fusion-wgpu": _WGPU,
    "remote-wgpu": _WGPU,
}


def expected(backend: str, key: str) -> Fails | None:
    """The listed failure of test ``key`` on ``backend`` (None: it must pass)."""
    return KNOWN_FAILURES.get(backend, {}).get(key)
