"""Sparse optimizers for embedding rows held as records ``[value (dim) | state]`` in float32.

The near-memory store keeps each embedding row together with its optimizer state in one record,
so one parity protects both (ECRec codes the optimizer state with the table; PAPERS.md: the
difference propagation works for any stateful optimizer). The optimizer is a pure function
``(old records, row gradients) -> new records``, vectorized over the touched rows; running it
twice on the same inputs gives the same bits.

- ``sgd``: no state.
- ``adagrad``: row-wise Adagrad (one accumulator per row, as DLRM/torchrec's row-wise Adagrad):
  ``acc += mean(g^2)``, ``row -= lr * g / (sqrt(acc) + eps)``; 1 state word.
- ``adam``: Adam (Kingma & Ba, ICLR 2015; defaults beta1 0.9, beta2 0.999, eps 1e-8) with the
  moments per element and a step count per row (lazy/sparse Adam: a row's moments and bias
  correction advance only when the row is touched, as torch.optim.SparseAdam and TF LazyAdam do
  for the moments). The count lives in the record (exact in float32 up to 2^24 updates) so every
  state word of the row is in the parity; 2 * dim + 1 state words.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from nmp.registry import Registry

ADAM_BETA1, ADAM_BETA2 = 0.9, 0.999  # Kingma & Ba 2015, the paper's defaults


@dataclass(frozen=True)
class SparseOptimizer:
    """A row optimizer: its state words per row and its update of the touched records."""

    name: str
    description: str
    state_words: Callable[[int], int]  # dim -> float32 words of state per row
    apply: Callable[..., np.ndarray]  # (records, grad, dim, lr, eps) -> the new records


@dataclass(frozen=True)
class DenseOptimizer:
    """The MLP's optimizer: whether it keeps a velocity per weight (momentum SGD)."""

    name: str
    description: str
    keeps_velocity: bool


#: The embedding rows' optimizers (``train.optimizer``) and the MLP's (``train.dense_optimizer``).
OPTIMIZERS: Registry[SparseOptimizer] = Registry("sparse optimizer")
DENSE_OPTIMIZERS: Registry[DenseOptimizer] = Registry("dense optimizer")


def state_width(name: str, dim: int) -> int:
    """float32 words of optimizer state per row."""
    return _get(name).state_words(dim)


def apply_rows(
    name: str, records: np.ndarray, grad: np.ndarray, *, lr: float, eps: float = 1e-8
) -> np.ndarray:
    """New records for the touched rows. ``records`` [n, dim+state], ``grad`` [n, dim]."""
    return _get(name).apply(records, grad, grad.shape[1], lr, eps)


def _get(name: str) -> SparseOptimizer:
    if name not in OPTIMIZERS:
        raise ValueError(OPTIMIZERS.unknown_message(name))
    return OPTIMIZERS.get(name)


def _sgd(records: np.ndarray, grad: np.ndarray, dim: int, lr: float, eps: float) -> np.ndarray:
    out = records.copy()
    out[:, :dim] -= np.float32(lr) * grad
    return out


def _adagrad(records: np.ndarray, grad: np.ndarray, dim: int, lr: float, eps: float) -> np.ndarray:
    out = records.copy()
    acc = records[:, dim] + np.einsum("ij,ij->i", grad, grad) / np.float32(dim)
    out[:, dim] = acc
    scale = np.float32(lr) / (np.sqrt(acc) + np.float32(eps))
    out[:, :dim] -= scale[:, None] * grad
    return out


def _adam(records: np.ndarray, grad: np.ndarray, dim: int, lr: float, eps: float) -> np.ndarray:
    out = records.copy()
    b1, b2 = np.float32(ADAM_BETA1), np.float32(ADAM_BETA2)
    m = b1 * records[:, dim : 2 * dim] + (np.float32(1) - b1) * grad
    v = b2 * records[:, 2 * dim : 3 * dim] + (np.float32(1) - b2) * grad * grad
    t = records[:, 3 * dim] + np.float32(1)
    corr1 = np.float32(1) - b1 ** t.astype(np.float64)
    corr2 = np.float32(1) - b2 ** t.astype(np.float64)
    step = (np.float32(lr) * np.sqrt(corr2) / corr1).astype(np.float32)
    out[:, dim : 2 * dim] = m
    out[:, 2 * dim : 3 * dim] = v
    out[:, 3 * dim] = t
    out[:, :dim] -= step[:, None] * m / (np.sqrt(v) + np.float32(eps))
    return out


OPTIMIZERS.register(SparseOptimizer("sgd", "plain SGD, no state", lambda dim: 0, _sgd))
OPTIMIZERS.register(
    SparseOptimizer("adagrad", "row-wise Adagrad, 1 state word", lambda dim: 1, _adagrad)
)
OPTIMIZERS.register(
    SparseOptimizer("adam", "lazy Adam, moments + a step count", lambda dim: 2 * dim + 1, _adam)
)
DENSE_OPTIMIZERS.register(DenseOptimizer("sgd", "plain SGD (dlrm_s_pytorch's)", False))
DENSE_OPTIMIZERS.register(DenseOptimizer("momentum", "heavy-ball SGD, a velocity per weight", True))
