"""Sparse optimizers for embedding rows held as records ``[value (dim) | state]`` in float32.

The near-memory store keeps each embedding row together with its optimizer state in one record,
so one parity protects both (ECRec codes the optimizer state with the table). The optimizer is a
pure function ``(old records, row gradients) -> new records``, vectorized over the touched rows;
running it twice on the same inputs gives the same bits.
"""

from __future__ import annotations

import numpy as np

OPTIMIZERS = ("sgd", "adagrad")


def state_width(name: str) -> int:
    """float32 words of optimizer state per row."""
    return {"sgd": 0, "adagrad": 1}[name]


def apply_rows(
    name: str, records: np.ndarray, grad: np.ndarray, *, lr: float, eps: float = 1e-8
) -> np.ndarray:
    """New records for the touched rows. ``records`` [n, dim+state], ``grad`` [n, dim].

    ``adagrad`` is row-wise Adagrad (one accumulator per row, as in DLRM/torchrec):
    ``acc += mean(g^2)``, ``row -= lr * g / (sqrt(acc) + eps)``.
    """
    dim = grad.shape[1]
    out = records.copy()
    if name == "sgd":
        out[:, :dim] -= np.float32(lr) * grad
        return out
    if name == "adagrad":
        acc = records[:, dim] + np.einsum("ij,ij->i", grad, grad) / np.float32(dim)
        out[:, dim] = acc
        scale = np.float32(lr) / (np.sqrt(acc) + np.float32(eps))
        out[:, :dim] -= scale[:, None] * grad
        return out
    raise ValueError(f"unknown optimizer '{name}' (known: {', '.join(OPTIMIZERS)})")
