"""Erasure codes on raw bytes for in-memory parity of embedding tables.

- :func:`as_bytes` views any array's raw bits as ``uint8`` (recovery is bit-exact for float32,
  bf16, int8 and every NaN/Inf pattern).
- :class:`XorCode` (k + 1) and :class:`ReedSolomonCode` (k + r over GF(2^8), 0x11d): ``encode``,
  in-place ``update`` / ``update_delta`` (``parity_i ^= g_ij * (old XOR new)``), ``decode``,
  ``coefficients [r, k]``.
- :class:`FloatSumParity`: the published float32 sum parity, and
  :func:`measure_float_sum_drift`, its rounding drift against exact XOR parity.
- :class:`StripeLayout`: which node holds each data row and the parity of its stripe.
"""

from nmp.coding.bytesview import as_bytes, from_bytes
from nmp.coding.codes import ReedSolomonCode, XorCode
from nmp.coding.errors import CodingError, DecodeError
from nmp.coding.floatsum import FloatSumDrift, FloatSumParity, measure_float_sum_drift
from nmp.coding.gf256 import gf_mul, is_mds
from nmp.coding.stripe import StripeLayout

__all__ = [
    "CodingError",
    "DecodeError",
    "FloatSumDrift",
    "FloatSumParity",
    "ReedSolomonCode",
    "StripeLayout",
    "XorCode",
    "as_bytes",
    "from_bytes",
    "gf_mul",
    "is_mds",
    "measure_float_sum_drift",
]
