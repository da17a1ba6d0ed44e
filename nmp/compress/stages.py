"""Generic lossless stages from PyPI libraries: zstd (``zstandard``) and LZ4 (``lz4``).

zstd is LZ77 followed by entropy coding (Huffman-coded literals, FSE/tANS-coded sequences), so
on quantization codes without long repeats it acts as the entropy coder (the paper's Huffman
stage; :func:`nmp.compress.quantizer.code_entropy_bits` gives the order-0 floor to compare).
LZ4 is LZ77 without an entropy stage: fast, weaker on codes.

Levels are chosen for speed (a codec on the all-to-all's critical path must beat the link):
zstd level 1, LZ4's default block mode; ``benchmarks/compress.py`` measures both.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

import lz4.block
import zstandard

from nmp.registry import Registry

if TYPE_CHECKING:
    import numpy as np

# chosen: the fastest standard level. On dlrm-benchmark's all-to-all codes (4 nodes, eb 0.03,
# quant-zstd) it is also the best ratio of its neighbours: 9.87 at level 1, 9.14 at 3 (and
# 35 % slower), 5.24 at -1 (docs/studies.md, "Chosen values of the sharding, cache and training
# models"), so no study sweeps it.
ZSTD_LEVEL = 1

_local = threading.local()


def _zstd() -> tuple[zstandard.ZstdCompressor, zstandard.ZstdDecompressor]:
    pair = getattr(_local, "zstd", None)
    if pair is None:
        pair = (zstandard.ZstdCompressor(level=ZSTD_LEVEL), zstandard.ZstdDecompressor())
        _local.zstd = pair
    return pair


def zstd_compress(data: bytes | memoryview | np.ndarray) -> bytes:
    """zstd at level 1: LZ77 and entropy coding (the paper's Huffman stage)."""
    return _zstd()[0].compress(data)  # type: ignore[arg-type]  # any buffer (the stub: bytes)


def zstd_decompress(blob: bytes) -> bytes:
    return _zstd()[1].decompress(blob)


def lz4_compress(data: bytes | memoryview | np.ndarray) -> bytes:
    """LZ4 block mode: LZ77 without an entropy stage (fast, weaker on codes)."""
    return lz4.block.compress(data, store_size=True)


def lz4_decompress(blob: bytes) -> bytes:
    return lz4.block.decompress(blob)


class ByteStage(NamedTuple):
    """A byte compressor a codec may end in; unpacks as ``(compress, decompress)``."""

    compress: Callable[[Any], bytes]
    decompress: Callable[[bytes], bytes]

    @property
    def description(self) -> str:  # (nmp models --registries)
        return (self.compress.__doc__ or "").strip().splitlines()[0]


#: The byte compressors a codec may end in, by name.
STAGES: Registry[ByteStage] = Registry("compression stage")
STAGES.register(ByteStage(zstd_compress, zstd_decompress), name="zstd")
STAGES.register(ByteStage(lz4_compress, lz4_decompress), name="lz4")
