"""L2's low-precision rows: fp16, or int8 / int4 quantized per row with its own scale.

* ``fp16``: IEEE half precision (numpy's round-to-nearest-even). Bound per element:
  ``|x - x^| <= max(|x| * 2^-11, 2^-25)`` for |x| <= 65504 (half's unit roundoff for normal
  numbers, half the smallest subnormal step below them); larger values are refused.
* ``int8`` / ``int4``: asymmetric affine per row, the fbgemm "rowwise" layout: a row stores its
  minimum ``m`` and step ``s = (max - min) / (2^b - 1)`` (two fp32 numbers, 8 bytes) and
  ``q = round((x - m) / s)`` in b bits. Bound per element: ``|x - (m + q s)| <= s / 2`` (plus a
  few fp32 ulps of the arithmetic: :func:`error_bound` adds ``4 * eps32 * max|x|``).

Bytes per row: dim * b / 8 (int4 packs two per byte, rounded up) + 8 for int8/int4.

Each format is an :class:`L2Format` registered in :data:`L2_FORMATS` below (a small family,
registered where it is declared); the cache, its accuracy replay and its studies ask the format,
never its name. Adding one: a class of that shape and one ``L2_FORMATS.register(...)`` here.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from nmp.errors import NmpError
from nmp.registry import Registry

_SCALE_BYTES = 8  # fp32 minimum + fp32 step per row
_FP16_MAX = 65504.0
_EPS32 = float(np.finfo(np.float32).eps)


class L2Format(ABC):
    """How L2 stores a row: its bytes, what a lookup returns, and the error it may add."""

    name: str
    description: str
    bits: int  # per element, before any per-row header

    @abstractmethod
    def row_bytes(self, dim: int) -> int:
        """Bytes one row of ``dim`` elements takes in L2."""

    @abstractmethod
    def round_trip(self, x: np.ndarray) -> np.ndarray:
        """What L2 returns for float32 rows ``x`` [n, dim]."""

    @abstractmethod
    def error_bound(self, x: np.ndarray) -> np.ndarray:
        """The stated bound of ``|x - x^|`` per element of float64 rows ``x``."""


class HalfPrecision(L2Format):
    name = "fp16"
    description = "IEEE half precision, no per-row header"
    bits = 16

    def row_bytes(self, dim: int) -> int:
        return (dim * self.bits + 7) // 8

    def round_trip(self, x: np.ndarray) -> np.ndarray:
        if x.size and float(np.abs(x).max()) > _FP16_MAX:
            raise NmpError(f"a value exceeds fp16's range ({_FP16_MAX}); use int8 or int4")
        return x.astype(np.float16).astype(np.float32)

    def error_bound(self, x: np.ndarray) -> np.ndarray:
        return np.maximum(np.abs(x) * 2.0**-11, 2.0**-25)


class RowwiseAffine(L2Format):
    """fbgemm's rowwise layout at ``bits`` per element: a row's minimum and step (fp32 each)."""

    def __init__(self, bits: int) -> None:
        self.bits = bits
        self.name = f"int{bits}"
        self.description = f"{bits}-bit affine per row, fp32 minimum and step (fbgemm rowwise)"

    def row_bytes(self, dim: int) -> int:
        return (dim * self.bits + 7) // 8 + _SCALE_BYTES

    def round_trip(self, x: np.ndarray) -> np.ndarray:
        levels = (1 << self.bits) - 1
        lo = x.min(axis=1, keepdims=True)
        step = (x.max(axis=1, keepdims=True) - lo) / np.float32(levels)
        safe = np.where(step > 0, step, np.float32(1.0))
        q = np.clip(np.rint((x - lo) / safe), 0, levels)
        return (lo + q * step).astype(np.float32)

    def error_bound(self, x: np.ndarray) -> np.ndarray:
        levels = (1 << self.bits) - 1
        step = (x.max(axis=1, keepdims=True) - x.min(axis=1, keepdims=True)) / levels
        slack = 4.0 * _EPS32 * np.abs(x).max(axis=1, keepdims=True)
        return np.broadcast_to(step / 2.0 + slack, x.shape)


L2_FORMATS: Registry[L2Format] = Registry("L2 dtype", order=lambda f: -f.bits)
L2_FORMATS.register(HalfPrecision())
L2_FORMATS.register(RowwiseAffine(8))
L2_FORMATS.register(RowwiseAffine(4))


def l2_format(dtype: str) -> L2Format:
    return L2_FORMATS.get(dtype)


def check_dtype(dtype: str) -> int:
    """The bits per element of L2 dtype ``dtype``; an NmpError listing the known ones."""
    return l2_format(dtype).bits


def row_bytes(dim: int, dtype: str) -> int:
    """Bytes one row of ``dim`` elements takes in L2 at ``dtype``."""
    return l2_format(dtype).row_bytes(dim)


def quantize_dequantize(rows: np.ndarray, dtype: str) -> np.ndarray:
    """What L2 returns for ``rows`` (float32 [n, dim]): the rows after a round trip."""
    return l2_format(dtype).round_trip(np.asarray(rows, dtype=np.float32))


def error_bound(rows: np.ndarray, dtype: str) -> np.ndarray:
    """The stated bound of ``|x - x^|`` for every element of ``rows`` (same shape)."""
    return l2_format(dtype).error_bound(np.asarray(rows, dtype=np.float32).astype(np.float64))
