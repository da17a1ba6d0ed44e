"""The trainer's checkpoint interval recomputed from its stated formula (docs/training.md,
nmp/train/strategies/checkpointing.py): δ and the system MTBF M both in modeled time,

    δ        = checkpoint bytes (the tables' records + the MLP) / storage_gbps
    M        = mtbf_steps x the modeled failure-free step
    Young τ  = sqrt(2 δ M)                         (Young, CACM 1974)
    Daly τ   = sqrt(2 δ M) (1 + sqrt(x)/3 + x/9) - δ,  x = δ / (2 M)   (δ < 2 M)
    interval = round(τ / step), at least one step

The strategy is attached to a trainer and nothing is trained (under a second for all cases).
"""

from __future__ import annotations

import math

import pytest

from nmp.train.strategies import make_strategy
from nmp.train.trainer import Trainer
from tests.train.conftest import tiny


def _attached(**kw):
    cfg = tiny(**kw)
    strat = make_strategy("checkpoint", cfg)
    trainer = Trainer(cfg, parity=strat.uses_parity)
    trainer.schedule = strat.schedule
    strat.attach(trainer)
    return cfg, trainer, strat


@pytest.mark.parametrize("mtbf_steps", [120.0, 2000.0])
@pytest.mark.parametrize("rule", ["young", "daly"])
def test_the_checkpoint_interval_is_the_rule_over_delta_and_the_mtbf(rule, mtbf_steps):
    cfg, trainer, strat = _attached(interval=rule, mtbf_steps=mtbf_steps)
    try:
        step_ns = trainer.cost.baseline_step_ns()
        delta = (trainer.store.data_bytes + trainer.dense_bytes()) / cfg.storage_gbps
        m = mtbf_steps * step_ns
        young = math.sqrt(2.0 * delta * m)
        x = delta / (2.0 * m)
        assert x < 1.0  # Daly's formula applies (δ < 2M), not its tau = M cap
        tau = young if rule == "young" else young * (1 + math.sqrt(x) / 3 + x / 9) - delta
        assert strat.delta_ns == pytest.approx(delta, rel=1e-12)
        assert strat.tau_ns == pytest.approx(tau, rel=1e-9)
        assert strat.interval_steps == max(1, round(tau / step_ns))
        assert strat.interval_steps > 10  # far from the one-step floor: the MTBF sets it
    finally:
        strat.finish()


def test_sixteen_times_the_mtbf_is_four_times_youngs_interval():
    # τ = sqrt(2 δ M): δ and the step are the same in both runs, so τ scales as sqrt(M).
    taus = []
    for mtbf_steps in (100.0, 1600.0):
        _, _, strat = _attached(interval="young", mtbf_steps=mtbf_steps)
        taus.append(strat.tau_ns)
        strat.finish()
    assert taus[1] / taus[0] == pytest.approx(4.0, rel=1e-12)
