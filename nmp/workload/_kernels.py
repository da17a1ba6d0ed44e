"""Compiled inner loops of the samplers (numba, cached): one pass per element, no temporaries.

Imported lazily by :mod:`nmp.workload.sampling`, so loading specs does not import numba. The
random numbers are always drawn by numpy's Generator outside; these kernels only transform them,
so results equal the pure-numpy reference functions in the tests bit for bit.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)


@njit(cache=True)
def _mix64(z):
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


@njit(cache=True)
def _permute_one(v, limit, sh, mask, keys):
    """Feistel bijection of [0, 2^(2 sh)) with cycle walking into [0, limit), of one value."""
    while True:
        left = v >> sh
        right = v & mask
        for j in range(keys.shape[0]):
            t = right
            right = left ^ (_mix64(right ^ keys[j]) & mask)
            left = t
        v = (left << sh) | right
        if v < limit:
            return np.int64(v)


@njit(cache=True)
def permute_kernel(ranks, rows, half, mask, keys):
    """Feistel bijection of [0, 2^(2 half)) with cycle walking into [0, rows)."""
    out = np.empty(ranks.shape[0], dtype=np.int64)
    limit = np.uint64(rows)
    sh = np.uint64(half)
    for i in range(ranks.shape[0]):
        out[i] = _permute_one(np.uint64(ranks[i]), limit, sh, mask, keys)
    return out


@njit(cache=True)
def ranked_kernel(ranks, head_rows, rows, half, mask, keys):
    """Row of each rank: ``head_rows[rank]`` below the cached head, else the Feistel
    permutation (:func:`permute_kernel`); ``ok`` False (nothing done) if a rank is negative."""
    n = ranks.shape[0]
    out = np.empty(n, dtype=np.int64)
    head = head_rows.shape[0]
    limit = np.uint64(rows)
    sh = np.uint64(half)
    for i in range(n):
        r = ranks[i]
        if r < 0:
            return out, False
        if r < head:
            out[i] = head_rows[r]
        else:
            out[i] = _permute_one(np.uint64(r), limit, sh, mask, keys)
    return out, True


@njit(cache=True)
def _helper1(x):
    if abs(x) > 1e-8:
        return math.log1p(x) / x
    return 1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x))


@njit(cache=True)
def _helper2(x):
    if abs(x) > 1e-8:
        return math.expm1(x) / x
    return 1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + 0.25 * x))


@njit(cache=True)
def _zipf_one(u01, rows, a, h_x1, h_n, s):
    """Rejection-inversion step on one uniform: (rank (0-based), whether it stands)."""
    u = h_n + u01 * (h_x1 - h_n)
    t = max(u * (1.0 - a), -1.0)
    x = math.exp(_helper1(t) * u)
    k: float = math.floor(x + 0.5)
    k = min(max(k, 1.0), float(rows))
    ok = k - x <= s
    if not ok:
        lk = math.log(k + 0.5)
        ok = u >= _helper2((1.0 - a) * lk) * lk - math.exp(-a * math.log(k))
    return np.int64(k) - 1, ok


@njit(cache=True)
def zipf_first_kernel(u01, rows, a, h_x1, h_n, s, out):
    """The first rejection-inversion round, position ``i`` drawing ``u01[i]`` (as
    :func:`zipf_redraw_kernel` on every position, without the list of positions): accepted
    ranks go to ``out``; returns the positions rejected, in order."""
    left = np.empty(u01.shape[0], dtype=np.int64)
    m = 0
    for i in range(u01.shape[0]):
        k, ok = _zipf_one(u01[i], rows, a, h_x1, h_n, s)
        if ok:
            out[i] = k
        else:
            left[m] = i
            m += 1
    return left[:m]


@njit(cache=True)
def zipf_redraw_kernel(u01, todo, rows, a, h_x1, h_n, s, out):
    """One rejection-inversion round for the positions ``todo`` (ascending), uniform ``u01[i]``
    for ``todo[i]``: accepted ranks go to ``out``; returns the positions still rejected, in
    order."""
    left = np.empty(todo.shape[0], dtype=np.int64)
    m = 0
    for i in range(todo.shape[0]):
        k, ok = _zipf_one(u01[i], rows, a, h_x1, h_n, s)
        if ok:
            out[todo[i]] = k
        else:
            left[m] = todo[i]
            m += 1
    return left[:m]


@njit(cache=True)
def reuse_kernel(u01, hot_fraction, hot_members, rows, bitmap, out):
    """One uniform per access: u < p picks hot member floor(u / p * H); otherwise row
    floor((u - p) / (1 - p) * rows), left as -1 (to redraw) when that row is hot.
    Returns the number left to redraw."""
    p = hot_fraction
    hot = hot_members.shape[0]
    redraw = 0
    for i in range(u01.shape[0]):
        u = u01[i]
        if u < p:
            k = min(np.int64(u / p * hot), hot - 1)
            out[i] = hot_members[k]
        else:
            r = min(np.int64((u - p) / (1.0 - p) * rows), rows - 1)
            if (bitmap[r >> 3] >> (r & 7)) & 1:
                out[i] = -1
                redraw += 1
            else:
                out[i] = r
    return redraw
