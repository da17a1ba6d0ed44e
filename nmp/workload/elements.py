"""The element formats a table's rows are stored in: a workload's ``dtype``.

A format gives two things, and stages ask it for them, never its name:

* ``bytes`` per element: a row's size in memory, hence the DRAM bursts of a lookup, a table's
  capacity, the GPU model's and the shard tiers' bytes moved;
* ``stored(values)``: what a table of the format holds for float32 values, returned as float32
  (the functional model's rows are hashed float32 numbers rounded to the format, so a reduction
  in memory sums what the format keeps).

``holds_float32`` says the format keeps float32 values unchanged: the functional model then
reads a row from its basis tables without a copy, and the real kernels (torch's fp32
``EmbeddingBag``) can run the table. Formats are whole bytes per element; a sub-byte format
would need a row size of its own in each stage that multiplies ``bytes`` by ``dim``.

A small family, registered where it is declared (as L2's row formats are); adding one is a
class of this shape and one ``ELEMENT_FORMATS.register(...)`` call, in a plugin or here.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from nmp.registry import Registry

DEFAULT_ELEMENT_FORMAT = "float32"  # DLRM trains fp32 tables (workloads/*.toml say so)


class ElementFormat(ABC):
    """How a table stores an element: its bytes and the value it keeps."""

    name: str
    description: str
    bytes: int
    holds_float32: bool = False

    @abstractmethod
    def stored(self, values: np.ndarray) -> np.ndarray:
        """What a table of this format holds for float32 ``values``, as float32."""


class Float32(ElementFormat):
    name = "float32"
    description = "IEEE single precision, stored as is"
    bytes = 4
    holds_float32 = True

    def stored(self, values: np.ndarray) -> np.ndarray:
        return values


class Float16(ElementFormat):
    name = "float16"
    description = "IEEE half precision, rounded to nearest even"
    bytes = 2

    def stored(self, values: np.ndarray) -> np.ndarray:
        return values.astype(np.float16).astype(np.float32)


class BFloat16(ElementFormat):
    name = "bfloat16"
    description = "the top 16 bits of float32 (truncated, as a bit mask converts)"
    bytes = 2

    def stored(self, values: np.ndarray) -> np.ndarray:
        bits = values.view(np.uint32) & np.uint32(0xFFFF0000)
        return bits.view(np.float32)


class Int8(ElementFormat):
    name = "int8"
    # The hashed rows lie in [-1, 1) (nmp.arch.rowdata): a fixed scale keeps every value in
    # int8's range.
    description = "integers of a fixed scale 127 per unit, rounded to nearest"
    bytes = 1

    def stored(self, values: np.ndarray) -> np.ndarray:
        return np.rint(values * np.float32(127.0)).astype(np.float32)


ELEMENT_FORMATS: Registry[ElementFormat] = Registry("table dtype", order=lambda f: -f.bytes)
ELEMENT_FORMATS.register(Float32())
ELEMENT_FORMATS.register(Float16())
ELEMENT_FORMATS.register(BFloat16())
ELEMENT_FORMATS.register(Int8())


def element_format(dtype: str) -> ElementFormat:
    """The registered format ``dtype`` names; an NmpError listing the known ones."""
    return ELEMENT_FORMATS.get(dtype)


def element_bytes(dtype: str) -> int:
    """Bytes one element of a ``dtype`` table takes in memory."""
    return element_format(dtype).bytes
