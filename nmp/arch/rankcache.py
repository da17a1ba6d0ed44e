"""RecNMP's RankCache: an SRAM in each rank unit (buffer chip) that serves repeated rows.

The cache decides as the hardware can, access by access in issue order (a set-associative LRU,
:mod:`nmp.arch.lru_cache`, of ``cache_kib`` per rank unit), never from the batch's future. What
it allocates on a miss is the switch ``arch.rank.cache_policy``:

* ``"profile"``: the host sets each lookup's *locality bit* (RecNMP's instruction field) from its
  hot-entry profile (RecNMP: < 2 % overhead): rows looked up at least ``cache_reuse_threshold``
  times per batch in the access profile, which comes from other batches than the one run;
* ``"online"``: the unit counts the lookups of each row it has seen in this batch and allocates
  a row at its ``cache_reuse_threshold``-th lookup.

Like the host's LLC, the caches are at steady state when a batch starts: warmed by the batches
before it (seeded draws of the workload) until one batch's hit rate differs from the previous
one's by less than :data:`nmp.arch.lru_cache.STEADY_TOL`
(:func:`nmp.arch.placement.warm_rank_caches`); every timed
batch starts from a copy of that state.
"""

from __future__ import annotations

import numpy as np

from nmp.arch.lru_cache import LruCache
from nmp.arch.spec import LEVELS, RANK_CACHE_POLICIES
from nmp.units import KIB

# chosen: RecNMP does not state the RankCache's associativity; 8 ways is a common SRAM cache
# organization (a sweepable constant of small leverage: at 128 KiB and 256-B rows, 64 sets).
RANKCACHE_WAYS = 8


def _occurrence(ids: np.ndarray) -> np.ndarray:
    """For a sequence of ids: 1 for an id's first appearance, 2 for its second, ..."""
    order = np.argsort(ids, kind="stable")
    srt = ids[order]
    first = np.ones(srt.size, dtype=bool)
    first[1:] = srt[1:] != srt[:-1]
    start = np.maximum.accumulate(np.where(first, np.arange(srt.size), 0))
    out = np.empty(ids.size, dtype=np.int64)
    out[order] = np.arange(srt.size) - start + 1
    return out


def locality_bits(spec, flat, profile) -> np.ndarray:
    """The host's locality bit of every lookup: its row is looked up at least
    ``cache_reuse_threshold`` times per batch in the profile."""
    bits = np.zeros(flat.n, dtype=bool)
    if profile is None:
        return bits
    t = spec.rank.cache_reuse_threshold
    return profile.counts_of(flat.table, flat.row) / profile.batches >= t


def new_rank_caches(spec, layouts, row_bytes: list[int]) -> LruCache | None:
    """Cold RankCaches: ``cache_kib`` per rank unit, entries of the widest row (None without
    a RankCache)."""
    if spec.rank.cache_kib <= 0 or "rank" not in layouts:
        return None
    entry = max(int(max(row_bytes, default=1)), 1)
    return LruCache.of_bytes(
        layouts["rank"].nodes, spec.rank.cache_kib * KIB, entry, RANKCACHE_WAYS
    )


def rank_cache_hits(
    spec, flat, level, node, order, info, profile=None, cache: LruCache | None = None
) -> np.ndarray:
    """Which lookups the rank units' caches serve (bool per lookup), simulated in ``order``
    (the issue order) from the state ``cache`` (advanced in place; None: cold caches)."""
    hit = np.zeros(flat.n, dtype=bool)
    li = LEVELS.index("rank")
    idx = order[level[order] == li]
    if not idx.size:
        return hit
    unit_node = node[idx]
    if RANK_CACHE_POLICIES.get(spec.rank.cache_policy).admits_online:
        key = unit_node * (int(flat.grow.max()) + 1) + flat.grow[idx]
        admit = _occurrence(key) >= spec.rank.cache_reuse_threshold
    else:
        admit = locality_bits(spec, flat, profile)[idx]
    if cache is None:
        row_bytes = int(flat.row_bytes.max())
        cache = LruCache.of_bytes(
            int(unit_node.max()) + 1, spec.rank.cache_kib * KIB, row_bytes, RANKCACHE_WAYS
        )
    served = cache.access(unit_node, flat.grow[idx], admit)
    hit[idx] = served
    info["cache_hits"] = int(served.sum())
    info["cache_lookups"] = int(idx.size)  # lookups the rank units serve
    info["cache_rows"] = int((admit & ~served).sum())  # allocations
    return hit


__all__ = [
    "RANKCACHE_WAYS",
    "locality_bits",
    "new_rank_caches",
    "rank_cache_hits",
]
