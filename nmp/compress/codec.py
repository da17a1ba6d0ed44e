"""The codec interface and registry of the embedding all-to-all compressors.

A codec turns one *chunk* (the float32 ``[vectors, dim]`` block of one table that one node sends
to another: pooled embeddings forward, their gradients backward) into an :class:`Encoded` blob
and back. Lossy codecs take the relative error bound ``eb_rel`` and derive the absolute one from
the chunk (``eb = eb_rel * (max - min)``, SC'24's per-table bound); lossless ones ignore it.
Every codec registers itself once (:func:`register`, into :data:`CODECS`); stages and CLIs list
names from here and never test a codec's name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from nmp.errors import NmpError
from nmp.registry import Registry

# Bytes of the fixed header every blob carries (dtype/shape/bound/offset words), counted in
# every ratio so that a tiny chunk cannot look free.
HEADER_BYTES = 24


@dataclass
class Encoded:
    """A compressed chunk: named byte parts (what would go on the wire) plus decode metadata."""

    codec: str
    shape: tuple[int, ...]
    parts: dict[str, bytes] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def nbytes(self) -> int:
        return HEADER_BYTES + sum(len(p) for p in self.parts.values())


class Codec(Protocol):
    """What a codec provides."""

    name: str
    lossy: bool
    description: str
    # (optional class attribute, default True) False: the codec sends the bytes unchanged

    def encode(self, x: np.ndarray, eb_rel: float, *, table: int = 0) -> Encoded: ...

    def decode(self, enc: Encoded) -> np.ndarray: ...


#: Codec factories by name; each module of nmp.compress.codecs registers its codecs when imported.
CODECS: Registry[Callable[[], Codec]] = Registry("codec", package="nmp.compress.codecs")


def register(name: str) -> Callable[[Callable[[], Codec]], Callable[[], Codec]]:
    """Class/factory decorator: ``make_codec(name)`` builds a fresh instance."""
    return CODECS.register(name=name)


def codec_names() -> tuple[str, ...]:
    return CODECS.names()


def make_codec(name: str) -> Codec:
    return CODECS.get(name)()


def check_chunk(x: np.ndarray) -> np.ndarray:
    """The chunk as a C-contiguous 2-D float32 array; anything else is a clear error."""
    x = np.asarray(x)
    if x.dtype != np.float32:
        raise NmpError(f"codec input must be float32, got {x.dtype}")
    if x.ndim == 1:
        x = x[None, :]
    if x.ndim != 2:
        raise NmpError(f"codec input must be [vectors, dim], got shape {x.shape}")
    # NaN/infinity: the quantizer rejects them in its range pass; lossless codecs carry them.
    return np.ascontiguousarray(x)


def check_eb_rel(eb_rel: float) -> float:
    eb_rel = float(eb_rel)
    if not 1e-7 <= eb_rel <= 1.0:
        raise NmpError(f"relative error bound {eb_rel} outside [1e-7, 1]")
    return eb_rel
