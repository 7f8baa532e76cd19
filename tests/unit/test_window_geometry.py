"""ember.shape's sliding-window geometry (conv, transposed conv and pooling output sizes)
against PyTorch's output shapes."""

from __future__ import annotations

import itertools

import pytest
from ember.shape import (
    conv_output_size,
    conv_transpose_output_size,
    pool_geometry,
    pool_output_size,
)

torch = pytest.importorskip("torch")
F = torch.nn.functional

SIZES, KERNELS, STRIDES, DILATIONS = range(1, 9), range(1, 4), range(1, 4), range(1, 3)


def test_conv_output_size_matches_torch():
    for size, k, s, d, lo, hi in itertools.product(
        SIZES, KERNELS, STRIDES, DILATIONS, range(3), range(3)
    ):
        got = conv_output_size(size, k, s, (lo, hi), d)
        x = F.pad(torch.zeros(1, 1, size), (lo, hi))
        if x.shape[-1] < d * (k - 1) + 1:
            assert got < 1
            continue
        want = F.conv1d(x, torch.zeros(1, 1, k), stride=s, dilation=d).shape[-1]
        assert got == want, (size, k, s, d, lo, hi)


def test_pool_output_size_matches_torch():
    for size, k, s, d, p, ceil in itertools.product(
        SIZES, KERNELS, STRIDES, DILATIONS, range(2), (False, True)
    ):
        if 2 * p > k or size + 2 * p < d * (k - 1) + 1:
            continue  # torch rejects these
        x = torch.zeros(1, 1, size)
        want = F.max_pool1d(x, k, s, p, d, ceil_mode=ceil).shape[-1]
        assert pool_output_size(size, k, s, p, d, ceil) == want, (size, k, s, d, p, ceil)
        (out,), ((lo, hi),) = pool_geometry((size,), (k,), (s,), (p,), (d,), ceil)
        assert out == want and lo == p and hi >= p
        # the padded input holds the last window
        assert size + lo + hi >= (out - 1) * s + d * (k - 1) + 1


def test_conv_transpose_output_size_matches_torch():
    for size, k, s, d, p, op in itertools.product(
        SIZES, KERNELS, STRIDES, DILATIONS, range(2), range(2)
    ):
        if op >= s and op >= d:
            continue  # torch rejects output_padding this large
        got = conv_transpose_output_size(size, k, s, p, op, d)
        if got < 1:
            continue
        y = F.conv_transpose1d(torch.zeros(1, 1, size), torch.zeros(1, 1, k), None, s, p, op, 1, d)
        assert got == y.shape[-1], (size, k, s, d, p, op)


def test_asymmetric_ceil_mode_matches_onnxruntime():
    """ONNX pooling pads each side separately; ceil_mode's rule is the same as PyTorch's."""
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    np = pytest.importorskip("numpy")
    from onnx import TensorProto, helper

    for size, k, s, lo, hi in itertools.product(range(2, 8), (2, 3), (2, 3), range(2), range(2)):
        node = helper.make_node(
            "MaxPool", ["x"], ["y"], kernel_shape=[k], strides=[s], pads=[lo, hi], ceil_mode=1
        )
        graph = helper.make_graph(
            [node],
            "pool",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, size])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        model.ir_version = 8
        session = ort.InferenceSession(
            model.SerializeToString(), providers=["CPUExecutionProvider"]
        )
        (y,) = session.run(None, {"x": np.zeros((1, 1, size), np.float32)})
        got = conv_output_size(size, k, s, (lo, hi), ceil_mode=True)
        assert got == y.shape[-1], (size, k, s, lo, hi)
