"""Access statistics of lookups: per-row frequency, hot-set coverage, rows never touched.

These drive placement (hot-row replication, RankCache, ReCross's frequency-based partition,
RecShard-style tiering) and the GPU's L2 pinning. Frequencies are sparse (``np.unique`` over
the lookups), so a 40M-row table costs what its lookups cost unless :meth:`dense_counts` is
asked for.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class AccessStats:
    """Access counts of one table: ``rows`` (int64) hottest first, ``counts`` (int64) their
    accesses, descending; ties are broken by the lower row id."""

    num_rows: int
    accesses: int
    rows: np.ndarray
    counts: np.ndarray

    @property
    def unique_rows(self) -> int:
        return int(self.rows.shape[0])

    @property
    def untouched_rows(self) -> int:
        """Rows of the table never accessed."""
        return self.num_rows - self.unique_rows

    @property
    def untouched_fraction(self) -> float:
        return self.untouched_rows / self.num_rows if self.num_rows else 0.0

    @property
    def reuse_ratio(self) -> float:
        """Accesses per distinct row touched (1.0: no reuse)."""
        return self.accesses / self.unique_rows if self.unique_rows else 0.0

    def top_k(self, k: int | float) -> int:
        """The row count meant by ``k``: an int is a count, a float in (0, 1] a fraction of
        the table's rows (rounded up)."""
        if isinstance(k, float):
            if not 0.0 < k <= 1.0:
                raise ValueError(f"a fraction of rows must lie in (0, 1], got {k}")
            return math.ceil(k * self.num_rows)
        if k < 0:
            raise ValueError(f"k must be >= 0, got {k}")
        return int(k)

    def coverage(self, k: int | float) -> float:
        """Fraction of all accesses that go to the ``k`` hottest rows (see :meth:`top_k`)."""
        if self.accesses == 0:
            return 0.0
        return float(self.counts[: self.top_k(k)].sum()) / self.accesses

    def top_k_coverage(self, ks: Iterable[int | float]) -> dict[int | float, float]:
        return {k: self.coverage(k) for k in ks}

    def hot_rows(self, k: int | float) -> np.ndarray:
        """Ids of the ``k`` hottest rows (fewer if fewer were touched)."""
        return self.rows[: self.top_k(k)]

    def rows_for_coverage(self, fraction: float) -> int:
        """The fewest hottest rows that together receive at least ``fraction`` of accesses."""
        if self.accesses == 0 or fraction <= 0:
            return 0
        cum = np.cumsum(self.counts)
        return int(np.searchsorted(cum, fraction * self.accesses - 1e-9 * self.accesses) + 1)

    def dense_counts(self) -> np.ndarray:
        """Accesses of every row, int64 [num_rows] (allocates one entry per table row)."""
        out = np.zeros(self.num_rows, dtype=np.int64)
        out[self.rows] = self.counts
        return out

    def summary(self, ks: Iterable[int | float] = (0.001, 0.01, 0.1)) -> dict:
        return {
            "num_rows": self.num_rows,
            "accesses": self.accesses,
            "unique_rows": self.unique_rows,
            "untouched_rows": self.untouched_rows,
            "untouched_fraction": self.untouched_fraction,
            "top_k_coverage": {str(k): v for k, v in self.top_k_coverage(ks).items()},
        }


def _stats(indices: np.ndarray, num_rows: int) -> AccessStats:
    rows, counts = np.unique(np.asarray(indices, dtype=np.int64), return_counts=True)
    # rows are ascending, so a stable sort on -counts breaks ties by the lower row id.
    order = np.argsort(-counts, kind="stable")
    return AccessStats(
        num_rows=int(num_rows),
        accesses=int(indices.shape[0]),
        rows=rows[order],
        counts=counts[order].astype(np.int64),
    )


def access_stats(lookups, num_rows: int | None = None):
    """Access statistics of a :class:`TableLookups` (or of a bare index array, with
    ``num_rows``) -> :class:`AccessStats`; of a :class:`LookupBatch` or a list of batches of
    one workload -> a tuple with one :class:`AccessStats` per table (batches pooled)."""
    # loaded when the command runs, not for `nmp --help`
    from nmp.workload.batch import LookupBatch, TableLookups

    if isinstance(lookups, TableLookups):
        return _stats(lookups.indices, lookups.num_rows if num_rows is None else num_rows)
    if isinstance(lookups, LookupBatch):
        return tuple(_stats(t.indices, t.num_rows) for t in lookups.tables)
    if isinstance(lookups, list | tuple) and lookups and isinstance(lookups[0], LookupBatch):
        per_table = zip(*(b.tables for b in lookups), strict=True)
        return tuple(
            _stats(np.concatenate([t.indices for t in tabs]), tabs[0].num_rows)
            for tabs in per_table
        )
    indices = np.asarray(lookups)
    if num_rows is None:
        raise ValueError("access_stats of a bare index array needs num_rows")
    return _stats(indices, num_rows)
