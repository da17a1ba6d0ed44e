"""Row samplers: vectorized, seeded, and O(samples) in memory whatever the table size.

No sampler allocates an array per table row (the hot-set bitmap of ``reuse``, one bit per row,
is the one exception): a 40M-row table costs what its lookups cost. Random numbers come from
numpy's Generator; the per-element transforms run in numba kernels (:mod:`._kernels`).

* :func:`permute` maps ranks to rows through a seeded pseudo-random bijection of [0, rows): a
  4-round Feistel network on the next even power of two, with cycle walking back into range.
  Hot ranks land on scattered rows, the same rows for every batch of a workload seed.
* :func:`zipf_ranks` draws bounded Zipf ranks exactly (rejection-inversion, Hörmann &
  Derflinger 1996, as Apache Commons' ``RejectionInversionZipfSampler``): no CDF table.
* :func:`pareto_ranks` mirrors torchrec's multi-hot generator (Lomax, floor, mod rows).
  torchrec fills a fixed table of multi-hot ids per one-hot id once; here every lookup is an
  independent draw from the same law.
* :func:`reuse_ranks` draws a hot set of H ranks with probability p, else the other ranks.
"""

from __future__ import annotations

import functools
import math

import numpy as np

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def _mix64(z: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer: a fast avalanche hash of uint64 values (wrapping arithmetic)."""
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


@functools.lru_cache(maxsize=1024)
def permutation_keys(seed: int, table: int, rounds: int = 4) -> np.ndarray:
    """Round keys of the rank->row permutation of ``table`` under workload ``seed`` (read-only;
    kept per (seed, table, rounds))."""
    keys = np.random.SeedSequence([seed, table, 0x5CA77E7]).generate_state(rounds, np.uint64)
    keys.setflags(write=False)
    return keys


def _feistel_params(rows: int) -> tuple[int, np.uint64]:
    bits = max(2, (rows - 1).bit_length())
    bits += bits & 1
    return bits // 2, np.uint64((1 << (bits // 2)) - 1)


def permute(ranks: np.ndarray, rows: int, keys: np.ndarray) -> np.ndarray:
    """Row of each rank (0-based, < rows) under the bijection keyed by ``keys``; int64.

    A Feistel network on the next even power of two >= rows; values that land outside
    [0, rows) are re-encrypted (cycle walking), which keeps it a bijection of [0, rows). The
    domain is < 4 x rows, so fewer than 4 passes are expected per value.
    """
    # numba: loaded on use (start-up time)
    from nmp.workload._kernels import permute_kernel

    x = np.ascontiguousarray(ranks, dtype=np.uint64).ravel()
    if rows <= 1:
        return np.zeros(np.shape(ranks), dtype=np.int64)
    half, mask = _feistel_params(rows)
    return permute_kernel(x, rows, half, mask, keys).reshape(np.shape(ranks))


def permute_reference(ranks: np.ndarray, rows: int, keys: np.ndarray) -> np.ndarray:
    """Pure-numpy :func:`permute` (vectorized cycle walking), the kernel's test oracle."""
    x = np.asarray(ranks, dtype=np.uint64)
    if rows <= 1:
        return np.zeros(x.shape, dtype=np.int64)
    half_i, mask = _feistel_params(rows)
    half = np.uint64(half_i)

    def encrypt(v: np.ndarray) -> np.ndarray:
        left, right = v >> half, v & mask
        for k in keys:
            left, right = right, left ^ (_mix64(right ^ k) & mask)
        return (left << half) | right

    y = encrypt(x)
    out = np.flatnonzero(y >= np.uint64(rows))
    while out.size:
        y[out] = encrypt(y[out])
        out = out[y[out] >= np.uint64(rows)]
    return y.astype(np.int64)


# --- Zipf by rejection-inversion -------------------------------------------------------------


def _h1(x: float) -> float:
    return math.log1p(x) / x if abs(x) > 1e-8 else 1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x))


def _h2(x: float) -> float:
    return (
        math.expm1(x) / x if abs(x) > 1e-8 else 1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + 0.25 * x))
    )


@functools.lru_cache(maxsize=1024)
def _zipf_constants(rows: int, a: float) -> tuple[float, float, float]:
    """H(1.5) - 1, H(rows + 0.5) and the squeeze width s of rejection-inversion, where
    H(x) = (x^(1-a) - 1) / (1 - a) is the integral of h(x) = x^-a (log x at a = 1)."""

    def h_int(x: float) -> float:
        lx = math.log(x)
        return _h2((1.0 - a) * lx) * lx

    def h_int_inv(x: float) -> float:
        t = max(x * (1.0 - a), -1.0)
        return math.exp(_h1(t) * x)

    s = 2.0 - h_int_inv(h_int(2.5) - math.exp(-a * math.log(2.0)))
    return h_int(1.5) - 1.0, h_int(rows + 0.5), s


def zipf_ranks(rng: np.random.Generator, n: int, rows: int, alpha: float) -> np.ndarray:
    """``n`` ranks in [0, rows) with P(rank = i) ∝ (i + 1)^-alpha, exactly; int64.

    Rejection-inversion: invert the integral H of h(x) = x^-alpha on a uniform draw, round to
    the nearest integer k and accept unless the point falls in the sliver between h(k) and
    the integral over [k-1/2, k+1/2]; acceptance is above 90 % for every alpha, so a few
    passes over the rejected remainder finish the draw.
    """
    a = float(alpha)
    h_x1, h_n, s = _zipf_constants(rows, a)

    # numba: loaded on use (start-up time)
    from nmp.workload._kernels import zipf_first_kernel, zipf_redraw_kernel

    out = np.empty(n, dtype=np.int64)
    # every position drawn once, then the rejected ones again (in order) until all stand
    todo = zipf_first_kernel(rng.random(n), rows, a, h_x1, h_n, s, out)
    while todo.size:
        todo = zipf_redraw_kernel(rng.random(todo.size), todo, rows, a, h_x1, h_n, s, out)
    return out


def zipf_probabilities(rows: int, alpha: float, k: int | None = None) -> np.ndarray:
    """P(rank i) for i < k (all ranks if k is None) of the bounded Zipf: for tests and stats;
    allocates ``rows`` floats to normalize."""
    p = np.arange(1, rows + 1, dtype=np.float64) ** -alpha
    p /= p.sum()
    return p if k is None else p[:k]


def pareto_ranks(rng: np.random.Generator, n: int, rows: int, alpha: float) -> np.ndarray:
    """torchrec's multi-hot ids: floor(Lomax(alpha)) mod rows (rank 0 hottest; P(rank >= k)
    falls as (k + 1)^-alpha before the wrap). torchrec casts to int32 before the modulo, which
    wraps values >= 2^31; here the float is reduced exactly, so those rare huge draws land on
    other (still pseudo-random) rows."""
    x = np.floor(rng.pareto(alpha, n))
    return np.fmod(x, float(rows)).astype(np.int64)


def reuse_ranks(
    rng: np.random.Generator,
    n: int,
    rows: int,
    hot_rows: int,
    hot_fraction: float,
    hot_alpha: float = 0.0,
) -> np.ndarray:
    """Ranks [0, hot_rows) get a fraction ``hot_fraction`` of the ``n`` draws (uniformly, or
    Zipf(``hot_alpha``) over the hot set), the rest go uniformly to ranks [hot_rows, rows)."""
    if hot_rows <= 0 or hot_fraction <= 0.0:
        return rng.integers(0, rows, n, dtype=np.int64)
    hot = rng.random(n) < hot_fraction
    n_hot = int(np.count_nonzero(hot))
    out = np.empty(n, dtype=np.int64)
    if hot_alpha > 0:
        out[hot] = zipf_ranks(rng, n_hot, hot_rows, hot_alpha)
    else:
        out[hot] = rng.integers(0, hot_rows, n_hot, dtype=np.int64)
    cold = rows - hot_rows
    if cold > 0:
        out[~hot] = hot_rows + rng.integers(0, cold, n - n_hot, dtype=np.int64)
    else:
        # The hot set is the whole table: every access is "hot".
        out[~hot] = rng.integers(0, rows, n - n_hot, dtype=np.int64)
    return out


def pooling_lengths(rng: np.random.Generator, pooling, batch: int) -> np.ndarray:
    """Lookups per bag for ``batch`` bags under a :class:`~nmp.workload.spec.PoolingSpec`."""
    return pooling.law.lengths(rng, pooling, batch)
