"""The EmbeddingBag kernel's index, offset and ``offset2bag`` traffic through the L1 and L2.

What the stock kernel does (``EmbeddingBag_updateOutputKernel_sum_mean``): every lane of a warp
loads ``input[emb]`` (one 8-B index, a broadcast: one sector request per warp and lookup) before
the row load that needs it; each warp loads ``offsets[bag]`` and ``offsets[bag + 1]`` once per
chunk; the warp holding feature 0 stores ``offset2bag[emb] = bag`` (8 B) every lookup. The
``ceil(dim / 32)`` warps of one bag are warps of one block (chunks ``4b .. 4b + 3`` of block
``b // 2`` for dim 128), so they share the SM's L1.

How the caches serve it (counted exactly from the offsets, no simulation needed: the stream is
sequential within a bag):

* L1: a bag's index stream spans ``last - first + 1`` sectors; the first warp to reach each one
  misses, every other index request of the bag hits (the other warps of the bag, and the same
  warp's next ``sector / index`` lookups). A hit on a sector still in flight waits for it, so
  every warp of the bag pays the miss's latency once per sector (:class:`IndexTraffic.l2_share`,
  ``hbm_share``).
* L2: the L2 starts cold (the stage's batches are timed after a flush) and fetches ``fetch_bytes``
  (the L2's miss granularity, ``l2.fetch_bytes``) from HBM per miss: the first index sector of
  each such piece waits for HBM, the others of the piece are L2 hits; a piece two neighbouring
  bags share is fetched once.
* Stores: the L1 is write-through without allocation (its sector hit rate does not count them);
  the L2 (write-back) takes each 8-B store into a sector without a fetch (a hit), and writes the
  ``offset2bag`` array back to HBM once. The hand-written kernel the recompiled variants run
  (:data:`nmp.gpu.kernels_real.KERNEL_SOURCE`) stores no ``offset2bag``
  (``stores_offset2bag = False``): it makes neither the stores nor the write-back.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class IndexTraffic:
    """One table's index, offset and offset2bag traffic (sector counts)."""

    l1_requests: float  # index + offset load requests to L1 (one sector each)
    l1_hits: float
    l2_requests: float  # L1 misses + the offset2bag stores
    l2_hits: float
    hbm_read_bytes: float  # distinct index/offset sectors fetched (32-B fetches)
    hbm_write_bytes: float  # offset2bag written back
    l2_share: float  # per lookup: index waits served by the L2
    hbm_share: float  # per lookup: index waits served by HBM


def index_traffic(
    offsets: np.ndarray,
    chunks_per_bag: int,
    index_bytes: int,
    sector_bytes: int,
    fetch_bytes: int | None = None,
    *,
    stores_offset2bag: bool = True,
) -> IndexTraffic:
    """:class:`IndexTraffic` of one kernel over a table's ``offsets`` (CSR, batch + 1 entries);
    ``stores_offset2bag``: the kernel writes ``offset2bag[emb]`` once per lookup (the stock one)."""
    off = np.asarray(offsets, dtype=np.int64)
    n = int(off[-1] - off[0])
    begin, end = off[:-1], off[1:]
    full = end > begin
    first = begin[full] * index_bytes // sector_bytes
    last = (end[full] * index_bytes - 1) // sector_bytes
    bag_sectors = float((last - first + 1).sum())  # L1 misses of the index stream
    fetch_bytes = max(sector_bytes, fetch_bytes or sector_bytes)
    distinct = float(-(-n * index_bytes // fetch_bytes)) if n else 0.0
    bags = int(full.sum())
    chunks = bags * chunks_per_bag
    # Offsets: two loads per chunk, the bag's first warp misses; distinct sectors of the array.
    offset_requests = 2.0 * chunks
    offset_misses = float(bags)
    offset_fetches = float(-(-(off.shape[0]) * index_bytes // fetch_bytes))
    l1_requests = n * chunks_per_bag + offset_requests
    l1_misses = bag_sectors + offset_misses
    stores = float(n) if stores_offset2bag else 0.0
    fetches = distinct + offset_fetches
    return IndexTraffic(
        l1_requests=float(l1_requests),
        l1_hits=float(l1_requests - l1_misses),
        l2_requests=l1_misses + stores,
        l2_hits=max(0.0, l1_misses - fetches) + stores,
        hbm_read_bytes=fetches * fetch_bytes,
        hbm_write_bytes=stores * index_bytes,
        l2_share=max(0.0, bag_sectors - distinct) / n if n else 0.0,
        hbm_share=distinct / n if n else 0.0,
    )
