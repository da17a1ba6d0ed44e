"""Stateful optimizers (Adam tables, momentum MLP) and MLP replicas that failures erase."""

from __future__ import annotations

import numpy as np
import pytest

from nmp.train import optim
from nmp.train.failures import Failure
from nmp.train.trainer import run

ADAM = dict(optimizer="adam", lr_embedding=0.01, dense_optimizer="momentum", lr_dense=0.05)


def test_adam_rows_match_the_textbook_update():
    rng = np.random.default_rng(0)
    dim = 4
    rec = np.zeros((3, dim + optim.state_width("adam", dim)), np.float32)
    rec[:, :dim] = rng.standard_normal((3, dim))
    w = rec[:, :dim].astype(np.float64)
    m = np.zeros((3, dim))
    v = np.zeros((3, dim))
    for t in range(1, 4):
        g = rng.standard_normal((3, dim)).astype(np.float32)
        rec = optim.apply_rows("adam", rec, g, lr=0.1)
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g.astype(np.float64) ** 2
        w -= 0.1 * (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-8)
    assert np.allclose(rec[:, :dim], w, atol=1e-5)
    assert (rec[:, 3 * dim] == 3).all()  # the per-row step count is part of the record


@pytest.mark.parametrize(
    ("strategy", "code", "parities"),
    [("ecrec", "xor", 1), ("ecrec", "rs", 2), ("checkpoint", "xor", 1)],
)
def test_adam_recovery_is_bit_identical(failure_free, tiny_cfg, strategy, code, parities):
    cfg = tiny_cfg(code=code, parities=parities, **ADAM)
    res = run(cfg, strategy, [Failure(40, 1)])
    base = failure_free(code=code, parities=parities, **ADAM)
    assert res.final_state_sha256 == base.final_state_sha256
    assert res.trainer.store.width >= 3 * res.trainer.geo.dim + 1  # all Adam state encoded
    if strategy == "ecrec":
        assert res.extra["degraded_decoded_rows"] > 0


def test_failure_erases_the_mlp_replica_and_a_survivor_restores_it(failure_free, tiny_cfg):
    # Node 0 holds the replica the trainer computes with: the failure overwrites it (the run
    # would diverge or differ if the erased weights were used) and replica 1 is copied back.
    res = run(tiny_cfg(**ADAM), "ecrec", [Failure(40, 0)])
    assert res.final_state_sha256 == failure_free(**ADAM).final_state_sha256
    assert res.extra["dense_reinitialized"] == 0
    assert res.ledger.t_ns["rebuild"] > 0


@pytest.mark.parametrize("strategy", ["checkpoint", "cpr-mfu", "cpr-ssu", "ecrec", "none"])
def test_every_strategy_runs_with_one_mlp_replica(failure_free, tiny_cfg, strategy):
    cfg = tiny_cfg(dense_replicas=1, steps=60)
    res = run(cfg, strategy, [Failure(30, 0)])
    if strategy == "checkpoint":  # the rollback reloads the MLP with everything else
        assert res.final_state_sha256 == failure_free(dense_replicas=1, steps=60).final_state_sha256
    else:  # the only replica was lost: stale (CPR) or fresh (ecrec, none) weights
        assert res.extra["dense_reinitialized"] == 1
        assert any("dense_restored_from" in e for e in res.events)
    assert res.metrics["auc"] is not None


def test_seeds_give_paired_auc_intervals_and_the_plateau_criterion_stops(tiny_cfg):
    from nmp.train.seeds import mean_ci95, plateau_steps, run_seeds

    assert mean_ci95([1.0, 3.0]) == (2.0, pytest.approx(12.706 * np.sqrt(2) / np.sqrt(2)))
    cfg = tiny_cfg(steps=40)
    rows = {r["strategy"]: r for r in run_seeds(cfg, [Failure(20, 1)], 2)}
    assert rows["ecrec"]["auc_change"] == 0.0 and rows["ecrec"]["auc_change_within_noise"]
    assert rows["none"]["auc_change_ci95"] > 0  # two seeds: a real interval
    assert 0.5 < rows["failure-free"]["auc"] < rows["failure-free"]["auc_teacher"] <= 1.0
    steps, curve = plateau_steps(tiny_cfg(steps=400, plateau_every=40), 40, 0.01)
    assert steps < 400 and len(curve) == steps // 40
    assert curve[-1] - curve[-2] < 0.01 <= curve[-2] - curve[-3]
