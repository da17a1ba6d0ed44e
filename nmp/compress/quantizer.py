"""The error-bounded quantizer of SC'24 (PAPERS.md "Lossy compression of embedding traffic").

``eb = eb_rel * (max - min)`` over the chunk (one table's vectors), ``q = round(x / (2 eb))``:
every value is reconstructed as ``2 eb q`` within ``eb`` of the original. The codes are stored
relative to their minimum, in the narrowest unsigned type that holds their span (uint8 for
``eb_rel >= 1/510``, since the span is about ``1 / (2 eb_rel)`` codes); the paper stores
int8/int16, which is the same width.

The bound is kept strictly on every element: the reconstruction is rounded to float32, which
can add half an ulp; any element that this pushes past ``eb`` (rare: only where ``|x|`` is
large against ``eb``) is sent verbatim as an outlier (index + float32), as SZ-family compressors
do with unpredictable values.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Quantized:
    codes: np.ndarray  # unsigned ints, same shape as the input
    q_min: int  # code offset
    step: float  # 2 eb (float64)
    eb_abs: float
    outlier_idx: np.ndarray  # uint32 flat indices
    outlier_val: np.ndarray  # float32

    @property
    def nbytes(self) -> int:
        return self.codes.nbytes + self.outlier_idx.nbytes + self.outlier_val.nbytes


def narrowest_uint(span: int) -> np.dtype:
    for dt in (np.uint8, np.uint16, np.uint32):
        if span <= np.iinfo(dt).max:
            return np.dtype(dt)
    return np.dtype(np.uint64)


def absolute_bound(x: np.ndarray, eb_rel: float) -> float:
    """``eb_rel * (max - min)``; a constant chunk gets the bound of a unit range times eb_rel
    scaled by its magnitude (any positive bound reconstructs it exactly)."""
    if x.size == 0:
        return 1.0
    lo, hi = float(x.min()), float(x.max())
    rng = hi - lo
    if rng == 0.0:
        rng = max(abs(lo), 1.0)
    return eb_rel * rng


def quantize(x: np.ndarray, eb_rel: float) -> Quantized:
    eb = absolute_bound(x, eb_rel)
    step = 2.0 * eb
    q = np.rint(x.astype(np.float64) / step)
    q_min = int(q.min()) if q.size else 0
    span = (int(q.max()) - q_min) if q.size else 0
    codes = (q - q_min).astype(narrowest_uint(span))
    recon = (q * step).astype(np.float32)
    bad = np.flatnonzero(np.abs(recon.astype(np.float64) - x) > eb)
    return Quantized(
        codes=codes,
        q_min=q_min,
        step=step,
        eb_abs=eb,
        outlier_idx=bad.astype(np.uint32),
        outlier_val=x.reshape(-1)[bad].astype(np.float32),
    )


def dequantize(
    codes: np.ndarray,
    q_min: int,
    step: float,
    outlier_idx: np.ndarray | None = None,
    outlier_val: np.ndarray | None = None,
) -> np.ndarray:
    out = ((codes.astype(np.float64) + q_min) * step).astype(np.float32)
    if outlier_idx is not None and len(outlier_idx):
        out.reshape(-1)[outlier_idx] = outlier_val
    return out


def code_entropy_bits(codes: np.ndarray) -> float:
    """Order-0 entropy of the codes in bits per code: the floor a Huffman stage approaches."""
    if codes.size == 0:
        return 0.0
    counts = np.bincount(codes.reshape(-1).astype(np.int64))
    p = counts[counts > 0] / codes.size
    return float(-(p * np.log2(p)).sum())
