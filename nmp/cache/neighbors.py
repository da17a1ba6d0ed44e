"""L3's substitute keys: each key's nearest popular neighbour within a distance bound.

EVStore's EVProx (ASPLOS'23) maps a key to a surrogate key whose embedding is close, built
offline with Euclidean or cosine distance; at run time a key that misses L1 and L2 is served
with its surrogate's vector if the surrogate is cached. Here, per table:

* the candidates are the ``candidates`` rows the profile stream (the warm-up requests, seen
  before the measured ones) used most, since only cached rows can serve, and popular rows are
  the ones that stay cached;
* a key's substitute is the nearest candidate other than itself by Euclidean distance, kept
  only if ``||x_k - x_s|| <= bound * ||x_k||``. The bound is relative to the key's own norm, so
  one number means the same on tables of any scale: 0.5 admits a substitute at most half as far
  from the key as the key is from the origin. ``bound`` is a switch (swept in the study).
"""

from __future__ import annotations

import numpy as np

from nmp.errors import NmpError


def substitute_map(
    table_of: np.ndarray,
    vectors: list[np.ndarray] | np.ndarray,
    profile_counts: np.ndarray,
    *,
    candidates: int,
    bound: float,
    chunk: int = 8192,
) -> tuple[np.ndarray, np.ndarray]:
    """Substitutes of n keys (compact ids 0..n-1).

    ``table_of`` [n] is each key's table, ``vectors`` each key's vector (one float32 array per
    key row: an [n, dim] array when all tables share dim, else a list), ``profile_counts`` [n]
    the uses in the profile stream. Returns (substitute id or -1 [n], relative distance [n],
    inf where none).
    """
    if bound < 0:
        raise NmpError(f"l3 distance bound must be >= 0, got {bound}")
    if candidates < 1:
        raise NmpError(f"l3 candidates must be >= 1, got {candidates}")
    n = int(table_of.shape[0])
    subst = np.full(n, -1, dtype=np.int64)
    rel = np.full(n, np.inf)
    for t in np.unique(table_of):
        members = np.flatnonzero(table_of == t)
        if isinstance(vectors, np.ndarray):
            x = vectors[members].astype(np.float32)
        else:
            x = np.stack([vectors[i] for i in members]).astype(np.float32)
        counts = profile_counts[members]
        order = np.lexsort((members, -counts))  # most used first, ties by id (deterministic)
        cand_local = order[: min(candidates, members.size)]
        cand_local = cand_local[counts[cand_local] > 0]
        if cand_local.size == 0:
            continue
        c = x[cand_local]
        c_sq = (c.astype(np.float64) ** 2).sum(axis=1)
        for lo in range(0, members.size, chunk):
            xs = x[lo : lo + chunk].astype(np.float64)
            x_sq = (xs**2).sum(axis=1)
            d2 = x_sq[:, None] + c_sq[None, :] - 2.0 * (xs @ c.T.astype(np.float64))
            # a candidate is not its own substitute
            own = cand_local[None, :] == np.arange(lo, lo + xs.shape[0])[:, None]
            d2[own] = np.inf
            best = np.argmin(d2, axis=1)
            dist = np.sqrt(np.maximum(d2[np.arange(xs.shape[0]), best], 0.0))
            norm = np.sqrt(x_sq)
            r = np.where(norm > 0, dist / np.where(norm > 0, norm, 1.0), np.inf)
            ok = r <= bound
            idx = members[lo : lo + xs.shape[0]]
            rel[idx] = r
            subst[idx[ok]] = members[cand_local[best[ok]]]
    return subst, rel
