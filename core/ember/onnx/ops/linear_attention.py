"""LinearAttention (opset 26): recurrent attention with a (d_k x d_v) state per head and the
linear, gated, delta and gated-delta update rules, step by step over the sequence in float32.
"""

from __future__ import annotations

import math

import ember

from . import op


def _heads(x, n: int):
    """(B, T, n*d) -> (B, n, T, d)."""
    b, t, hd = x.shape
    return x.reshape(b, t, n, hd // n).permute((0, 2, 1, 3))


@op("LinearAttention")
def linear_attention(ctx, query, key, value, past_state=None, decay=None, beta=None,
                     chunk_size=None, kv_num_heads=None, q_num_heads=None, scale=None,
                     update_rule="gated_delta"):
    gating = update_rule in ("gated", "gated_delta")
    delta = update_rule in ("delta", "gated_delta")
    if update_rule not in ("linear", "gated", "delta", "gated_delta"):
        raise ember.UnsupportedOpError(f"LinearAttention: update_rule {update_rule!r}; "
                                       "supported: linear, gated, delta, gated_delta")
    f32, out = ember.float32, query.dtype
    b, t, _ = query.shape
    hq, hk = q_num_heads, kv_num_heads
    d_k = query.shape[-1] // hq
    q = _heads(query, hq).astype(f32)
    k = _heads(key, hk).astype(f32)
    v = _heads(value, hk).astype(f32)
    d_v = v.shape[-1]
    if gating:  # one decay per head, or one per key dim
        g = (decay.reshape(b, t, hk, 1).permute((0, 2, 1, 3)) if decay.shape[-1] == hk
             else _heads(decay, hk)).astype(f32)
    if delta:
        bt = beta.reshape(b, t, beta.shape[-1], 1).permute((0, 2, 1, 3)).astype(f32)
    state_dtype = past_state.dtype if past_state is not None else out
    state = (past_state.astype(f32) if past_state is not None else
             ember.zeros(b, hk, d_k, d_v, dtype=f32, backend=query.backend))
    s = 1.0 / math.sqrt(d_k) if not scale else float(scale)
    group = hq // hk
    outs = []
    for i in range(t):
        k_t, v_t = k[:, :, i], v[:, :, i]
        if gating:
            state = state * ember.exp(g[:, :, i]).unsqueeze(-1)
        if delta:  # correct the value by what the state already recalls for this key
            recalled = (k_t.unsqueeze(-2) @ state).squeeze(-2)
            v_t = bt[:, :, i] * (v_t - recalled)
        state = state + k_t.unsqueeze(-1) * v_t.unsqueeze(-2)
        read = state if group == 1 else state.unsqueeze(2).expand(
            b, hk, group, d_k, d_v).reshape(b, hq, d_k, d_v)
        outs.append((q[:, :, i].unsqueeze(-2) @ read).squeeze(-2) * s)
    y = ember.stack(outs, dim=2).permute((0, 2, 1, 3)).reshape(b, t, hq * d_v)
    return y.astype(out), state.astype(state_dtype)
