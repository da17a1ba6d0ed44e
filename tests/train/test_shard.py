"""The embedding servers: placement, the design's functional gather, the per-row gradients."""

from __future__ import annotations

import numpy as np
import pytest

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


def _add_at_reference(g: np.ndarray, grad: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """micro_row_grads as it was: ``np.add.at`` over the lookups in (table, sample, position)
    order, each lookup's bag gradient broadcast."""
    t_n, b_n, p_n = g.shape
    dim = grad.shape[2]
    rows, inv = np.unique(g.reshape(-1), return_inverse=True)
    per_lookup = np.broadcast_to(
        grad.transpose(1, 0, 2)[:, :, None, :], (t_n, b_n, p_n, dim)
    ).reshape(-1, dim)
    out = np.zeros((len(rows), dim), dtype=np.float32)
    np.add.at(out, inv.reshape(-1), per_lookup)
    return rows, out


def test_row_gradients_add_in_lookup_order_as_add_at_did():
    """The compiled sum gives np.add.at's bits: the same float32 adds in the same order, on
    rows looked up many times (where a different order or a pairwise sum would round
    differently), signed zeros and a worker slice that is not contiguous in memory."""
    rng = np.random.default_rng(5)
    for t_n, b_n, p_n, rows_per in [(3, 16, 4, 5), (26, 64, 1, 40), (2, 9, 30, 3)]:
        g = rng.integers(0, rows_per, (t_n, b_n, p_n)) + rows_per * np.arange(t_n)[:, None, None]
        grad = (rng.standard_normal((b_n, t_n, 8)) * 10.0 ** rng.integers(-6, 6, 8)).astype(
            np.float32
        )
        grad[0, 0, :3] = -0.0
        for sl in (slice(None), slice(1, None, 2)):
            want_rows, want = _add_at_reference(g[:, sl], grad[sl])
            rows, got = micro_row_grads(g[:, sl], grad[sl])
            assert np.array_equal(rows, want_rows)
            assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


def test_one_workers_row_gradients_combine_to_the_sum_onto_zeros():
    """One part skips the sum onto zeros; its bits are that sum's (-0.0 comes out +0.0)."""
    rows = np.array([2, 5, 9])
    grad = np.array([[-0.0, 1.5], [3.0, -0.0], [-2.0, 0.0]], dtype=np.float32)
    got_rows, got = combine_row_grads([(rows, grad)])
    want = np.zeros_like(grad)
    want[[0, 1, 2]] += grad
    assert np.array_equal(got_rows, rows)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    assert not np.shares_memory(got, grad)  # the caller's array is not handed back


@pytest.mark.parametrize(
    "overrides",
    [{"workload": "dlrm-benchmark"}, {"workload": "criteo-kaggle", "max_tables": 0}],
    ids=["four-lookups-a-bag", "empty-shard-tables"],
)
def test_servers_flat_lookups_equal_the_flattened_batch(tiny_cfg, overrides):
    """A primed server builds its design's flattened lookups from the request directly; they
    equal what flatten makes of the per-table batch, field by field, on every server: with
    several lookups per bag, and where a server holds no row of a table (Criteo's 3-row
    tables over 5 servers)."""
    from nmp.arch.placement import flatten

    tr = Trainer(tiny_cfg(steps=1, **overrides), parity=True)
    assert tr.geo.pooling > 1 or tr.shard.shard_rows.min() == 0
    b = tr.data.batch_at(2)
    g = tr.global_rows(b)[:, 1:7]
    for n, mem in enumerate(tr.node_mem):
        req = request_for(tr.shard, n, g)
        want = flatten(mem.lookup_batch(req), mem.arch.table_row_bytes, mem.arch.table_rows)
        got = mem.flat_lookups(req)
        for field in ("table", "row", "bag", "grow", "row_bytes"):
            assert np.array_equal(getattr(got, field), getattr(want, field)), (n, field)
        assert (got.weight, got.batch, got.num_tables) == (None, want.batch, want.num_tables)
