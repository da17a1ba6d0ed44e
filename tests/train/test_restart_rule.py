"""One rule for the restart at scale (nmp/train/extrapolate.py), in every row kind: a failure
costs ``restart_s`` (rescheduling the job) to the strategies that roll the job back
(checkpoint, CPR) and nothing to those that keep training (ECRec, none), in the closed-form
``expected`` rows, the Monte-Carlo rows and the ``scheduled`` rows alike. A runtime's regroup
(``scheduled``'s ``regroup_s``: the kit's processes re-form their group on every failure) is
charged to every strategy alike."""

from __future__ import annotations

from dataclasses import replace

import pytest

from nmp.train.extrapolate import DeploymentSpec, _model, expected, monte_carlo, scheduled

RESTART_S = 60.0
ROLLS_BACK = {"checkpoint": True, "cpr-mfu": True, "cpr-ssu": True, "ecrec": False, "none": False}
STEPS = 100_000
FAILURES = [10_000, 70_000]


@pytest.fixture(scope="module")
def dep():
    return DeploymentSpec(interval="fixed", interval_min=(30.0,), restart_s=RESTART_S, trials=400)


def _by_name(rows):
    return {r["strategy"]: r for r in rows}


def _restart_per_failure_s(with_, without, per_failure_s):
    """Each strategy's overhead that the restart adds, in seconds per failure."""
    return {
        n: (with_[n]["overhead_pct"] - without[n]["overhead_pct"]) / 100.0 * per_failure_s
        for n in with_
    }


def test_every_row_kind_charges_the_restart_to_the_rolling_back_strategies_only(dep):
    md = _model(dep)
    no = replace(dep, restart_s=0.0)
    # expected: failures at rate 1 / M (system MTBF)
    exp = _restart_per_failure_s(_by_name(expected(dep)), _by_name(expected(no)), md.m_ns / 1e9)
    # scheduled: len(FAILURES) failures over STEPS steps
    horizon_s = STEPS * md.step_ns / 1e9
    sch = _restart_per_failure_s(
        _by_name(scheduled(dep, STEPS, FAILURES)),
        _by_name(scheduled(no, STEPS, FAILURES)),
        horizon_s / len(FAILURES),
    )
    # Monte-Carlo: the same seeded draws with and without the restart
    mc_with, mc_without = _by_name(monte_carlo(dep)), _by_name(monte_carlo(no))
    failures = mc_with["none"]["failures_mean"]
    assert failures > 0  # the draws have failures to charge
    mc = _restart_per_failure_s(mc_with, mc_without, md.horizon_ns / 1e9 / failures)
    assert set(exp) == set(sch) == set(mc) == set(ROLLS_BACK)
    for name, rolls_back in ROLLS_BACK.items():
        want = RESTART_S if rolls_back else 0.0
        assert exp[name] == pytest.approx(want, rel=1e-9, abs=1e-9), name
        assert sch[name] == pytest.approx(want, rel=1e-9, abs=1e-9), name
        assert mc[name] == pytest.approx(want, rel=1e-9, abs=1e-9), name


def test_a_runtimes_regroup_is_charged_to_every_strategy_alike(dep):
    md = _model(dep)
    regroup_s = 0.5
    base = _by_name(scheduled(dep, STEPS, FAILURES))
    got = _by_name(scheduled(dep, STEPS, FAILURES, regroup_s=regroup_s))
    added_pct = 100.0 * len(FAILURES) * regroup_s * 1e9 / (STEPS * md.step_ns)
    for name in ROLLS_BACK:
        assert got[name]["overhead_pct"] - base[name]["overhead_pct"] == pytest.approx(added_pct)
        assert got[name]["recovery_s"] - base[name]["recovery_s"] == pytest.approx(regroup_s)
    # no failure, no regroup
    quiet = _by_name(scheduled(dep, STEPS, [], regroup_s=regroup_s))
    assert quiet["ecrec"]["overhead_pct"] == pytest.approx(
        _by_name(scheduled(dep, STEPS, []))["ecrec"]["overhead_pct"]
    )


def test_a_checkpoint_failure_re_executes_the_steps_since_the_last_save(dep):
    """The scheduled checkpoint row: a failure at step f rolls back f x step mod the interval
    (the work since the newest save), then loads the save and restarts."""
    md = _model(dep)
    tau = md.ckpt_taus_ns[0]
    assert tau == pytest.approx(30.0 * 60e9)  # interval_min = 30 (fixed)
    failures = [int(0.25 * tau / md.step_ns), int(1.5 * tau / md.step_ns)]
    row = _by_name(scheduled(dep, STEPS, failures))["checkpoint"]
    lost = [0.25 * tau, 0.5 * tau]  # a quarter of an interval since a save, then half of one
    per = [w + md.load_ns + md.restart_ns for w in lost]
    assert row["recovery_s"] == pytest.approx(max(per) / 1e9, abs=md.step_ns / 1e9)
    quiet = _by_name(scheduled(dep, STEPS, []))["checkpoint"]
    horizon = STEPS * md.step_ns
    added = row["overhead_pct"] - quiet["overhead_pct"]
    assert added == pytest.approx(100.0 * sum(per) / horizon, abs=100.0 * 2 * md.step_ns / horizon)
