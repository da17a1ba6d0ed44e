"""``hybrid``: per table, the quantizer followed by whichever lossless stage suits the table,
chosen once by an offline analysis (SC'24's hybrid of vector LZ and entropy coding).

The analysis compresses a sample chunk of the table both ways (vector LZ + zstd, and zstd
alone as the entropy coder) and keeps the smaller; the repeat fraction of whole vectors, which
decides it in practice (one-hot or small tables repeat, pooled bags of many rows do not), is
recorded with the choice. A table not analysed before its first chunk is analysed on that
chunk (the first batch is the offline sample); :meth:`HybridCodec.plan` does it up front.
"""

from __future__ import annotations

import numpy as np

from nmp.compress.codec import Codec, Encoded, check_chunk, register
from nmp.compress.codecs.quant import QuantCodec
from nmp.compress.codecs.vector_lz import VectorLZCodec
from nmp.compress.quantizer import quantize
from nmp.compress.vlz import repeat_fraction


@register("hybrid")
class HybridCodec:
    name = "hybrid"
    lossy = True
    description = "quantizer, then per table vector LZ or entropy coding (offline choice)"

    def __init__(self) -> None:
        self.members: dict[str, Codec] = {
            "quant-vlz": VectorLZCodec(),
            "quant-zstd": QuantCodec("zstd"),
        }
        self.choice: dict[int, str] = {}
        self.analysis: dict[int, dict] = {}

    def plan(self, table: int, sample: np.ndarray, eb_rel: float) -> str:
        """Choose table ``table``'s stage from ``sample`` (offline analysis) and return it."""
        sample = check_chunk(sample)
        sizes = {n: c.encode(sample, eb_rel).nbytes for n, c in self.members.items()}
        best = min(sizes, key=lambda n: (sizes[n], n))
        self.choice[table] = best
        self.analysis[table] = {
            "choice": best,
            "repeat_fraction": repeat_fraction(quantize(sample, eb_rel).codes),
            **{f"bytes_{n}": s for n, s in sizes.items()},
        }
        return best

    def encode(self, x: np.ndarray, eb_rel: float, *, table: int = 0) -> Encoded:
        if table not in self.choice:
            self.plan(table, x, eb_rel)
        enc = self.members[self.choice[table]].encode(x, eb_rel)
        enc.meta["member"] = self.choice[table]
        return enc

    def decode(self, enc: Encoded) -> np.ndarray:
        return self.members[enc.meta["member"]].decode(enc)
