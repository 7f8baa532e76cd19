"""ember.onnx.export: each model is exported, checked with onnx.checker (full check) and run by
onnxruntime (the independent reference), whose outputs must match ember's own forward."""

from __future__ import annotations

import os

import numpy as np
import pytest

import ember
from ember import nn
from ember.nn import functional as F
from ember.onnx.exporter_graph import OnnxExportError, OnnxExportUnsupportedError

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


def _session(path):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def _roundtrip(module, inputs, tmp_path, *, rtol=1e-4, atol=1e-5, dynamic_batch=False,
               other_batch=None):
    """Export, check, run in onnxruntime; compare with ember's forward (and, with
    ``other_batch``, at a second batch size the trace never saw)."""
    inputs = inputs if isinstance(inputs, tuple) else (inputs,)
    path = str(tmp_path / "model.onnx")
    model = ember.onnx.export(module, inputs, path, dynamic_batch=dynamic_batch)
    was_training = module.training
    module.eval()
    onnx.checker.check_model(onnx.load(path), full_check=True)
    session = _session(path)
    batches = [inputs] + ([other_batch] if other_batch is not None else [])
    for batch in batches:
        batch = batch if isinstance(batch, tuple) else (batch,)
        expected = module(*batch)
        feeds = {i.name: t.numpy() for i, t in zip(session.get_inputs(), batch)}
        got = session.run(None, feeds)[0]
        np.testing.assert_allclose(got, expected.numpy(), rtol=rtol, atol=atol)
    module.train(was_training)
    return model


def _ops(model) -> set[str]:
    return {n.op_type for n in model.graph.node}


def test_mlp_with_dynamic_batch(tmp_path):
    ember.seed(0)
    mlp = nn.Sequential(nn.Linear(6, 16), nn.GELU(), nn.Dropout(0.5), nn.Linear(16, 3),
                        nn.Softmax(dim=-1))
    mlp.train()  # export runs in eval mode and restores the mode
    model = _roundtrip(mlp, ember.randn(4, 6), tmp_path, dynamic_batch=True,
                       other_batch=ember.randn(9, 6))
    assert mlp.training
    assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    assert _ops(model) >= {"MatMul", "Erf", "Softmax"}


def test_mnist_cnn(tmp_path):
    from ember.demos.mnist_model import mnist_cnn

    ember.seed(1)
    cnn = mnist_cnn()
    model = _roundtrip(cnn, ember.randn(2, 1, 28, 28), tmp_path, dynamic_batch=True,
                       other_batch=ember.randn(5, 1, 28, 28))
    assert _ops(model) >= {"Conv", "MaxPool", "Relu", "MatMul"}
    assert model.opset_import[0].version >= 17


def test_efficientnet_lite0_pretrained(tmp_path):
    from ember.demos import efficientnet

    try:
        net = efficientnet.pretrained()
    except ember.errors.DatasetError as e:
        pytest.skip(str(e))
    x = ember.tensor(np.random.default_rng(0).uniform(-1, 1, (1, 3, 224, 224)).astype("f4"))
    model = _roundtrip(net, x, tmp_path, rtol=1e-3, atol=2e-4)
    assert _ops(model) >= {"Conv", "Pad", "Clip", "GlobalAveragePool"}
    # the grouped (depthwise) convolutions keep their groups
    assert any(a.name == "group" and a.i > 1 for n in model.graph.node for a in n.attribute)


class _Block(nn.Module):
    """A small pre-norm transformer block with token and position embeddings."""

    def __init__(self, vocab=50, dim=16, heads=4, length=7):
        super().__init__()
        self.tokens = nn.Embedding(vocab, dim)
        self.positions = nn.Embedding(length, dim)
        self.layer = nn.TransformerEncoderLayer(dim, heads, dim_feedforward=32, dropout=0.1,
                                                batch_first=True, norm_first=True,
                                                activation="gelu")
        self.norm = nn.LayerNorm(dim)

    def forward(self, ids):
        positions = ember.arange(ids.shape[1]).reshape(1, -1)
        x = self.tokens(ids) + self.positions(positions)
        return self.norm(self.layer(x)).mean(dim=1)


def test_transformer_block(tmp_path):
    ember.seed(2)
    block = _Block()
    ids = ember.tensor(np.random.default_rng(0).integers(0, 50, (3, 7)))
    others = ember.tensor(np.random.default_rng(1).integers(0, 50, (5, 7)))
    model = _roundtrip(block, ids, tmp_path, dynamic_batch=True, other_batch=others)
    assert _ops(model) >= {"Gather", "LayerNormalization", "Softmax", "MatMul", "Transpose"}


def test_multihead_attention_with_mask(tmp_path):
    ember.seed(3)
    attention = nn.MultiheadAttention(12, 3, batch_first=True)

    class Causal(nn.Module):
        def __init__(self):
            super().__init__()
            self.attention = attention

        def forward(self, x):
            mask = nn.layers.attention.causal_mask(x.shape[1])
            return self.attention(x, x, x, attn_mask=mask, need_weights=False)[0]

    _roundtrip(Causal(), ember.randn(2, 5, 12), tmp_path)


@pytest.mark.parametrize("layers", [
    lambda: [nn.Conv1d(3, 6, 3, stride=2, padding=1), nn.BatchNorm1d(6), nn.ELU(),
             nn.AvgPool1d(2), nn.Flatten()],
    lambda: [nn.Conv2d(4, 4, 3, groups=4, padding=1, bias=False), nn.BatchNorm2d(4),
             nn.ReLU6(), nn.Conv2d(4, 8, 1), nn.SiLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten()],
    lambda: [nn.ConvTranspose2d(4, 3, 3, stride=2, padding=1, output_padding=1),
             nn.LeakyReLU(0.2), nn.MaxPool2d(3, stride=2, padding=1), nn.Hardswish(),
             nn.Mish()],
    lambda: [nn.Conv2d(4, 8, 3, dilation=2), nn.Tanh(), nn.AvgPool2d(2, ceil_mode=True),
             nn.Upsample(scale_factor=2, mode="nearest"), nn.Sigmoid(),
             nn.AdaptiveAvgPool2d(2)],
    lambda: [nn.ConvTranspose1d(4, 2, 4, stride=2, groups=2), nn.GELU("tanh"),
             nn.LogSoftmax(dim=1)],
    lambda: [nn.Conv2d(4, 8, 3), nn.GroupNorm(2, 8), nn.PReLU(8), nn.InstanceNorm2d(8),
             nn.Upsample(size=(7, 9), mode="bilinear", align_corners=True)],
], ids=["conv1d-bn-avgpool", "depthwise-bn-global", "convtranspose-maxpool",
        "dilated-upsample", "convtranspose1d-groups", "groupnorm-prelu-bilinear"])
def test_layers(layers, tmp_path):
    ember.seed(4)
    stack = nn.Sequential(*layers())
    for m in stack.modules():  # non-trivial running statistics for the eval-mode batch norm
        if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
            m.running_mean = ember.randn(*m.running_mean.shape)
            m.running_var = ember.rand(*m.running_var.shape) + 0.5
    spatial = (10,) if isinstance(stack[0], (nn.Conv1d, nn.ConvTranspose1d)) else (10, 10)
    _roundtrip(stack, ember.randn(2, stack[0].in_channels, *spatial), tmp_path,
               dynamic_batch=True, other_batch=ember.randn(3, stack[0].in_channels, *spatial))


@pytest.mark.parametrize("rnn", [nn.LSTM, nn.GRU])
def test_recurrent_batch_first(rnn, tmp_path):
    """Inside, the batch sits in dim 1 (time-major states): the second trace finds it."""
    ember.seed(6)

    class Last(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn, self.norm = rnn(6, 8, batch_first=True), nn.RMSNorm(8)

        def forward(self, x):
            return self.norm(self.rnn(x)[0][:, -1])

    _roundtrip(Last(), ember.randn(2, 5, 6), tmp_path, dynamic_batch=True,
               other_batch=ember.randn(4, 5, 6))


def test_batch_dependent_values_are_refused_with_a_dynamic_batch(tmp_path):
    class Scaled(nn.Module):
        def forward(self, x):
            return x * (1.0 / x.shape[0])  # a constant computed from the batch size

    with pytest.raises(OnnxExportError, match="change with the batch size"):
        ember.onnx.export(Scaled(), ember.randn(2, 3), tmp_path / "m.onnx", dynamic_batch=True)
    ember.onnx.export(Scaled(), ember.randn(2, 3), tmp_path / "m.onnx")  # fixed batch: fine


def test_tensor_ops(tmp_path):
    class Ops(nn.Module):
        def forward(self, x, y):
            z = ember.cat([x.permute(0, 2, 1), y], dim=1)[:, 1:, ::2].flip(2)
            z = F.layer_norm(z, (z.shape[-1],)) + z.var(dim=1, keepdim=True).sqrt()
            w = ember.where(z > 0, z.exp(), z.abs().log1p()) @ z.permute(0, 2, 1)
            return (w.max(dim=-1).values + w.sum(dim=(1, 2)).reshape(-1, 1)).clamp(-5, 5)

    ember.seed(5)
    x, y = ember.randn(2, 4, 6), ember.randn(2, 3, 4)
    _roundtrip(Ops(), (x, y), tmp_path, dynamic_batch=True,
               other_batch=(ember.randn(4, 4, 6), ember.randn(4, 3, 4)))


def test_integer_and_boolean_ops(tmp_path):
    class IntOps(nn.Module):
        def forward(self, x, i):
            j = (i @ i.permute(1, 0)).cumsum(dim=1) + i.prod(dim=1, keepdim=True)
            flags = (j > 3).any(dim=1, keepdim=True).float() + (i > -2).all(dim=1, keepdim=True).float()
            return x.trunc() * flags + j.float()

    x = ember.tensor([[-1.5, 2.7], [3.9, -0.2]])
    i = ember.tensor([[1, -2, 3], [-1, 2, 2]], dtype=ember.int64)
    model = _roundtrip(IntOps(), (x, i), tmp_path)
    assert {"CumSum", "ReduceProd", "ReduceMax", "ReduceMin", "MatMul", "Floor"} <= _ops(model)


def test_unsupported_op_is_named(tmp_path):
    class Sorts(nn.Module):
        def forward(self, x):
            return x.sort(dim=1).values

    path = tmp_path / "sorts.onnx"
    with pytest.raises(OnnxExportUnsupportedError, match="float_sort"):
        ember.onnx.export(Sorts(), ember.randn(2, 3), path)
    assert not path.exists() and os.listdir(tmp_path) == []


def test_bad_inputs_and_options(tmp_path):
    mlp = nn.Linear(3, 2)
    with pytest.raises(OnnxExportError, match="example_inputs"):
        ember.onnx.export(mlp, [[1.0, 2.0, 3.0]], tmp_path / "m.onnx")
    with pytest.raises(OnnxExportError, match="opset"):
        ember.onnx.export(mlp, ember.randn(1, 3), tmp_path / "m.onnx", opset=11)
    with pytest.raises(OnnxExportError, match="input names"):
        ember.onnx.export(mlp, ember.randn(1, 3), tmp_path / "m.onnx", input_names=["a", "b"])


def test_written_atomically(tmp_path):
    """A failed export leaves the previous file as it was, and no temporary file behind."""
    path = tmp_path / "model.onnx"
    ember.onnx.export(nn.Linear(3, 2), ember.randn(1, 3), path, input_names=["features"],
                      output_names=["scores"])
    before = path.read_bytes()

    class Broken(nn.Module):
        def forward(self, x):
            return x.sort(dim=1).values

    with pytest.raises(OnnxExportUnsupportedError):
        ember.onnx.export(Broken(), ember.randn(1, 3), path)
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["model.onnx"]
    session = _session(str(path))
    assert [i.name for i in session.get_inputs()] == ["features"]
    assert [o.name for o in session.get_outputs()] == ["scores"]


def test_minilm_sentence_encoder(tmp_path):
    """all-MiniLM-L6-v2 (ember demo embed's model, real weights) with its pooling: two int64
    inputs, the batch dynamic, the sequence length fixed by the trace."""
    from ember.demos.embed import tokenizer
    from ember.demos.minilm import load_minilm
    from ember.errors import DatasetError

    try:
        encoder = load_minilm(backend="numpy")
    except DatasetError as e:
        pytest.skip(str(e))

    class Embedder(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = encoder

        def forward(self, ids, mask):
            return self.encoder.embed(ids, mask)

    def batch(texts, width):
        ids, mask = tokenizer().batch(texts, max_length=width)
        pad = [[0] * (width - len(r)) for r in ids]
        return (ember.tensor([r + p for r, p in zip(ids, pad)]),
                ember.tensor([r + p for r, p in zip(mask, pad)]))

    first = batch(["A man is eating food.", "A man is eating a piece of bread."], 12)
    other = batch(["The girl is carrying a baby.", "hi", "A man is riding a horse."], 12)
    model = _roundtrip(Embedder(), first, tmp_path, dynamic_batch=True, other_batch=other)
    assert [i.name for i in model.graph.input] == ["input_0", "input_1"]
    assert _ops(model) >= {"Gather", "LayerNormalization", "Erf", "Softmax", "MatMul"}


def test_exports_from_the_wgpu_backend(tmp_path):
    """The trace runs on whatever backend holds the module; the weights are read back."""
    from ember.demos.mnist_model import mnist_cnn

    try:
        ember.get_backend("wgpu")
    except (ember.errors.EmberError, ImportError) as e:  # no adapter, or no wgpu-py
        pytest.skip(f"no wgpu backend: {e}")
    ember.seed(7)
    cnn = mnist_cnn().to("wgpu")
    _roundtrip(cnn, ember.randn(2, 1, 28, 28, backend="wgpu"), tmp_path, dynamic_batch=True,
               other_batch=ember.randn(3, 1, 28, 28, backend="wgpu"))
