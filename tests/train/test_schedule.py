"""The strategies' schedules (nmp.train.schedule): one object each, read by the runtime and by
the scale model."""

from __future__ import annotations

import pytest

from nmp.train.schedule import COMMON, Phase, Schedule, phase_costs_ns
from nmp.train.strategies import REGISTRY


def test_the_critical_path_is_the_longest_chain_and_background_costs_nothing():
    s = Schedule(
        (
            Phase("a", "worker", "compute"),
            Phase("b", "server", "compute", after=("a",)),
            Phase("c", "worker", "compute", after=("a",)),  # beside b
            Phase("d", "server", "compute", after=("b", "c")),
            Phase("e", "server", "compute", after=("d",), background=True),
        )
    )
    ns = {"a": 1.0, "b": 5.0, "c": 2.0, "d": 3.0, "e": 100.0}
    assert s.critical_path_ns(ns) == pytest.approx(1 + 5 + 3)
    # declared in series, the same phase would count
    fg = Schedule((*s.step[:-1], Phase("e", "server", "compute", after=("d",))))
    assert fg.critical_path_ns(ns) == pytest.approx(109.0)


def test_every_strategy_extends_the_common_step_in_its_order():
    for name, cls in REGISTRY.items():
        names = cls.schedule.names()
        common = [n for n in names if COMMON.has(n)]
        assert tuple(common) == COMMON.names(), name


def test_ecrecs_parity_phases_are_on_the_critical_path():
    """The artifact's SparsePushWithParity completes once the parity servers applied the
    update: the delta before the vote, the XOR after it, both in series."""
    s = REGISTRY.get("ecrec").schedule
    assert s.has("parity_delta") and s.has("parity_xor")
    assert set(s.foreground()) >= {"parity_delta", "parity_xor"}
    ns = {n: 1.0 for n in s.names()}
    assert s.critical_path_ns(ns) == pytest.approx(COMMON.critical_path_ns(ns) + 2.0)
    assert not REGISTRY.get("checkpoint").schedule.has("parity_delta")


def test_a_sends_time_is_its_bytes_over_the_slower_end_plus_its_messages():
    got = phase_costs_ns(
        step_bytes={"lookup": 1000.0, "parity_delta": 400.0},
        server_gbps=10.0,
        worker_gbps=1.0,
        servers=4,
        workers=2,
        message_ns=5.0,
        compute_ns={"gather": 7.0},
    )
    assert got["lookup"] == pytest.approx(max(1000 / 4 / 10, 1000 / 2 / 1) + 2 * 5)
    assert got["parity_delta"] == pytest.approx(400 / 4 / 10 + 3 * 5)  # servers' NICs only
    assert got["gather"] == 7.0


def test_the_closing_note_says_which_schedule_and_whether_the_order_holds(monkeypatch):
    from dataclasses import replace

    from nmp.train.extrapolate import expected
    from nmp.train.extrapolate_report import closing_note
    from nmp.train.setup import load_setup

    dep = load_setup("ecrec")[0]
    note = " ".join(closing_note(expected(dep), dep))
    assert "ecrec's schedule adds parity_delta, parity_xor on the critical path" in note
    assert "(NOT below)" in note
    # which schedule, on what authority, and the paper's conclusion's verdict with it
    assert "serial" in note and "SparsePushWithParity" in note and "does NOT hold" in note
    cls = REGISTRY.get("ecrec")
    behind = Schedule(
        tuple(p if COMMON.has(p.name) else replace(p, background=True) for p in cls.schedule.step)
    )
    monkeypatch.setattr(cls, "schedule", behind)
    note = " ".join(closing_note(expected(dep), dep))
    assert "in the background" in note and "(NOT below)" not in note
    assert "HOLDS" in note
