"""ECRec's rebuild and the ``none`` strategy's re-initialization at scale, recomputed from
nmp/train/extrapolate.py's stated formulas on the ECRec setup (workloads/train/ecrec.toml:
5 servers, k = 4, r = 1):

- system MTBF ``M = server MTBF / servers``;
- a record read in a rebuild costs the gather's time per looked-up byte (whole 64-B bursts of
  the record); a record write costs the plain update's time per touched row;
- rebuild: every lost position (the shard's rows with their parity, ``shard_rows (k + r) / k``)
  reads k survivors and writes one record: ``positions x (k x read + write)`` on the memories
  (with servers on a network, the longer of that and the repair bytes over the NIC), taking
  ``rebuild_share`` of the memory's time;
- ``none``: a failure re-writes the lost shard fresh: ``shard_rows x write``, and its expected
  overhead is that once per system MTBF;
- the plain step without a network: the gather, the dense pass and the optimizer in turn.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from nmp.train.extrapolate import HOUR_NS, _model, expected, recovery_parts_s
from nmp.train.setup import load_setup

BURST = 64  # DDR burst (nmp.train.hwcost.BURST_BYTES)


@pytest.fixture(scope="module")
def ecrec():
    dep = load_setup("ecrec")[0]
    assert (dep.servers, dep.k, dep.r) == (5, 4, 1)
    # memory only: no NIC term, so the rebuild is its memory traffic; a batch of 64 keeps the
    # hardware model's step short (the formulas do not depend on the batch)
    return replace(dep, network_gbps=0.0, worker_network_gbps=0.0, batch=64)


@pytest.fixture(scope="module")
def md(ecrec):
    return _model(ecrec)


def _read_write_ns(c, servers):
    burst = -(-c.record_bytes // BURST) * BURST
    read = c.gather_ns * servers / c.lookups * (burst / (c.dim * 4))
    write = c.upd_plain_ns * servers / c.rows_touched
    return read, write


def test_a_records_read_and_write_are_the_gathers_and_updates_rates(ecrec, md):
    c = md.c
    read, write = _read_write_ns(c, ecrec.servers)
    assert c.read_ns_per_record == pytest.approx(read, rel=1e-12)
    assert c.write_ns_per_record == pytest.approx(write, rel=1e-12)
    assert read > 0 and write > 0


def test_the_system_mtbf_is_the_servers_over_their_count(ecrec, md):
    assert md.m_ns == pytest.approx(ecrec.server_mtbf_hours * HOUR_NS / ecrec.servers, rel=1e-12)


def test_a_rebuild_reads_k_survivors_and_writes_one_record_a_position(ecrec, md):
    c = md.c
    read, write = _read_write_ns(c, ecrec.servers)
    shard_rows = c.rows_total / ecrec.servers
    positions = shard_rows * (ecrec.k + ecrec.r) / ecrec.k
    reads = positions * ecrec.k * read  # the survivors'
    writes = positions * write  # the replacement's
    assert md.rebuild_traffic_ns == pytest.approx(reads + writes, rel=1e-12)
    assert md.rebuild_ns == pytest.approx((reads + writes) / ecrec.rebuild_share, rel=1e-12)
    assert recovery_parts_s(ecrec)["rebuild_s"] == pytest.approx(
        (reads + writes) / ecrec.rebuild_share / 1e9, rel=1e-12
    )
    # each part on its own: k reads and one write per position, neither more nor fewer
    assert md.rebuild_traffic_ns - reads == pytest.approx(writes, rel=1e-9)
    assert md.rebuild_traffic_ns - writes == pytest.approx(reads, rel=1e-9)


def test_none_rewrites_the_lost_shard_once_per_failure(ecrec, md):
    c = md.c
    _, write = _read_write_ns(c, ecrec.servers)
    reinit = c.rows_total / ecrec.servers * write
    assert md.reinit_ns == pytest.approx(reinit, rel=1e-12)
    row = {r["strategy"]: r for r in expected(ecrec)}["none"]
    assert row["recovery_s"] == pytest.approx(reinit / 1e9, rel=1e-12)
    m_ns = ecrec.server_mtbf_hours * HOUR_NS / ecrec.servers
    failures_pct = row["overhead_pct"] - row["overhead_no_failure_pct"]
    assert failures_pct == pytest.approx(100.0 * reinit / m_ns, rel=1e-9)


def test_ecrecs_draws_wait_a_whole_rebuild_for_full_redundancy(ecrec, md):
    """The Monte-Carlo row's time to full redundancy is the rebuild's (its traffic at its
    share of the memory's time), and a second server lost within it is data lost (r = 1)."""
    from nmp.train.extrapolate import monte_carlo

    dep = replace(ecrec, trials=200)  # (the seed also draws the batch the costs come from)
    row = {r["strategy"]: r for r in monte_carlo(dep)}["ecrec"]
    assert row["time_to_full_redundancy_s"] == pytest.approx(
        md.rebuild_traffic_ns / ecrec.rebuild_share / 1e9, rel=1e-12
    )
    assert row["p_data_loss"] == 0.0  # one failure in 144 h of system MTBF: no second one
    # servers failing every few rebuilds: a second failure lands inside one in some trials
    mtbf_h = 5 * ecrec.servers * md.rebuild_ns / HOUR_NS
    often = {r["strategy"]: r for r in monte_carlo(replace(dep, server_mtbf_hours=mtbf_h))}
    assert 0.0 < often["ecrec"]["p_data_loss"] <= 1.0


def test_the_plain_step_is_its_gather_dense_and_optimizer_in_turn(ecrec, md):
    """Without a network the common step's critical path is the servers' gather of every
    worker's batch (XDL: each worker trains its own), the workers' dense pass and the servers'
    optimizer, one after another: the scale model's step from the hardware model's costs."""
    c = md.c
    batches = ecrec.workers if ecrec.batch_per_worker else 1
    assert batches == ecrec.workers == 15
    assert md.phase_ns["gather"] == pytest.approx(batches * c.gather_ns, rel=1e-12)
    assert md.phase_ns["optimizer"] == pytest.approx(batches * c.upd_plain_ns, rel=1e-12)
    dense = (c.step_ns - c.gather_ns - c.upd_plain_ns) * ecrec.workers
    assert md.phase_ns["dense"] == pytest.approx(dense, rel=1e-12)
    assert md.step_ns == pytest.approx(batches * (c.gather_ns + c.upd_plain_ns) + dense, rel=1e-12)


def test_a_second_failure_inside_the_rebuild_loses_data(ecrec, md):
    """r = 1: a second server lost before the first one's rebuild ends (half a rebuild in)
    loses data; one lost after it (one and a half in) does not."""
    import numpy as np

    from nmp.train.extrapolate import Draws
    from nmp.train.strategies import REGISTRY

    r = md.rebuild_ns
    draws = Draws(
        t=np.array([0.0, 0.5 * r, 0.0, 1.5 * r]),
        trial=np.array([0, 0, 1, 1]),
        node=np.array([0, 1, 0, 1]),
        per_trial=lambda per: np.array([per[:2].sum(), per[2:].sum()]),
        replica=0.0,
        trials=2,
    )
    row = REGISTRY.get("ecrec").scale_draws(md, ecrec, draws)[0]
    assert row[-1]["p_data_loss"] == 0.5
