"""Raw-byte views: codes work on bits, so recovery is exact for any dtype and NaN/Inf pattern."""

from __future__ import annotations

import numpy as np

from nmp.coding.errors import CodingError


def as_bytes(array: np.ndarray) -> np.ndarray:
    """A ``uint8`` view of ``array``'s raw bytes (no copy), last axis widened by the itemsize.

    ``float32 [rows, dim]`` becomes ``uint8 [rows, 4 * dim]``; a 0-d array becomes 1-d. The last
    axis must be contiguous (a view cannot reinterpret strided elements); otherwise this raises.
    Writing through the view writes the original array's bits.
    """
    arr = np.asarray(array)
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.dtype == np.uint8:
        return arr
    if arr.dtype.hasobject:
        raise CodingError(f"cannot take raw bytes of an object array (dtype {arr.dtype})")
    if arr.shape[-1] > 1 and arr.strides[-1] != arr.itemsize:
        raise CodingError(
            "as_bytes needs a contiguous last axis; pass np.ascontiguousarray(array) "
            f"(strides {arr.strides}, itemsize {arr.itemsize})"
        )
    if arr.shape[-1] <= 1 and not arr.flags.c_contiguous:
        arr = np.ascontiguousarray(arr)
    return arr.view(np.uint8)


def from_bytes(buf: np.ndarray, dtype: np.dtype | str) -> np.ndarray:
    """The inverse of :func:`as_bytes`: view ``uint8 [..., n]`` as ``dtype [..., n / itemsize]``."""
    dt = np.dtype(dtype)
    b = np.asarray(buf)
    if b.dtype != np.uint8:
        raise CodingError(f"from_bytes expects uint8, got {b.dtype}")
    if b.shape[-1] % dt.itemsize:
        raise CodingError(f"last axis of {b.shape[-1]} bytes is not a multiple of {dt.itemsize}")
    return b.view(dt)
