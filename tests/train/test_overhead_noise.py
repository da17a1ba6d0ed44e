"""The measured overhead's 95 % band (nmp train --procs) from the step times' spread."""

from __future__ import annotations

import numpy as np
import pytest

from nmp.train.dist.report import _merged, _noise


def _rec(steps, wall=None):
    walls = [(0, i, s) for i, s in enumerate(steps)]
    return {
        "train_wall_s": float(sum(steps)) if wall is None else wall,
        "results": {"worker:0": {"step_wall": walls}},
    }


def test_band_of_one_failure_free_run_is_the_sum_of_the_two_runs_variances():
    rng = np.random.default_rng(7)
    run, base = rng.normal(0.03, 0.004, 40), rng.normal(0.025, 0.003, 40)
    want = 100 * 1.96 * np.sqrt(40 * run.var(ddof=1) + 40 * base.var(ddof=1)) / base.sum()
    assert _noise(_rec(base), _rec(run)) == pytest.approx(want)


@pytest.mark.parametrize("n_runs", [2, 4])
def test_several_failure_free_runs_stand_as_their_mean(n_runs):
    # n runs of the same spread: their mean wall time has 1/n the variance of one, and is one
    # run's length, not n of them (the band was once taken over the pooled sum: n x too narrow)
    rng = np.random.default_rng(11)
    run = rng.normal(0.03, 0.004, 40)
    bases = [rng.normal(0.025, 0.003, 40) for _ in range(n_runs)]
    pooled = np.concatenate(bases)
    merged = _merged([_rec(b) for b in bases])
    mean_wall = pooled.sum() / n_runs
    var = 40 * run.var(ddof=1) + 40 * pooled.var(ddof=1) / n_runs
    assert _noise(merged, _rec(run)) == pytest.approx(100 * 1.96 * np.sqrt(var) / mean_wall)
    # a band near one run's (the run's own spread dominates), not 1/n of it
    one = _noise(_rec(bases[0]), _rec(run))
    assert _noise(merged, _rec(run)) > 0.6 * one
