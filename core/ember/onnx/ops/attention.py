"""Attention (opset 23+): scaled dot-product attention with masks, KV cache, grouped heads,
softcap and sliding windows, written with ember ops (so it runs on every backend)."""

from __future__ import annotations

import math

import ember

from .._types import onnx_dtype
from . import op
from ._util import like


def _heads(x, n: int):
    """(B, S, n*d) -> (B, n, S, d)."""
    b, s, hidden = x.shape
    return x.reshape(b, s, n, hidden // n).permute((0, 2, 1, 3))


def _repeat_heads(x, reps: int):
    """(B, h, L, d) -> (B, h*reps, L, d), each head repeated in place: h0 h0 h1 h1 ..."""
    b, h, n, d = x.shape
    return x.unsqueeze(2).expand(b, h, reps, n, d).reshape(b, h * reps, n, d)


def _offset_mask(q_len: int, kv_len: int, offset, allow, backend):
    """True where query i may see key j, given ``allow(diff)`` on ``diff = i + offset - j``;
    ``offset`` is an int or a (B,) tensor (then the result is (B, 1, S, L))."""
    i = ember.arange(q_len, dtype=ember.int64, backend=backend).reshape(q_len, 1)
    j = ember.arange(kv_len, dtype=ember.int64, backend=backend).reshape(1, kv_len)
    if isinstance(offset, int):
        return allow(i + offset - j)
    return allow(i + offset.astype(ember.int64).reshape(-1, 1, 1, 1) - j)


def _bias(mask, dtype):
    """A boolean mask as an additive bias (0 where allowed, -inf elsewhere)."""
    return ember.where(mask, like(ember.zeros(1, dtype=dtype, backend=mask.backend), 0.0),
                       like(ember.zeros(1, dtype=dtype, backend=mask.backend), -math.inf))


@op("Attention")
def attention(ctx, q, k, v, attn_mask=None, past_key=None, past_value=None,
              nonpad_kv_seqlen=None, is_causal=0, kv_num_heads=None, q_num_heads=None,
              qk_matmul_output_mode=0, scale=None, softcap=0.0, softmax_precision=None,
              left_window_size=-1, right_window_size=-1):
    three_d = q.ndim == 3
    if three_d:
        q, k, v = _heads(q, q_num_heads), _heads(k, kv_num_heads), _heads(v, kv_num_heads)
    dt, be = q.dtype, q.backend
    s = like(q, math.sqrt(scale if scale is not None else 1 / math.sqrt(q.shape[3])))
    if past_key is not None:
        k, v = ember.cat([past_key, k], dim=2), ember.cat([past_value, v], dim=2)
    present_k, present_v = k, v
    q_len, kv_len = q.shape[2], k.shape[2]
    bias = ember.zeros(q_len, kv_len, dtype=dt, backend=be)
    if attn_mask is not None:
        pad = kv_len - attn_mask.shape[-1]
        if pad > 0:  # a shorter mask leaves the keys past its end masked
            fill = ember.full((*attn_mask.shape[:-1], pad), False if attn_mask.dtype ==
                              ember.bool_ else -math.inf, dtype=attn_mask.dtype, backend=be)
            attn_mask = ember.cat([attn_mask, fill], dim=-1)
        bias = bias + (_bias(attn_mask, dt) if attn_mask.dtype == ember.bool_
                       else attn_mask.astype(dt))
    if past_key is None and nonpad_kv_seqlen is not None:
        offset = nonpad_kv_seqlen - q_len  # an external cache: a frontier per batch
    else:
        offset = past_key.shape[2] if past_key is not None else 0
    if is_causal:
        bias = bias + _bias(_offset_mask(q_len, kv_len, offset, lambda d: d >= 0, be), dt)
    if left_window_size >= 0 or right_window_size >= 0:
        def window(d):
            ok = d == d
            if left_window_size >= 0:
                ok = ok & (d <= left_window_size)
            if right_window_size >= 0:
                ok = ok & (-d <= right_window_size)
            return ok
        bias = bias + _bias(_offset_mask(q_len, kv_len, offset, window, be), dt)
    if nonpad_kv_seqlen is not None:
        j = ember.arange(kv_len, dtype=ember.int64, backend=be)
        valid = j.reshape(1, 1, 1, kv_len) < nonpad_kv_seqlen.astype(ember.int64).reshape(
            -1, 1, 1, 1)
        bias = bias + _bias(valid, dt)
    hq, hk = q.shape[1], k.shape[1]
    if hq != hk and hq % hk == 0:
        k, v = _repeat_heads(k, hq // hk), _repeat_heads(v, hq // hk)
    qk = (q * s) @ (k * s).permute((0, 1, 3, 2))
    if softcap and softcap > 0:
        qk = ember.tanh(qk / like(qk, softcap)) * like(qk, softcap)
    logits = qk + bias
    qk_out = logits if qk_matmul_output_mode == 2 else qk
    if softmax_precision is not None:
        logits = logits.astype(onnx_dtype(softmax_precision, "Attention"))
    p = _masked_softmax(logits)
    # a row whose every key is masked attends to nothing (judged on the bias, not the logits)
    dead = ember.amax(bias, dim=-1, keepdim=True) == like(bias, -math.inf)
    p = ember.where(dead, like(p, 0.0), p)
    if qk_matmul_output_mode == 3:
        qk_out = p
    y = p.astype(dt) @ v
    if three_d:
        y = y.permute((0, 2, 1, 3))
        y = y.reshape(y.shape[0], y.shape[1], -1)
    return y, present_k, present_v, qk_out.astype(dt)


def _masked_softmax(x):
    """Softmax over the last axis; a row that is all -inf gives zeros, not NaN."""
    m = ember.amax(x, dim=-1, keepdim=True)
    m = ember.where(m == like(m, -math.inf), like(m, 0.0), m)
    e = ember.exp(x - m)
    total = ember.sum(e, dim=-1, keepdim=True)
    return e / ember.where(total == like(total, 0.0), like(total, 1.0), total)


@op("RotaryEmbedding")
def rotary_embedding(ctx, x, cos_cache, sin_cache, position_ids=None, interleaved=0,
                     num_heads=0, rotary_embedding_dim=0):
    shape = x.shape
    # work on (B, S, heads, head_size)
    if x.ndim == 4:
        x = x.permute((0, 2, 1, 3))
    else:
        x = x.reshape(shape[0], shape[1], num_heads, shape[2] // num_heads)
    rd = rotary_embedding_dim or x.shape[3]
    rot, rest = x[..., :rd], x[..., rd:]
    if position_ids is not None:
        cos_cache = ember.index_select(cos_cache, 0, position_ids.reshape(-1)).reshape(
            *position_ids.shape, -1)
        sin_cache = ember.index_select(sin_cache, 0, position_ids.reshape(-1)).reshape(
            *position_ids.shape, -1)
    cos, sin = cos_cache.unsqueeze(2), sin_cache.unsqueeze(2)
    x1, x2 = (rot[..., 0::2], rot[..., 1::2]) if interleaved else (rot[..., :rd // 2],
                                                                     rot[..., rd // 2:])
    real, imag = cos * x1 - sin * x2, sin * x1 + cos * x2
    if interleaved:  # real and imaginary parts back in alternate slots
        rot = ember.stack([real, imag], dim=-1).reshape(rot.shape)
    else:
        rot = ember.cat([real, imag], dim=-1)
    y = ember.cat([rot, rest], dim=-1) if rest.shape[-1] else rot
    return y.permute((0, 2, 1, 3)) if len(shape) == 4 else y.reshape(shape)


@op("ai.onnx.preview.FlexAttention")
def flex_attention(ctx, q, k, v, scale=None, score_mod=None, prob_mod=None,
                   softmax_precision=None):
    """Attention whose scores and probabilities pass through user graphs (``score_mod``,
    ``prob_mod``: one tensor in, one out), e.g. a causal mask or a soft cap."""
    hq, hk = q.shape[1], k.shape[1]
    if hq != hk:
        k, v = _repeat_heads(k, hq // hk), _repeat_heads(v, hq // hk)
    root = math.sqrt(scale if scale is not None else 1 / math.sqrt(q.shape[3]))
    s = like(q, float(ember.tensor(root, dtype=ember.float32)))  # float32 sqrt, as ONNX's
    scores = (q * s) @ (k * s).permute((0, 1, 3, 2))
    work = (onnx_dtype(softmax_precision, "FlexAttention") if softmax_precision is not None
            else ember.float32 if q.dtype.itemsize < 4 else q.dtype)
    scores = scores.astype(work)
    if score_mod is not None:
        scores = ctx.run(score_mod, [scores])[0].astype(work)
    e = ember.exp(scores - ember.amax(scores, dim=-1, keepdim=True))
    p = e / ember.sum(e, dim=-1, keepdim=True)
    if prob_mod is not None:
        p = ctx.run(prob_mod, [p])[0].astype(work)
    return (p @ v.astype(work)).astype(v.dtype)
