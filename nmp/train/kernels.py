"""Compiled inner loops of the store's parity path (numba, cached)."""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def xor_scatter(
    parity: np.ndarray, stripes: np.ndarray, delta: np.ndarray
) -> None:  # pragma: no cover
    """``parity[stripes[i]] ^= delta[i]`` for every i, in order (duplicates accumulate), on
    uint64 words: what the parity units do, one 64-bit word per XOR."""
    for i in range(stripes.shape[0]):
        s = stripes[i]
        for w in range(delta.shape[1]):
            parity[s, w] ^= delta[i, w]
