"""Size-based greedy sharding: balance table bytes across GPUs (TorchRec-style, table-wise)."""

from __future__ import annotations

import numpy as np

from nmp.shard.registry import register
from nmp.shard.sharders.greedy import greedy_place


class SizeSharder:
    name = "size"
    uses_row_stats = False
    description = "greedy table-wise: balance bytes per GPU; whole tables in HBM while they fit"

    def place(self, problem):
        return greedy_place(self.name, problem, lambda ts: np.array([t.bytes_ for t in ts]))


register(SizeSharder())
