"""Vector LZ: LZ77 whose unit is a whole embedding vector (SC'24's vector-based LZ).

Pooled embeddings repeat whole vectors: a bag of one lookup (Criteo's one-hot features) is the
row itself, and a small or skewed table sends the same rows again and again within one batch.
A byte-level LZ sees such a repeat as a long match it has to find; here a vector that equals an
earlier one of the chunk becomes one reference, with an unbounded window (the chunk is one
message). The streams are the references (one per vector, the index of the first occurrence
among the literals, in the narrowest unsigned type) and the literal vectors in first-occurrence
order. Exact match on the quantized codes, so the lossy bound is unaffected.

Compiled (numba): one pass with an open-addressing hash table over whole rows (64-bit words),
rows compared word by word on a hash hit.
"""

from __future__ import annotations

import numpy as np

from nmp.compress.quantizer import narrowest_uint


def vlz_encode(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``codes`` [n, dim] -> (refs [n] narrowest uint, literals [m, dim])."""
    # numba: loaded on use (start-up time)
    from nmp.compress.kernels import dedup_rows

    n = codes.shape[0]
    if n == 0:
        return np.zeros(0, np.uint8), codes
    b = np.ascontiguousarray(codes).view(np.uint8).reshape(n, -1)
    pad = (-b.shape[1]) % 8
    if pad:  # whole 64-bit words per row for the match finder
        b = np.pad(b, ((0, 0), (0, pad)))
    refs = np.empty(n, dtype=np.int64)
    first = np.empty(n, dtype=np.int64)
    m = dedup_rows(b.view(np.uint64), refs, first)
    return refs.astype(narrowest_uint(max(m - 1, 0))), codes[first[:m]]


def vlz_decode(refs: np.ndarray, literals: np.ndarray) -> np.ndarray:
    return literals[refs.astype(np.intp)]


def repeat_fraction(codes: np.ndarray) -> float:
    """Fraction of vectors that repeat an earlier one (what vector LZ removes)."""
    if codes.shape[0] == 0:
        return 0.0
    refs, literals = vlz_encode(codes)
    return 1.0 - literals.shape[0] / codes.shape[0]
