"""A set-associative LRU cache simulated on an access stream (numba), for the SRAM caches of
the near-memory designs (RecNMP's RankCache) and the host CPU's last-level cache.

What the hardware does: ``sets x ways`` entries; an access names a key (a row, or a cache-line
address) and the cache of ``owner`` it goes to (one cache per rank unit; the host has one). A key
present in its set hits and becomes the most recently used; a missing key is read from DRAM and,
when the access may allocate (``admit``), replaces the set's least recently used entry. The set
is ``key``'s multiplicative hash (Knuth's constant, Lemire's range reduction), which spreads
table strides over the sets as a real cache's index hash does.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from nmp.jit import njit

_HASH_MULT = np.uint64(0x9E3779B97F4A7C15)

# A cache is at steady state when one warm-up batch's hit rate differs from the previous one's
# by less than this (chosen: 0.2 points), or after MAX_WARMUP_BATCHES batches (chosen: the
# 32 MiB LLC on recross-eval, beside the L1s and L2s, settles at 88.5 % after 12, from 72.4 %
# cold; the last steps gain 0.27 and 0.07 points).
STEADY_TOL = 0.002
MAX_WARMUP_BATCHES = 16


@njit(cache=True)
def _lru_kernel(owner, key, admit, sets, ways, tags, stamp, hits, t0):  # pragma: no cover
    for i in range(key.shape[0]):
        h = (np.uint64(key[i]) * _HASH_MULT) >> np.uint64(32)
        base = (owner[i] * sets + np.int64((h * np.uint64(sets)) >> np.uint64(32))) * ways
        victim = base
        found = False
        for w in range(base, base + ways):
            if tags[w] == key[i]:
                found = True
                stamp[w] = t0 + i + 1
                break
            if stamp[w] < stamp[victim]:
                victim = w
        hits[i] = found
        if not found and admit[i]:
            tags[victim] = key[i]
            stamp[victim] = t0 + i + 1


class LruCache:
    """``owners`` caches of ``sets x ways`` entries each, simulated access by access; the
    state persists across :meth:`access` calls (a cache warmed by earlier batches)."""

    def __init__(self, owners: int, sets: int, ways: int) -> None:
        if owners < 1 or sets < 1 or ways < 1:
            raise ValueError("owners, sets and ways must be positive")
        self.owners, self.sets, self.ways = owners, sets, ways
        self.tags = np.full(owners * sets * ways, -1, dtype=np.int64)
        self.stamp = np.zeros(owners * sets * ways, dtype=np.int64)
        self._clock = 0
        self.warmup_rates: list[float] = []  # hit rates of the batches that warmed it

    @classmethod
    def of_bytes(cls, owners: int, capacity_bytes: float, entry_bytes: int, ways: int):
        """Caches of ``capacity_bytes`` each holding entries of ``entry_bytes``."""
        entries = max(int(capacity_bytes // max(entry_bytes, 1)), 1)
        ways = min(ways, entries)
        return cls(owners, max(entries // ways, 1), ways)

    def copy(self) -> LruCache:
        """An independent cache in the same state (a timed batch starts from a warmed one)."""
        out = LruCache(self.owners, self.sets, self.ways)
        out.tags[:], out.stamp[:], out._clock = self.tags, self.stamp, self._clock
        out.warmup_rates = list(self.warmup_rates)
        return out

    def access(
        self, owner: np.ndarray, key: np.ndarray, admit: np.ndarray | None = None
    ) -> np.ndarray:
        """Hit (bool) of every access in order; ``admit`` False: a miss does not allocate."""
        n = key.size
        hits = np.zeros(n, dtype=np.bool_)
        if not n:
            return hits
        if admit is None:
            admit = np.ones(n, dtype=np.bool_)
        _lru_kernel(
            np.ascontiguousarray(owner, dtype=np.int64),
            np.ascontiguousarray(key, dtype=np.int64),
            np.ascontiguousarray(admit, dtype=np.bool_),
            self.sets,
            self.ways,
            self.tags,
            self.stamp,
            hits,
            self._clock,  # stamps continue from the previous call: earlier entries are older
        )
        self._clock += n
        return hits


def warm_until_steady(
    step: Callable[[int], float], max_batches: int = MAX_WARMUP_BATCHES, tol: float = STEADY_TOL
) -> list[float]:
    """Warm a cache with batches k = 0, 1, ... (``step(k)`` sends batch k through it and
    returns that batch's hit rate) until the hit rate changes by less than ``tol`` from one
    batch to the next, or ``max_batches`` have run; returns the hit rates."""
    rates: list[float] = []
    for k in range(max_batches):
        rates.append(float(step(k)))
        if k and abs(rates[-1] - rates[-2]) < tol:
            break
    return rates


__all__ = ["MAX_WARMUP_BATCHES", "STEADY_TOL", "LruCache", "warm_until_steady"]
