"""The per-message latency in SC'24's all-to-all (nmp/compress/network.py, alpha-beta model):
a pairwise all-to-all of N nodes is N - 1 rounds of one message each, so its time is
``(N - 1) x (alpha + m / B)``: the latency term is ``(N - 1) x alpha`` on top of the bytes.

The claim's setup (nmp/papers/sc24/claims.toml): Criteo Terabyte over 8 nodes of HDR
InfiniBand (models/network/infiniband-hdr-200g.toml): 200 Gb/s a link (IBTA HDR 4x), and a
message latency the preset chose from "MPI ping-pong latencies on HDR are about 1-2 us end to
end". Each node sends every peer its tables' pooled vectors for its samples: ceil(26 / 8) = 4
tables x 2048 / 8 samples x 64 x 4 B.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from nmp.compress.network import load_network
from nmp.compress.speedup import step_times
from nmp.compress.study import step_setup
from nmp.papers.sc24.bounds import training_speedup

NODES = 8
LINK_BYTES_PER_S = 200e9 / 8  # IBTA HDR 4x
PER_PEER = 4 * (2048 / 8) * 64 * 4.0  # bytes a node sends one peer
HDR_MPI_LATENCY_US = (1.0, 2.0)  # "about 1-2 us end to end"


def _latency_part_ns(alltoall_ns: float) -> float:
    """What is left of an all-to-all's time once its bytes are paid: per-message latency."""
    return alltoall_ns - (NODES - 1) * PER_PEER / LINK_BYTES_PER_S * 1e9


def test_the_sc24_bounds_alltoall_pays_one_hdr_latency_per_round():
    out = training_speedup(
        quick=True, workload="criteo-terabyte", nodes=NODES, network="infiniband-hdr-200g"
    )
    a2a = out["bound_terms"]["alltoall_ns"]["value"]
    per_message_us = _latency_part_ns(a2a) / (NODES - 1) / 1e3
    lo, hi = HDR_MPI_LATENCY_US
    assert lo <= per_message_us <= hi
    # and it is the preset's latency, paid once in each of the N - 1 rounds
    net = load_network("infiniband-hdr-200g")
    assert per_message_us == pytest.approx(net.latency_us, rel=1e-9)
    # the bound is the step with its two all-to-alls over the compute alone
    compute = out["bound_terms"]["compute_ns"]["value"]
    assert out["bound"] == pytest.approx((compute + 2 * a2a) / compute, rel=1e-12)


def test_the_modeled_step_pays_the_same_latency_and_it_scales_with_the_preset():
    step = step_setup("criteo-terabyte", NODES)
    assert step.bytes_per_peer() == PER_PEER
    net = load_network("infiniband-hdr-200g")
    st = step_times(step, net, ratio=10.0, comp_gbps=300.0, decomp_gbps=500.0)
    latency = _latency_part_ns(st["alltoall_ns_uncompressed"])
    lo, hi = HDR_MPI_LATENCY_US
    assert lo * 1e3 * (NODES - 1) <= latency <= hi * 1e3 * (NODES - 1)
    slow = replace(net, latency_us=3 * net.latency_us)
    st3 = step_times(step, slow, ratio=10.0, comp_gbps=300.0, decomp_gbps=500.0)
    assert _latency_part_ns(st3["alltoall_ns_uncompressed"]) == pytest.approx(3 * latency)
    # the compressed all-to-all sends fewer bytes but as many messages
    extra = st3["alltoall_ns_compressed"] - st["alltoall_ns_compressed"]
    assert extra == pytest.approx(2 * latency, rel=1e-9)
