"""Compiled inner loops of the samplers (numba, cached): one pass per element, no temporaries.

Imported lazily by :mod:`nmp.workload.sampling`, so loading specs does not import numba. The
random numbers are always drawn by numpy's Generator outside; these kernels only transform them,
so results equal the pure-numpy reference functions in the tests bit for bit.
"""

from __future__ import annotations

import math

import numpy as np

from nmp.jit import njit
from nmp.workload._fastmath import exp_small, log_pos

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


# How near (relative to x) a rounding or acceptance boundary the fast x of a draw may lie and
# still decide it. log x is computed to within about 10 ulp (relatively) both ways (the fast
# one's u rounded once with a fused multiply-add included), so each x is within 10 ulp times
# |log x| < 37 (x < 2^52) of the exact x: the two differ by less than 1e-13 x. Draws within
# 2^-32 x (2.3e-10 x, over 2,000 times that) of a boundary, a fraction of about 1e-9 x of
# them, are drawn again by libm alone.
_MARGIN = 2.0**-32
_TINY = 2.0**-1000


@njit(cache=True, error_model="numpy", fastmath={"contract"})
def _zipf_fast_ranks(u01, rows, a, h_x1, h_n, s):
    """Per uniform ``u01[i]``, the rank + 1 that :func:`_zipf_one` accepts for it, where x
    computed without libm decides it by more than the margin (``_MARGIN``), else 0 (to be drawn
    by :func:`_zipf_one`: near a boundary, out of the fast range, or outside the squeeze). One
    loop without branches or calls, which the compiler vectorizes; 1.6 % of draws at
    alpha = 1.05 fall outside the squeeze, about 1e-9 x of them near a boundary."""
    k = np.empty(u01.shape[0], dtype=np.float64)
    top = float(rows)
    for i in range(u01.shape[0]):
        u = h_n + u01[i] * (h_x1 - h_n)
        w = 1.0 + max(u * (1.0 - a), -1.0)
        d = w - 1.0  # exact near w = 1: log(w) / (w - 1) is log1p(t) / t to a few ulp (Goldberg)
        h1 = log_pos(max(w, _TINY)) / d if d != 0.0 else 1.0
        x = exp_small(min(max(h1 * u, -700.0), 700.0))
        f = x + 0.5
        kf = np.floor(f)
        near = x * _MARGIN
        kc = min(max(kf, 1.0), top)
        g = kc - x
        easy = (
            (w >= _TINY) & (x >= 0.5) & (x < 2.0**52) & (f - kf >= near)
            & (kf + 1.0 - f >= near) & (g <= s - near)
        )  # fmt: skip
        k[i] = kc if easy else 0.0
    return k


@njit(cache=True)
def _zipf_drawn(kf, u01, rows, a, h_x1, h_n, s):
    """:func:`_zipf_one` of ``u01``, given its rank + 1 from :func:`_zipf_fast_ranks` (0: none
    there, so libm's)."""
    if kf > 0.0:
        return np.int64(kf) - 1, True
    return _zipf_one(u01, rows, a, h_x1, h_n, s)


@njit(cache=True)
def zipf_first_kernel(u01, rows, a, h_x1, h_n, s, out):
    """The first rejection-inversion round, position ``i`` drawing ``u01[i]`` (as
    :func:`zipf_redraw_kernel` on every position, without the list of positions): accepted
    ranks go to ``out``; returns the positions rejected, in order. Each draw is
    :func:`_zipf_one`'s, bit for bit, most by way of :func:`_zipf_fast_ranks`: recross-eval's 26
    tables of 2,560 draws took 0.80 instead of 2.79 ms (best of 100, 2-core AMD EPYC)."""
    k = _zipf_fast_ranks(u01, rows, a, h_x1, h_n, s)
    left = np.empty(u01.shape[0], dtype=np.int64)
    m = 0
    for i in range(u01.shape[0]):
        r, ok = _zipf_drawn(k[i], u01[i], rows, a, h_x1, h_n, s)
        if ok:
            out[i] = r
        else:
            left[m] = i
            m += 1
    return left[:m]


@njit(cache=True)
def zipf_redraw_kernel(u01, todo, rows, a, h_x1, h_n, s, out):
    """One rejection-inversion round for the positions ``todo`` (ascending), uniform ``u01[i]``
    for ``todo[i]``: accepted ranks go to ``out``; returns the positions still rejected, in
    order."""
    k = _zipf_fast_ranks(u01, rows, a, h_x1, h_n, s)
    left = np.empty(todo.shape[0], dtype=np.int64)
    m = 0
    for i in range(todo.shape[0]):
        r, ok = _zipf_drawn(k[i], u01[i], rows, a, h_x1, h_n, s)
        if ok:
            out[todo[i]] = r
        else:
            left[m] = todo[i]
            m += 1
    return left[:m]


@njit(cache=True)
def zipf_exact_kernel(u01, rows, a, h_x1, h_n, s, ranks, ok):
    """:func:`_zipf_one` of every uniform by libm alone: the tests' oracle of the fast path."""
    for i in range(u01.shape[0]):
        ranks[i], ok[i] = _zipf_one(u01[i], rows, a, h_x1, h_n, s)


@njit(cache=True)
def zipf_decided_kernel(u01, rows, a, h_x1, h_n, s, ranks, ok):
    """The fast path's (rank, whether it stands) of every uniform, for the tests; returns how
    many the fast path decided alone."""
    k = _zipf_fast_ranks(u01, rows, a, h_x1, h_n, s)
    fast = 0
    for i in range(u01.shape[0]):
        ranks[i], ok[i] = _zipf_drawn(k[i], u01[i], rows, a, h_x1, h_n, s)
        fast += k[i] > 0.0
    return fast


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


# numpy's SeedSequence (numpy/random/bit_generator.pyx; its output fixed by numpy's seeding
# policy, NEP 19): the constants of its hash and mix, all uint64 so that numba keeps the
# arithmetic unsigned (each product masked back to the 32 bits numpy's uint32 keeps)
_INIT_A = np.uint64(0x43B0D7E5)
_MULT_A = np.uint64(0x931E8875)
_INIT_B = np.uint64(0x8B51F9DD)
_MULT_B = np.uint64(0x58F38DED)
_MIX_L = np.uint64(0xCA01F9DD)
_MIX_R = np.uint64(0x4973F715)
_W32 = np.uint64(0xFFFFFFFF)
_S16 = np.uint64(16)
_S32 = np.uint64(32)


@njit(cache=True)
def _hashmix(value, hash_const):
    value ^= hash_const
    hash_const = (hash_const * _MULT_A) & _W32
    value = (value * hash_const) & _W32
    return value ^ (value >> _S16), hash_const


@njit(cache=True)
def _mix(x, y):
    r = (_MIX_L * x - _MIX_R * y) & _W32
    return r ^ (r >> _S16)


@njit(cache=True)
def seed_state_kernel(e0, e1, e2, e3, n_words, out):
    """``SeedSequence(entropy).generate_state(4, np.uint64)`` into ``out`` (uint64[4]) for
    ``n_words`` <= 4 entropy words e0..e3 (uint32 values) and no spawn key."""
    ent = (np.uint64(e0), np.uint64(e1), np.uint64(e2), np.uint64(e3))
    pool = np.zeros(4, np.uint64)
    hc = _INIT_A
    for i in range(4):
        v = ent[i] if i < n_words else np.uint64(0)
        pool[i], hc = _hashmix(v, hc)
    for i_src in range(4):
        for i_dst in range(4):
            if i_src != i_dst:
                h, hc = _hashmix(pool[i_src], hc)
                pool[i_dst] = _mix(pool[i_dst], h)
    hb = _INIT_B
    for k in range(4):
        word = np.uint64(0)
        for half in range(2):
            v = pool[(2 * k + half) % 4] ^ hb
            hb = (hb * _MULT_B) & _W32
            v = (v * hb) & _W32
            v ^= v >> _S16
            word |= v << (_S32 * np.uint64(half))
        out[k] = word
