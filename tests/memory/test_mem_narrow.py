"""A run on fewer bank groups or banks (nmp.memory.plan's ``narrowed``, the summed replays'
path): where every line lies in part of the organization, the C engine runs a narrower one,
and every output is the full organization's: the command log (its banks mapped), each
transaction's cycles, the counters, the count of evaluations."""

from __future__ import annotations

import numpy as np
import pytest

from nmp.memory import driver, internal_view, load_memory, make_requests, native, replay_lines
from nmp.memory.plan import narrow_fields

pytestmark = pytest.mark.skipif(not native.available(), reason="the native engine is not built")


def _lanes(addr, decode, params) -> np.ndarray:
    """Each line's bank lane in its channel ((rank * bank groups + group) * banks + bank)."""
    key = addr >> np.uint64(decode[1])
    field = [(key >> np.uint64(decode[2 + f])) & np.uint64(decode[7 + f]) for f in (1, 2, 3)]
    p = params[0]
    g, b = int(p["bankgroups"]), int(p["banks"])
    return ((field[0] * np.uint64(g) + field[1]) * np.uint64(b) + field[2]).astype(np.int64)


def _addr(decode, fields: dict) -> np.ndarray:
    """Line addresses of the given field values (field index: values; the others 0)."""
    key = sum(v.astype(np.uint64) << np.uint64(decode[2 + f]) for f, v in fields.items())
    return (key << np.uint64(decode[1])).astype(np.uint64)


def _run(addr, write, arrival, decode, params, tables):
    log = np.full((4 * len(addr) + 200, 5), -1, np.int64)
    out = native.simulate(addr, write, arrival, decode, params, *tables, log)
    return out, log[log[:, 0] >= 0]


def assert_narrowed_run_identical(addr, spec, write=None, arrival=None, drain=True) -> bool:
    """The run of ``addr`` on ``spec`` and on its narrowing give identical outputs; whether it
    was narrowed."""
    plan = driver._plan(spec)
    n = len(addr)
    write = np.zeros(n, np.int8) if write is None else write.astype(np.int8)
    arrival = np.zeros(n, np.int64) if arrival is None else arrival
    full = (plan.native_decode, plan.engine_params(drain, True))
    narrow = plan.narrowed(addr, drain)
    a, log_a = _run(addr, write, arrival, *full, plan.tables)
    b, log_b = _run(addr, write, arrival, *narrow, plan.tables)
    for k, (x, y) in enumerate(zip(a, b, strict=True)):  # (the evaluations included)
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y), err_msg=f"output {k}")
    # the same commands at the same cycles, on the same banks: one bank of the narrow run
    # per bank of the full one
    lane_of = dict(zip(_lanes(addr, *narrow).tolist(), _lanes(addr, *full).tolist(), strict=False))
    assert len(set(lane_of.values())) == len(lane_of)
    mapped = log_b.copy()
    mapped[:, 3] = [lane_of[x] if x >= 0 else x for x in log_b[:, 3].tolist()]
    np.testing.assert_array_equal(log_a, mapped, err_msg="command log")
    return narrow[1] is not full[1]


def test_lines_on_part_of_the_banks_run_narrower_with_the_same_results():
    """Writes, arrivals, two ranks, no drain; bank groups {1, 3} (a constant low bit) and banks
    {0, 1, 2}; rows hit and missed."""
    rng = np.random.default_rng(7)
    spec = load_memory("ddr4-3200aa", ranks=2)
    plan = driver._plan(spec)
    d = plan.native_decode
    n = 6000
    fields = {
        1: rng.integers(0, 2, n),  # rank
        2: rng.choice([1, 3], n),  # bank group
        3: rng.integers(0, 3, n),  # bank
        4: rng.integers(0, 40, n),  # row
    }
    addr = _addr(d, fields)
    for write, arrival, drain in (
        (rng.random(n) < 0.3, np.cumsum(rng.integers(0, 3, n)), True),
        (None, None, False),
    ):
        assert assert_narrowed_run_identical(addr, spec, write, arrival, drain)
    # 2 of 4 bank groups and 4 banks of each (all): 8 of 16 banks per rank
    bg = narrow_fields(plan, addr)
    assert bg is not None and bg[1] == 1 and bg[3] == 3
    # every bank group and bank: nothing to narrow
    fields[2], fields[3] = rng.integers(0, 4, n), rng.integers(0, 4, n)
    wide = _addr(d, fields)
    assert narrow_fields(plan, wide) is None
    assert driver._plan(spec).narrowed(wide, True)[0] is plan.native_decode


def test_lines_of_several_transactions_are_not_narrowed():
    spec = load_memory("hbm2-2000")
    assert narrow_fields(driver._plan(spec), np.zeros(8, np.uint64)) is None


def test_summed_replay_equals_the_full_organizations():
    """replay_lines (summed, narrowed) against the timeline path (never narrowed): the same
    statistics, on a bank-group unit's view whose lines lie in one bank group."""
    spec = internal_view(load_memory("ddr4-3200aa"), "bankgroup").with_org(channels=1, ranks=1)
    plan = driver._plan(spec)
    rng = np.random.default_rng(2)
    n = 3000
    fields = {2: np.full(n, 2), 3: rng.integers(0, 3, n), 4: rng.integers(0, 50, n)}
    addr = _addr(plan.native_decode, fields)
    assert narrow_fields(plan, addr) is not None
    summed = replay_lines(addr, spec)
    timed = replay_lines(addr, spec, timeline=True)
    timed.timeline = None
    assert summed == timed
    assert summed == driver.replay(make_requests(addr), spec)


def test_runs_in_one_call_equal_runs_alone(monkeypatch):
    """native.simulate_summaries (a level's streams in one C call) gives each run's
    simulate_summary, narrowed or not, on one and two ranks, runs of other lengths after one
    another (no value left over), none at all; and driver.replay_lines_many gives
    replay_lines' statistics, also where a run is too large for the scratch buffers."""
    rng = np.random.default_rng(4)
    for preset, ranks in (("ddr4-3200aa", 2), ("ddr5-4800an", 1)):
        spec = load_memory(preset, ranks=ranks)
        plan = driver._plan(spec)
        d = plan.native_decode
        streams = []
        for n, groups in ((900, 1), (2500, 2), (40, 4), (1, 1)):
            fields = {
                1: rng.integers(0, ranks, n),
                2: rng.integers(0, groups, n),
                3: rng.integers(0, 4, n),
                4: rng.integers(0, 30, n),
            }
            streams.append(_addr(d, fields))
        runs = [(a, *plan.narrowed(a, True)) for a in streams]
        assert sum(r[2] is not plan.engine_params(True, True) for r in runs) >= 2
        got = native.simulate_summaries(runs, 0, *plan.tables)
        for (a, dec, p), summary in zip(runs, got, strict=True):
            zeros = np.zeros(len(a), np.int64)
            alone = native.simulate_summary(
                a, zeros.view(np.int8), zeros, 0, dec, p, *plan.tables, has_write=False
            )
            assert summary == alone
        want = [replay_lines(a, spec) for a in streams]
        assert driver.replay_lines_many(streams, spec) == want
        monkeypatch.setattr(native, "_OUT_SCRATCH_MAX", 1000)
        assert driver.replay_lines_many(streams, spec) == want
        monkeypatch.undo()
    assert native.simulate_summaries([], 0, *plan.tables) == []
