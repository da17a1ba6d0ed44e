"""The activation-window bound of a near-memory batch (nmp/arch/bounds.py
``act_window_bound``): every level's units in a rank draw on the same chips' activation power
budget, so a rank's ACTs, whichever level issued them, sit max(tRRD_S, tFAW / 4) apart:
``ACTs / ranks x max(tRRD_S, tFAW / 4) x tCK``.

ReCross's DDR5-4800 (models/memory/ddr5-4800-40.toml): tFAW = 32 tCK (PAPERS.md, ReCross's
Ramulator timing), tRRD_S = 8 tCK (README §3), tCK = 0.416 ns, 2 ranks. There tFAW / 4 equals
tRRD_S: four ACTs in a window cost no more than their spacing.
"""

from __future__ import annotations

import pytest

import nmp.arch.bounds as bounds
from nmp.arch import run_design_point

TFAW, TRRD_S, TCK_NS, RANKS = 32, 8, 0.416, 2
SMALL = {"batch": 8}


@pytest.fixture
def acts(monkeypatch):
    """``acts(memory_overrides)`` -> (the point, the ACTs its replays issued)."""
    seen: list[list] = []
    real = bounds.act_window_bound

    def spy(mem, stats_list):
        seen.append(list(stats_list))
        return real(mem, stats_list)

    monkeypatch.setattr(bounds, "act_window_bound", spy)

    def run(memory: dict | None = None):
        seen.clear()
        res = run_design_point(
            "recross", "recross-eval", overrides={"workload": SMALL, "memory": memory or {}}, seed=0
        )
        assert seen  # (a new design's set-up times batches of its own first: the last is this)
        n = float(sum(st.cmd_counts.get("ACT", 0) for st in seen[-1]))
        assert n > 0
        return res, n

    return run


def test_recross_act_window_is_its_acts_at_the_papers_tfaw(acts):
    res, n = acts()
    gap = max(TRRD_S, TFAW / 4)
    assert res.breakdown["bounds_ns"]["act_window"] == pytest.approx(
        n / RANKS * gap * TCK_NS, rel=1e-12
    )


def test_a_wider_tfaw_spaces_the_acts_and_a_design_bound_by_it_slows(acts):
    base, _ = acts()
    # tFAW = 128 tCK: an ACT every 32 tCK per rank, four times tRRD_S
    res, n = acts({"timing.nFAW": 128})
    bound = res.breakdown["bounds_ns"]["act_window"]
    assert bound == pytest.approx(n / RANKS * (128 / 4) * TCK_NS, rel=1e-12)
    assert res.breakdown["bottleneck"] == "act_window"
    assert res.latency_ns == pytest.approx(bound + res.breakdown["tail_ns"], rel=1e-12)
    assert res.latency_ns > base.latency_ns
