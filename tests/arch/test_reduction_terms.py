"""The host's share of a near-memory design's batch, each from its mechanism: the host adds
the ranks' pooled partial sums on its SIMD lanes (``host_compute``), and the last partial sums
climb the tree after the slowest bound (``tail_ns``). Neither binds the shipped designs, so no
headline figure would show them computed wrong: a mutation audit tripled and zeroed both
with every other test green."""

from __future__ import annotations

import pytest

from nmp.arch.presets import load_arch_spec
from nmp.evaluate.point import run_point
from nmp.memory import load_memory
from nmp.workload import load_workload

SETS = {"workload.batch": 8, "arch.memory.channels": 1}


@pytest.fixture(scope="module")
def points():
    return {arch: run_point(arch, "recross-eval", None, SETS) for arch in ("recnmp", "recross")}


def test_the_host_adds_every_ranks_partial_sum_on_its_lanes(points):
    wl = load_workload("recross-eval", {"batch": 8})
    bags = wl.batch * len(wl.tables)
    dim = wl.tables[0].dim
    for arch, r in points.items():
        b = r.breakdown
        ranks = b["memory_setup"]["channels"] * b["memory_setup"]["ranks"]
        result_bytes = b["channel"]["result_ns"] * b["channel"]["peak_gbps"]
        if arch == "recnmp":  # rows striped over the ranks: each returns a sum of every bag
            assert result_bytes == pytest.approx(bags * ranks * dim * 4, rel=1e-9)
        else:  # ReCross's partition keeps a few bags in one rank: fewer sums, never more
            assert bags * dim * 4 < result_bytes <= bags * ranks * dim * 4
        h = load_arch_spec(arch).host
        adds = result_bytes / 4  # FP32 partial sums
        assert b["bounds_ns"]["host_compute"] == pytest.approx(
            adds / (h.cores * h.simd_lanes * h.clock_ghz), rel=1e-9
        ), arch


def test_the_tail_is_one_partial_sum_per_hop_of_the_tree(points):
    """Per hop: a pooled row's bursts on the bus and the CAS latency; one hop from the
    buffer chip (rank units), one more from inside DRAM (bank-group and bank units)."""
    wl = load_workload("recross-eval")
    for arch, hops in (("recnmp", 1), ("recross", 2)):
        r = points[arch]
        mem = load_memory(r.breakdown["memory_setup"]["preset"])
        lines = -(-wl.tables[0].row_bytes // mem.org.tx_bytes)
        want = hops * (lines * mem.timing["nBL"] + mem.timing["nCL"]) * mem.tck_ns
        assert r.breakdown["tail_ns"] == pytest.approx(want, rel=1e-9), arch
