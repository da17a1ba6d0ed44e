"""Rows by popularity rank: the seeded map from a rank (0 = hottest) to a table row, and the
hot-set draws built on it. The access distributions (:mod:`nmp.workload.distributions`) and the
batch generator (:mod:`nmp.workload.batch`) both use it; it uses neither (no file cycle).
"""

from __future__ import annotations

import functools

import numpy as np

from nmp.workload import sampling
from nmp.workload.spec import WorkloadSpec

# Ranks below this are mapped through a cached table (the hot head of every skewed
# distribution lands there); only rarer ranks pay for the Feistel permutation.
_HEAD_RANKS = 1 << 16


@functools.lru_cache(maxsize=128)
def _head_rows(seed: int, table: int, rows: int, head: int) -> np.ndarray:
    keys = sampling.permutation_keys(seed, table)
    out = sampling.permute(np.arange(head, dtype=np.int64), rows, keys)
    out.setflags(write=False)
    return out


def ranked_rows(spec: WorkloadSpec, table: int, ranks: np.ndarray | int) -> np.ndarray:
    """The rows of the given popularity ranks (0 = hottest by construction) of ``table``.

    ``ranks`` may be an int k, meaning ranks 0..k-1: ``ranked_rows(spec, t, 60_000)`` are the
    60K rows the generator makes hottest (for zipf, pareto and reuse; any rows for uniform).
    With ``scatter`` the map is a seeded bijection of the table's rows that depends on
    (``spec.seed``, table) only; without, rank r is row r.
    """
    rows = spec.tables[table].rows
    if isinstance(ranks, int | np.integer):
        ranks = np.arange(min(int(ranks), rows), dtype=np.int64)
    ranks = np.asarray(ranks, dtype=np.int64)
    if not spec.scatter:
        return ranks.copy()
    head = min(rows, _HEAD_RANKS)
    head_rows = _head_rows(spec.seed, table, rows, head)
    if head == rows:
        return head_rows[ranks]
    if ranks.ndim == 1:
        # numba: loaded on use (start-up time)
        from nmp.workload._kernels import ranked_kernel

        half, mask = sampling._feistel_params(rows)
        keys = sampling.permutation_keys(spec.seed, table)
        out, ok = ranked_kernel(ranks, head_rows, rows, half, mask, keys)
        if ok:  # (negative ranks index from the end, as numpy does, below)
            return out
    out = head_rows[np.minimum(ranks, head - 1)]
    tail = np.flatnonzero(ranks >= head)
    if tail.size:
        keys = sampling.permutation_keys(spec.seed, table)
        out[tail] = sampling.permute(ranks[tail], rows, keys)
    return out


def reuse_rows(spec: WorkloadSpec, table: int, rng: np.random.Generator, n: int) -> np.ndarray:
    """Rows under the hot-set distribution: a hot access is a uniform (or Zipf(hot_alpha))
    rank of the hot set mapped by :func:`ranked_rows`; a cold access is uniform over the rows
    outside the hot set (drawn over the table, hot rows redrawn), which needs no permutation."""
    rows = spec.tables[table].rows
    hot_rows, hot_fraction = spec.hot_set(table)
    if hot_rows <= 0 or hot_fraction <= 0.0:
        # No hot set: uniform over the table, which any permutation leaves uniform.
        return rng.integers(0, rows, n, dtype=np.int64)
    if not spec.scatter or 2 * hot_rows > rows:
        ranks = sampling.reuse_ranks(rng, n, rows, hot_rows, hot_fraction, spec.hot_alpha)
        return ranked_rows(spec, table, ranks)
    members = _hot_members(spec.seed, table, rows, hot_rows)
    bitmap = _hot_bitmap(spec.seed, table, rows, hot_rows)
    out = np.empty(n, dtype=np.int64)
    if spec.hot_alpha > 0:
        hot = rng.random(n) < hot_fraction
        n_hot = int(np.count_nonzero(hot))
        out[hot] = members[sampling.zipf_ranks(rng, n_hot, hot_rows, spec.hot_alpha)]
        todo = np.flatnonzero(~hot)
    else:
        # numba: loaded on use (start-up time)
        from nmp.workload._kernels import reuse_kernel

        redraw = reuse_kernel(rng.random(n), hot_fraction, members, rows, bitmap, out)
        todo = np.flatnonzero(out < 0) if redraw else np.empty(0, dtype=np.int64)
    while todo.size:
        draw = rng.integers(0, rows, todo.size, dtype=np.int64)
        is_hot = ((bitmap[draw >> 3] >> (draw & 7).astype(np.uint8)) & 1).astype(bool)
        out[todo[~is_hot]] = draw[~is_hot]
        todo = todo[is_hot]
    return out


@functools.lru_cache(maxsize=64)
def _hot_members(seed: int, table: int, rows: int, hot_rows: int) -> np.ndarray:
    """Rows of ranks 0..hot_rows-1 (the hot set, in rank order)."""
    head = min(rows, _HEAD_RANKS)
    if hot_rows <= head:
        return _head_rows(seed, table, rows, head)[:hot_rows]
    keys = sampling.permutation_keys(seed, table)
    members = sampling.permute(np.arange(hot_rows, dtype=np.int64), rows, keys)
    members.setflags(write=False)
    return members


@functools.lru_cache(maxsize=64)
def _hot_bitmap(seed: int, table: int, rows: int, hot_rows: int) -> np.ndarray:
    """Membership bitmap (one bit per table row, little-endian in each byte) of the hot set."""
    mask = np.zeros(rows, dtype=bool)
    mask[_hot_members(seed, table, rows, hot_rows)] = True
    bitmap = np.packbits(mask, bitorder="little")
    bitmap.setflags(write=False)
    return bitmap


__all__ = ["ranked_rows", "reuse_rows"]
