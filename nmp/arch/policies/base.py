"""RowPolicy: the behaviour shared by policies whose units own whole rows near memory.

Rows sit on the data levels' nodes (interleaved by global row id), each unit gathers and adds
the rows it owns, and the partial sums climb the reduction tree (:mod:`nmp.arch.tree`) to the
host. A policy overrides what differs: which level serves a lookup (``assign_levels``), and for
designs that do not own whole rows, lowering and the per-node work.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nmp.arch import memview as mv
from nmp.arch.functional import pool_tables
from nmp.arch.lowering import LevelLookups, LevelStream, lower_level, split_levels
from nmp.arch.placement import FlatLookups, Placement, bag_keys, bag_major_order, place_rows
from nmp.arch.spec import LEVELS, RANK_CACHE_POLICIES
from nmp.arch.timing import time_near_memory
from nmp.arch.tree import TreeTraffic, tree_reduce
from nmp.config import KeyedValueError


class RowPolicy:
    """Whole rows on the data levels' units, partial sums up the reduction tree."""

    name = ""
    near_memory = True
    slices_rows = False

    # ---- spec ------------------------------------------------------------------------------
    def validate(self, spec) -> None:
        if not spec.data_levels:
            raise KeyedValueError("policy", f"policy '{self.name}' needs a level with units")
        if spec.bandwidth_aware_partition and not self.partitions_by_level:
            raise KeyedValueError(
                "bandwidth_aware_partition", "only a 'cross-level' design partitions by level"
            )

    partitions_by_level = False  # rows split over several data levels (an LP decides how)

    def needs_profile(self, spec) -> bool:
        """Whether placement needs the access profile (hot rows, frequency classes)."""
        return spec.replicate_hot_rows > 0 or (
            spec.rank.cache_kib > 0
            and RANK_CACHE_POLICIES.get(spec.rank.cache_policy).needs_profile
        )

    def partitions(self, spec) -> bool:
        """Whether the partition stage solves a split of rows over several data levels."""
        return False

    # ---- place -----------------------------------------------------------------------------
    def issue_order(self, spec, flat: FlatLookups) -> np.ndarray:
        """The order the host sends lookups: table by table with RecNMP's table-aware
        scheduling, otherwise sample by sample across tables."""
        if spec.table_aware_scheduling:
            return np.arange(flat.n, dtype=np.int64)
        return bag_major_order(flat)

    def assign_levels(self, arch, flat: FlatLookups) -> np.ndarray:
        """Level index (into LEVELS) of every lookup."""
        return np.full(flat.n, LEVELS.index(arch.spec.data_levels[0]), dtype=np.int64)

    def place(self, arch, flat: FlatLookups, order: np.ndarray) -> Placement:
        level = self.assign_levels(arch, flat)
        return place_rows(
            arch.spec, arch.layouts, arch.mem, flat, level, arch.profile, order,
            rank_cache=arch.rank_cache_state(),
        )  # fmt: skip

    # ---- functional ------------------------------------------------------------------------
    def tree_traffic(self, arch, flat: FlatLookups, plc: Placement) -> TreeTraffic:
        """Partial sums sent and received by every node for this batch (all tables)."""
        mem = arch.mem
        _, traffic = tree_reduce(
            arch.layouts,
            mv.org(mem, "ranks"),
            mv.org(mem, "channels"),
            plc.level,
            plc.node,
            bag_keys(flat),
            None,
            flat.num_tables * flat.batch,
        )
        return traffic

    def reduce_nodes(self, arch, plc: Placement):
        """(first global node id per level, parent of each global node, level and node of
        each lookup) of the reduction tree the functional execution walks."""
        base, parent = arch.global_nodes()
        return base, parent, plc.level, plc.node

    def execute(self, arch, flat: FlatLookups, plc: Placement) -> list[np.ndarray]:
        """The functional gather-reduce: units accumulate per-bag partial sums of the rows
        they own, the tree adds them up (bank -> bank group -> rank -> host)."""
        assert arch.store is not None
        base, parent, level, node = self.reduce_nodes(arch, plc)
        return pool_tables(arch.store, flat, arch.table_rows, base, parent, level, node)

    # ---- timing ----------------------------------------------------------------------------
    def time_batch(self, arch, flat, plc, order, traffic):
        return time_near_memory(arch, flat, plc, order, traffic)

    def split(self, arch, flat, plc, order) -> LevelLookups | None:
        """Every data level's lookups in issue order, done once for all levels."""
        data = tuple(lv for lv, lay in arch.layouts.items() if lay.capacity_banks > 0)
        return split_levels(arch.layouts, arch.mem, flat, plc, order, data, scratch=True)

    def lower(self, arch, level: str, flat, plc, order, split) -> LevelStream | None:
        """The request streams of ``level``'s nodes (None: the level reads no rows)."""
        lay = arch.layouts[level]
        if lay.capacity_banks <= 0:
            return None
        return lower_level(arch.spec, level, lay, arch.mem, flat, plc, order, split, scratch=True)

    def level_work(self, arch, level: str, stream, flat, sums, dims) -> tuple[Any, ...]:
        """(lookups per node, unit cycles per node, lookups the level serves, FP32 elements it
        adds) of ``level``: a lookup takes ceil(dim / lanes) cycles of its unit."""
        li = LEVELS.index(level)
        nodes = arch.layouts[level].nodes
        if stream is None:
            return np.zeros(nodes), np.zeros(nodes), 0, float(sums.dim_sum[li])
        node_lookups = sums.node_lookups[li, :nodes].astype(np.float64)
        lanes_work = sums.lanes_cycles[li, :nodes].copy()
        return node_lookups, lanes_work, int(node_lookups.sum()), float(sums.dim_sum[li])

    def result_slices(self, arch) -> int:
        """Parts a pooled partial sum is split into on its way to the host (1: whole rows)."""
        return 1

    def instruction_lookups(self, arch, flat, plc, sums):
        """(instructions per channel, lookups per rank served inside the DRAM chips, whether
        any is): the loads of the two instruction paths."""
        mem = arch.mem
        channels, ranks = mv.org(mem, "channels"), mv.org(mem, "ranks")
        if sums.rank_lookups is not None:
            per_chan = sums.rank_lookups.reshape(channels, ranks).sum(axis=1)
            return per_chan, sums.rank_dram_lookups, bool(sums.rank_dram_lookups.any())
        # node ids count units rank by rank at every level: rank id = node // units of its level
        units = np.ones(len(LEVELS) + 1, dtype=np.int64)
        for li, lv in enumerate(LEVELS):
            if lv in arch.layouts:
                units[li] = arch.layouts[lv].units
        placed = plc.level >= 0
        if placed.all():
            lookup_rank = plc.node // units[plc.level]
        else:
            lookup_rank = np.where(placed, np.maximum(plc.node, 0) // units[plc.level], 0)
        per_chan = np.bincount(lookup_rank // ranks, minlength=channels)
        in_dram = plc.level >= LEVELS.index("bankgroup")
        per_rank_dram = np.bincount(lookup_rank[in_dram], minlength=channels * ranks)
        return per_chan, per_rank_dram, bool(in_dram.any())


__all__ = ["RowPolicy"]
