"""Codec throughput on the embedding all-to-all, beside zstd's and memcpy's in the same run.

The chunks are those an 8-node all-to-all sends for one batch of the DLRM benchmark and of
Criteo Terabyte (real lookups pooled through EmbeddingBag; nmp.compress.pooled), at the
relative error bound 0.03. Throughput = uncompressed bytes per second of this process's CPU
time (one thread), best of 5; memcpy is ``np.copyto`` of the same chunks.

    .venv/bin/python benchmarks/compress.py
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from nmp.compress import codec_names, make_codec, measure
from nmp.compress.pooled import alltoall_chunks, pooled_batch

NODES = 8
EB = 0.03
REPEATS = 5


def memcpy_gbps(chunks: list[np.ndarray]) -> float:
    dst = [np.empty_like(c) for c in chunks]
    best = float("inf")
    for _ in range(REPEATS):
        t0 = time.process_time()
        for d, c in zip(dst, chunks, strict=True):
            np.copyto(d, c)
        best = min(best, time.process_time() - t0)
    return sum(c.nbytes for c in chunks) / max(best, 1e-9) / 1e9


def main() -> None:
    for wl in ("dlrm-benchmark", "criteo-terabyte"):
        chunks = alltoall_chunks(pooled_batch(wl), NODES)
        data = [c for _, _, c in chunks]
        ids = [t for t, _, _ in chunks]
        raw = sum(c.nbytes for c in data)
        res = {
            n: measure(make_codec(n), data, EB, tables=ids, repeats=REPEATS) for n in codec_names()
        }
        mem = memcpy_gbps(data)
        z = res["zstd"]
        print(f"\n{wl}: {len(data)} chunks, {raw / 1e6:.1f} MB, {NODES} nodes, eb {EB}")
        print(
            f"memcpy {mem:.2f} GB/s; zstd (float32 bytes) {z['compress_gbps']:.2f} / "
            f"{z['decompress_gbps']:.2f} GB/s"
        )
        print(
            f"{'codec':<11} {'ratio':>7} {'comp GB/s':>10} {'decomp GB/s':>12} "
            f"{'comp/zstd':>10} {'comp/memcpy':>12} {'decomp/memcpy':>14}"
        )
        for n, m in res.items():
            print(
                f"{n:<11} {m['ratio']:7.2f} {m['compress_gbps']:10.3f} "
                f"{m['decompress_gbps']:12.3f} "
                f"{m['compress_gbps'] / z['compress_gbps']:10.2f} "
                f"{m['compress_gbps'] / mem:12.4f} {m['decompress_gbps'] / mem:14.4f}"
            )


if __name__ == "__main__":
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()  # (--help)
    main()
