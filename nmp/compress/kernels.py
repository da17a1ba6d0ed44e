"""Compiled inner loops of the codecs (numba, cached): one pass over the values each."""

from __future__ import annotations

import numpy as np

from nmp.jit import njit


@njit(cache=True, nogil=True, fastmath=False)
def quantize_into(
    x: np.ndarray, step: float, eb: float, q_min: int, codes: np.ndarray, outliers: np.ndarray
) -> int:  # pragma: no cover
    """``codes[i] = round(x[i] / step) - q_min``; indices whose float32 reconstruction misses
    the bound go to ``outliers``; returns how many. ``x`` flat float32.

    Multiplying by ``1/step`` instead of dividing may round a value to the neighbouring code
    at an exact half-step; the reconstruction check below catches any such miss, so the
    bound still holds on every element. The first loop has no branch (it vectorizes); the
    second, collecting outliers, runs only when the first counted some."""
    inv = 1.0 / step
    misses = 0
    for i in range(x.shape[0]):
        v = np.float64(x[i])
        q = np.rint(v * inv)
        codes[i] = np.int64(q) - q_min
        misses += abs(np.float64(np.float32(q * step)) - v) > eb  # type: ignore[assignment]
    if misses == 0:
        return 0
    n_out = 0
    for i in range(x.shape[0]):
        v = np.float64(x[i])
        q = np.float64(np.int64(codes[i]) + q_min)
        if abs(np.float64(np.float32(q * step)) - v) > eb:
            outliers[n_out] = i
            n_out += 1
    return n_out


@njit(cache=True, nogil=True)
def dequantize_into(
    codes: np.ndarray, q_min: int, step: float, out: np.ndarray
) -> None:  # pragma: no cover
    for i in range(codes.shape[0]):
        out[i] = np.float32((np.int64(codes[i]) + q_min) * step)


@njit(cache=True, nogil=True)
def dedup_rows(rows: np.ndarray, refs: np.ndarray, first: np.ndarray) -> int:  # pragma: no cover
    """Vector LZ's match finder: ``rows`` [n, w] (uint64 words of each vector's codes). Each
    row gets ``refs[i]`` = the literal number of its first occurrence; ``first[j]`` = the row
    of literal ``j``. Open-addressing hash table over whole rows; returns the literal count."""
    n, w = rows.shape
    size = 1
    while size < 2 * n:
        size *= 2
    table = np.full(size, -1, np.int64)
    mask = np.uint64(size - 1)
    m = 0
    for i in range(n):
        h = np.uint64(0xCBF29CE484222325)
        for k in range(w):
            h = (h ^ rows[i, k]) * np.uint64(0x100000001B3)
            h ^= h >> np.uint64(29)
        slot = h & mask
        while True:
            j = table[slot]
            if j < 0:
                table[slot] = m
                first[m] = i
                refs[i] = m
                m += 1
                break
            r = first[j]
            same = True
            for k in range(w):
                if rows[r, k] != rows[i, k]:
                    same = False
                    break
            if same:
                refs[i] = j
                break
            slot = (slot + np.uint64(1)) & mask
    return m


@njit(cache=True, nogil=True)
def value_range(x: np.ndarray) -> tuple[float, float, bool]:  # pragma: no cover
    """(min, max, all finite) of flat float32 ``x`` in one pass."""
    lo = np.inf
    hi = -np.inf
    finite = True
    for i in range(x.shape[0]):
        v = np.float64(x[i])
        if not np.isfinite(v):
            finite = False
        if v < lo:
            lo = v
        if v > hi:
            hi = v
    return lo, hi, finite
