"""Timing unit tests on isolated requests (DDR4-3200AA unless stated).

A request offered at cycle t is accepted at t and its first command can issue at the next
controller tick (t + 1): that one scheduling cycle is part of every latency below.
"""

from __future__ import annotations

import numpy as np
import pytest

from nmp.memory import encode_address, load_memory, make_requests, replay


@pytest.fixture(scope="module")
def ddr4():
    return load_memory("ddr4-3200aa", overrides={"controller.refresh": "none"})


def _run(spec, arrival, **fields):
    addr = encode_address(spec, **fields)
    stats = replay(make_requests(addr, arrival=arrival), spec, timeline=True)
    return stats, stats.timeline["arrive"], stats.timeline["done"]


def test_isolated_miss_hit_conflict(ddr4):
    t = ddr4.timing
    # miss (closed bank), then a hit to the open row, then a conflict, each long after.
    _, arrive, done = _run(
        ddr4, arrival=[0, 1000, 2000], bank=0, bankgroup=0, row=[5, 5, 9], column=[0, 1, 2]
    )
    lat = done - arrive
    assert lat[0] == 1 + t["nRCD"] + t["nCL"] + t["nBL"]
    assert lat[1] == 1 + t["nCL"] + t["nBL"]
    assert lat[2] == 1 + t["nRP"] + t["nRCD"] + t["nCL"] + t["nBL"]


def test_column_spacing_same_and_other_bankgroup(ddr4):
    t = ddr4.timing
    # two banks opened early; then two hits at once: same bank group, then other bank groups
    _, _, same = _run(ddr4, arrival=[0, 0, 1000, 1000], bankgroup=0, bank=[0, 1, 0, 1], row=3)
    _, _, other = _run(ddr4, arrival=[0, 0, 1000, 1000], bankgroup=[0, 1, 0, 1], bank=0, row=3)
    assert same[3] - same[2] == t["nCCDL"]
    assert other[3] - other[2] == t["nCCDS"]
    assert t["nCCDS"] != t["nCCDL"]


def test_fifth_act_waits_for_tfaw(ddr4):
    from nmp.memory.driver import run_engine
    from nmp.memory.standards import CMD

    t = ddr4.timing
    # five misses to five banks in different bank groups (tRRD_S apart), all offered at once
    addr = encode_address(ddr4, bankgroup=[0, 1, 2, 3, 0], bank=[0, 0, 0, 0, 1], row=7)
    reqs = make_requests(addr)
    out = run_engine((reqs["addr"], reqs["write"], None), ddr4, log_size=64)
    log = out[-1][out[-1][:, 0] >= 0]
    act = log[log[:, 1] == CMD["ACT"], 0]
    assert list(np.diff(act[:4])) == [t["nRRDS"]] * 3
    assert act[4] - act[0] >= t["nFAW"]
    # one command per cycle: the 5th ACT issues at the first free cycle once tFAW has passed
    busy = set(log[:, 0].tolist())
    assert all(c in busy for c in range(act[0] + t["nFAW"], act[4]))
    assert act[4] - act[0] <= t["nFAW"] + 1


def test_refresh_blocks_rank_for_trfc():
    spec = load_memory("ddr4-3200aa")
    t = spec.timing
    # a miss offered right at the first refresh: REFab issues at nREFI, the ACT waits nRFC
    stats, arrive, done = _run(spec, arrival=[t["nREFI"]], row=1)
    act = done[0] - (t["nRCD"] + t["nCL"] + t["nBL"])
    assert act == t["nREFI"] + t["nRFC"]
    assert stats.cmd_counts["REF"] == 1


def test_refresh_closes_open_rows_first():
    spec = load_memory("ddr4-3200aa")
    t = spec.timing
    # a row left open before nREFI needs a PREab before the REFab
    stats, _, done = _run(spec, arrival=[0, t["nREFI"]], row=[1, 2], bank=[0, 1])
    counts = stats.cmd_counts
    assert counts["PREab"] == 1 and counts["REF"] == 1
    act = done[1] - (t["nRCD"] + t["nCL"] + t["nBL"])
    assert act == t["nREFI"] + t["nRP"] + t["nRFC"]


def test_hbm2_splits_lines_and_interleaves_channels():
    spec = load_memory("hbm2-2000")
    stats = replay(make_requests(np.arange(16) * 64), spec)
    assert stats.requests == 32 and stats.lines == 16
    # 16 lines rotate over 8 channels; both 32-B halves of a line and the two lines of a
    # channel share one pseudo-channel page: one ACT and four RD per channel
    counts = stats.cmd_counts
    assert counts["ACT"] == 8
    assert counts["RD"] == 32
    assert stats.row_misses == 8 and stats.row_hits == 24


def test_closed_row_policy_precharges_every_access(ddr4):
    closed = load_memory(ddr4, overrides={"controller.row_policy": "closed"})
    reqs = make_requests(np.arange(64) * 64)  # one page, one bank
    open_stats = replay(reqs, ddr4)
    closed_stats = replay(reqs, closed)
    assert open_stats.cmd_counts["ACT"] == 1
    assert closed_stats.cmd_counts["ACT"] == 64
    assert closed_stats.cycles_drained > open_stats.cycles_drained


def test_event_jump_is_exact():
    from nmp.memory.driver import run_engine
    from nmp.memory.lines import engine_inputs

    spec = load_memory("ddr4-3200aa", ranks=2)
    rng = np.random.default_rng(7)
    addr = rng.integers(0, spec.capacity_bytes // 64, 3000) * 64
    reqs = make_requests(addr, write=rng.random(3000) < 0.3)
    lines = (reqs["addr"].copy(), reqs["write"].copy(), None)
    a = run_engine(lines, spec, jump=True)
    b = run_engine(lines, spec, jump=False)
    assert a[1] == b[1] and a[2] == b[2]
    np.testing.assert_array_equal(a[4], b[4])
    np.testing.assert_array_equal(a[7], b[7])
    assert a[-1] < b[-1]  # fewer ticks simulated
    # the engines only read their inputs (the driver shares and reuses them)
    np.testing.assert_array_equal(lines[0], reqs["addr"])
    np.testing.assert_array_equal(lines[1], reqs["write"])
    from nmp.memory import driver, engine

    plan = driver._plan(spec)
    p = plan.engine_params(True, True)
    inputs = engine_inputs(reqs, spec)
    copies = [x.copy() for x in inputs]
    engine.simulate(*inputs, p, *plan.tables, np.zeros((0, 5), np.int64))
    for x, y in zip(inputs, copies, strict=True):
        np.testing.assert_array_equal(x, y)


def test_write_forwarding_and_coalescing(ddr4):
    # the second write waits in the write buffer behind a conflict in its bank; a write and a
    # read to its address arrive meanwhile: absorbed and forwarded, no DRAM command
    a, b = encode_address(ddr4, row=[1, 2])
    addr = np.array([a, b, b, b])
    stats = replay(make_requests(addr, write=[True, True, True, False]), ddr4)
    assert stats.writes_coalesced == 1
    assert stats.reads_forwarded == 1
    assert stats.cmd_counts["WR"] == 2
    assert stats.cmd_counts["RD"] == 0


def test_timeline_outlives_later_replays(ddr4):
    # a replay without a timeline sums its per-request outputs in this thread's scratch
    # buffers (nmp.memory.native); a timeline kept from an earlier replay is not among them
    _, arrive, done = _run(ddr4, arrival=[0, 1000, 2000], bank=0, row=[5, 5, 9])
    kept = arrive.tolist(), done.tolist()
    other = make_requests(encode_address(ddr4, bank=[1, 2, 3], row=7), arrival=[5, 6, 7])
    assert replay(other, ddr4) == replay(other, ddr4)
    assert (arrive.tolist(), done.tolist()) == kept
    assert _run(ddr4, arrival=[0, 1000, 2000], bank=0, row=[5, 5, 9])[2].tolist() == kept[1]
