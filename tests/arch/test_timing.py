"""Timing: host-cpu is exactly a DRAM-engine replay of its lowered stream; no design moves data
faster than the internal bandwidth of its level; each mechanism acts where it should."""

from __future__ import annotations

import numpy as np
import pytest

from nmp.arch import load_arch
from nmp.arch.host_hierarchy import core_of_bag, threads_of
from nmp.arch.policies.host import cores_interleaved, lower_host, lower_host_lines
from nmp.arch.timing import replay_stream, sample_index
from nmp.memory import make_requests, replay
from nmp.workload import generate_batch, load_workload

from .conftest import PRESETS

# a host without caches: every read reaches DRAM (the papers' DRAM-bound host)
NO_CACHES = {"host.llc_mib": 0, "host.l1_kib": 0, "host.l2_kib": 0}


def test_host_cpu_equals_replay_of_its_stream(small_workload):
    arch = load_arch("host-cpu", overrides=NO_CACHES)  # every read reaches DRAM
    arch.bind(small_workload)
    batch = generate_batch(small_workload, seed=7)
    _, op = arch.gather_reduce(batch)
    flat, _, order = arch.prepare(batch)
    addr, src = lower_host_lines(arch.mem, flat, order, arch.table_rows, arch.table_row_bytes)
    assert addr.size == sum(lk.num_lookups for lk in batch.tables) * 4  # 256-B rows: 4 bursts
    # the cores' reads arrive at once: each core's in its order, the cores in turn
    threads = threads_of(arch.spec.host)
    bags = flat.table * flat.batch + flat.bag
    core = core_of_bag(bags, flat.num_tables * flat.batch, threads)[src]
    addr = addr[cores_interleaved(core, src, threads)]
    stats = replay(make_requests(addr), arch.mem)
    assert op.t_ns == pytest.approx(stats.cycles_drained * arch.mem.tck_ns, rel=0, abs=1e-9)
    # the CPU's adds are overlapped with (and far shorter than) the DRAM time
    assert op.breakdown["host_compute_ns"] < op.t_ns
    assert op.bytes_by_level["channel"] == addr.size * 64


def test_sample_index_spreads_contiguous_runs():
    idx = sample_index(1000, 64, chunks=4)
    assert idx.size == 64 and idx[0] == 0 and idx[-1] == 999
    runs = idx.reshape(4, 16)
    assert (np.diff(runs, axis=1) == 1).all()  # each chunk is contiguous
    assert (np.diff(runs[:, 0]) > 16).all()  # chunks are spread, not overlapping


@pytest.mark.parametrize("order", ["batch", "shuffled"])
def test_sampled_replay_is_close_to_the_full_replay(order):
    """A dlrm-benchmark-like stream of 8 tables (table-major, 410K requests) timed on a 64K sample:
    the scaled cycles and row statistics stay within 2 % of replaying every request."""
    arch = load_arch("host-cpu")
    workload = load_workload("dlrm-benchmark", {"batch": 128})
    arch.bind(workload)
    flat, _, lookup_order = arch.prepare(generate_batch(workload, seed=5))
    addr = lower_host(arch.mem, flat, lookup_order, arch.table_rows, arch.table_row_bytes)
    if order == "shuffled":
        addr = addr[np.random.default_rng(0).permutation(addr.size)]
    full = replay_stream(addr, arch.mem)
    sampled = replay_stream(addr, arch.mem, max_requests=65536)
    assert sampled.requests == full.requests
    assert sampled.cycles_drained == pytest.approx(full.cycles_drained, rel=0.02)
    assert sampled.row_hits + sampled.row_conflicts + sampled.row_misses == pytest.approx(
        full.requests, rel=0.01
    )
    assert sampled.row_conflicts == pytest.approx(full.row_conflicts, rel=0.02)
    assert sampled.energy_pj == pytest.approx(full.energy_pj, rel=0.02)


@pytest.mark.parametrize("name", PRESETS)
def test_achieved_bandwidth_never_exceeds_peak(name, small_workload):
    arch = load_arch(name)
    arch.bind(small_workload)
    _, op = arch.gather_reduce(generate_batch(small_workload, seed=3))
    bd = op.breakdown
    checked = 0
    for lv, d in bd.get("levels", {}).items():
        assert d["achieved_gbps"] <= d["peak_gbps"] * (1 + 1e-9), lv
        assert d["node_achieved_gbps"] <= d["node_peak_gbps"] * (1 + 1e-9), lv
        # a level's own DRAM reads alone cannot beat its peak either
        if d["dram_ns"] > 0:
            assert d["dram_bytes"] / d["dram_ns"] <= d["peak_gbps"] * (1 + 1e-9), lv
        checked += 1
    ch = bd["channel"]
    # the lookup instructions cross on C/A and DQ together (host_bits_per_cycle: 78 bits per
    # tCK on DDR5 against the data bus's 64), the results on the data bus alone
    spec, mem = arch.spec, arch.mem
    ins_gbps = spec.instruction.host_bits_per_cycle / 8 / mem.tck_ns * mem.org.channels
    assert ch["achieved_gbps"] <= max(ch["peak_gbps"], ins_gbps) * (1 + 1e-9)
    assert ch["time_ns"] <= op.t_ns
    assert checked == len(arch.layouts)


def test_energy_and_bytes_by_component(small_workload):
    host = load_arch("host-cpu", overrides=NO_CACHES)  # small tables: all in the LLC
    nmp = load_arch("recross")
    for a in (host, nmp):
        a.bind(small_workload)
    batch = generate_batch(small_workload, seed=3)
    _, h = host.gather_reduce(batch)
    _, r = nmp.gather_reduce(batch)
    assert set(h.energy_pj) == set(r.energy_pj) == {"dram_core", "dram_io", "units", "sram"}
    # near-memory units keep most bytes off the channel and off the chips' I/O
    assert r.bytes_by_level["channel"] < 0.25 * h.bytes_by_level["channel"]
    assert r.energy_pj["dram_io"] < h.energy_pj["dram_io"]
    assert {"rank", "bankgroup", "bank"} <= set(r.bytes_by_level)
    assert r.load_imbalance >= 1.0


def test_rank_cache_serves_reused_rows(small_workload):
    on = load_arch("recnmp")
    off = load_arch("recnmp", overrides={"rank.cache_kib": 0})
    for a in (on, off):
        a.bind(small_workload)
    batch = generate_batch(small_workload, seed=3)
    _, r_on = on.gather_reduce(batch)
    _, r_off = off.gather_reduce(batch)
    assert r_on.breakdown["cache_hits"] > 0
    assert r_on.bytes_by_level["rank"] < r_off.bytes_by_level["rank"]


def test_vertical_split_wastes_bursts_on_short_vectors(small_workload):
    """TensorDIMM on 8 ranks: a 64-B slice per rank is a whole burst, so a 128-B row costs
    8 bursts instead of 2."""
    from nmp.workload import load_workload

    wl = load_workload("recross-eval", {"rows": [1000, 500], "batch": 4, "pooling": 10, "dim": 32})
    arch = load_arch("tensordimm", overrides={"memory.ranks": 4, "memory.channels": 2})
    arch.bind(wl)
    batch = generate_batch(wl, seed=3)
    _, op = arch.gather_reduce(batch)
    n = batch.num_lookups
    assert op.bytes_by_level["rank"] == n * 8 * 64


def test_instruction_bandwidth_bounds_short_vectors():
    """At 16-B vectors served from open rows (small hot tables), the 85-bit instruction per
    lookup over the rank's C/A (6 cycles), not the data (one burst per tCCD_L per bank group,
    1.5 cycles per lookup over 8 bank groups), limits TRiM-G."""
    from nmp.workload import load_workload

    wl = load_workload("recross-eval", {"rows": [512, 256], "batch": 16, "dim": 4})
    arch = load_arch("trim-g")
    arch.bind(wl)
    _, op = arch.gather_reduce(generate_batch(wl, seed=1))
    assert op.breakdown["bottleneck"] == "instruction_ca"
    # the bound is at least the even share: lookups / ranks x 85 bits / 14 bits per cycle
    n = sum(lk.num_lookups for lk in generate_batch(wl, seed=1).tables)
    even = n / 2 * 85 / 14 * arch.mem.tck_ns
    assert op.breakdown["bounds_ns"]["instruction_ca"] >= even * (1 - 1e-9)
