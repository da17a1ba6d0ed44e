"""L2's low-precision rows: fp16, or int8 / int4 quantized per row with its own scale.

* ``fp16``: IEEE half precision (numpy's round-to-nearest-even). Bound per element:
  ``|x - x^| <= max(|x| * 2^-11, 2^-25)`` for |x| <= 65504 (half's unit roundoff for normal
  numbers, half the smallest subnormal step below them); larger values are refused.
* ``int8`` / ``int4``: asymmetric affine per row, the fbgemm "rowwise" layout: a row stores its
  minimum ``m`` and step ``s = (max - min) / (2^b - 1)`` (two fp32 numbers, 8 bytes) and
  ``q = round((x - m) / s)`` in b bits. Bound per element: ``|x - (m + q s)| <= s / 2`` (plus a
  few fp32 ulps of the arithmetic: :func:`error_bound` adds ``4 * eps32 * max|x|``).

Bytes per row: dim * b / 8 (int4 packs two per byte, rounded up) + 8 for int8/int4.
"""

from __future__ import annotations

import numpy as np

from nmp.errors import NmpError

L2_DTYPES: dict[str, int] = {"fp16": 16, "int8": 8, "int4": 4}  # bits per element
_SCALE_BYTES = 8  # fp32 minimum + fp32 step per row
_FP16_MAX = 65504.0
_EPS32 = float(np.finfo(np.float32).eps)


def check_dtype(dtype: str) -> int:
    try:
        return L2_DTYPES[dtype]
    except KeyError:
        raise NmpError(f"unknown L2 dtype '{dtype}' (known: {', '.join(L2_DTYPES)})") from None


def row_bytes(dim: int, dtype: str) -> int:
    """Bytes one row of ``dim`` elements takes in L2 at ``dtype``."""
    bits = check_dtype(dtype)
    payload = (dim * bits + 7) // 8
    return payload + (0 if dtype == "fp16" else _SCALE_BYTES)


def quantize_dequantize(rows: np.ndarray, dtype: str) -> np.ndarray:
    """What L2 returns for ``rows`` (float32 [n, dim]): the rows after a round trip."""
    x = np.asarray(rows, dtype=np.float32)
    bits = check_dtype(dtype)
    if dtype == "fp16":
        if x.size and float(np.abs(x).max()) > _FP16_MAX:
            raise NmpError(f"a value exceeds fp16's range ({_FP16_MAX}); use int8 or int4")
        return x.astype(np.float16).astype(np.float32)
    levels = (1 << bits) - 1
    lo = x.min(axis=1, keepdims=True)
    step = (x.max(axis=1, keepdims=True) - lo) / np.float32(levels)
    safe = np.where(step > 0, step, np.float32(1.0))
    q = np.clip(np.rint((x - lo) / safe), 0, levels)
    return (lo + q * step).astype(np.float32)


def error_bound(rows: np.ndarray, dtype: str) -> np.ndarray:
    """The stated bound of ``|x - x^|`` for every element of ``rows`` (same shape)."""
    x = np.asarray(rows, dtype=np.float32).astype(np.float64)
    bits = check_dtype(dtype)
    if dtype == "fp16":
        return np.maximum(np.abs(x) * 2.0**-11, 2.0**-25)
    levels = (1 << bits) - 1
    step = (x.max(axis=1, keepdims=True) - x.min(axis=1, keepdims=True)) / levels
    slack = 4.0 * _EPS32 * np.abs(x).max(axis=1, keepdims=True)
    return np.broadcast_to(step / 2.0 + slack, x.shape)
