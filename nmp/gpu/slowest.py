"""A warp that waits for several loads at once waits for the slowest of them.

A load's latency at a level is a fixed part plus an exponential wait (chosen shape; its mean is
the level's ``latency_spread_ns``, measured on the H200 by the latency probe's K = 1, 2, 4
chains at light load: docs/gpu-model.md). Over loads drawn from a mix of levels,
``E[max of m] = integral of 1 - F(t)^m dt``; what that adds to the mean load is the excess a
wait of ``m`` loads pays (:func:`max_excess`). One level of spread ``s`` gives ``s (H_m - 1)``,
``H_m = 1 + 1/2 + ... + 1/m``.
"""

from __future__ import annotations

import math

import numpy as np

_GRID = 4096  # points of the integral: a step of about 1/4096 of its range


def max_excess(
    means: np.ndarray, spreads: tuple[float, ...] | np.ndarray, shares: np.ndarray, m: float
) -> float:
    """How much longer a warp waits for the slowest of ``m`` loads than for one, on average:
    ``E[max of m] - E[one]`` over loads drawn from the levels' mixture (``shares``), each level's
    latency its fixed part ``mean - spread`` plus an exponential wait of mean ``spread`` (0: a
    fixed latency). ``E[max of m] = integral of 1 - F(t)^m dt`` (``m`` real: a warp's loads in
    flight per wait, 1 or fewer: no excess). One level of spread ``s`` gives ``s (H_m - 1)``."""
    p = np.asarray(shares, dtype=np.float64)
    total = p.sum()
    if m <= 1.0 or total <= 0.0:
        return 0.0
    p = p / total
    mu = np.asarray(means, dtype=np.float64)
    sd = np.asarray(spreads, dtype=np.float64)
    live = p > 0
    if not np.any(sd[live] > 0) and np.ptp(mu[live]) == 0.0:
        return 0.0
    fixed = np.maximum(mu - sd, 0.0)
    top = float(np.max((fixed + 40.0 * sd)[live]))
    t = _grid_with(np.linspace(0.0, top, _GRID + 1), top, fixed[live])
    cdf = np.zeros_like(t)
    for level in np.flatnonzero(live):
        if sd[level] > 0:
            part = -np.expm1(-np.maximum(t - fixed[level], 0.0) / sd[level])
        else:
            part = (t >= fixed[level]).astype(np.float64)
        cdf += p[level] * part
    tail = 1.0 - np.minimum(cdf, 1.0) ** m
    expected_max = float(np.sum(0.5 * (tail[1:] + tail[:-1]) * np.diff(t)))
    return max(0.0, expected_max - float(p @ mu))


def _grid_with(grid: np.ndarray, top: float, points: np.ndarray) -> np.ndarray:
    """``np.union1d(grid, points)`` for ``grid`` = ``linspace(0, top, n)``: the few ``points``
    put in their places by a binary search instead of a sort of the whole. The same array: the
    grid is strictly increasing for a finite ``top`` of at least 1e-300 (a normal step)."""
    listed = points.tolist()
    if not (np.isfinite(top) and top >= 1e-300) or not all(
        math.isfinite(v) and math.copysign(1.0, v) > 0.0 for v in listed
    ):
        return np.union1d(grid, points)
    values = sorted(set(listed))
    at = np.searchsorted(grid, values)
    new = [
        i for i, (k, v) in enumerate(zip(at, values, strict=True)) if k >= grid.size or grid[k] != v
    ]
    if not new:
        return grid
    return np.insert(grid, at[new], np.asarray(values, dtype=np.float64)[new])
