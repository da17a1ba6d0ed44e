"""The time of host-tier rows over a GPU's link (nmp/shard/cost.py, ``evaluate``), recomputed by
hand from models/topology/a100x8-pcie4.toml:

    link time = max(bytes / data_gbps,  round trip + reads x round trip / reads in flight)

with PCIe 4.0 x16's raw 31.5 GB/s at 64 B of payload per 88 B (22.9 GB/s of rows), a 1,000-ns
round trip and 256 reads in flight. A GPU's host-tier time is the larger of its link time and
its share of the host DRAM (tiny here), added to its HBM kernel time.
"""

from __future__ import annotations

import numpy as np
import pytest

from nmp.shard.cost import evaluate
from nmp.shard.placement import Placement, TablePlacement
from nmp.shard.topology import load_topology
from nmp.workload import LookupBatch, TableLookups

ROUND_TRIP_NS = 1000.0
IN_FLIGHT = 256
DATA_GBPS = 31.5 * 64 / (64 + 24)
DIM, ROWS = 64, 100_000
ROW_BYTES = DIM * 4


def host_only(indices: list[int], bags: int):
    """One table on GPU 0 of 8, none of its rows in HBM: every lookup crosses the link."""
    idx = np.asarray(indices, dtype=np.int64)
    offsets = np.linspace(0, idx.size, bags + 1).astype(np.int64)
    batch = LookupBatch((TableLookups(idx, offsets, None, ROWS, DIM),))
    placement = Placement("test", 8, (TablePlacement(0, ROWS, np.empty(0, np.int64)),))
    return evaluate(placement, load_topology("a100x8-pcie4"), [batch], [4])


def test_the_topology_is_what_the_hand_figures_assume():
    link = load_topology("a100x8-pcie4").link
    assert link.latency_ns == ROUND_TRIP_NS and link.reads_in_flight == IN_FLIGHT
    assert link.data_gbps == pytest.approx(DATA_GBPS, rel=1e-12)


def test_a_few_host_reads_wait_a_round_trip():
    # 8 reads of 256 B: 2,048 B take 89 ns on the wire, but the reads take a round trip plus
    # 8 / 256 of one more: 1,031.25 ns.
    c = host_only([3, 17, 99, 1000, 5000, 70_000, 12, 99_999], bags=2)
    assert c.slow_lookups[0] == 8 and c.lookups[0] == 8
    assert 8 * ROW_BYTES / DATA_GBPS < 100.0
    assert c.slow_ns[0] == pytest.approx(ROUND_TRIP_NS + 8 * ROUND_TRIP_NS / IN_FLIGHT, rel=1e-12)
    assert c.slow_ns[0] == pytest.approx(1031.25, rel=1e-12)
    # The host tier adds to the GPU's kernel (overlap off); the other GPUs are idle.
    assert c.gpu_ns[0] == pytest.approx(c.hbm_ns[0] + c.slow_ns[0], rel=1e-12)
    assert c.step_ns == c.gpu_ns[0] and not c.gpu_ns[1:].any()


def test_many_host_reads_wait_for_the_links_bandwidth():
    # 4,096 reads: the round trips take 1,000 + 16,000 ns, the bytes 1 MiB / 22.9 GB/s = 45.8 us.
    rng = np.random.default_rng(0)
    c = host_only(rng.integers(0, ROWS, 4096).tolist(), bags=64)
    assert c.slow_lookups[0] == 4096
    assert ROUND_TRIP_NS * (1 + 4096 / IN_FLIGHT) == 17_000.0
    assert c.slow_ns[0] == pytest.approx(4096 * ROW_BYTES / DATA_GBPS, rel=1e-12)
