"""RecNMP's RankCache: an SRAM in each rank unit (buffer chip) that serves repeated rows.

Per rank unit, rows seen at least ``cache_reuse_threshold`` times in the batch are kept after
their first read, hottest first while they fit in ``cache_kib``; their later lookups are hits.
"""

from __future__ import annotations

import numpy as np

from nmp.arch.spec import LEVELS
from nmp.units import KIB


def rank_cache_hits(spec, flat, level, node, order, info) -> np.ndarray:
    """Which lookups the rank units' caches serve (bool per lookup); ``order`` is the issue
    order, so a row's first read is its first lookup in that order."""
    hit = np.zeros(flat.n, dtype=bool)
    cache = spec.rank.cache_kib
    li = LEVELS.index("rank")
    sel = np.flatnonzero(level[order] == li)
    idx = order[sel]
    key = node[idx] * (int(flat.grow.max()) + 1) + flat.grow[idx]
    uniq, first, inv, counts = np.unique(
        key, return_index=True, return_inverse=True, return_counts=True
    )
    unode = node[idx][first]
    ubytes = flat.row_bytes[idx][first]
    cand = counts >= spec.rank.cache_reuse_threshold
    # hottest first within each node, admitted while they fit
    rank_order = np.lexsort((-counts, unode))
    csum = np.zeros(uniq.size, dtype=np.float64)
    cb = np.where(cand[rank_order], ubytes[rank_order], 0).astype(np.float64)
    csum_sorted = np.cumsum(cb)
    node_sorted = unode[rank_order]
    starts = np.searchsorted(node_sorted, node_sorted, side="left")
    before = np.concatenate([[0.0], csum_sorted])[starts]
    csum[rank_order] = csum_sorted - before
    admitted = cand & (csum <= cache * KIB)
    is_first = np.zeros(idx.size, dtype=bool)
    is_first[first] = True
    hit[idx] = admitted[inv] & ~is_first
    info["cache_hits"] = int(hit.sum())
    info["cache_rows"] = int(admitted.sum())
    return hit


__all__ = ["rank_cache_hits"]
