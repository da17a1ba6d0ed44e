"""The arithmetic the units perform: gather rows, multiply-accumulate into partial sums, and
reduce partial sums up the tree (bank/bank-group unit -> rank unit -> host).

A *segment* is one partial sum: the rows of one bag (sample) of one table that one unit holds.
Each unit accumulates its segments in its SRAM buffer; each parent adds the partial sums of its
children. The kernels are compiled (numba); the Python side loops over tables only.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _gather_segments(seg, uinv, weights, values, nseg, col_lo, col_hi):  # pragma: no cover
    dim = col_hi - col_lo
    out = np.zeros((nseg, dim), dtype=np.float32)
    weighted = weights.shape[0] > 0
    for i in range(seg.shape[0]):
        s = seg[i]
        u = uinv[i]
        if weighted:
            w = weights[i]
            for c in range(dim):
                out[s, c] += w * values[u, col_lo + c]
        else:
            for c in range(dim):
                out[s, c] += values[u, col_lo + c]
    return out


@njit(cache=True)
def _reduce_segments(parent, partial, nparent):  # pragma: no cover
    out = np.zeros((nparent, partial.shape[1]), dtype=np.float32)
    for i in range(parent.shape[0]):
        p = parent[i]
        for c in range(partial.shape[1]):
            out[p, c] += partial[i, c]
    return out


_NO_WEIGHTS = np.empty(0, dtype=np.float32)


def gather_segments(
    seg: np.ndarray,
    uinv: np.ndarray,
    weights: np.ndarray | None,
    values: np.ndarray,
    nseg: int,
    cols: tuple[int, int] | None = None,
) -> np.ndarray:
    """Partial sums: ``out[seg[i]] += weights[i] * values[uinv[i], cols]`` (float32)."""
    lo, hi = cols if cols is not None else (0, values.shape[1])
    w = _NO_WEIGHTS if weights is None else np.ascontiguousarray(weights, dtype=np.float32)
    return _gather_segments(
        np.ascontiguousarray(seg, dtype=np.int64),
        np.ascontiguousarray(uinv, dtype=np.int64),
        w,
        np.ascontiguousarray(values, dtype=np.float32),
        int(nseg),
        int(lo),
        int(hi),
    )


def reduce_segments(parent: np.ndarray, partial: np.ndarray, nparent: int) -> np.ndarray:
    """Add child partial sums into their parents: ``out[parent[i]] += partial[i]``."""
    return _reduce_segments(
        np.ascontiguousarray(parent, dtype=np.int64),
        np.ascontiguousarray(partial, dtype=np.float32),
        int(nparent),
    )


def segment_ids(*keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Dense ids of the distinct key tuples: (id per element, first element of each id, count).

    Keys are non-negative int64 arrays of equal length; ids follow the lexicographic order.
    """
    n = keys[0].shape[0]
    if n == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64), 0
    combined = np.zeros(n, dtype=np.int64)
    for k in keys:
        span = int(k.max()) + 1 if k.size else 1
        combined = combined * span + k
    uniq, first, inv = np.unique(combined, return_index=True, return_inverse=True)
    return inv.astype(np.int64), first.astype(np.int64), int(uniq.size)


__all__ = ["gather_segments", "reduce_segments", "segment_ids"]
