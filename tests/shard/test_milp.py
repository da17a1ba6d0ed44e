"""The RecShard MILP against brute force on tiny cases, and every sharder's feasibility."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from nmp.shard.registry import get_sharder, sharder_names
from nmp.shard.sharders.recshard import solve
from tests.shard.conftest import problem, table


def linear_cost(p, owner, hbm_sets) -> float:
    """Slowest GPU's cost under the problem's linear model (the MILP's objective)."""
    cost = np.zeros(p.gpus)
    for t, st in enumerate(p.stats.tables):
        c = p.coef[t]
        dense = np.zeros(st.num_rows)
        dense[st.rows] = st.counts / st.batches
        in_hbm = np.zeros(st.num_rows, dtype=bool)
        in_hbm[list(hbm_sets[t])] = True
        cost[owner[t]] += (
            c.fixed_ns
            + c.hbm_ns_per_lookup * dense[in_hbm].sum()
            + c.slow_ns_per_lookup * dense[~in_hbm].sum()
        )
    return float(cost.max())


def brute_force(p) -> float:
    """Every table-to-GPU assignment x every subset of rows in HBM, within capacity."""
    tables = p.stats.tables
    cap_rows = p.hbm_bytes_per_gpu // 256
    best = np.inf
    subsets = [
        [s for n in range(t.num_rows + 1) for s in itertools.combinations(range(t.num_rows), n)]
        for t in tables
    ]
    for owner in itertools.product(range(p.gpus), repeat=len(tables)):
        for sets in itertools.product(*subsets):
            used = np.zeros(p.gpus, dtype=int)
            for t, s in enumerate(sets):
                used[owner[t]] += len(s)
            if (used <= cap_rows).all():
                best = min(best, linear_cost(p, owner, sets))
    return best


def placed_sets(pl):
    return [
        set(range(tp.num_rows)) if tp.hbm_rows is None else set(tp.hbm_rows.tolist())
        for tp in pl.tables
    ]


CASES = [
    # (per-table access counts, rows per table, gpus, HBM rows per GPU)
    ([[9, 3, 1], [5, 5, 0], [2, 1, 1]], 3, 2, 2),
    ([[8, 1, 0], [4, 2, 1], [7, 7, 7]], 3, 2, 3),
    ([[6, 0, 0], [1, 1, 1], [3, 2, 0], [2, 2, 2]], 3, 2, 1),
]


@pytest.mark.parametrize("counts,rows,gpus,cap", CASES)
def test_milp_optimal_against_brute_force(counts, rows, gpus, cap):
    p = problem([table(c, rows) for c in counts], gpus, cap)
    pl = solve(p, integer_rows=True)
    owner = [tp.gpu for tp in pl.tables]
    got = linear_cost(p, owner, placed_sets(pl))
    assert got == pytest.approx(brute_force(p), rel=1e-6)
    # feasible: no GPU holds more HBM rows than it has
    assert (pl.hbm_bytes_per_gpu([256] * len(counts)) <= p.hbm_bytes_per_gpu).all()


def test_continuous_rows_lose_at_most_a_row_per_class():
    # one class with 3 equally hot rows and room for 2.5 of them: rounding keeps 2
    p = problem([table([4, 4, 4], 3)], 1, 2)
    p = type(p)(p.stats, 1, 2 * 256 + 128, p.host_bytes, p.coef, 30.0)
    pl = solve(p)
    assert pl.tables[0].n_hbm_rows == 2


def test_recshard_beats_greedy_when_hot_rows_are_few():
    # two big tables whose few hot rows fit in HBM although the tables do not
    counts = [50, 40, 3, 0, 0, 0, 0, 0]
    p = problem([table(counts, 8), table(counts, 8), table([1, 1], 2)], 2, 3)
    rec = get_sharder("recshard").place(p)
    size = get_sharder("size").place(p)
    assert linear_cost(p, [t.gpu for t in rec.tables], placed_sets(rec)) < linear_cost(
        p, [t.gpu for t in size.tables], placed_sets(size)
    )


@pytest.mark.parametrize("name", sharder_names())
def test_every_sharder_is_feasible(name):
    rng = np.random.default_rng(3)
    tables = [table(rng.integers(0, 6, n).tolist(), n) for n in (5, 9, 2, 7, 4, 6)]
    p = problem(tables, 3, 6)
    pl = get_sharder(name).place(p)
    assert len(pl.tables) == 6
    assert all(0 <= tp.gpu < 3 for tp in pl.tables)
    assert (pl.hbm_bytes_per_gpu([256] * 6) <= p.hbm_bytes_per_gpu).all()


def _rows_by_full_mark_and_sort(stats, classes, counts):
    """The HBM rows as the solver first took them: the untouched class's lowest ids from a
    mark over the whole table, then every class's rows sorted."""
    if int(counts.sum()) >= stats.num_rows:
        return None
    parts = []
    for c, m in zip(classes, counts, strict=True):
        if m == 0:
            continue
        if c.rows.size:
            parts.append(c.rows[:m])
        else:
            mask = np.ones(stats.num_rows, dtype=bool)
            mask[stats.rows] = False
            parts.append(np.flatnonzero(mask)[:m])
    return np.sort(np.concatenate(parts)) if parts else np.empty(0, dtype=np.int64)


@pytest.mark.parametrize("num_rows", [40, 3000])
def test_hbm_rows_equal_the_full_mark_and_sort(num_rows):
    """The solver's HBM rows come from a mark no longer than the rows it needs, and from a
    mark over the table where most of it goes to HBM (a sort of millions of ids took most of a
    criteo-terabyte solve); both give the rows the full mark and sort gave, in order."""
    from nmp.shard.sharders.recshard import _rows

    rng = np.random.default_rng(num_rows)
    counts_seen = rng.integers(0, 9, num_rows // 2).tolist()
    stats = table(counts_seen, num_rows)
    classes = stats.classes("zero")
    assert classes[-1].rows.size == 0  # an untouched class
    for _ in range(20):
        take = np.array([rng.integers(0, c.n_rows + 1) for c in classes], dtype=np.int64)
        for counts in (take, np.zeros_like(take), np.array([c.n_rows for c in classes]) - 1):
            counts = np.maximum(counts, 0)
            want = _rows_by_full_mark_and_sort(stats, classes, counts)
            got = _rows(stats, classes, counts)
            assert (got is None) == (want is None)
            if want is not None:
                assert got.dtype == want.dtype and np.array_equal(got, want)
