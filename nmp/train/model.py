"""The dense half of DLRM in torch (facebookresearch/dlrm conventions, PAPERS.md "DLRM").

Bottom MLP on the dense features -> (pooled embeddings, one per sparse feature, computed by the
memory-side store) -> dot interaction (strictly lower triangle of T·Tᵀ, concatenated with the
bottom output) -> top MLP -> logit. The loss is BCE on the sigmoid of the logit.

The embedding tables are *not* torch parameters here: they live in the near-memory store
(:mod:`nmp.train.store`), which gathers and sum-pools them. The pooled vectors enter this module
as leaf tensors with ``requires_grad``; their gradients go back to the store, which applies the
sparse optimizer row by row (and keeps parity). :class:`TorchDLRM` is the plain-torch twin with
``nn.EmbeddingBag`` tables, used as the reference and in the benchmark.
"""

from __future__ import annotations

import torch
from torch import nn


def mlp(sizes: tuple[int, ...], *, sigmoid_last: bool = False) -> nn.Sequential:
    """Linear+ReLU stack over ``sizes`` (input first); the last layer has no ReLU."""
    layers: list[nn.Module] = []
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2:
            layers.append(nn.ReLU())
    if sigmoid_last:
        layers.append(nn.Sigmoid())
    return nn.Sequential(*layers)


def interaction_dim(num_tables: int, dim: int) -> int:
    """Width of the top MLP's input: bottom output + pairs of the (T+1) feature vectors."""
    n = num_tables + 1
    return dim + n * (n - 1) // 2


class DenseDLRM(nn.Module):
    """Bottom MLP, dot interaction, top MLP; the embeddings come from outside."""

    _li: torch.Tensor  # lower-triangle indices of the interaction (buffers)
    _lj: torch.Tensor

    def __init__(
        self,
        num_dense: int,
        num_tables: int,
        dim: int,
        bottom: tuple[int, ...],
        top: tuple[int, ...],
    ) -> None:
        super().__init__()
        if bottom[-1] != dim:
            raise ValueError(f"bottom MLP must end at the embedding dim {dim}, got {bottom[-1]}")
        self.bottom = mlp((num_dense, *bottom))
        self.top = mlp((interaction_dim(num_tables, dim), *top))
        n = num_tables + 1
        rows, cols = torch.tril_indices(n, n, offset=-1)
        self.register_buffer("_li", rows, persistent=False)
        self.register_buffer("_lj", cols, persistent=False)

    def forward(self, dense: torch.Tensor, pooled: torch.Tensor) -> torch.Tensor:
        """``dense`` [B, 13], ``pooled`` [B, T, dim] -> logits [B]."""
        x = self.bottom(dense)
        t = torch.cat([x.unsqueeze(1), pooled], dim=1)  # [B, T+1, dim]
        z = torch.bmm(t, t.transpose(1, 2))  # [B, T+1, T+1]
        inter = z[:, self._li, self._lj]
        return self.top(torch.cat([x, inter], dim=1)).squeeze(1)


class TorchDLRM(nn.Module):
    """Plain-torch DLRM with ``nn.EmbeddingBag(mode="sum")`` tables (the reference)."""

    def __init__(
        self,
        num_dense: int,
        table_rows: tuple[int, ...],
        dim: int,
        bottom: tuple[int, ...],
        top: tuple[int, ...],
    ) -> None:
        super().__init__()
        self.dense = DenseDLRM(num_dense, len(table_rows), dim, bottom, top)
        self.tables = nn.ModuleList(
            nn.EmbeddingBag(rows, dim, mode="sum", sparse=True) for rows in table_rows
        )

    def forward(
        self, dense: torch.Tensor, indices: list[torch.Tensor], offsets: list[torch.Tensor]
    ) -> torch.Tensor:
        pooled = torch.stack(
            [bag(idx, off) for bag, idx, off in zip(self.tables, indices, offsets, strict=True)],
            dim=1,
        )
        return self.dense(dense, pooled)
