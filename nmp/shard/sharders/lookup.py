"""Lookup-based greedy sharding: balance lookups per batch (pooling x batch) across GPUs."""

from __future__ import annotations

import numpy as np

from nmp.shard.registry import register
from nmp.shard.sharders.greedy import greedy_place


class LookupSharder:
    name = "lookup"
    uses_row_stats = False
    description = "greedy table-wise: balance lookups per GPU; whole tables in HBM while they fit"

    def place(self, problem):
        return greedy_place(
            self.name, problem, lambda ts: np.array([t.lookups_per_batch for t in ts])
        )


register(LookupSharder())
