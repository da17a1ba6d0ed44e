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

from nmp.errors import NmpError


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


def _bound(lo: float, hi: float, eb_rel: float) -> float:
    """The absolute bound ``eb_rel * (max - min)``; a constant chunk gets ``eb_rel`` times its
    magnitude (any positive bound reconstructs it exactly)."""
    rng = hi - lo
    if rng == 0.0:
        rng = max(abs(lo), 1.0)
    return eb_rel * rng


def quantize(x: np.ndarray, eb_rel: float) -> Quantized:
    # numba: loaded on use (start-up time)
    from nmp.compress.kernels import quantize_into, value_range

    flat = np.ascontiguousarray(x, dtype=np.float32).reshape(-1)
    if flat.size == 0:
        empty = np.zeros(x.shape, np.uint8)
        return Quantized(empty, 0, 2.0, 1.0, np.zeros(0, np.uint32), np.zeros(0, np.float32))
    lo, hi, finite = value_range(flat)
    if not finite:
        raise NmpError("codec input holds NaN or infinity")
    eb = _bound(lo, hi, eb_rel)
    step = 2.0 * eb
    # The kernel rounds x * (1/step); that is monotone in x, so the codes span exactly
    # [round(min * (1/step)), round(max * (1/step))] (the same float64 product as the kernel's).
    inv = 1.0 / step
    q_min = int(np.rint(lo * inv))
    span = int(np.rint(hi * inv)) - q_min
    codes = np.empty(flat.size, dtype=narrowest_uint(span))
    outliers = np.empty(flat.size, dtype=np.uint32)
    n_out = quantize_into(flat, step, eb, q_min, codes, outliers)
    bad = outliers[:n_out].copy()
    return Quantized(
        codes=codes.reshape(x.shape),
        q_min=q_min,
        step=step,
        eb_abs=eb,
        outlier_idx=bad,
        outlier_val=flat[bad],
    )


def dequantize(
    codes: np.ndarray,
    q_min: int,
    step: float,
    outlier_idx: np.ndarray | None = None,
    outlier_val: np.ndarray | None = None,
) -> np.ndarray:
    # numba: loaded on use (start-up time)
    from nmp.compress.kernels import dequantize_into

    flat = np.ascontiguousarray(codes).reshape(-1)
    out = np.empty(flat.size, dtype=np.float32)
    dequantize_into(flat, int(q_min), float(step), out)
    if outlier_idx is not None and len(outlier_idx):
        out[outlier_idx] = outlier_val
    return out.reshape(np.shape(codes))


def code_entropy_bits(codes: np.ndarray) -> float:
    """Order-0 entropy of the codes in bits per code: the floor a Huffman stage approaches."""
    if codes.size == 0:
        return 0.0
    counts = np.bincount(codes.reshape(-1).astype(np.int64))
    p = counts[counts > 0] / codes.size
    return float(-(p * np.log2(p)).sum())
