"""Small sharding problems built from explicit counts (no generation, no GPU model)."""

from __future__ import annotations

import numpy as np
import pytest

from nmp.shard.cost import TableCoefficients
from nmp.shard.registry import ShardProblem
from nmp.shard.stats import TableStats, WorkloadStats


def table(counts: list[int], num_rows: int, row_bytes: int = 256) -> TableStats:
    """A table whose touched rows 0..len(counts)-1 were accessed ``counts`` times in 1 batch."""
    counts_arr = np.asarray(counts, dtype=np.int64)
    order = np.argsort(-counts_arr, kind="stable")
    touched = order[counts_arr[order] > 0]
    return TableStats(
        num_rows=num_rows,
        row_bytes=row_bytes,
        batches=1,
        accesses=int(counts_arr.sum()),
        rows=touched.astype(np.int64),
        counts=counts_arr[touched],
        bag_lengths=np.ones(int(counts_arr.sum()), dtype=np.int64),
    )


def problem(tables, gpus, hbm_rows, coef=None, host_bytes=1 << 40) -> ShardProblem:
    coef = coef or [TableCoefficients(100.0, 1.0, 20.0)] * len(tables)
    stats = WorkloadStats(tuple(tables), 1, "test")
    return ShardProblem(stats, gpus, hbm_rows * 256, host_bytes, tuple(coef), 30.0)


@pytest.fixture
def make_problem():
    return problem


@pytest.fixture
def make_table():
    return table
