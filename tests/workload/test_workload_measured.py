"""The measured locality: the fit to Meta's published reuse histograms, the generator that
draws from it (through the registered distribution, as every workload does), and its spec."""

from __future__ import annotations

import numpy as np
import pytest

from nmp.errors import SpecError
from nmp.workload import generate_table, load_workload
from nmp.workload import locality as loc
from nmp.workload.distributions import (
    DISTRIBUTIONS,
    head_mass,
    workload_head_mass,
    zipf_head_mass,
    zipf_sum,
)
from nmp.workload.spec import WorkloadSpec
from tests.shipped import assert_shipped_in_order

META = "meta-2022"
# The generator's reuse histograms of one Meta-sized batch must lie this close (total
# variation) to the published ones: the residue is Poisson noise of the few hottest rows whose
# counts straddle a bin edge (0.02-0.04 over seeds); Zipf 1.05 lies at 0.28 / 0.20, uniform at
# 0.78 / 0.56.
MAX_TV_LOOKUPS = 0.05
MAX_TV_ROWS = 0.02
MIN_TV_OTHERS = 0.15


def _one_table(distribution: str, rows: int, lookups: int, **kw) -> WorkloadSpec:
    spec = WorkloadSpec(
        name="t", rows=rows, num_tables=1, dim=4, batch=lookups, pooling=1,
        distribution=distribution, **kw,
    )  # fmt: skip
    spec.validate()
    return spec


def _histograms(spec: WorkloadSpec, seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    hist = loc.load_histogram(META)
    idx = generate_table(spec, 0, seed).indices
    _, counts = np.unique(idx, return_counts=True)
    return loc.reuse_histogram(counts, hist.lookup_upper, hist.unique_upper)


def test_published_histograms_are_consistent():
    hist = loc.load_histogram(META)
    assert hist.mean_reuse == pytest.approx(12.74, abs=0.01)
    # a lookup share is the row share times the bin's reuse over the mean reuse: (0,1] -> 0.027
    assert hist.unique_share[0] * 1 / hist.mean_reuse == pytest.approx(
        hist.lookup_share[0], abs=1e-3
    )
    assert "dlrm_datasets" in hist.source


def test_fitted_classes_reproduce_both_histograms():
    hist = loc.load_histogram(META)
    classes = loc.fit_classes(META)
    lookups, rows = loc.expected_histograms(classes, hist)
    assert loc.total_variation(lookups, hist.lookup_share) < 0.003
    assert loc.total_variation(rows, hist.unique_share) < 0.003
    assert classes.share.sum() == pytest.approx(1.0)
    assert np.all(np.diff(classes.reuse) < 0)  # hottest first
    assert classes.rows[0] >= 1.0  # no class is a fraction of one row at the top


@pytest.mark.parametrize("seed", [1, 2])
def test_generator_fits_the_published_histograms(seed):
    """Through the registered 'measured' distribution: one batch of the measured batch's
    lookups per table, on a table of the fitted size."""
    hist = loc.load_histogram(META)
    rows = int(round(float(loc.fit_classes(META).rows.sum())))
    n = int(round(hist.lookups_per_table))
    lookups, unique = _histograms(_one_table("measured", rows, n), seed)
    assert loc.total_variation(lookups, hist.lookup_share) < MAX_TV_LOOKUPS
    assert loc.total_variation(unique, hist.unique_share) < MAX_TV_ROWS


@pytest.mark.parametrize(
    "other", [{"distribution": "uniform"}, {"distribution": "zipf", "alpha": 1.05}]
)
def test_uniform_and_zipf_do_not_fit(other):
    """The same check fails for the distributions the generator must not revert to."""
    hist = loc.load_histogram(META)
    rows = int(round(float(loc.fit_classes(META).rows.sum())))
    n = int(round(hist.lookups_per_table))
    lookups, unique = _histograms(_one_table(rows=rows, lookups=n, **other))
    assert loc.total_variation(lookups, hist.lookup_share) > MIN_TV_OTHERS
    assert loc.total_variation(unique, hist.unique_share) > MIN_TV_OTHERS


def test_draws_are_seeded_and_scattered():
    spec = _one_table("measured", 1_000_000, 50_000)
    a, b = generate_table(spec, 0, 5).indices, generate_table(spec, 0, 5).indices
    assert np.array_equal(a, b)
    assert not np.array_equal(a, generate_table(spec, 0, 6).indices)
    # the hottest row is not row 0 (ranks go through the seeded permutation)
    rows, counts = np.unique(a, return_counts=True)
    assert rows[np.argmax(counts)] != 0


def test_small_table_is_all_hot_and_large_table_has_a_cold_tail():
    small = loc.table_layout(META, 100)
    assert small.cum[-1] == pytest.approx(1.0)
    assert small.head_mass(100) == pytest.approx(1.0)
    big = loc.table_layout(META, 10_000_000)
    hot_rows = float(
        loc.fit_classes(META).rows[loc.fit_classes(META).reuse >= loc.COLD_REUSE].sum()
    )
    # the cold tail (rows seen about once in Meta's batch) spreads over the rest of the table
    assert big.head_mass(int(hot_rows) + 1) == pytest.approx(1.0 - 0.025, abs=0.01)
    assert big.head_mass(10_000_000) == pytest.approx(1.0)


def test_head_mass_matches_the_draws():
    spec = _one_table("measured", 2_000_000, 400_000)
    ranks_hot = 20_000
    mass = head_mass(spec, 0, ranks_hot)
    lay = loc.table_layout(META, 2_000_000)
    drawn = lay.ranks(np.random.default_rng(0).random(400_000), 2_000_000)
    assert np.mean(drawn < ranks_hot) == pytest.approx(mass, abs=0.005)


def test_zipf_sum_is_exact_enough():
    for n, a in [(100_000, 1.05), (50_000, 0.6), (10_000_000, 1.0)]:
        exact = float((np.arange(1, n + 1, dtype=np.float64) ** -a).sum())
        assert zipf_sum(n, a) == pytest.approx(exact, rel=1e-9)
    assert zipf_head_mass(1000, 1000, 1.2) == pytest.approx(1.0)


def test_workload_preset_and_equivalent_skew():
    measured = load_workload("recross-measured")
    assert measured.distribution == "measured" and measured.locality == META
    head = workload_head_mass(measured)
    flat = workload_head_mass(load_workload("recross-eval", {"alpha": 0.6}))
    steep = workload_head_mass(load_workload("recross-eval", {"alpha": 1.4}))
    assert head is not None and flat is not None and steep is not None
    assert flat < head < steep


def test_a_spec_takes_every_registered_distribution_and_no_other():
    assert_shipped_in_order(
        DISTRIBUTIONS.names(), ("uniform", "zipf", "pareto", "reuse", "measured")
    )
    for name in DISTRIBUTIONS.names():
        assert _one_table(name, 100, 10, **({"reuse": "high"} if name == "reuse" else {})).access
    with pytest.raises(
        SpecError,
        match=r"'workload.distribution': unknown access distribution 'zip' \(known: uniform",
    ):
        load_workload("recross-eval", {"distribution": "zip"})


def test_a_new_distribution_is_one_registered_object():
    """Registering an object is all a distribution takes: the spec, the generator and the
    listings ask it (nothing tests its name)."""
    from nmp.workload.distributions import AccessDistribution

    class FirstRow(AccessDistribution):
        name = "first-row"
        description = "every lookup on row 0 (a test's)"
        rank = 99

        def draw(self, spec, table, rng, n):
            return np.zeros(n, dtype=np.int64)

    DISTRIBUTIONS.register(FirstRow())
    try:
        spec = load_workload("recross-eval", {"distribution": "first-row", "batch": 2})
        assert (
            generate_table(spec, 0).indices.tolist() == [0] * generate_table(spec, 0).indices.size
        )
        assert spec.describe_distribution() == "first-row" and spec.skew_alpha is None
        with pytest.raises(SpecError, match="applies only with distribution = 'zipf' or 'pareto'"):
            load_workload("recross-eval", {"distribution": "first-row", "alpha": 1.0})
    finally:
        DISTRIBUTIONS.unregister("first-row")


def test_spec_errors_name_the_key():
    with pytest.raises(SpecError, match="locality"):
        load_workload("recross-eval", {"locality": "nowhere"})
    with pytest.raises(SpecError, match="locality.*only with distribution = 'measured'"):
        load_workload("recross-eval", {"distribution": "zipf", "locality": META})
    # setting locality switches to measured; setting alpha on it switches back to zipf
    assert load_workload("recross-eval", {"locality": META}).distribution == "measured"
    back = load_workload("recross-measured", {"alpha": 0.9})
    assert back.distribution == "zipf" and back.locality == ""


def test_bad_histogram_file_names_file_and_key(tmp_path, monkeypatch):
    text = (
        'name = "bad"\nsource = "x"\nbatch_samples = 1\ntables = 1\nindices = 10\nunique_rows = 5\n'
        "[lookups_by_reuse]\nupper = [1, 2]\nshare = [0.5, 0.4, 0.4]\n"
        "[rows_by_reuse]\nupper = [1]\nshare = [0.5, 0.5]\n"
    )
    (tmp_path / "bad.toml").write_text(text)
    monkeypatch.setattr(loc, "locality_dir", lambda: tmp_path)
    loc.load_histogram.cache_clear()
    try:
        with pytest.raises(SpecError, match=r"bad.toml.*lookups_by_reuse.share.*sum to 1"):
            loc.load_histogram("bad")
    finally:
        loc.load_histogram.cache_clear()
