"""``none``: the float32 bytes as they are (what the all-to-all sends today; a memcpy)."""

from __future__ import annotations

import numpy as np

from nmp.compress.codec import Encoded, check_chunk, register


@register("none")
class RawCodec:
    name = "none"
    lossy = False
    compresses = False  # the bytes cross as they are (what an uncompressed run sends)
    description = "no compression: float32 bytes copied"

    def encode(self, x: np.ndarray, eb_rel: float, *, table: int = 0) -> Encoded:
        x = check_chunk(x)
        return Encoded(self.name, x.shape, {"data": x.tobytes()})

    def decode(self, enc: Encoded) -> np.ndarray:
        return np.frombuffer(enc.parts["data"], dtype=np.float32).reshape(enc.shape).copy()
