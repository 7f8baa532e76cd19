"""Embedding: a lookup table of ``num_embeddings`` vectors."""

from __future__ import annotations

from ...tensor import Tensor
from .. import init
from ..module import Module
from ._util import new_param


class Embedding(Module):
    """Rows of ``weight`` (num_embeddings, embedding_dim) picked by int indices.

    ``padding_idx``'s row starts at zero and receives no gradient (as torch).

    >>> import ember
    >>> from ember import nn
    >>> nn.Embedding(10, 3)(ember.tensor([[1, 2], [3, 4]])).shape
    (2, 2, 3)
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 backend=None, dtype=None):
        super().__init__()
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError(
                    f"Embedding: padding_idx {padding_idx} out of range for "
                    f"{num_embeddings} embeddings"
                )
            padding_idx %= num_embeddings
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.padding_idx = padding_idx
        self.weight = new_param((num_embeddings, embedding_dim), backend, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Re-draw the weight from N(0, 1) (the ``padding_idx`` row zeroed), as PyTorch does.

        >>> import ember
        >>> from ember import nn
        >>> emb = nn.Embedding(5, 3, padding_idx=0)
        >>> _ = nn.init.ones_(emb.weight); emb.reset_parameters()
        >>> emb.weight[0].abs().sum().item(), bool(emb.weight[1:].abs().sum() > 0)
        (0.0, True)
        """
        init.normal_(self.weight)
        if self.padding_idx is not None:
            from ...ops.creation import tensor

            w = self.weight.data
            keep = tensor([float(i != self.padding_idx) for i in range(self.num_embeddings)],
                          dtype=w.dtype, backend=w.backend)
            self.weight.assign(w * keep.unsqueeze(1))

    def forward(self, indices: Tensor) -> Tensor:
        if indices.dtype.is_float:
            raise TypeError(f"Embedding: indices must be integers, got {indices.dtype}")
        flat = indices.reshape(-1).long()
        rows = self.weight.index_select(0, flat)
        if self.padding_idx is not None:
            # multiply by the mask so the padding row gets no gradient
            rows = rows * (flat != self.padding_idx).unsqueeze(1).to(rows.dtype)
        return rows.reshape(*indices.shape, self.embedding_dim)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        return s + (f", padding_idx={self.padding_idx}" if self.padding_idx is not None else "")
