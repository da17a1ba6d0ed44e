"""``zstd`` and ``lz4``: a generic lossless library stage on the raw float32 bytes.

The baselines the lossy codecs are measured against: float32 embeddings have near-random
mantissas, so a byte-level compressor gains little on them (the reason SC'24 quantizes first).
"""

from __future__ import annotations

import numpy as np

from nmp.compress.codec import Encoded, check_chunk, register
from nmp.compress.stages import STAGES


class LosslessCodec:
    lossy = False

    def __init__(self, stage: str) -> None:
        self.name = stage
        self.description = f"{stage} on the float32 bytes (lossless)"
        self._compress, self._decompress = STAGES.get(stage)

    def encode(self, x: np.ndarray, eb_rel: float, *, table: int = 0) -> Encoded:
        x = check_chunk(x)
        return Encoded(self.name, x.shape, {"data": self._compress(x)})

    def decode(self, enc: Encoded) -> np.ndarray:
        raw = self._decompress(enc.parts["data"])
        return np.frombuffer(raw, dtype=np.float32).reshape(enc.shape).copy()


@register("zstd")
def _zstd() -> LosslessCodec:
    """zstd on the float32 bytes (lossless)."""
    return LosslessCodec("zstd")


@register("lz4")
def _lz4() -> LosslessCodec:
    """LZ4 on the float32 bytes (lossless)."""
    return LosslessCodec("lz4")
