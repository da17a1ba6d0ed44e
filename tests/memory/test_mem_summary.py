"""Summed runs (a replay without a timeline, every design point's runs): the C engine keeps the
read sums as requests retire (engine.c's ``simulate_sum_c``) instead of setting per-transaction
outputs and reading them back. Against the per-transaction path (``simulate`` then
``read_sums``): the same status, cycles, counters, active cycles, evaluations and sums, with
writes (forwarding, coalescing) and without, drained or not, with arrival gaps, on one channel
and on several channels on threads, and where the reads' latency outgrows the engine's ring."""

from __future__ import annotations

import numpy as np
import pytest
from memref import dram_ref_dir, load_cases
from test_mem_native_engine import VARIANTS

from nmp.memory import driver, load_memory, native, read_trace
from nmp.memory.counters import C_FWD
from nmp.reference import case_memory_spec

pytestmark = pytest.mark.skipif(not native.available(), reason="the native engine is not built")

_NO_LOG = np.zeros((0, 5), np.int64)


def _compare(spec, addr, wr, arrival, *, drain, threads=1, changes=None):
    """simulate_summary on ``threads`` threads against simulate then read_sums on one: equal.
    Returns the per-transaction path's outputs."""
    plan = driver._plan(spec)
    p = plan.engine_params(drain, True).copy()
    for k, v in (changes or {}).items():
        p[k] = v
    if changes and "write_queue" in changes:
        p["wm_high"], p["wm_low"] = 0.8 * p["write_queue"], 0.2 * p["write_queue"]
    dec, ks = plan.native_decode, int(plan.native_decode[0])
    has_write = bool(wr.any())
    # the summed run first, on buffers an earlier run left values in
    got = native.simulate_summary(
        addr, wr, arrival, ks, dec, p, *plan.tables, threads, has_write=has_write
    )
    evals = int(native._summary_buffer()[0][3])
    out = native.simulate(addr, wr, arrival, dec, p, *plan.tables, _NO_LOG)
    sums = native.read_sums(wr if has_write else None, ks, out[5], out[6], out[7], out[1])
    want = (*out[:3], out[3].tolist(), out[4].tolist(), int(out[9].sum()), sums)
    assert got == want, (spec.name, drain, threads)
    assert evals == out[10], (spec.name, drain, threads)
    return out, sums


def _mixed(rng, spec, n, writes, gap):
    """n lines: half in a hot region (row hits, forwarded reads, coalesced writes), half
    random; ``writes`` of them writes; arrivals ``gap`` cycles apart at most."""
    hot = rng.integers(0, 2048, n) * 64
    cold = rng.integers(0, spec.capacity_bytes // 64, n) * 64
    addr = np.where(rng.random(n) < 0.5, hot, cold).astype(np.uint64)
    wr = (rng.random(n) < writes).astype(np.int8)
    return addr, wr, np.cumsum(rng.integers(0, gap + 1, n)).astype(np.int64)


def test_summed_runs_equal_the_per_transaction_path():
    rng = np.random.default_rng(21)
    specs = [
        (load_memory("ddr4-3200aa"), (1,)),
        (load_memory("ddr4-3200aa", ranks=2), (1,)),
        (load_memory("ddr5-4800-40"), (1,)),
        (load_memory("ddr4-3200aa", channels=4), (1, 2)),
        (load_memory("hbm2-2000"), (1, 2, 3)),
        (load_memory("hbm3-6400"), (2,)),
    ]
    pending = forwarded = 0
    for spec, thread_counts in specs:
        for writes, gap in ((0.4, 3), (0.0, 2), (0.3, 0)):
            addr, wr, arrival = _mixed(rng, spec, 2500, writes, gap)
            for drain in (False, True):
                for threads in thread_counts:
                    out, sums = _compare(spec, addr, wr, arrival, drain=drain, threads=threads)
                pending += sums[1] != sums[3]  # reads served whose data came after `cycles`
                forwarded += out[4][C_FWD] > 0
    assert pending >= 10 and forwarded >= 10


def test_read_forwarded_at_the_last_step():
    """A read forwarded at the step that offers the last request returns its data at the next
    one, after ``cycles``: served, but not in the sum at ``cycles``."""
    spec = load_memory("ddr4-3200aa")
    addr = np.array([64 * 8 * i for i in range(40)] + [4096, 4096], np.uint64)
    wr = np.zeros(len(addr), np.int8)
    wr[-2] = 1
    arrival = np.zeros(len(addr), np.int64)
    out, sums = _compare(spec, addr, wr, arrival, drain=False)
    assert out[8][-1] and out[6][-1] == out[1] + 1  # (forwarded at the step `cycles`)
    _compare(spec, addr, wr, arrival, drain=True)


def test_unusual_configurations_summed():
    """The configurations the engine tests vary (closed rows, no jumps, queues of 8 to 100: the
    generic instantiation, a frontend of 3, dual issue on and off, ...), with writes."""
    rng = np.random.default_rng(13)
    for spec, threads in ((load_memory("ddr4-3200aa", ranks=2), 1), (load_memory("hbm2-2000"), 2)):
        addr, wr, arrival = _mixed(rng, spec, 1200, 0.4, 2)
        for changes in VARIANTS.values():
            for drain in (False, True):
                _compare(spec, addr, wr, arrival, drain=drain, threads=threads, changes=changes)


@pytest.mark.parametrize("latency", [128, 129, 400])
def test_read_latency_at_and_beyond_the_ring(latency):
    """Read latencies up to the engine's ring of retirements (128) are summed as they retire;
    longer ones keep the per-transaction outputs: the same sums either way."""
    rng = np.random.default_rng(4)
    spec = load_memory("ddr4-3200aa")
    addr, wr, arrival = _mixed(rng, spec, 2000, 0.2, 1)
    for drain in (False, True):
        out, sums = _compare(
            spec, addr, wr, arrival, drain=drain, changes={"read_latency": latency}
        )
        assert sums[1] < sums[3] or drain


def test_deadlocked_run():
    """A run that can never finish (the write mode never left, no refresh): the same outputs up
    to where it stops."""
    spec = load_memory("ddr4-3200aa")
    n = 400
    addr = (np.arange(n) * 64).astype(np.uint64)
    arrival = np.repeat([0, 100_000], n // 2).astype(np.int64)
    wr = np.zeros(n, np.int8)
    for drain in (False, True):
        out, _ = _compare(
            spec, addr, wr, arrival, drain=drain, changes={"wm_low": 0.0, "refresh_on": 0}
        )
        assert out[0] == 1


def test_reference_cases_summed():
    """Reference cases with writes and without, drained and not; HBM2 on 2 threads."""
    cases = {c["id"]: c for c in load_cases()}
    ids = (
        "random_rw50_4g@ddr4_1r",
        "rmw_simple_rb64@ddr5_1r",
        "emb_zipf_a0.8_r1m_rb64_p40@ddr4_2r",
        "rmw_stripe_rb256@hbm2_8ch",
        "stream_64k@hbm2_8ch",
    )
    for case_id in ids:
        case = cases[case_id]
        spec = case_memory_spec(case["memory_args"])
        req = read_trace(dram_ref_dir() / case["trace"])
        addr = np.ascontiguousarray(req["addr"], np.uint64)
        wr, arrival = req["write"].astype(np.int8), np.zeros(len(addr), np.int64)
        for drain in (False, True):
            threads = 2 if spec.org.channels > 1 else 1
            out, _ = _compare(spec, addr, wr, arrival, drain=drain, threads=threads)
            if not drain:
                assert out[1] == case["ramulator2"]["cycles"], case_id


def test_design_point_runs_summed():
    """simulate_summaries (a level's runs in one call, sharing this thread's buffers) against
    each run's per-transaction path."""
    rng = np.random.default_rng(9)
    spec = load_memory("ddr4-3200aa")
    plan = driver._plan(spec)
    dec, ks = plan.native_decode, int(plan.native_decode[0])
    p = plan.engine_params(True, True)
    runs = [(rng.integers(0, 1 << 24, n).astype(np.uint64) * 64, dec, p) for n in (3000, 500, 1800)]
    got = native.simulate_summaries(runs, ks, *plan.tables)
    for (addr, _, _), summary in zip(runs, got, strict=True):
        zeros = np.zeros(len(addr), np.int64)
        out = native.simulate(addr, zeros.astype(np.int8), zeros, dec, p, *plan.tables, _NO_LOG)
        sums = native.read_sums(None, ks, out[5], out[6], out[7], out[1])
        assert summary == (*out[:3], out[3].tolist(), out[4].tolist(), int(out[9].sum()), sums)
