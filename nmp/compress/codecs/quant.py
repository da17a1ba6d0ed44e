"""``quant``, ``quant-zstd``, ``quant-lz4``: the error-bounded quantizer, alone or followed by
a generic lossless stage (zstd = LZ77 + Huffman/FSE entropy coding; LZ4 = LZ77 only)."""

from __future__ import annotations

from typing import Any

import numpy as np

from nmp.compress.codec import Encoded, check_chunk, check_eb_rel, register
from nmp.compress.quantizer import Quantized, dequantize, quantize
from nmp.compress.stages import STAGES


def quant_meta(qz: Quantized) -> dict:
    return {"q_min": qz.q_min, "step": qz.step, "dtype": qz.codes.dtype.str, "eb": qz.eb_abs}


def outlier_parts(qz: Quantized) -> dict[str, bytes]:
    if not len(qz.outlier_idx):
        return {}
    return {"outlier_idx": qz.outlier_idx.tobytes(), "outlier_val": qz.outlier_val.tobytes()}


def restore(codes: np.ndarray, enc: Encoded) -> np.ndarray:
    idx = np.frombuffer(enc.parts.get("outlier_idx", b""), dtype=np.uint32)
    val = np.frombuffer(enc.parts.get("outlier_val", b""), dtype=np.float32)
    out = dequantize(codes, enc.meta["q_min"], enc.meta["step"], idx, val)
    return out.reshape(enc.shape)


class QuantCodec:
    lossy = True
    _compress: Any  # the lossless stage's pair (nmp.compress.stages), None without a stage
    _decompress: Any

    def __init__(self, stage: str | None) -> None:
        self.stage = stage
        self.name = "quant" if stage is None else f"quant-{stage}"
        self.description = "error-bounded quantizer, codes in the narrowest integer type" + (
            f", then {stage}" if stage else ""
        )
        self._compress, self._decompress = STAGES.get(stage) if stage else (None, None)

    def encode(self, x: np.ndarray, eb_rel: float, *, table: int = 0) -> Encoded:
        x = check_chunk(x)
        qz = quantize(x, check_eb_rel(eb_rel))
        body = qz.codes.tobytes() if self.stage is None else self._compress(qz.codes)
        return Encoded(self.name, x.shape, {"codes": body, **outlier_parts(qz)}, quant_meta(qz))

    def decode(self, enc: Encoded) -> np.ndarray:
        body = enc.parts["codes"]
        raw = body if self.stage is None else self._decompress(body)
        codes = np.frombuffer(raw, dtype=np.dtype(enc.meta["dtype"]))
        return restore(codes, enc)


@register("quant")
def _quant() -> QuantCodec:
    """The error-bounded quantizer, its codes in the narrowest integer type."""
    return QuantCodec(None)


@register("quant-zstd")
def _quant_zstd() -> QuantCodec:
    """The error-bounded quantizer, then zstd on its codes."""
    return QuantCodec("zstd")


@register("quant-lz4")
def _quant_lz4() -> QuantCodec:
    """The error-bounded quantizer, then LZ4 on its codes."""
    return QuantCodec("lz4")
