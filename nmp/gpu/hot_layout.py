"""A table laid out with its hot rows first, and the access-policy window over them.

Why a layout: CUDA's access-policy window is one contiguous extent ``[base_ptr, base_ptr +
num_bytes)`` and ``num_bytes`` is limited by ``cudaDevAttrMaxAccessPolicyWindowSize`` (CUDA
Runtime API, ``cudaAccessPolicyWindow``; 134,217,728 B on the H200, measured). A window over a
whole gpu-micro24 table (256,000,000 B) is refused, and the workloads scatter their hottest rows
over the table (``WorkloadSpec.scatter``: a seeded rank -> row bijection), so a window over any
contiguous part of the table in its drawn order would hold few of them. What a deployment does
instead, and what both the real kernel and the model do here: reorder the table once, offline,
by profiled frequency, hottest rows first (frequency-ordered embedding placement, as in
FAE / RecShard-style hot/cold splits), and remap every index through the same permutation when
the batch is prepared. Each lookup then reads the same row values in the same order, so the
pooled output is bit-identical to ``EmbeddingBag`` on the unpermuted table, and the hot rows are
one region of ``rows x row_bytes`` bytes at the table's start, which the window covers.

The remap is a one-time table copy plus an index gather outside the timed kernel (the indices
arrive remapped, as a data loader would give them); neither is charged.

``hitRatio`` (CUDA Runtime API: "percentage of lines assigned hitProp, rest are assigned
missProp"): ``min(1, set-aside / window bytes)``, the CUDA programming guide's advice (L2 access
management: a hit-ratio window larger than the set-aside thrashes it). The hot set of 60K rows at
512 B (30,720,000 B) fits the H200's 39,321,600-B set-aside, so the ratio there is 1.
"""

from __future__ import annotations

import numpy as np

from nmp.errors import NmpError


def hot_first_order(rows: int, hot: np.ndarray) -> np.ndarray:
    """The new layout's row order: ``order[i]`` is the old row stored at new row ``i``; the hot
    rows first (in the order given: hottest first), then every other row in its old order."""
    hot = np.asarray(hot, dtype=np.int64)
    is_hot = np.zeros(rows, dtype=bool)
    is_hot[hot] = True
    if int(np.count_nonzero(is_hot)) != hot.shape[0]:
        raise NmpError("the hot rows repeat a row: no permutation puts them first")
    return np.concatenate([hot, np.flatnonzero(~is_hot)])


def new_positions(order: np.ndarray) -> np.ndarray:
    """The inverse of ``order``: ``pos[old_row]`` is the row's place in the new layout."""
    pos = np.empty_like(order)
    pos[order] = np.arange(order.shape[0], dtype=order.dtype)
    return pos


def remap_indices(indices: np.ndarray, order: np.ndarray) -> np.ndarray:
    """``indices`` into the table laid out by ``order`` (``weight[order]``)."""
    return new_positions(order)[np.asarray(indices, dtype=np.int64)]


def window_bytes(hot_rows: int, row_bytes: int) -> int:
    """Bytes of the access-policy window over the first ``hot_rows`` rows of the new layout."""
    return int(hot_rows) * int(row_bytes)


def check_window(nbytes: int, max_window_bytes: int, where: str) -> None:
    """CUDA refuses a window over ``cudaDevAttrMaxAccessPolicyWindowSize``: say so before."""
    if nbytes > max_window_bytes:
        raise NmpError(
            f"{where}: an access-policy window of {nbytes:,} B (the hot rows) exceeds the "
            f"device's largest, {max_window_bytes:,} B (cudaDevAttrMaxAccessPolicyWindowSize); "
            "pin fewer rows (pinning.rows)"
        )
    if nbytes <= 0:
        raise NmpError(f"{where}: an access-policy window needs at least one hot row")


def window_hit_ratio(set_aside_bytes: float, nbytes: int, hit_ratio: float = 0.0) -> float:
    """``hit_ratio`` if set (> 0), else ``min(1, set-aside / window bytes)`` (module docstring)."""
    if hit_ratio > 0.0:
        return float(hit_ratio)
    return min(1.0, float(set_aside_bytes) / nbytes) if nbytes > 0 else 0.0
