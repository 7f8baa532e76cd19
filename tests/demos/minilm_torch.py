"""An independent all-MiniLM-L6-v2 in PyTorch, written from the Hugging Face BertModel layout
and read from the package's safetensors by hand (no ember, no transformers): the reference of
tests/demos/test_embed.py and the peer of benchmarks/bench_embed.py."""

from __future__ import annotations

import json
import math
import struct

import numpy as np


def read_safetensors(path) -> dict:
    """The file's tensors as numpy arrays (the format parsed here, not by ember)."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        body = f.read()
    dtypes = {"F32": np.float32, "I64": np.int64}
    return {k: np.frombuffer(body[v["data_offsets"][0]:v["data_offsets"][1]],
                             dtypes[v["dtype"]]).reshape(v["shape"])
            for k, v in header.items() if k != "__metadata__"}


def torch_minilm(path, dtype, device="cpu"):
    """``embed(ids, mask)`` -> (N, 384) unit-length sentence embeddings (torch tensors in,
    torch tensor out, on ``device``): BERT, mean pooling over real tokens, L2 normalisation."""
    import torch

    F = torch.nn.functional
    w = {k: torch.from_numpy(v.copy()).to(device, dtype) for k, v in read_safetensors(path).items()
         if v.dtype == np.float32}

    def ln(x, p):
        return F.layer_norm(x, (384,), w[p + ".weight"], w[p + ".bias"], eps=1e-12)

    def lin(x, p):
        return F.linear(x, w[p + ".weight"], w[p + ".bias"])

    def embed(ids, mask):
        n, t = ids.shape
        mask = mask.to(dtype)
        x = (w["embeddings.word_embeddings.weight"][ids]
             + w["embeddings.position_embeddings.weight"][:t]
             + w["embeddings.token_type_embeddings.weight"][0])
        x = ln(x, "embeddings.LayerNorm")
        bias = (1 - mask)[:, None, None, :] * -1e9
        for i in range(6):
            p = f"encoder.layer.{i}."
            q, k, v = (lin(x, p + "attention.self." + s).view(n, t, 12, 32).transpose(1, 2)
                       for s in ("query", "key", "value"))
            att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(32) + bias, -1) @ v
            x = ln(x + lin(att.transpose(1, 2).reshape(n, t, 384), p + "attention.output.dense"),
                   p + "attention.output.LayerNorm")
            h = F.gelu(lin(x, p + "intermediate.dense"))
            x = ln(x + lin(h, p + "output.dense"), p + "output.LayerNorm")
        pooled = (x * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)
        return F.normalize(pooled, dim=1)

    return embed
