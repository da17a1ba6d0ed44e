"""Compression ratio and measured throughput of a codec on a set of chunks.

Throughput is uncompressed bytes per second of this process's CPU time (``time.process_time``:
other load on the shared machine does not count), one thread, best of
``repeats`` (the minimum time: the least disturbed run on a shared machine).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from nmp.compress.codec import Codec, Encoded


def measure(
    codec: Codec,
    chunks: Sequence[np.ndarray],
    eb_rel: float,
    *,
    tables: Sequence[int] | None = None,
    repeats: int = 3,
) -> dict[str, float]:
    """Encode and decode every chunk; ratio over all of them, max error against the bound."""
    tables = list(tables) if tables is not None else list(range(len(chunks)))
    raw = sum(c.nbytes for c in chunks)
    best_c = best_d = float("inf")
    encs: list[Encoded] = []
    outs: list[np.ndarray] = []
    for _ in range(max(1, repeats)):
        t0 = time.process_time()
        encs = [codec.encode(c, eb_rel, table=t) for c, t in zip(chunks, tables, strict=True)]
        t1 = time.process_time()
        outs = [codec.decode(e) for e in encs]
        t2 = time.process_time()
        best_c, best_d = min(best_c, t1 - t0), min(best_d, t2 - t1)
    packed = sum(e.nbytes for e in encs)
    worst = 0.0  # largest |error| / eb over every element of every chunk
    for c, o, e in zip(chunks, outs, encs, strict=True):
        err = float(np.abs(o.astype(np.float64) - c).max()) if c.size else 0.0
        eb = e.meta.get("eb")
        worst = max(worst, err / eb if eb else (0.0 if err == 0.0 else float("inf")))
    return {
        "raw_bytes": float(raw),
        "compressed_bytes": float(packed),
        "ratio": raw / packed,
        "compress_gbps": raw / best_c / 1e9,
        "decompress_gbps": raw / best_d / 1e9,
        "max_error_over_bound": worst,
    }
