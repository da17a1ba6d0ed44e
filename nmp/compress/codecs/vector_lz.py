"""``quant-vlz``: quantizer, then vector LZ (whole repeated vectors become references), then
zstd over the reference and literal streams (the entropy stage)."""

from __future__ import annotations

import numpy as np

from nmp.compress.codec import Encoded, check_chunk, check_eb_rel, register
from nmp.compress.codecs.quant import outlier_parts, quant_meta, restore
from nmp.compress.quantizer import quantize
from nmp.compress.stages import zstd_compress, zstd_decompress
from nmp.compress.vlz import vlz_decode, vlz_encode


@register("quant-vlz")
class VectorLZCodec:
    name = "quant-vlz"
    lossy = True
    description = "error-bounded quantizer, vector LZ over whole vectors, then zstd"

    def encode(self, x: np.ndarray, eb_rel: float, *, table: int = 0) -> Encoded:
        x = check_chunk(x)
        qz = quantize(x, check_eb_rel(eb_rel))
        refs, literals = vlz_encode(qz.codes)
        meta = {**quant_meta(qz), "ref_dtype": refs.dtype.str, "ref_bytes": refs.nbytes}
        body = zstd_compress(refs.tobytes() + literals.tobytes())
        return Encoded(self.name, x.shape, {"streams": body, **outlier_parts(qz)}, meta)

    def decode(self, enc: Encoded) -> np.ndarray:
        raw = zstd_decompress(enc.parts["streams"])
        split = enc.meta["ref_bytes"]
        refs = np.frombuffer(raw[:split], dtype=np.dtype(enc.meta["ref_dtype"]))
        literals = np.frombuffer(raw[split:], dtype=np.dtype(enc.meta["dtype"]))
        literals = literals.reshape(-1, enc.shape[1]) if enc.shape[1] else literals
        return restore(vlz_decode(refs, literals), enc)
