"""Errors are typed (ember.errors) and their messages name the op and the shapes/dtypes."""

from __future__ import annotations

import ember
import ember.nn.functional as F
import numpy as np
import pytest
from ember.errors import (
    BackendMismatchError,
    DimensionError,
    DTypeError,
    ShapeError,
    TensorIndexError,
)

from .backends import Unavailable, make_backend


def _t(b, shape, dtype="float32"):
    return ember.tensor(np.arange(int(np.prod(shape))).reshape(shape).astype(dtype), backend=b)


# id → (call(backend), exception, words the message must contain)
ERRORS = {
    "shape_add": (lambda b: _t(b, (2, 3)) + _t(b, (4,)), ShapeError, ["add", "(2, 3)", "(4,)"]),
    "shape_mul_fn": (
        lambda b: ember.mul(_t(b, (2, 3)), _t(b, (3, 2))),
        ShapeError,
        ["mul", "(2, 3)", "(3, 2)"],
    ),
    "shape_matmul": (
        lambda b: _t(b, (2, 3)) @ _t(b, (4, 5)),
        ShapeError,
        ["matmul", "(2, 3)", "(4, 5)"],
    ),
    "shape_matmul_batch": (
        lambda b: _t(b, (2, 2, 3)) @ _t(b, (3, 3, 4)),
        ShapeError,
        ["matmul", "(2, 2, 3)", "(3, 3, 4)"],
    ),
    "shape_cat": (
        lambda b: ember.cat([_t(b, (2, 3)), _t(b, (2, 4))], 0),
        ShapeError,
        ["cat", "(2, 3)", "(2, 4)"],
    ),
    "shape_stack": (
        lambda b: ember.stack([_t(b, (2,)), _t(b, (3,))]),
        ShapeError,
        ["stack", "(2,)", "(3,)"],
    ),
    "shape_reshape": (lambda b: _t(b, (2, 3)).reshape(4, 2), ShapeError, ["reshape", "(2, 3)"]),
    "shape_expand": (lambda b: _t(b, (2, 3)).expand(4, 3), ShapeError, ["expand", "(2, 3)"]),
    "shape_where": (
        lambda b: ember.where(_t(b, (2,), "bool"), _t(b, (3,)), 0.0),
        ShapeError,
        ["where", "(2,)", "(3,)"],
    ),
    "shape_conv2d_channels": (
        lambda b: F.conv2d(_t(b, (1, 3, 5, 5)), _t(b, (2, 4, 3, 3))),
        ShapeError,
        ["conv2d", "3", "4"],
    ),
    "shape_item": (lambda b: _t(b, (3,)).item(), ShapeError, ["item", "(3,)"]),
    "dtype_neg_bool": (lambda b: -_t(b, (3,), "bool"), DTypeError, ["neg", "bool"]),
    "dtype_gather_float_index": (
        lambda b: _t(b, (2, 3)).gather(1, _t(b, (2, 1), "float32")),
        DTypeError,
        ["gather", "float32"],
    ),
    "dtype_index_select_float": (
        lambda b: _t(b, (3,)).index_select(0, _t(b, (2,), "float32")),
        DTypeError,
        ["index_select", "float32"],
    ),
    "dtype_bitwise_float": (
        lambda b: _t(b, (3,), "float32") & _t(b, (3,), "float32"),
        DTypeError,
        ["and", "float32"],
    ),
    "dtype_one_hot_float": (
        lambda b: F.one_hot(_t(b, (3,), "float32"), 4),
        DTypeError,
        ["one_hot", "float32"],
    ),
    "dim_sum": (lambda b: _t(b, (2, 3)).sum(dim=2), DimensionError, ["sum", "2"]),
    "dim_sum_neg": (lambda b: _t(b, (2, 3)).sum(dim=-3), DimensionError, ["sum", "-3"]),
    "dim_softmax": (lambda b: F.softmax(_t(b, (2, 3)), dim=5), DimensionError, ["softmax", "5"]),
    "dim_transpose": (lambda b: _t(b, (2, 3)).transpose(0, 2), DimensionError, ["transpose", "2"]),
    "dim_unsqueeze": (lambda b: _t(b, (2, 3)).unsqueeze(4), DimensionError, ["unsqueeze", "4"]),
    "dim_cat": (lambda b: ember.cat([_t(b, (2,)), _t(b, (2,))], 1), DimensionError, ["cat", "1"]),
    "dim_argmax": (lambda b: _t(b, (2, 3)).argmax(dim=3), DimensionError, ["argmax", "3"]),
    "dim_permute": (lambda b: _t(b, (2, 3)).permute(0, 2), DimensionError, ["permute"]),
    "dim_flip": (lambda b: _t(b, (2, 3)).flip(3), DimensionError, ["flip", "3"]),
    "index_getitem": (lambda b: _t(b, (3,))[5], TensorIndexError, ["5", "3"]),
    "index_getitem_neg": (lambda b: _t(b, (2, 3))[:, -4], TensorIndexError, ["-4", "3"]),
    "index_too_many": (lambda b: _t(b, (2, 3))[0, 0, 0], TensorIndexError, ["3", "2"]),
    "index_setitem": (lambda b: _t(b, (3,)).__setitem__(3, 1.0), TensorIndexError, ["3"]),
    "index_tensor": (lambda b: _t(b, (3,))[_t(b, (2,), "int64") + 5], TensorIndexError, ["3"]),
    "index_gather": (
        lambda b: _t(b, (2, 3)).gather(1, _t(b, (2, 1), "int64") + 3),
        TensorIndexError,
        ["gather"],
    ),
    "index_select": (
        lambda b: _t(b, (3,)).index_select(0, _t(b, (2,), "int64") + 9),
        TensorIndexError,
        ["index_select"],
    ),
    "index_mask_shape": (
        lambda b: _t(b, (2, 3))[_t(b, (4,), "bool")],
        (TensorIndexError, ShapeError),
        ["(4,)", "(2, 3)"],
    ),
    "unknown_dtype_zeros": (
        lambda b: ember.zeros(2, dtype="float8", backend=b),
        DTypeError,
        ["float8"],
    ),
    "unknown_dtype_astype": (lambda b: _t(b, (2,)).astype("complex64"), DTypeError, ["complex64"]),
    "unknown_dtype_tensor": (
        lambda b: ember.tensor([1, 2], dtype="bfloat16", backend=b),
        DTypeError,
        ["bfloat16"],
    ),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_error(backend, name):
    call, exc, words = ERRORS[name]
    with pytest.raises(exc) as info:
        call(backend)
    msg = str(info.value)
    missing = [w for w in words if w.lower() not in msg.lower()]
    assert not missing, f"message {msg!r} lacks {missing}"


def _other(backend):
    for name in ("python", "numpy"):
        try:
            other = make_backend(name)
        except Unavailable:
            continue
        if other.name != backend.name:
            return other
    pytest.skip("needs a second backend")


MIXED = {
    "add": lambda a, b: a + b,
    "matmul": lambda a, b: a @ b.reshape(3, 1),
    "where": lambda a, b: ember.where(a > 0, a, b),
    "cat": lambda a, b: ember.cat([a, b]),
    "maximum": lambda a, b: ember.maximum(a, b),
}


@pytest.mark.parametrize("op", list(MIXED))
def test_backend_mismatch(backend, op):
    other = _other(backend)
    a = ember.tensor(np.array([1.0, -2.0, 3.0], "float32"), backend=backend)
    b = ember.tensor(np.array([4.0, 5.0, 6.0], "float32"), backend=other)
    with pytest.raises(BackendMismatchError) as info:
        MIXED[op](a, b)
    msg = str(info.value)
    assert op in msg and backend.name in msg and other.name in msg, msg


def test_errors_derive_from_builtins():
    assert issubclass(ShapeError, ValueError) and issubclass(DTypeError, TypeError)
    assert issubclass(DimensionError, IndexError) and issubclass(TensorIndexError, IndexError)
