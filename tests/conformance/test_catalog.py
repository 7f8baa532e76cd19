"""The catalog itself: JSON round-trip (what browser runners replay), coverage of the op list,
and that the runner really fails on wrong values, dtypes and shapes."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
from ember.tensordata import TensorData

from .catalog import all_cases
from .runner import missing_dtypes, run_case
from .spec import Expected, T, decode_case, dumps, encode_case, loads

CASES = all_cases()
BY_ID = {c.id: c for c in CASES}
SAMPLE = [
    "add/f32/transposed",
    "add/f32/expanded",
    "mul/f32/sliced",
    "getitem/slice_step_offset",
    "getitem/ellipsis_slice",
    "getitem/bool_mask",
    "nan_to_num/f32/values",
    "max/f32/dim1",
    "einsum/ij,jk->ik",
    "cat/dim-1",
    "conv2d/stride_pad_tuple",
    "pad/reflect/2d",
    "astype/f64->f16",
    "zeros/tuple_i32",
    "abs/f32/method",
    "unique/counts",
    "nonzero/as_tuple",
    "setitem/int_tensor",
    "split/sizes_dim1",
]


def test_case_count_and_ids():
    assert len(CASES) >= 300
    assert len(BY_ID) == len(CASES)


def test_every_case_has_a_float64_or_exact_expectation():
    for c in CASES:
        for e in c.expected:
            assert e.data.dtype in (np.float64, np.bool_) or e.data.dtype.kind in "iu", c.id
            if e.dtype.startswith("float"):
                assert c.rtol > 0 and c.atol > 0, c.id


def test_json_roundtrip_whole_catalog():
    text = dumps(CASES)
    back = loads(text)
    assert [c.id for c in back] == [c.id for c in CASES]
    assert json.loads(text)["version"] == 1
    for c, d in zip(CASES, back):
        assert d.op == c.op and d.multi == c.multi and d.fields == c.fields
        assert d.differentiable == c.differentiable and d.grad_inputs == c.grad_inputs
        for e, f in zip(c.expected, d.expected):
            assert isinstance(f.data, TensorData) and f.dtype == e.dtype
            assert f.data.shape == e.data.shape
            np.testing.assert_array_equal(f.data.to_numpy(), e.data)


def test_json_encodes_special_values():
    c = BY_ID["getitem/ellipsis_slice"]
    d = decode_case(json.loads(json.dumps(encode_case(c))))
    assert d.args[1] == (0, Ellipsis, slice(None, None, 2))
    c = BY_ID["nan_to_num/f32/values"]
    d = decode_case(json.loads(json.dumps(encode_case(c))))
    assert isinstance(d.args[0], T) and np.isnan(d.args[0].data.to_numpy()[0])


@pytest.mark.parametrize("case_id", SAMPLE)
def test_replay_decoded_case(backend, case_id):
    """A case decoded from JSON (TensorData, no numpy arrays) runs like the original."""
    decoded = decode_case(json.loads(json.dumps(encode_case(BY_ID[case_id]))))
    missing = missing_dtypes(BY_ID[case_id], backend)
    if missing:
        pytest.skip(f"backend {backend.name} has no {', '.join(missing)} (caps)")
    run_case(decoded, backend)


def _broken(case_id: str, how: str):
    c = copy.deepcopy(BY_ID[case_id])
    e = c.expected[0]
    if how == "value":
        data = e.data.copy()
        data.flat[0] += 0.01 if data.dtype.kind == "f" else 1
        c.expected = (Expected(data, e.dtype),) + c.expected[1:]
    elif how == "dtype":
        c.expected = (Expected(e.data, "float64" if e.dtype != "float64" else "float32"),)
    elif how == "shape":
        c.expected = (Expected(e.data.reshape(-1, 1), e.dtype),)
    return c


@pytest.mark.parametrize("how", ["value", "dtype", "shape"])
@pytest.mark.parametrize("case_id", ["add/f32", "add/i32", "matmul/f32/2d"])
def test_runner_detects_mismatch(backend, case_id, how):
    run_case(BY_ID[case_id], backend)  # the intact case passes
    with pytest.raises(AssertionError):
        run_case(_broken(case_id, how), backend)


def test_float16_tolerance_is_looser():
    assert BY_ID["exp/f16"].rtol > BY_ID["exp/f32"].rtol > BY_ID["exp/f64"].rtol


# The op list of the conformance issue: each must appear in at least one case.
REQUIRED = [
    "astype",
    "to",
    "zeros",
    "ones",
    "full",
    "empty",
    "arange",
    "linspace",
    "eye",
    "zeros_like",
    "ones_like",
    "full_like",
    "empty_like",
    "tensor",
    "add",
    "sub",
    "mul",
    "truediv",
    "floordiv",
    "mod",
    "pow",
    "neg",
    "abs",
    "matmul",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "logical_and",
    "logical_or",
    "logical_xor",
    "logical_not",
    "where",
    "clamp",
    "minimum",
    "maximum",
    "exp",
    "expm1",
    "log",
    "log1p",
    "log2",
    "sqrt",
    "rsqrt",
    "reciprocal",
    "sin",
    "cos",
    "tan",
    "tanh",
    "sinh",
    "cosh",
    "asin",
    "acos",
    "atan",
    "atan2",
    "erf",
    "sigmoid",
    "sign",
    "floor",
    "ceil",
    "round",
    "trunc",
    "isnan",
    "isinf",
    "isfinite",
    "nan_to_num",
    "sum",
    "mean",
    "prod",
    "max",
    "min",
    "argmax",
    "argmin",
    "var",
    "std",
    "logsumexp",
    "any",
    "all",
    "cumsum",
    "cumprod",
    "norm",
    "dot",
    "outer",
    "tril",
    "triu",
    "einsum",
    "reshape",
    "flatten",
    "squeeze",
    "unsqueeze",
    "permute",
    "transpose",
    "T",
    "expand",
    "broadcast_to",
    "repeat",
    "tile",
    "cat",
    "stack",
    "split",
    "chunk",
    "flip",
    "roll",
    "pad",
    "getitem",
    "setitem",
    "gather",
    "scatter",
    "scatter_add",
    "index_select",
    "take_along_dim",
    "masked_fill",
    "topk",
    "sort",
    "argsort",
    "unique",
    "nonzero",
    "one_hot",
    "conv1d",
    "conv2d",
    "conv_transpose1d",
    "conv_transpose2d",
    "max_pool1d",
    "max_pool2d",
    "avg_pool1d",
    "avg_pool2d",
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "interpolate",
    "softmax",
    "log_softmax",
    "relu",
    "relu6",
    "leaky_relu",
    "elu",
    "gelu",
    "silu",
    "softplus",
    "hard_sigmoid",
    "hard_swish",
    "mish",
    "layer_norm",
    "batch_norm",
]


def test_catalog_covers_the_op_list():
    names = {c.op.rsplit(".", 1)[-1] for c in CASES}
    missing = [n for n in REQUIRED if n not in names]
    assert not missing, f"ops without a case: {missing}"


def test_edge_case_kinds_present():
    ids = " ".join(BY_ID)
    for needle in (
        "/0d",
        "/empty",
        "broadcast",
        "transposed",
        "sliced",
        "expanded",
        "nan",
        "overflow",
        "negatives",
        "promote",
        "/f16",
        "weak_",
    ):
        assert needle in ids, needle
