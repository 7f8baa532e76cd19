"""ember.nn layers against torch.nn with copied weights: forward and gradients."""

from __future__ import annotations

import ember
import numpy as np
import pytest
from _nn_ref import AD, compare, copy_weights, to_ember, torch
from ember import nn

tnn = torch.nn
rng = np.random.default_rng(0)


def randn(*shape):
    return rng.standard_normal(shape)


CASES = {
    "linear": (lambda: tnn.Linear(5, 3), lambda: nn.Linear(5, 3), [randn(4, 5)]),
    "linear_3d_nobias": (lambda: tnn.Linear(5, 3, bias=False),
                         lambda: nn.Linear(5, 3, bias=False), [randn(2, 4, 5)]),
    "bilinear": (lambda: tnn.Bilinear(3, 4, 2), lambda: nn.Bilinear(3, 4, 2),
                 [randn(5, 3), randn(5, 4)]),
    "conv1d": (lambda: tnn.Conv1d(3, 4, 3, stride=2, padding=1),
               lambda: nn.Conv1d(3, 4, 3, stride=2, padding=1), [randn(2, 3, 9)]),
    "conv2d": (lambda: tnn.Conv2d(3, 4, 3, padding=1), lambda: nn.Conv2d(3, 4, 3, padding=1),
               [randn(2, 3, 6, 6)]),
    "conv2d_groups_dil": (lambda: tnn.Conv2d(4, 6, (3, 2), stride=(2, 1), dilation=2, groups=2),
                          lambda: nn.Conv2d(4, 6, (3, 2), stride=(2, 1), dilation=2, groups=2),
                          [randn(1, 4, 9, 7)]),
    "conv_transpose1d": (lambda: tnn.ConvTranspose1d(3, 2, 3, stride=2, padding=1),
                         lambda: nn.ConvTranspose1d(3, 2, 3, stride=2, padding=1),
                         [randn(2, 3, 5)]),
    "conv_transpose2d": (lambda: tnn.ConvTranspose2d(3, 2, 3, stride=2, output_padding=1),
                         lambda: nn.ConvTranspose2d(3, 2, 3, stride=2, output_padding=1),
                         [randn(1, 3, 4, 4)]),
    "maxpool1d": (lambda: tnn.MaxPool1d(2), lambda: nn.MaxPool1d(2), [randn(2, 3, 8)]),
    "maxpool2d": (lambda: tnn.MaxPool2d(3, stride=2, padding=1),
                  lambda: nn.MaxPool2d(3, stride=2, padding=1), [randn(2, 2, 7, 7)]),
    "avgpool1d": (lambda: tnn.AvgPool1d(3, 2), lambda: nn.AvgPool1d(3, 2), [randn(2, 3, 9)]),
    "avgpool2d": (lambda: tnn.AvgPool2d(2), lambda: nn.AvgPool2d(2), [randn(2, 2, 6, 6)]),
    "adaptive1d": (lambda: tnn.AdaptiveAvgPool1d(3), lambda: nn.AdaptiveAvgPool1d(3),
                   [randn(2, 3, 7)]),
    "adaptive2d": (lambda: tnn.AdaptiveAvgPool2d((2, 3)), lambda: nn.AdaptiveAvgPool2d((2, 3)),
                   [randn(2, 2, 5, 7)]),
    "layernorm": (lambda: tnn.LayerNorm((3, 4)), lambda: nn.LayerNorm((3, 4)),
                  [randn(2, 3, 4)]),
    "groupnorm": (lambda: tnn.GroupNorm(2, 4), lambda: nn.GroupNorm(2, 4), [randn(3, 4, 5)]),
    "instancenorm2d": (lambda: tnn.InstanceNorm2d(3, affine=True),
                       lambda: nn.InstanceNorm2d(3, affine=True), [randn(2, 3, 4, 4)]),
    "instancenorm1d": (lambda: tnn.InstanceNorm1d(3), lambda: nn.InstanceNorm1d(3),
                       [randn(2, 3, 6)]),
    "rmsnorm": (lambda: tnn.RMSNorm(4, eps=1e-6), lambda: nn.RMSNorm(4, eps=1e-6),
                [randn(2, 3, 4)]),
    "batchnorm1d": (lambda: tnn.BatchNorm1d(3), lambda: nn.BatchNorm1d(3), [randn(5, 3)]),
    "batchnorm1d_3d": (lambda: tnn.BatchNorm1d(3), lambda: nn.BatchNorm1d(3), [randn(4, 3, 5)]),
    "batchnorm2d": (lambda: tnn.BatchNorm2d(3), lambda: nn.BatchNorm2d(3), [randn(2, 3, 4, 4)]),
    "flatten": (lambda: tnn.Flatten(), lambda: nn.Flatten(), [randn(2, 3, 4)]),
    "upsample_nearest": (lambda: tnn.Upsample(scale_factor=2),
                         lambda: nn.Upsample(scale_factor=2), [randn(1, 2, 3, 3)]),
    "upsample_bilinear": (lambda: tnn.Upsample(size=(5, 4), mode="bilinear"),
                          lambda: nn.Upsample(size=(5, 4), mode="bilinear"),
                          [randn(1, 2, 3, 3)]),
    "prelu": (lambda: tnn.PReLU(3), lambda: nn.PReLU(3), [randn(2, 3, 4)]),
    "sequential": (
        lambda: tnn.Sequential(tnn.Conv2d(2, 3, 3), tnn.BatchNorm2d(3), tnn.ReLU(),
                               tnn.MaxPool2d(2), tnn.Flatten(), tnn.Linear(12, 4)),
        lambda: nn.Sequential(nn.Conv2d(2, 3, 3), nn.BatchNorm2d(3), nn.ReLU(),
                              nn.MaxPool2d(2), nn.Flatten(), nn.Linear(12, 4)),
        [randn(2, 2, 6, 6)]),
}

ACTIVATIONS = {
    "ReLU": {}, "ReLU6": {}, "LeakyReLU": {"negative_slope": 0.2}, "ELU": {"alpha": 0.7},
    "GELU": {}, "SiLU": {}, "Sigmoid": {}, "Tanh": {}, "Softmax": {"dim": 1},
    "LogSoftmax": {"dim": -1}, "Hardswish": {}, "Mish": {},
}


@pytest.mark.parametrize("name", list(CASES))
def test_layer_matches_torch(name):
    tfac, efac, inputs = CASES[name]
    torch.manual_seed(0)
    compare(tfac(), efac(), *inputs)


@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_activation_matches_torch(name):
    kw = ACTIVATIONS[name]
    x = randn(3, 4) * 3
    compare(getattr(tnn, name)(**kw), getattr(nn, name)(**kw), x)


def test_gelu_tanh():
    compare(tnn.GELU(approximate="tanh"), nn.GELU(approximate="tanh"), randn(3, 4))


def test_embedding_padding_idx():
    t = tnn.Embedding(6, 3, padding_idx=1)
    e = nn.Embedding(6, 3, padding_idx=1)
    assert np.all(e.weight.numpy()[1] == 0)
    idx = np.array([[0, 1, 2], [1, 5, 5]])
    compare(t, e, idx)


def test_batchnorm_running_stats_and_eval():
    t, e = tnn.BatchNorm2d(3, momentum=0.3).double(), nn.BatchNorm2d(3, momentum=0.3)
    e.to(dtype=ember.float64)
    copy_weights(t, e)
    for _ in range(2):
        x = randn(4, 3, 2, 2)
        t(torch.tensor(x))
        e(to_ember(x, "numpy"))
    np.testing.assert_allclose(e.running_mean.numpy(), t.running_mean.numpy(), rtol=1e-10)
    np.testing.assert_allclose(e.running_var.numpy(), t.running_var.numpy(), rtol=1e-10)
    assert int(e.num_batches_tracked.item()) == 2
    t.eval(), e.eval()
    x = randn(2, 3, 2, 2)
    np.testing.assert_allclose(e(to_ember(x, "numpy")).numpy(),
                               t(torch.tensor(x)).detach().numpy(), rtol=1e-8)


def test_batchnorm_cumulative_momentum():
    t, e = tnn.BatchNorm1d(2, momentum=None).double(), nn.BatchNorm1d(2, momentum=None)
    e.to(dtype=ember.float64)
    for _ in range(3):
        x = randn(5, 2)
        t(torch.tensor(x))
        e(to_ember(x, "numpy"))
    np.testing.assert_allclose(e.running_var.numpy(), t.running_var.numpy(), rtol=1e-10)


def test_dropout_train_eval():
    d = nn.Dropout(0.5)
    x = ember.ones(1000)
    y = d(x).numpy()
    assert set(np.unique(y)) <= {0.0, 2.0}
    assert 350 < (y == 0).sum() < 650
    d.eval()
    assert d(x).numpy().tolist() == [1.0] * 1000


def test_conv_same_padding():
    t = tnn.Conv2d(2, 3, 3, padding="same")
    e = nn.Conv2d(2, 3, 3, padding="same")
    compare(t, e, randn(1, 2, 5, 5))


def test_float32_default_path():
    torch.manual_seed(1)
    t = tnn.Sequential(tnn.Linear(6, 4), tnn.Tanh(), tnn.Linear(4, 2))
    e = nn.Sequential(nn.Linear(6, 4), nn.Tanh(), nn.Linear(4, 2))
    e.load_state_dict({k: to_ember(v, "numpy") for k, v in t.state_dict().items()})
    x = randn(3, 6).astype(np.float32)
    np.testing.assert_allclose(e(ember.tensor(x)).numpy(), t(torch.tensor(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    assert e[0].weight.dtype == ember.float32


# ---------------------------------------------------------------------------- attention
def _mha_pair(batch_first, **kw):
    torch.manual_seed(0)
    return (tnn.MultiheadAttention(8, 2, batch_first=batch_first, **kw),
            nn.MultiheadAttention(8, 2, batch_first=batch_first, **kw))


@pytest.mark.parametrize("batch_first", [True, False])
def test_mha_self_attention(batch_first):
    t, e = _mha_pair(batch_first)
    x = randn(2, 5, 8) if batch_first else randn(5, 2, 8)
    compare(t, e, x, x, x, pick=lambda o: o[0])


def test_mha_weights_and_cross_attention():
    t, e = _mha_pair(True)
    q, kv = randn(2, 3, 8), randn(2, 4, 8)
    compare(t, e, q, kv, kv, pick=lambda o: o[1])
    compare(t, e, q, kv, kv, pick=lambda o: o[1],
            forward_kwargs={"average_attn_weights": False})


def test_mha_masks():
    t, e = _mha_pair(True)
    x = randn(2, 4, 8)
    kpm = np.array([[False, False, True, False], [False, False, False, True]])
    bool_mask = np.triu(np.ones((4, 4), dtype=bool), 1)
    compare(t, e, x, x, x, pick=lambda o: o[0],
            forward_kwargs={"key_padding_mask": kpm, "attn_mask": bool_mask})
    float_mask = randn(4, 4)
    compare(t, e, x, x, x, pick=lambda o: o[0], forward_kwargs={"attn_mask": float_mask})


def test_mha_is_causal_matches_explicit_mask():
    t, e = _mha_pair(True)
    x = randn(1, 4, 8)
    causal = np.triu(np.ones((4, 4), dtype=bool), 1)
    compare(t, e, x, x, x, pick=lambda o: o[0], forward_kwargs={"attn_mask": causal})
    e.to("numpy")
    a = e(to_ember(x, "numpy"), to_ember(x, "numpy"), to_ember(x, "numpy"), is_causal=True)[0]
    b = e(to_ember(x, "numpy"), to_ember(x, "numpy"), to_ember(x, "numpy"),
          attn_mask=to_ember(causal, "numpy"))[0]
    np.testing.assert_allclose(a.numpy(), b.numpy())


@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_encoder(norm_first):
    torch.manual_seed(0)
    kw = {"dim_feedforward": 16, "dropout": 0.0, "batch_first": True, "norm_first": norm_first}
    t = tnn.TransformerEncoder(tnn.TransformerEncoderLayer(8, 2, **kw), 2,
                               enable_nested_tensor=False)
    e = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, **kw), 2)
    assert sorted(dict(t.named_parameters())) == sorted(dict(e.named_parameters()))
    kpm = np.array([[False, False, False], [False, False, True]])
    compare(t, e, randn(2, 3, 8), forward_kwargs={"src_key_padding_mask": kpm})


@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_decoder(norm_first):
    torch.manual_seed(0)
    kw = {"dim_feedforward": 16, "dropout": 0.0, "norm_first": norm_first,
          "activation": "gelu"}
    t = tnn.TransformerDecoder(tnn.TransformerDecoderLayer(8, 2, **kw), 2, tnn.LayerNorm(8))
    e = nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, **kw), 2, nn.LayerNorm(8))
    mask = np.triu(np.full((3, 3), -np.inf), 1)
    compare(t, e, randn(3, 2, 8), randn(4, 2, 8), forward_kwargs={"tgt_mask": mask})


def test_positional_encoding_formula():
    pe = nn.PositionalEncoding(6, max_len=10)
    x = randn(2, 4, 6).astype(np.float32)
    pos = np.arange(4)[:, None]
    i = np.arange(6)[None, :]
    angle = pos / 10000 ** ((i - i % 2) / 6)
    table = np.where(i % 2 == 0, np.sin(angle), np.cos(angle))
    np.testing.assert_allclose(pe(ember.tensor(x)).numpy(), x + table, rtol=1e-5, atol=1e-6)
    assert "pe" not in pe.state_dict()


@pytest.mark.parametrize("interleaved", [True, False])
def test_rotary_encoding(interleaved):
    rope = nn.RotaryEncoding(4, max_len=16, interleaved=interleaved)
    x = randn(2, 3, 4)
    start = 2
    pos = np.arange(start, start + 3)[:, None]
    theta = pos * 10000.0 ** (-2 * np.arange(2) / 4)  # (L, 2)
    if interleaved:
        a, b = x[..., 0::2], x[..., 1::2]
    else:
        a, b = x[..., :2], x[..., 2:]
    ra, rb = a * np.cos(theta) - b * np.sin(theta), a * np.sin(theta) + b * np.cos(theta)
    expected = np.stack([ra, rb], -1).reshape(x.shape) if interleaved else np.concatenate(
        [ra, rb], -1)
    got = rope(ember.tensor(x.astype(np.float32)), start=start).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------- recurrent
@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
@pytest.mark.parametrize("config", [
    {"num_layers": 1},
    {"num_layers": 2, "bidirectional": True, "batch_first": True},
])
def test_rnn_matches_torch(kind, config):
    torch.manual_seed(0)
    t = getattr(tnn, kind)(3, 4, **config)
    e = getattr(nn, kind)(3, 4, **config)
    assert sorted(dict(t.named_parameters())) == sorted(dict(e.named_parameters()))
    compare(t, e, randn(2, 5, 3) if config.get("batch_first") else randn(5, 2, 3),
            pick=lambda o: o[0])
    compare(t, e, randn(5, 2, 3) if not config.get("batch_first") else randn(2, 5, 3),
            pick=lambda o: o[1][0] if kind == "LSTM" else o[1])


def test_lstm_initial_state_and_unbatched():
    torch.manual_seed(0)
    t, e = tnn.LSTM(3, 4), nn.LSTM(3, 4)
    h0, c0 = randn(1, 2, 4), randn(1, 2, 4)
    x = randn(5, 2, 3)
    t = t.double()
    e.to(AD, dtype=ember.float64)
    copy_weights(t, e)
    to, (th, tc) = t(torch.tensor(x), (torch.tensor(h0), torch.tensor(c0)))
    eo, (eh, ec) = e(to_ember(x), (to_ember(h0), to_ember(c0)))
    for a, b in ((eo, to), (eh, th), (ec, tc)):
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=1e-8)
    to, _ = t(torch.tensor(x[:, 0]))
    eo, _ = e(to_ember(x[:, 0]))
    np.testing.assert_allclose(eo.numpy(), to.detach().numpy(), rtol=1e-8)
