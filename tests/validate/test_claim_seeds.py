"""No NMP claim (ReCross, TRiM, RecNMP) stands on one draw of its workload: every claim model
whose figure depends on the drawn lookups runs at each seed of ``nmp_points.SEEDS`` and reports
the median (a figure) or whether the ordering holds at every seed, with the range in its detail
(recross-eval's 32 bags move a ratio by up to 15 % and flipped two orderings from seed to seed).
"""

from __future__ import annotations

import statistics

import pytest

from nmp.papers import nmp_points
from nmp.papers import nmp_speed as arch_claims
from nmp.papers.nmp_points import combine_seeds, seed_range
from nmp.plugins import load_claim_model
from nmp.validate.claims import load_claims

PAPERS = ("recross", "trim", "recnmp")
# Claim models whose figure does not depend on the drawn lookups (areas come from the specs).
DRAW_FREE = {"nmp.papers.nmp_costs:area_ratio", "nmp.papers.nmp_costs:area_ratio_exceeds"}


def test_several_seeds() -> None:
    assert len(nmp_points.SEEDS) >= 3 and len(set(nmp_points.SEEDS)) == len(nmp_points.SEEDS)


def test_every_draw_dependent_claim_model_is_seeded() -> None:
    claims = [c for c in load_claims() if c.paper in PAPERS]
    assert claims
    for c in claims:
        fn = load_claim_model(c.model)
        if c.model in DRAW_FREE:
            continue
        assert getattr(fn, "over_seeds", False), (
            f"{c.id}: {c.model} runs one draw (decorate it with nmp_points.over_seeds)"
        )


def test_a_figure_is_the_median_over_the_seeds_computed_one_by_one() -> None:
    kw = {"quick": True, "design": "trim-g", "baseline": "recnmp", "batch": 4}
    seeded = arch_claims.speedup(**kw)
    each = [
        arch_claims.speedup(**kw, setup={"workload.seed": s})["value"] for s in nmp_points.SEEDS
    ]
    assert len(set(each)) > 1  # the draws differ, so a single draw could not pass for the median
    assert seeded["value"] == pytest.approx(statistics.median(each))
    assert f"seeds {seed_range(nmp_points.SEEDS)}" in seeded["detail"]
    assert f"{min(each):.3g}-{max(each):.3g}" in seeded["detail"]


def test_combine_seeds() -> None:
    seeds = (0, 1, 2)
    figures = [
        {"value": 2.0, "detail": "a", "bound": 5.0, "bound_terms": {"b": 5}, "bound_detail": "5"},
        {"value": 1.0, "detail": "b", "bound": 6.0, "bound_terms": {"b": 6}, "bound_detail": "6"},
        {"value": 3.0, "detail": "c", "bound": 4.0, "bound_terms": {"b": 4}, "bound_detail": "4"},
    ]
    out = combine_seeds(figures, seeds)
    assert out["value"] == 2.0 and out["detail"].startswith("a; seeds 0-2")
    assert "range 1-3" in out["detail"]
    # the bound: the largest over the seeds, with its own terms
    assert out["bound"] == 6.0 and out["bound_terms"] == {"b": 6}
    orders = [
        {"value": True, "margin": 0.2, "detail": "x"},
        {"value": False, "margin": -0.1, "detail": "y"},
        {"value": True, "margin": 0.05, "detail": "z"},
    ]
    out = combine_seeds(orders, seeds)
    assert out["value"] is False and out["margin"] == -0.1
    assert "holds at 2 of 3" in out["detail"] and out["detail"].startswith("y")
    assert seed_range((0, 3, 7)) == "0, 3, 7"


def test_a_setup_that_names_a_seed_runs_that_seed_only() -> None:
    one = arch_claims.speedup(
        quick=True, design="trim-g", baseline="recnmp", batch=4, setup={"workload.seed": 1}
    )
    assert "seeds" not in one["detail"]
