"""Lookup batches: valid EmbeddingBag input, deterministic, with the statistics they claim."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
import torch

from nmp.errors import SpecError
from nmp.workload import (
    REUSE_LEVELS,
    access_stats,
    generate_batch,
    generate_batches,
    load_workload,
    ranked_rows,
    sampling,
)
from nmp.workload.sampling import zipf_probabilities
from tests.shipped import assert_shipped_in_order

PRESETS = [
    "criteo-kaggle",
    "criteo-terabyte",
    "mlperf-dlrm",
    "dlrm-benchmark",
    "recross-eval",
    "gpu-micro24",
]


def _sigma(p: float, n: int) -> float:
    return float(np.sqrt(p * (1 - p) / n))


@pytest.mark.parametrize("name", PRESETS)
def test_every_preset_gives_valid_embeddingbag_input(name):
    spec = load_workload(name, {"batch": 16})
    batch = generate_batch(spec)
    batch.check()
    assert len(batch) == len(spec.tables) and batch.batch == 16
    for lookups, table in zip(batch, spec.tables, strict=True):
        assert lookups.indices.dtype == np.int64 and lookups.offsets.dtype == np.int64
        assert lookups.offsets.shape == (17,) and lookups.offsets[0] == 0
        assert lookups.offsets[-1] == lookups.indices.size
        assert (np.diff(lookups.offsets) >= 0).all()
        assert lookups.indices.min() >= 0 and lookups.indices.max() < table.rows
        assert (lookups.num_rows, lookups.dim) == (table.rows, table.dim)


def test_torch_embeddingbag_accepts_the_batch_and_pools_as_bag_ids_say():
    spec = load_workload(
        "dlrm-benchmark",
        {
            "rows": 1000,
            "batch": 8,
            "dim": 4,
            "weighted": True,
            "pooling": {"dist": "uniform", "low": 0, "high": 6},
        },
    )
    lookups = generate_batch(spec)[0]
    assert (lookups.lengths == 0).any()  # empty bags are part of the test
    table = torch.randn(1000, 4, dtype=torch.float64)
    idx, off = torch.from_numpy(lookups.indices), torch.from_numpy(lookups.offsets)
    w = torch.from_numpy(lookups.weights).double()
    bag = torch.nn.EmbeddingBag.from_pretrained(table, mode="sum", include_last_offset=True)
    out = bag(idx, off, per_sample_weights=w).numpy()
    bag_short = torch.nn.EmbeddingBag.from_pretrained(table, mode="sum")
    out_short = bag_short(idx, off[:-1], per_sample_weights=w).numpy()
    expect = np.zeros((8, 4))
    np.add.at(expect, lookups.bag_ids(), table.numpy()[lookups.indices] * lookups.weights[:, None])
    assert out.shape == (8, 4)
    np.testing.assert_allclose(out, expect, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(out_short, expect, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["gpu-micro24", "recross-eval", "dlrm-benchmark"])
def test_generation_is_deterministic_in_the_seed(name):
    spec = load_workload(name, {"batch": 32})
    a, b, c = generate_batch(spec, seed=5), generate_batch(spec, seed=5), generate_batch(spec, 6)
    for x, y, z in zip(a, b, c, strict=True):
        assert np.array_equal(x.indices, y.indices) and np.array_equal(x.offsets, y.offsets)
        assert not np.array_equal(x.indices, z.indices)
    assert np.array_equal(
        generate_batch(spec)[0].indices, generate_batch(spec, spec.seed)[0].indices
    )
    assert [b.batch for b in generate_batches(spec, 3)] == [32] * 3


def test_hot_rows_are_shared_by_batches_and_move_with_the_workload_seed():
    spec = load_workload("recross-eval")
    assert np.array_equal(ranked_rows(spec, 2, 100), ranked_rows(spec, 2, 100))
    other = load_workload("recross-eval", {"seed": 1})
    assert not np.array_equal(ranked_rows(spec, 2, 100), ranked_rows(other, 2, 100))
    # scattered: the 100 hottest rows of a 10M-row table are not the first 100 rows
    assert ranked_rows(spec, 2, 100).max() > 10_000


@pytest.mark.parametrize("rows", [1, 2, 3, 7, 64, 1000, 65_537, 300_001])
def test_permutation_is_a_bijection_and_the_kernel_equals_the_reference(rows):
    keys = sampling.permutation_keys(7, 3)
    ranks = np.arange(rows)
    fast = sampling.permute(ranks, rows, keys)
    assert np.array_equal(np.sort(fast), ranks)
    if rows > 1:
        assert np.array_equal(fast, sampling.permute_reference(ranks, rows, keys))


@pytest.mark.parametrize("alpha", [0.6, 1.0, 1.05, 2.0])
def test_zipf_head_probabilities_match_the_analytic_law(alpha):
    rows, n = 100_000, 400_000
    ranks = sampling.zipf_ranks(np.random.default_rng(1), n, rows, alpha)
    assert ranks.min() >= 0 and ranks.max() < rows
    p = zipf_probabilities(rows, alpha)
    counts = np.bincount(ranks, minlength=rows)
    for i in (0, 1, 2, 9, 99):
        assert abs(counts[i] / n - p[i]) < 5 * _sigma(p[i], n), i
    top = p[:1000].sum()  # top 1 % of the rows
    assert abs(counts[:1000].sum() / n - top) < 5 * _sigma(top, n)


def test_zipf_workload_top_1_percent_coverage_is_the_analytic_value():
    spec = load_workload(
        "dlrm-benchmark",
        {"num_tables": 1, "rows": 200_000, "batch": 2048, "distribution": "zipf", "alpha": 1.05},
    )
    lookups = generate_batch(spec)[0]
    n = lookups.num_lookups
    analytic = zipf_probabilities(200_000, 1.05, 2000).sum()
    by_construction = np.isin(lookups.indices, ranked_rows(spec, 0, 2000)).mean()
    assert abs(by_construction - analytic) < 5 * _sigma(analytic, n)
    # The empirical top 1 % can only cover more than the analytic hot set (it picks the
    # rows that happened to be hottest), and not by much with 200K lookups.
    empirical = access_stats(lookups).coverage(0.01)
    assert analytic - 5 * _sigma(analytic, n) <= empirical < analytic + 0.02


def test_pareto_matches_torchrecs_lomax_law():
    a = 0.25
    spec = load_workload(
        "dlrm-benchmark",
        {"num_tables": 1, "batch": 2048, "scatter": False, "distribution": "pareto"},
    )
    assert spec.effective_alpha == a
    idx = generate_batch(spec)[0].indices
    n = idx.size
    # floor(Lomax(a)) = k  <=>  (k+1)^-a >= 1-U > (k+2)^-a
    for k in range(4):
        p = (k + 1) ** -a - (k + 2) ** -a
        assert abs(np.mean(idx == k) - p) < 5 * _sigma(p, n), k


def test_reuse_levels_hit_their_hot_sets_and_order_by_reuse():
    coverage, unique = {}, {}
    for level in ("high", "medium", "low", "random"):
        spec = load_workload("gpu-micro24", {"reuse": level, "batch": 128})
        batch = generate_batch(spec)
        hot_rows, frac = REUSE_LEVELS[level]
        assert spec.hot_set(0) == (hot_rows, frac)
        lookups = batch[0]
        n = lookups.num_lookups
        if hot_rows:
            in_hot = np.isin(lookups.indices, ranked_rows(spec, 0, hot_rows)).mean()
            assert abs(in_hot - frac) < 5 * _sigma(frac, n), level
        # Coverage of the 2K hottest rows (the high level's hot-set size) in every table.
        stats = access_stats(batch)
        coverage[level] = np.mean([s.coverage(2000) for s in stats])
        unique[level] = np.mean([s.unique_rows for s in stats])
    assert coverage["high"] > coverage["medium"] > coverage["low"] > coverage["random"]
    assert unique["high"] < unique["medium"] < unique["low"] < unique["random"]
    # Random: distinct rows touched match n draws with replacement from 500K rows.
    n, rows = 128 * 150, 500_000
    assert unique["random"] == pytest.approx(rows * -np.expm1(-n / rows), rel=0.01)


def test_reuse_cold_accesses_avoid_the_hot_set_and_hot_alpha_skews_it():
    spec = load_workload(
        "gpu-micro24",
        {"rows": 10_000, "hot_rows": 100, "hot_fraction": 0.2, "batch": 64, "num_tables": 1},
    )
    idx = generate_batch(spec)[0].indices
    hot = ranked_rows(spec, 0, 100)
    cold_counts = np.bincount(idx[~np.isin(idx, hot)], minlength=10_000)
    assert cold_counts[hot].sum() == 0
    n = idx.size
    assert abs(np.isin(idx, hot).mean() - 0.2) < 5 * _sigma(0.2, n)
    skewed = load_workload(
        "gpu-micro24",
        {
            "rows": 10_000,
            "hot_rows": 100,
            "hot_fraction": 0.2,
            "hot_alpha": 1.2,
            "batch": 64,
            "num_tables": 1,
        },
    )
    idx = generate_batch(skewed)[0].indices
    assert abs(np.isin(idx, hot).mean() - 0.2) < 5 * _sigma(0.2, n)
    p0 = 0.2 * zipf_probabilities(100, 1.2)[0]
    assert abs(np.mean(idx == hot[0]) - p0) < 5 * _sigma(p0, n)


def test_uniform_is_flat():
    spec = load_workload("dlrm-benchmark", {"num_tables": 1, "rows": 1000})
    idx = generate_batch(spec)[0].indices
    counts = np.bincount(idx // 100, minlength=10)
    expect = idx.size / 10
    chi2 = ((counts - expect) ** 2 / expect).sum()
    assert chi2 < 40  # 9 degrees of freedom: P(chi2 > 40) < 1e-5


def test_pooling_distributions():
    base = {"num_tables": 1, "rows": 1000, "batch": 20_000}
    uni = load_workload(
        "dlrm-benchmark", {**base, "pooling": {"dist": "uniform", "low": 10, "high": 30}}
    )
    lengths = generate_batch(uni)[0].lengths
    assert lengths.min() == 10 and lengths.max() == 30
    assert abs(lengths.mean() - 20) < 0.2
    norm = load_workload(
        "dlrm-benchmark",
        {**base, "pooling": {"dist": "normal", "mean": 80, "std": 10, "low": 60, "high": 90}},
    )
    lengths = generate_batch(norm)[0].lengths
    assert lengths.min() >= 60 and lengths.max() == 90
    assert (lengths == 90).mean() > 0.1  # clipped upper tail: P(N > 89.5) = 17 %
    assert abs(np.median(lengths) - 80) <= 1


def test_pooling_laws_are_registered_objects_and_an_unknown_one_is_named():
    from nmp.workload.pooling_laws import POOLING_LAWS

    assert_shipped_in_order(POOLING_LAWS, ["fixed", "uniform", "normal"])
    with pytest.raises(SpecError, match=r"pooling.*unknown pooling law 'poisson'.*fixed"):
        load_workload("dlrm-benchmark", {"pooling": {"dist": "poisson", "value": 3}})


def test_huge_tables_allocate_per_lookup_not_per_row():
    # mlperf-dlrm has 40M-row tables; a per-row int64 array would be 320 MB.
    for dist in ({"distribution": "zipf"}, {"distribution": "reuse", "reuse": "low"}):
        spec = load_workload("mlperf-dlrm", {"batch": 256, **dist})
        generate_batch(spec)  # warm the compiled kernels and caches
        other = load_workload("mlperf-dlrm", {"batch": 256, "seed": 9, **dist})
        tracemalloc.start()
        generate_batch(other)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        # the reuse bitmap (1 bit per row: 5 MB for 40M rows) is the largest structure
        assert peak < 64 * 2**20, dist
