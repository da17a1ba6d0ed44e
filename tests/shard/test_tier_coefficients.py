"""The sharder's linearized cost (nmp/shard/cost.py, ``coefficients``), the figure RecShard's
MILP minimizes, recomputed from models/topology/a100x8-pcie4.toml:

    host-tier ns per lookup = max(row bytes / link data GB/s,
                                  round trip / reads in flight,
                                  row bytes x GPUs / host DRAM GB/s)
    HBM ns per lookup       = (kernel time with n lookups - empty kernel) / n   (GPU model)

and the tier sizes the placement must fit: 1 GiB of HBM per GPU for rows, 8 GPUs.
"""

from __future__ import annotations

import numpy as np
import pytest

from nmp.gpu import load_gpu
from nmp.gpu.model import embedding_stage
from nmp.shard import cost
from nmp.shard.cost import coefficients, host_bandwidth_gbps
from nmp.shard.topology import load_topology
from nmp.units import GIB
from nmp.workload import LookupBatch, TableLookups

DIM, ROW = 64, 256  # fp32
DATA_GBPS = 31.5 * 64 / (64 + 24)  # PCIe 4.0 x16, 64-B completions + 24 B of overhead
BATCH = 64


def slow(over=None) -> float:
    topo = load_topology("a100x8-pcie4", over or {})
    return coefficients(topo, [DIM], [4], BATCH)[0].slow_ns_per_lookup


def test_the_topology_states_its_tiers():
    topo = load_topology("a100x8-pcie4")
    assert (topo.gpu, topo.gpus, topo.hbm_gib) == ("a100-80gb", 8, 1.0)
    assert topo.hbm_bytes_per_gpu == GIB
    assert (topo.host.memory_preset, topo.host.channels) == ("ddr4-3200aa", 16)


def test_a_host_lookup_costs_the_slowest_of_link_round_trips_and_shared_dram():
    host = host_bandwidth_gbps("ddr4-3200aa", 16, ROW)
    assert 0 < host < 16 * 25.6  # below 16 channels' peak
    # Default: the host DRAM shared by the 8 GPUs binds (20 ns per 256-B row), above the
    # link's 11.2 ns and the 1,000 / 256 = 3.9 ns of round trips.
    assert ROW * 8 / host > ROW / DATA_GBPS
    assert slow() == pytest.approx(ROW * 8 / host, rel=1e-12)
    # A link of 1 GB/s: its bandwidth binds.
    assert slow({"link.raw_gbps": 1.0}) == pytest.approx(ROW / (64 / 88), rel=1e-12)
    # One read in flight: the round trip binds.
    assert slow({"link.reads_in_flight": 1}) == pytest.approx(1000.0, rel=1e-12)


def test_an_hbm_lookup_costs_the_gpu_models_time_per_lookup():
    fixed, per = cost._gpu_line("a100-80gb", DIM, 4, BATCH)
    gpu = load_gpu("a100-80gb")
    rows = cost.CALIBRATION_ROWS
    empty = TableLookups(np.zeros(0, np.int64), np.zeros(BATCH + 1, np.int64), None, rows, DIM)
    t0 = embedding_stage(gpu, LookupBatch((empty,))).t_ns
    n = BATCH * cost.CALIBRATION_POOLING
    rng = np.random.default_rng(cost.CALIBRATION_SEED)
    idx = rng.integers(0, rows, n, dtype=np.int64)
    full = TableLookups(idx, np.arange(0, n + 1, cost.CALIBRATION_POOLING), None, rows, DIM)
    t1 = embedding_stage(gpu, LookupBatch((full,))).t_ns
    assert (fixed, per) == pytest.approx((t0, (t1 - t0) / n), rel=1e-12)
    c = coefficients(load_topology("a100x8-pcie4"), [DIM], [4], BATCH)[0]
    assert (c.fixed_ns, c.hbm_ns_per_lookup) == pytest.approx((t0, (t1 - t0) / n), rel=1e-12)
