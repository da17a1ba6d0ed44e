"""Sharded execution equals torch.nn.EmbeddingBag on the unsharded tables; statistics; the
command's result on a small workload."""

from __future__ import annotations

import numpy as np
import pytest

from nmp.errors import NmpError
from nmp.shard.cost import TableCoefficients
from nmp.shard.functional import execute, reference, table_values
from nmp.shard.placement import Placement, TablePlacement
from nmp.shard.registry import ShardProblem, get_sharder, sharder_names
from nmp.shard.stats import profile_workload
from nmp.workload import generate_batch, load_workload

SMALL = {
    "num_tables": 3,
    "rows": 400,
    "dim": 8,
    "batch": 32,
    "pooling": 6,
    "distribution": "zipf",
    "alpha": 1.1,
    "weighted": True,
}


def small_spec():
    return load_workload("dlrm-benchmark", SMALL)


@pytest.mark.parametrize("name", sharder_names())
def test_sharded_pooling_equals_embeddingbag(name):
    spec = small_spec()
    stats = profile_workload(spec, 2, seed=5)
    coef = (TableCoefficients(100.0, 1.0, 20.0),) * 3
    # room for a third of one table per GPU: every table is split or in the host tier
    problem = ShardProblem(stats, 2, 130 * 32, 1 << 30, coef)
    placement = get_sharder(name).place(problem)
    batch = generate_batch(spec, seed=99)
    values = [table_values(400, 8, 0, t) for t in range(3)]
    got, want = execute(placement, batch, values), reference(batch, values)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    # the check is not vacuous: a placement that drops a row's host copy would differ
    assert any(tp.hbm_rows is not None for tp in placement.tables)


def test_route_splits_rows_between_shards():
    tp = TablePlacement(0, 10, np.array([2, 5, 7]))
    hit, local = tp.route(np.array([5, 0, 7, 9, 2, 3]))
    assert hit.tolist() == [True, False, True, False, True, False]
    # HBM shard positions of 5, 7, 2; host shard (0,1,3,4,6,8,9) positions of 0, 9, 3
    assert local.tolist() == [1, 0, 2, 6, 0, 2]
    assert tp.host_rows().tolist() == [0, 1, 3, 4, 6, 8, 9]


def test_wrong_placement_is_caught():
    spec = small_spec()
    batch = generate_batch(spec, seed=1)
    values = [table_values(400, 8, 0, t) for t in range(3)]
    good = Placement("x", 1, tuple(TablePlacement(0, 400, np.arange(0, 400, 2)) for _ in range(3)))
    got = execute(good, batch, values)
    np.testing.assert_allclose(got[0], reference(batch, values)[0], rtol=1e-5, atol=1e-5)
    values_shifted = [np.roll(v, 1, axis=0) for v in values]
    bad = execute(good, batch, values_shifted)
    assert not np.allclose(bad[0], got[0])


def test_statistics_classes_cover_the_table():
    spec = small_spec()
    st = profile_workload(spec, 3, seed=0)
    assert st.batches == 3
    for ts in st.tables:
        classes = ts.classes()
        assert sum(c.n_rows for c in classes) == ts.num_rows
        assert sum(c.accesses_per_batch for c in classes) == pytest.approx(ts.lookups_per_batch)
        # hottest first
        d = [c.density for c in classes]
        assert d == sorted(d, reverse=True)
        assert 0.0 < ts.untouched_fraction < 1.0
        assert ts.pooling()["mean"] == 6.0
        assert ts.cdf([1.0])[0] == pytest.approx(1.0)


def test_good_turing_weighs_unseen_rows():
    spec = small_spec()
    ts = profile_workload(spec, 1, seed=0).tables[0]
    zero, gt = ts.classes("zero"), ts.classes("good-turing")
    assert zero[-1].rows.size == 0 and zero[-1].accesses_per_batch == 0.0
    # rows seen once / lookups: the share Good-Turing expects for never-seen rows
    p0 = np.count_nonzero(ts.counts == 1) / ts.accesses
    assert p0 > 0
    assert gt[-1].accesses_per_batch == pytest.approx(p0 * ts.lookups_per_batch)
    assert sum(c.accesses_per_batch for c in gt) == pytest.approx(ts.lookups_per_batch)


def test_an_unseen_estimator_registered_at_run_time_sets_the_never_seen_share():
    from nmp.shard.unseen import UNSEEN_ESTIMATORS, UnseenEstimator

    ts = profile_workload(small_spec(), 1, seed=0).tables[0]
    zero = ts.classes("zero")
    UNSEEN_ESTIMATORS.register(UnseenEstimator("test-quarter", "a quarter", lambda s: 0.25))
    try:
        quarter = ts.classes("test-quarter")
    finally:
        UNSEEN_ESTIMATORS.unregister("test-quarter")
    assert quarter[-1].accesses_per_batch == pytest.approx(0.25 * ts.lookups_per_batch)
    for seen, scaled in zip(zero[:-1], quarter[:-1], strict=True):
        assert scaled.accesses_per_batch == pytest.approx(0.75 * seen.accesses_per_batch)
    with pytest.raises(NmpError, match="unknown unseen-row estimator 'test-quarter'"):
        ts.classes("test-quarter")
