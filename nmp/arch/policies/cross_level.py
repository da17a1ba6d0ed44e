"""Cross-level placement (ReCross): each row belongs to one of several data levels (rank, bank
group, bank). The share of each (table, frequency class) cell per level comes from the partition
stage: the LP of :mod:`nmp.arch.partition` with ``bandwidth_aware_partition``, otherwise the
levels' capacity ratio (frequency-oblivious). A row's level is picked by a hash of its id against
the cell's cumulative shares, so every lookup of a row goes to the same level."""

from __future__ import annotations

import numpy as np

from nmp.arch.policies import register
from nmp.arch.policies.base import RowPolicy
from nmp.arch.rowdata import unit_hash
from nmp.arch.spec import BASE_PLACEMENTS, LEVELS
from nmp.jit import njit


@njit(cache=True)
def _pick_levels(table, cls, u, cum, classes, level_ids, level):  # pragma: no cover - compiled
    """Level of every lookup: the number of cumulative shares of its (table, class) cell that
    lie at or below its hash ``u`` picks the level."""
    for i in range(table.shape[0]):
        cell = table[i] * classes + cls[i]
        pick = 0
        for j in range(cum.shape[1] - 1):
            if u[i] >= cum[cell, j]:
                pick += 1
        level[i] = level_ids[pick]


class CrossLevel(RowPolicy):
    """ReCross: each row on one of several data levels, by the partition's shares."""

    name = "cross-level"
    partitions_by_level = True

    def needs_profile(self, spec) -> bool:
        by_frequency = BASE_PLACEMENTS.get(spec.base_placement).hottest_to_fastest
        frequency_base = by_frequency and len(spec.data_levels) > 1
        return super().needs_profile(spec) or spec.bandwidth_aware_partition or frequency_base

    def partitions(self, spec) -> bool:
        return len(spec.data_levels) > 1

    def assign_levels(self, arch, flat) -> np.ndarray:
        levels = arch.spec.data_levels
        if len(levels) == 1:
            return super().assign_levels(arch, flat)
        partition, profile = arch.partition, arch.profile
        assert partition is not None
        level = np.full(flat.n, -1, dtype=np.int64)
        if profile is not None:
            cls = profile.row_classes(flat.table, flat.row)
        else:
            cls = np.zeros(flat.n, dtype=np.int64)  # without a profile every class splits alike
        cum = np.ascontiguousarray(np.cumsum(partition, axis=2).reshape(-1, partition.shape[2]))
        u = unit_hash(flat.grow, 0x5EED)
        level_ids = np.asarray([LEVELS.index(lv) for lv in levels], dtype=np.int64)
        _pick_levels(
            np.ascontiguousarray(flat.table, dtype=np.int64),
            np.ascontiguousarray(cls, dtype=np.int64),
            u,
            cum,
            partition.shape[1],
            level_ids,
            level,
        )
        return level


register(CrossLevel())
