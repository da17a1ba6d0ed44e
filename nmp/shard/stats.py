"""Per-table access statistics that drive tiered placement, measured over a profiling window.

For each table: the access-frequency CDF over its rows (rows hottest first), the fraction of
rows never touched in the window (tables act as hash tables: most rows of a large table stay
cold, the observation RecShard builds on), and the pooling-factor distribution (lookups per
bag). The window is ``batches`` batches generated from the workload (or a user's index file),
and the count is part of the result.

Rows are grouped into **frequency classes** per table so that a placement program stays small:
every row seen exactly 1, 2, 3 or 4 times is a class of its own count, then counts in
[5, 8), [8, 16), ... (powers of two), plus one class for the rows never seen. A table of 10M
rows becomes about 20 classes. RecShard gives never-seen rows no accesses; the Good-Turing
switch gives them the share of lookups that unseen rows will get in other batches.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nmp.errors import NmpError
from nmp.shard.unseen import DEFAULT_UNSEEN, UNSEEN_ESTIMATORS
from nmp.workload import LookupBatch, WorkloadSpec, access_stats, generate_batches, load_index_file

# Counts 1..4 are classes of their own (few-batch profiles are made of them); above, one class
# per power of two (chosen: within a class rows differ in frequency by less than 2x). 2 or 8
# exact counts leave the MILP's optimum unchanged (4.877 us on criteo-terabyte, a100x8-pcie4)
# but HiGHS then returns another of the equally good placements, whose held-out step differs
# as much as another profile seed's (docs/studies.md, "Chosen values of the sharding, cache
# and training models").
EXACT_COUNTS = 4


@dataclass(frozen=True, eq=False)
class FrequencyClass:
    """Rows of one table with similar profiled access counts (``rows`` hottest first)."""

    rows: np.ndarray  # row ids (int64); for the untouched class, empty (they are the rest)
    n_rows: int
    accesses_per_batch: float  # expected lookups per batch of all its rows together

    @property
    def density(self) -> float:
        """Expected lookups per batch per row."""
        return self.accesses_per_batch / self.n_rows if self.n_rows else 0.0


@dataclass(frozen=True, eq=False)
class TableStats:
    """Statistics of one table over ``batches`` profiled batches."""

    num_rows: int
    row_bytes: int
    batches: int
    accesses: int
    rows: np.ndarray  # touched rows, hottest first (ties: lower id first)
    counts: np.ndarray  # their accesses, descending
    bag_lengths: np.ndarray  # lookups per bag over the window

    @property
    def untouched_fraction(self) -> float:
        return 1.0 - self.rows.size / self.num_rows

    @property
    def lookups_per_batch(self) -> float:
        return self.accesses / self.batches

    @property
    def bytes_(self) -> int:
        return self.num_rows * self.row_bytes

    def cdf(self, row_fractions) -> np.ndarray:
        """Fraction of accesses that the hottest ``row_fractions`` of the table's rows get."""
        if self.accesses == 0:
            return np.zeros(len(row_fractions))
        cum = np.concatenate([[0], np.cumsum(self.counts)])
        k = np.minimum(
            np.ceil(np.asarray(row_fractions) * self.num_rows).astype(np.int64), len(cum) - 1
        )
        return cum[k] / self.accesses

    def pooling(self) -> dict[str, float]:
        b = self.bag_lengths
        if b.size == 0:
            return {"mean": 0.0, "p50": 0.0, "p99": 0.0, "max": 0.0}
        return {
            "mean": float(b.mean()),
            "p50": float(np.percentile(b, 50)),
            "p99": float(np.percentile(b, 99)),
            "max": float(b.max()),
        }

    def unseen_mass(self) -> float:
        """Good-Turing estimate of the share of future lookups that go to rows never seen in
        the window: rows seen exactly once / lookups (Good, Biometrika 1953)."""
        if self.accesses == 0:
            return 1.0
        return float(np.count_nonzero(self.counts == 1)) / self.accesses

    def classes(self, unseen: str = DEFAULT_UNSEEN) -> list[FrequencyClass]:
        """The table's frequency classes, hottest first; the untouched rows last (if any).

        ``unseen`` names an :data:`UNSEEN_ESTIMATORS` member: ``"zero"`` (RecShard's
        statistics) gives rows never seen no accesses; ``"good-turing"`` gives them together
        the Good-Turing share :meth:`unseen_mass` of the lookups and scales the seen classes
        by the rest."""
        if unseen not in UNSEEN_ESTIMATORS:
            raise NmpError(f"unseen: {UNSEEN_ESTIMATORS.unknown_message(unseen)}")
        untouched = self.num_rows - self.rows.size
        p0 = UNSEEN_ESTIMATORS.get(unseen).mass(self) if untouched else 0.0
        out = []
        c = self.counts
        edges = [*range(1, EXACT_COUNTS + 2)]
        top = int(c[0]) if c.size else 0
        e = EXACT_COUNTS + 1
        while e <= top:
            e *= 2
            edges.append(e)
        # class j holds counts in [edges[j], edges[j + 1]); counts are descending
        for lo, hi in reversed(list(zip(edges[:-1], edges[1:], strict=True))):
            start = int(np.searchsorted(-c, -(hi - 1), side="left"))
            stop = int(np.searchsorted(-c, -lo, side="right"))
            if stop > start:
                acc = float(c[start:stop].sum()) / self.batches * (1.0 - p0)
                out.append(FrequencyClass(self.rows[start:stop], stop - start, acc))
        if untouched:
            acc = p0 * self.lookups_per_batch
            out.append(FrequencyClass(np.empty(0, dtype=np.int64), untouched, acc))
        return out

    def summary(self) -> dict:
        cdf = self.cdf([0.001, 0.01, 0.1])
        return {
            "rows": self.num_rows,
            "lookups_per_batch": self.lookups_per_batch,
            "untouched_fraction": self.untouched_fraction,
            "hottest_0.1%_share": float(cdf[0]),
            "hottest_1%_share": float(cdf[1]),
            "hottest_10%_share": float(cdf[2]),
            "pooling_mean": self.pooling()["mean"],
        }


@dataclass(frozen=True, eq=False)
class WorkloadStats:
    """Per-table statistics of a workload over a window of ``batches`` batches."""

    tables: tuple[TableStats, ...]
    batches: int
    source: str  # "generated (seeds s..s+n-1)" or the index file

    def describe(self) -> str:
        return f"{self.batches} batch(es), {self.source}"


def stats_of_batches(
    batches: list[LookupBatch], row_bytes: list[int], source: str
) -> WorkloadStats:
    """Statistics of ``batches`` (one workload's tables, in order)."""
    if not batches:
        raise NmpError("statistics need at least one batch")
    per_table = access_stats(batches)
    tables = []
    for t, st in enumerate(per_table):
        lengths = np.concatenate([np.diff(b.tables[t].offsets) for b in batches])
        tables.append(
            TableStats(
                num_rows=st.num_rows,
                row_bytes=row_bytes[t],
                batches=len(batches),
                accesses=st.accesses,
                rows=st.rows,
                counts=st.counts,
                bag_lengths=lengths,
            )
        )
    return WorkloadStats(tuple(tables), len(batches), source)


def row_bytes_of(spec: WorkloadSpec) -> list[int]:
    return [t.row_bytes for t in spec.tables]


def profile_workload(spec: WorkloadSpec, batches: int, seed: int) -> WorkloadStats:
    """Statistics of ``batches`` generated batches with seeds ``seed``, ``seed + 1``, ..."""
    if batches < 1:
        raise NmpError(f"profile batches must be >= 1, got {batches}")
    data = generate_batches(spec, batches, seed=seed)
    return stats_of_batches(
        data,
        row_bytes_of(spec),
        f"generated from '{spec.name}' (seeds {seed}..{seed + batches - 1})",
    )


def profile_index_file(spec: WorkloadSpec, path: str) -> WorkloadStats:
    """Statistics of a user's index file (one batch; see :mod:`nmp.workload.indexfile`); the
    file must match the workload's tables (count, rows, dims), else a TraceError names it."""
    batch = load_index_file(path, spec)
    return stats_of_batches([batch], row_bytes_of(spec), f"index file {path}")
