"""CPR's partial saves at scale: the rate bins, each policy's rows and staleness, checked
against a direct simulation of the trainer's rules, and MFU and SSU apart in the extrapolation."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from nmp.errors import NmpError
from nmp.train.extrapolate import expected
from nmp.train.partial_save import POLICIES, RowRates, at_scale, workload_rates, zipf_bins
from nmp.train.setup import load_setup
from nmp.workload.sampling import zipf_probabilities


@pytest.mark.parametrize("rows, alpha", [(7, 1.05), (3000, 1.05), (200_000, 1.2), (50, 0.0)])
def test_bins_hold_every_row_and_the_zipf_mass(rows, alpha):
    r = zipf_bins(rows, alpha, 100.0)
    assert r.rows == rows and r.lookups_per_step == pytest.approx(100.0)
    assert (np.diff(r.rate) <= 1e-15).all()  # hottest first
    if rows <= 3000:
        p = zipf_probabilities(rows, alpha)
        first = int(min(rows, 256))
        assert r.rate[:first] / 100.0 == pytest.approx(p[:first], rel=0.02)


def _simulate(policy, rate, steps, f, fraction, sample, cycles=6, seed=0):
    """The trainer's rules (nmp.train.strategies.cpr) on Poisson uses per interval: (rows per
    partial save, lost updates at mid-interval failures / (half an interval of updates))."""
    rng = np.random.default_rng(seed)
    n, k = rate.size, int(fraction * rate.size)
    saved_rows, lost, total = [], 0.0, 0.0
    for _ in range(cycles):
        unsaved = np.zeros(n)  # uses since each row's value was last persisted
        counts = np.zeros(n)  # MFU's counters
        marked = np.zeros(n, dtype=bool)  # SSU's marks
        for j in range(f):
            if j:  # partial save at the end of interval j - 1
                if policy == "top-frequency":
                    used = np.flatnonzero(counts)
                    rows = used[np.argsort(-counts[used], kind="stable")[:k]]
                else:
                    rows = np.flatnonzero(marked)
                counts[rows] = 0
                unsaved[rows] = 0
                saved_rows.append(rows.size)
            uses = rng.poisson(rate * steps)
            sampled = rng.binomial(uses, sample)
            marked = sampled > 0
            counts += uses
            # a failure half-way through interval j loses the unsaved uses and half of this one's
            lost += float((unsaved + uses / 2).sum())
            total += float((uses / 2).sum())
            unsaved += uses
    return float(np.mean(saved_rows)), lost / total


@pytest.mark.parametrize("policy", ["top-frequency", "sampled-inputs"])
@pytest.mark.parametrize("fraction", [0.01, 0.1, 0.5])
def test_model_matches_a_direct_simulation_of_the_trainers_rules(policy, fraction):
    # from sparse intervals (most rows unused: MFU saves every used row) to dense ones
    rates = zipf_bins(20_000, 1.05, 4.0)
    rate = np.repeat(rates.rate, rates.count.astype(int))
    for steps in (200.0, 2_000.0, 20_000.0, 2e6):
        got = at_scale(policy, rates, steps, 4, fraction, 0.05)
        rows, ratio = _simulate(policy, rate, steps, 4, fraction, 0.05)
        assert got.rows_per_partial == pytest.approx(rows, rel=0.05, abs=3), steps
        assert got.staleness_ratio == pytest.approx(ratio, rel=0.04), steps
        assert 1.0 <= got.staleness_ratio <= 4.0


def test_the_limits_of_each_policy():
    rates = zipf_bins(10_000, 1.05, 10.0)
    every = at_scale("top-frequency", rates, 1e4, 4, 1.0, 0.05)
    # every row used since its last save is written (80 % of the rows here), nothing is lost
    assert 0.7 * rates.rows < every.rows_per_partial < rates.rows
    assert every.staleness_ratio == pytest.approx(1.0)
    none = at_scale("top-frequency", rates, 1e4, 4, 1e-9, 0.05)
    assert none.staleness_ratio == pytest.approx(4.0, rel=1e-3)  # only full saves: F intervals
    all_inputs = at_scale("sampled-inputs", rates, 1e6, 4, 0.1, 1.0)
    assert all_inputs.staleness_ratio == pytest.approx(1.0, abs=1e-3)
    few = at_scale("sampled-inputs", rates, 1.0, 4, 0.1, 1e-6)
    assert few.staleness_ratio == pytest.approx(4.0, rel=1e-3) and few.rows_per_partial < 1
    assert set(POLICIES.names()) == {"top-frequency", "sampled-inputs"}
    with pytest.raises(NmpError, match="unknown CPR partial-save row policy 'lru'"):
        at_scale("lru", rates, 1.0, 4, 0.1, 0.1)
    with pytest.raises(NmpError, match="steps per save interval must be > 0"):
        at_scale("top-frequency", rates, 0.0, 4, 0.1, 0.1)
    kaggle = workload_rates("criteo-kaggle")
    assert kaggle.rows == 33_762_577 and kaggle.lookups_per_step == pytest.approx(26 * 128)
    small = workload_rates("criteo-kaggle", table_rows=1_000_000, batch=4)
    assert small.rows == pytest.approx(1e6, rel=1e-3)  # every table scaled by one factor
    assert small.lookups_per_step == pytest.approx(26 * 4)
    steeper = workload_rates("criteo-kaggle", alpha=1.3)
    assert steeper.rate.max() > kaggle.rate.max()
    with pytest.raises(NmpError, match="needs a zipf or uniform workload, 'gpu-micro24' is reuse"):
        workload_rates("gpu-micro24")


def test_mfu_and_ssu_save_different_rows_at_scale():
    dep = load_setup("cpr")[0]
    rows = {r["strategy"]: r for r in expected(dep)}
    mfu, ssu = rows["cpr-mfu"], rows["cpr-ssu"]
    # MFU writes 10 % of the rows per partial save; SSU's 5 % sample of hours of lookups marks
    # nearly every row, so its partial saves cost nearly a full one, and lose less
    assert ssu["overhead_no_failure_pct"] > 2 * mfu["overhead_no_failure_pct"]
    assert dep.cpr_pls <= ssu["pls_effective"] < mfu["pls_effective"]
    # saving more rows per partial save lowers MFU's staleness and raises its cost
    more = {r["strategy"]: r for r in expected(replace(dep, cpr_fraction=0.5))}["cpr-mfu"]
    assert more["pls_effective"] < mfu["pls_effective"]
    assert more["overhead_no_failure_pct"] > mfu["overhead_no_failure_pct"]
    # a rarer SSU sample marks fewer rows: cheaper, staler
    rare = {r["strategy"]: r for r in expected(replace(dep, cpr_ssu_sample=1e-7))}["cpr-ssu"]
    assert rare["overhead_no_failure_pct"] < ssu["overhead_no_failure_pct"]
    assert rare["pls_effective"] > ssu["pls_effective"]
    assert RowRates(np.ones(2), np.ones(2)).rows == 2


def test_partial_save_study(tmp_path, capsys):
    from nmp.cli import main
    from nmp.train.partial_save_study import run_study

    rows = run_study(
        {"fractions": [0.05, 0.5], "samples": [0.001], "alphas": [1.2]}, out_dir=tmp_path
    )
    assert [(r["sweep"], r["strategy"]) for r in rows] == [
        ("cpr_fraction", "cpr-mfu"),
        ("cpr_fraction", "cpr-mfu"),
        ("cpr_ssu_sample", "cpr-ssu"),
        ("zipf_alpha", "cpr-mfu"),
        ("zipf_alpha", "cpr-ssu"),
    ]
    # writing more rows costs more and loses less
    assert rows[1]["overhead_no_failure_pct"] > rows[0]["overhead_no_failure_pct"]
    assert rows[1]["pls_effective"] < rows[0]["pls_effective"]
    for name in ("report.md", "results.csv", "results.jsonl", "tradeoff.png"):
        assert (tmp_path / name).stat().st_size > 0
    with pytest.raises(NmpError, match=r"params.fractions: each in \(0, 1\]"):
        run_study({"fractions": [2.0]}, out_dir=tmp_path)
    with pytest.raises(NmpError, match="params.colour: unknown"):
        run_study({"colour": 1}, out_dir=tmp_path)
    assert main(["evaluate", "papers/cpr-partial-save", "--check"]) == 0
    assert "(params checked)" in capsys.readouterr().out
