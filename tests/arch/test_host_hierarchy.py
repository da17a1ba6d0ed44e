"""The host CPU's cores and caches (nmp.arch.host_hierarchy): every level costs time, each
core keeps a bounded number of misses in flight, threads split the batch. Each test fails if
its mechanism is removed (a free LLC hit, unbounded misses in flight, free page walks...)."""

from __future__ import annotations

import numpy as np
import pytest

from nmp.arch import load_arch
from nmp.arch.host_hierarchy import (
    CoreLoad,
    HostCaches,
    core_bounds_ns,
    core_of_bag,
    llc_bandwidth_ns,
    stall_ns_per_line,
)
from nmp.arch.spec import HostSpec
from nmp.errors import NmpError
from nmp.workload import generate_batch, load_workload

CACHED = {"rows": [64, 32], "batch": 8, "pooling": 40}  # 24 KiB of rows: every read cached
# arithmetic out of the way of the memory bound under test
FAST_CORE = {"lookup_cycles": 0.0, "simd_lanes": 256}


def _op(workload_over: dict, **host):
    wl = load_workload("recross-eval", workload_over)
    arch = load_arch("host-cpu", overrides={f"host.{k}": v for k, v in host.items()})
    arch.bind(wl)
    return arch.gather_reduce(generate_batch(wl, seed=3), functional=False)[1]


def test_an_llc_hit_costs_time():
    """Rows that only the LLC holds (L1 and L2 off) take time by the LLC's latency: a free LLC
    hit (latency 0, unbounded bandwidth) would make the batch as fast as the arithmetic."""
    base = {"l1_kib": 0, "l2_kib": 0, "threads": 1, **FAST_CORE}
    op = _op(CACHED, **base)
    assert op.breakdown["host"]["lines_served"]["dram"] <= 64  # the warm LLC serves the rest
    assert op.breakdown["bottleneck"] == "compute_and_stalls"
    slower = _op(CACHED, **base, llc_latency_ns=66.0)
    assert slower.t_ns == pytest.approx(2 * op.t_ns, rel=0.05)
    free = _op(CACHED, **base, llc_latency_ns=0.0)
    assert free.t_ns < 0.5 * op.t_ns


def test_misses_in_flight_bound_a_core():
    """Halving the fill buffers doubles a miss-bound core's time; without the bound (a huge
    pool) the batch falls to another bound."""
    base = {"l1_kib": 0, "l2_kib": 0, "threads": 1, **FAST_CORE}
    op = _op(CACHED, **base)
    half = _op(CACHED, **base, l1_fill_buffers=8.0, l2_mshrs=24.0)
    assert half.t_ns == pytest.approx(2 * op.t_ns, rel=0.05)
    unbounded = _op(CACHED, **base, l1_fill_buffers=1e6, l2_mshrs=1e6)
    assert unbounded.t_ns < 0.5 * op.t_ns


def test_threads_split_the_batch():
    """One core does the whole batch's work; sixteen share it (compute-bound: L1 hits)."""
    one = _op(CACHED, threads=1)
    all_ = _op(CACHED, threads=16)
    assert one.breakdown["host"]["threads"] == 1 and all_.breakdown["host"]["threads"] == 16
    assert one.t_ns > 8 * all_.t_ns


def test_the_l2_serves_what_the_l1_cannot_hold():
    """A table bigger than the L1 and smaller than the L2: its reads are L2 hits, and the L2's
    latency costs time."""
    wl = {"rows": [4000], "batch": 8, "pooling": 80, "distribution": "uniform"}  # 1 MiB
    op = _op(wl, threads=1, llc_mib=0, **FAST_CORE)
    served = op.breakdown["host"]["lines_served"]
    assert served["l2"] > served["l1"] and served["l2"] > 10 * served["dram"]
    slower = _op(wl, threads=1, llc_mib=0, l2_latency_ns=3 * 7.3, **FAST_CORE)
    assert slower.t_ns > 1.5 * op.t_ns


def test_page_walks_cost_time():
    """Random rows of a large table miss the TLB; each walk stalls the loop its time over the
    walks in flight: halving the walkers adds walks x 400 ns x (1/2 - 1/4)."""
    wl = {"rows": [2_000_000], "batch": 8, "pooling": 80, "distribution": "uniform"}
    kw = {"threads": 1, "page_walk_ns": 400.0}
    op = _op(wl, **kw)
    walks = op.breakdown["host"]["page_walks"]
    assert walks > 0.9 * 640
    slower = _op(wl, **{**kw, "page_walkers": 2.0})
    assert slower.t_ns - op.t_ns == pytest.approx(walks * 100.0, rel=0.02)


def test_every_line_holds_a_fill_buffer_for_its_latency():
    """Little's law on the fill buffers: 4 DRAM lines with 10 buffers stall the loop
    4 x latency / 10; the L2's MSHRs bound the lines past the L2 the same way."""
    host = HostSpec(l1_fill_buffers=10.0, l2_mshrs=1e9, lookup_cycles=0.0)
    load = CoreLoad(np.array([[0, 0, 0, 4]]), np.zeros(1), np.ones(1), np.zeros(1))
    bounds = core_bounds_ns(host, load)
    assert bounds["compute_and_stalls"][0] == pytest.approx(4 * host.dram_latency_ns / 10)
    assert core_bounds_ns(HostSpec(l2_mshrs=2.0), load)["l2_mshrs"][0] == pytest.approx(
        4 * HostSpec().dram_latency_ns / 2
    )


def test_measured_lines_in_flight_replace_the_fill_buffers_per_level():
    """A level with its own measured lines in flight stalls the loop latency / that count per
    line; a level without one falls back on the fill buffers."""
    host = HostSpec(l1_fill_buffers=10.0, dram_lines_in_flight=40.0, lookup_cycles=0.0)
    load = CoreLoad(np.array([[0, 0, 2, 4]]), np.zeros(1), np.ones(1), np.zeros(1))
    want = 2 * host.llc_latency_ns / 10 + 4 * host.dram_latency_ns / 40
    assert core_bounds_ns(host, load)["compute_and_stalls"][0] == pytest.approx(want)
    assert stall_ns_per_line(host)[0] == 0.0  # an L1 hit: the arithmetic's own load


def test_stalls_add_to_the_arithmetic():
    """The loop's time is its arithmetic plus its lines' and its walks' stalls (a full window
    retires nothing)."""
    host = HostSpec(lookup_cycles=22.0, clock_ghz=2.2, simd_lanes=16, vector_cycles=2.0)
    load = CoreLoad(np.array([[0, 0, 0, 8]]), np.array([3]), np.array([10]), np.array([640.0]))
    b = core_bounds_ns(host, load)
    compute = (10 * 22.0 + 640 / 16 * 2.0) / 2.2
    assert b["host_compute"][0] == pytest.approx(compute)
    stall = 8 * host.dram_latency_ns / host.l1_fill_buffers
    walks = 3 * host.page_walk_ns / host.page_walkers  # a TLB miss waits for its walk
    assert b["compute_and_stalls"][0] == pytest.approx(compute + stall + walks)


def test_llc_bandwidth_counts_every_line_past_the_l2s():
    host = HostSpec(llc_mib=32.0, llc_gbps=64.0)
    lines = np.array([[5, 5, 10, 6], [0, 0, 4, 0]])
    load = CoreLoad(lines, np.zeros(2), np.ones(2), np.zeros(2))
    assert llc_bandwidth_ns(host, load) == pytest.approx(20 * 64 / 64.0)
    assert llc_bandwidth_ns(HostSpec(llc_mib=0.0), load) == 0.0


def test_served_by_names_the_nearest_level_holding_a_line():
    caches = HostCaches.empty(HostSpec(l1_kib=1, l2_kib=4, llc_mib=1.0 / 16), threads=2)
    core = np.zeros(3, np.int64)
    line = np.array([7, 7, 7], np.int64)
    assert caches.served_by(core, line).tolist() == [3, 0, 0]  # DRAM first, then the L1
    # the other core's L1/L2 do not hold it; the shared LLC does
    assert caches.served_by(np.ones(1, np.int64), np.array([7])).tolist() == [2]
    # 64 other lines push line 7 out of core 0's 16-line L1 but not out of its 64-line L2
    caches.served_by(np.zeros(40, np.int64), np.arange(100, 140))
    assert caches.served_by(np.zeros(1, np.int64), np.array([7])).tolist() == [1]


def test_core_of_bag_splits_bags_into_equal_runs():
    assert core_of_bag(np.arange(8), 8, 2).tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    assert core_of_bag(np.arange(6), 6, 3).tolist() == [0, 0, 1, 1, 2, 2]


def test_threads_beyond_the_cores_are_an_error():
    with pytest.raises(NmpError, match="threads"):
        load_arch("host-cpu", overrides={"host.threads": 17})


def test_every_cache_hit_costs_energy():
    """An L1 hit reads the L1's array: its energy is the hits x 512 bits x l1_pj_per_bit."""
    op = _op(CACHED)
    served = op.breakdown["host"]["lines_served"]
    assert served["l1"] > 0
    cheaper = _op(CACHED, l1_pj_per_bit=0.0)
    saved = op.energy_pj["sram"] - cheaper.energy_pj["sram"]
    assert saved == pytest.approx(served["l1"] * 512 * 0.3)


@pytest.mark.parametrize("threads", [1, 3])
def test_a_call_costs_its_fixed_time_once_per_batch(threads):
    """A batch is one kernel call: ``call_ns`` once, ``thread_sync_ns`` once per thread beyond
    the first, on the busiest core's loop. Zeroed or tripled, the batch's time moves by other
    than exactly that."""
    plain = _op(CACHED, threads=threads)
    charged = _op(CACHED, threads=threads, call_ns=5000.0, thread_sync_ns=3000.0)
    for op in (plain, charged):
        assert op.breakdown["bottleneck"] == "compute_and_stalls"
    assert charged.t_ns - plain.t_ns == pytest.approx(5000.0 + (threads - 1) * 3000.0)
    arithmetic = charged.breakdown["bounds_ns"]["host_compute"]
    assert arithmetic == plain.breakdown["bounds_ns"]["host_compute"]  # not the arithmetic's


def test_the_walkers_and_the_l2s_bandwidth_bound_a_core_by_their_counts():
    """Each core's page walks over its walkers (Little's law) and every byte past its L1 at
    the L2's bytes per cycle: the two resource bounds the breakdown names beside the loop."""
    host = HostSpec(page_walk_ns=300.0, page_walkers=4.0, l2_bytes_per_cycle=32.0, clock_ghz=2.0)
    lines = np.array([[7, 3, 2, 5], [0, 10, 0, 0]])  # L1, L2, LLC, DRAM lines of two cores
    load = CoreLoad(lines, np.array([6, 2]), np.ones(2), np.zeros(2))
    b = core_bounds_ns(host, load)
    np.testing.assert_allclose(b["page_walkers"], [6 * 300.0 / 4, 2 * 300.0 / 4])
    np.testing.assert_allclose(b["l2_bandwidth"], [10 * 64 / (32.0 * 2.0), 10 * 64 / 64.0])
    # a core whose L2 moves a line a cycle is bound by it, not by its loop
    slow_l2 = HostSpec(l2_bytes_per_cycle=0.01, lookup_cycles=0.0)
    bound = core_bounds_ns(slow_l2, load)
    assert bound["l2_bandwidth"][0] > bound["compute_and_stalls"][0]


def test_each_level_stalls_the_loop_its_own_latency_over_the_lines_in_flight():
    """Per line: the L1 nothing (its hits are the arithmetic's loads), the L2, LLC and DRAM
    their stated latencies over the lines in flight (the fill buffers where none is measured)."""
    host = HostSpec(
        l2_latency_ns=5.0, llc_latency_ns=20.0, dram_latency_ns=90.0, l1_fill_buffers=10.0
    )
    np.testing.assert_allclose(stall_ns_per_line(host), [0.0, 0.5, 2.0, 9.0])
