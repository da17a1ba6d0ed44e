"""Size-and-lookup greedy sharding: balance the sum of each table's share of all bytes and its
share of all lookups (chosen combination: a product would reduce to size-based sharding when
every table has the same pooling, as Criteo's one-hot features do)."""

from __future__ import annotations

import numpy as np

from nmp.shard.registry import register
from nmp.shard.sharders.greedy import greedy_place


def _key(tables) -> np.ndarray:
    size = np.array([t.bytes_ for t in tables], dtype=float)
    lookups = np.array([t.lookups_per_batch for t in tables], dtype=float)
    return size / max(size.sum(), 1.0) + lookups / max(lookups.sum(), 1.0)


class SizeLookupSharder:
    name = "size-lookup"
    uses_row_stats = False
    description = "greedy table-wise: balance bytes share + lookups share per GPU"

    def place(self, problem):
        return greedy_place(self.name, problem, _key)


register(SizeLookupSharder())
