"""The CPR setup's deployment costs at scale (nmp/train/extrapolate.py), each recomputed from
the formula its docstring states and the value the setup's sources give in words
(workloads/train/cpr.toml [sources]), not from a recorded result:

- storage: "4 Gbit/s per server to a shared remote checkpoint store" = 0.5 GB/s; a full
  checkpoint writes every record, all servers in parallel: ``delta = bytes / (servers x
  storage)``; a failed shard loads its share: ``bytes / servers / storage``;
- restart: "one minute to reschedule" = 60 s, paid once per failure by the rolling-back
  strategies: checkpointing's expected overhead carries ``restart / M`` (system MTBF ``M``
  = server MTBF / servers), CPR's recovery is the failed shard's load plus the restart;
- network: "a 10 Gbit/s NIC per parameter server" = 1.25 GB/s; a step's lookups, partial
  sums, row gradients and parity deltas cross the servers' NICs, spread over the servers:
  ``bytes / servers / network`` (nmp/train/schedule.py ``phase_costs_ns``); a rebuild pulls
  k survivors' records per lost position into the replacement.

Records: dim 64 + one Adagrad word, padded to an even width: 66 x 4 = 264 B each.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from nmp.train.extrapolate import HOUR_NS, _model, expected, recovery_parts_s
from nmp.train.setup import load_setup
from nmp.train.traffic import layout
from nmp.workload import load_workload

STORAGE_GBPS = 4.0 / 8  # "4 Gbit/s per server"
RESTART_S = 60.0  # "one minute to reschedule"
NETWORK_GBPS = 10.0 / 8  # "a 10 Gbit/s NIC per parameter server"
RECORD_BYTES = (64 + 1 + 1) * 4  # dim 64 + 1 optimizer word, padded to an even width


@pytest.fixture(scope="module")
def cpr():
    dep = load_setup("cpr")[0]
    assert (dep.servers, dep.workers, dep.k, dep.r) == (8, 8, 4, 1)
    return dep


def _data_bytes(dep) -> float:
    rows = sum(t.rows for t in load_workload(dep.workload).tables)  # table_rows = 0: the workload's
    return float(rows) * RECORD_BYTES


def _rows(dep) -> dict:
    return {r["strategy"]: r for r in expected(dep)}


def test_a_full_checkpoint_writes_every_record_at_the_servers_storage_bandwidth(cpr):
    md = _model(cpr)
    assert md.data_bytes == _data_bytes(cpr)
    delta_ns = _data_bytes(cpr) / (cpr.servers * STORAGE_GBPS)  # GB/s = bytes per ns
    assert md.delta_ns == pytest.approx(delta_ns, rel=1e-12)
    assert recovery_parts_s(cpr)["load_s"] == pytest.approx(delta_ns / 1e9, rel=1e-12)
    assert md.shard_load_ns == pytest.approx(
        _data_bytes(cpr) / cpr.servers / STORAGE_GBPS, rel=1e-12
    )
    # and the storage bandwidth alone moves it
    fast = _model(replace(cpr, storage_gbps=3 * cpr.storage_gbps))
    assert fast.delta_ns == pytest.approx(md.delta_ns / 3, rel=1e-12)


def test_a_failure_pays_the_one_minute_restart(cpr):
    assert recovery_parts_s(cpr)["restart_s"] == RESTART_S
    shard_load_s = _data_bytes(cpr) / cpr.servers / STORAGE_GBPS / 1e9
    for name in ("cpr-mfu", "cpr-ssu"):
        assert _rows(cpr)[name]["recovery_s"] == pytest.approx(shard_load_s + RESTART_S, rel=1e-12)


def test_checkpointings_expected_overhead_carries_the_restart_once_per_failure(cpr):
    with_restart = _rows(cpr)["checkpoint"]
    without = _rows(replace(cpr, restart_s=0.0))["checkpoint"]
    m_ns = cpr.server_mtbf_hours * HOUR_NS / cpr.servers  # system MTBF: 14 h
    assert with_restart["overhead_pct"] - without["overhead_pct"] == pytest.approx(
        100.0 * RESTART_S * 1e9 / m_ns, rel=1e-9
    )
    assert with_restart["recovery_s"] - without["recovery_s"] == pytest.approx(RESTART_S)
    # the failure-free part does not see it
    assert with_restart["overhead_no_failure_pct"] == without["overhead_no_failure_pct"]


def test_a_steps_messages_cross_the_servers_ten_gigabit_nics(cpr):
    md = _model(cpr)
    c = md.c
    tp = layout(c.dim, c.record_bytes, cpr.k)
    assert c.record_bytes == RECORD_BYTES
    assert cpr.message_us == 0 and cpr.worker_network_gbps == 0 and not cpr.batch_per_worker
    step_bytes = {
        "lookup": c.lookups * tp.lookup,
        "pooled": c.pooled_vectors * tp.pooled,
        "row_grad": c.worker_rows * tp.row_grad,
        "parity_delta": c.rows_touched * cpr.r * tp.parity_delta,
    }
    for kind, nbytes in step_bytes.items():
        assert md.phase_ns[kind] == pytest.approx(nbytes / cpr.servers / NETWORK_GBPS, rel=1e-12), (
            kind
        )
    # a rebuild pulls k survivors' records per lost position over the replacement's NIC
    positions = c.rows_total / cpr.servers * (cpr.k + cpr.r) / cpr.k
    over_nic = positions * tp.repair / NETWORK_GBPS
    memory = positions * (cpr.k * c.read_ns_per_record + c.write_ns_per_record)
    assert over_nic > memory  # the NIC, not the memory, bounds the rebuild here
    assert md.rebuild_traffic_ns == pytest.approx(over_nic, rel=1e-12)
    assert recovery_parts_s(cpr)["rebuild_s"] == pytest.approx(
        over_nic / cpr.rebuild_share / 1e9, rel=1e-12
    )
