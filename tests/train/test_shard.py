"""The embedding servers: placement, the design's functional gather, the per-row gradients."""

from __future__ import annotations

import numpy as np

from nmp.train.shard import (
    ShardMap,
    combine_row_grads,
    micro_row_grads,
    request_for,
    worker_slices,
)
from nmp.train.trainer import Trainer


def test_every_strategy_places_rows_alike(tiny_cfg):
    cfg = tiny_cfg(steps=1)
    coded = Trainer(cfg, parity=True)
    plain = Trainer(cfg, parity=False)
    rows = np.arange(coded.store.total_rows)
    assert np.array_equal(coded.store.node_of_row(rows), plain.store.node_of_row(rows))
    assert np.array_equal(coded.shard.node_of_row, coded.store.node_of_row(rows))


def test_servers_gather_reduce_on_the_design_equals_the_sum_of_rows(tiny_cfg):
    tr = Trainer(tiny_cfg(steps=1, workers=2), parity=True)
    b = tr.data.batch_at(3)
    pooled, *_ = tr.pooled(b)
    recs = tr.store.read(np.arange(tr.store.total_rows))[:, : tr.geo.dim]
    ref = recs[tr.global_rows(b)].sum(axis=2).transpose(1, 0, 2)
    np.testing.assert_allclose(pooled, ref, rtol=0, atol=1e-6)
    # each server's units really serve its own rows: a server's partial sum is zero where
    # a bag has none of its rows
    g = tr.global_rows(b)[:, :8]
    n = 2
    req = request_for(tr.shard, n, g)
    (slots, vectors), op = tr.node_mem[n].gather(req, lambda r: recs[r], timed=True)
    mask = tr.shard.node_of_row[g] == n
    mine = (recs[g] * mask[..., None]).sum(axis=2).transpose(1, 0, 2).reshape(-1, tr.geo.dim)
    has = mask.any(axis=2).T.reshape(-1)  # (sample, table) slots with a row on the server
    assert np.array_equal(slots, np.flatnonzero(has))  # sparse: only those are sent
    np.testing.assert_allclose(vectors, mine[slots], rtol=0, atol=1e-6)
    assert op.t_ns > 0 and op.total_energy_pj > 0  # the design's DRAM timing of the request


def test_row_gradients_per_server_subset_are_bitwise_the_whole_batch():
    rng = np.random.default_rng(0)
    shard = ShardMap((50, 30, 7), 4, 1)
    g = shard.global_rows(rng.integers(0, 7, (3, 16, 4)))
    grad = rng.standard_normal((16, 3, 8)).astype(np.float32)
    parts = [micro_row_grads(g[:, sl], grad[sl]) for sl in worker_slices(16, 3)]
    rows, whole = combine_row_grads(parts)
    for node in range(4):  # a server combines only the rows it holds, sent by each worker
        sub = []
        for r, gr in parts:
            keep = shard.node_of_row[r] == node
            sub.append((r[keep], gr[keep]))
        r_n, g_n = combine_row_grads(sub)
        sel = shard.node_of_row[rows] == node
        assert np.array_equal(r_n, rows[sel])
        assert np.array_equal(g_n.view(np.uint32), whole[sel].view(np.uint32))


def test_worker_slices_cover_the_batch():
    sl = worker_slices(10, 3)
    assert [(s.start, s.stop) for s in sl] == [(0, 4), (4, 7), (7, 10)]


def test_sampled_timing_reports_its_error_against_timed_steps(tiny_cfg):
    """Every step is modeled; untimed steps are charged the running mean, and the run states
    how far that mean was from the steps it did time."""
    from nmp.train.trainer import run

    full = run(tiny_cfg(steps=12, cost_sample=1), "failure-free", [])
    sampled = run(tiny_cfg(steps=12, cost_sample=4), "failure-free", [])
    rep = sampled.extra["cost_sampling"]
    assert rep["timed_steps"] == 4 and rep["gather_mean_abs_error_pct"] is not None
    assert full.extra["cost_sampling"]["timed_steps"] == 13  # step 0 twice: calibrate + charge
    g_full, g_samp = full.ledger.t_ns["gather"], sampled.ledger.t_ns["gather"]
    assert g_full > 0 and abs(g_samp / g_full - 1) < 0.25  # within the reported kind of error
