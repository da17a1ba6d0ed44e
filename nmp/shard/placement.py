"""A placement: for every table, the GPU that owns it and which of its rows sit in that GPU's HBM
(the rest live in the host tier, reached over the GPU's link through unified memory).

Tables are placed table-wise (one GPU computes a table's pooled outputs for the whole batch, as
in model-parallel DLRM training); the tier split is per row. ``hbm_rows`` is None when the whole
table is in HBM, else the sorted ids of the rows in HBM (possibly none).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from nmp.workload import TableLookups


@dataclass(frozen=True, eq=False)
class TablePlacement:
    gpu: int
    num_rows: int
    hbm_rows: np.ndarray | None  # sorted int64 ids, or None: every row in HBM

    @property
    def n_hbm_rows(self) -> int:
        return self.num_rows if self.hbm_rows is None else int(self.hbm_rows.size)

    def route(self, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(in_hbm mask, local id) of each lookup: the row's position in its GPU's HBM shard, or
        in the table's host shard (rows not in HBM, in id order)."""
        if self.hbm_rows is None:
            return np.ones(indices.shape, dtype=bool), indices.copy()
        pos = np.searchsorted(self.hbm_rows, indices)
        hit = pos < self.hbm_rows.size
        hit[hit] = self.hbm_rows[pos[hit]] == indices[hit]
        # host id = row id minus the HBM rows below it
        local = np.where(hit, pos, indices - pos)
        return hit, local

    def host_rows(self) -> np.ndarray:
        """Ids of the rows in the host tier (ascending)."""
        if self.hbm_rows is None:
            return np.empty(0, dtype=np.int64)
        mask = np.ones(self.num_rows, dtype=bool)
        mask[self.hbm_rows] = False
        return np.flatnonzero(mask)


@dataclass(frozen=True, eq=False)
class Placement:
    sharder: str
    gpus: int
    tables: tuple[TablePlacement, ...]
    solve_s: float = 0.0
    info: dict = field(default_factory=dict)  # a searching sharder's solver statistics, or {}

    def hbm_bytes_per_gpu(self, row_bytes: list[int]) -> np.ndarray:
        out = np.zeros(self.gpus, dtype=np.int64)
        for t, tp in enumerate(self.tables):
            out[tp.gpu] += tp.n_hbm_rows * row_bytes[t]
        return out

    def tables_of(self, gpu: int) -> list[int]:
        return [t for t, tp in enumerate(self.tables) if tp.gpu == gpu]


def rows_from_mask(mask: np.ndarray) -> np.ndarray | None:
    """``hbm_rows`` for a boolean row mask (None when every row is in)."""
    return None if mask.all() else np.flatnonzero(mask)


def shard_lookups(lk: TableLookups, keep: np.ndarray, local: np.ndarray, rows: int) -> TableLookups:
    """The lookups ``keep`` of ``lk`` as a shard of ``rows`` rows sees them: local ids (from
    :meth:`TablePlacement.route`), every bag kept (empty where none of its lookups is kept)."""
    counts = np.bincount(lk.bag_ids()[keep], minlength=lk.batch)
    offsets = np.zeros(lk.batch + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    w = None if lk.weights is None else lk.weights[keep]
    return TableLookups(local[keep], offsets, w, max(rows, 1), lk.dim)
