"""Pareto sets, speedups and bottlenecks on hand-made examples."""

from __future__ import annotations

import numpy as np
import pytest

from nmp.evaluate.analysis import analyze, dominant_bottleneck, pareto_mask


def test_pareto_hand_example() -> None:
    # throughput (max), energy (min), area (min)
    values = np.array(
        [
            [10.0, 5.0, 1.0],  # 0: front (smallest area)
            [20.0, 5.0, 2.0],  # 1: front (fastest at energy 5)
            [20.0, 6.0, 2.0],  # 2: dominated by 1 (worse energy, rest equal)
            [15.0, 4.0, 3.0],  # 3: front (least energy)
            [9.0, 5.0, 1.0],  # 4: dominated by 0
            [20.0, 5.0, 2.0],  # 5: equal to 1: neither dominates, both stay
            [30.0, np.nan, 9.0],  # 6: NaN energy is worst, but fastest: stays
        ]
    )
    mask = pareto_mask(values, ["max", "min", "min"])
    assert mask.tolist() == [True, True, False, True, False, True, True]


def test_pareto_matches_brute_force() -> None:
    rng = np.random.default_rng(0)
    v = rng.integers(0, 6, size=(300, 3)).astype(float)
    senses = ["max", "min", "max"]
    g = v * np.array([1, -1, 1])
    brute = [
        not any((g[j] >= g[i]).all() and (g[j] > g[i]).any() for j in range(len(g)))
        for i in range(len(g))
    ]
    assert pareto_mask(v, senses).tolist() == brute


def _rec(i: int, design: str, workload: str, lps: float, e: float, area: float, **axes) -> dict:
    return {
        "key": f"k{i}",
        "index": i,
        "design": design,
        "arch": design,
        "workload": workload,
        "memory": None,
        "axes": axes,
        "design_axes": {},
        "result": {
            "latency_ns": 1.0,
            "lookups_per_s": lps,
            "energy_pj_per_lookup": e,
            "area_mm2": area,
            "breakdown": {"time_ns": {"dram": 3.0, "units": 1.0}},
        },
    }


def test_speedup_and_saving_use_the_baseline_of_the_same_context() -> None:
    records = [
        _rec(0, "host", "w", 100.0, 50.0, 0.0, **{"workload.batch": 1}),
        _rec(1, "nmp", "w", 400.0, 10.0, 2.0, **{"workload.batch": 1}),
        _rec(2, "host", "w", 200.0, 40.0, 0.0, **{"workload.batch": 8}),
        _rec(3, "nmp", "w", 300.0, 20.0, 2.0, **{"workload.batch": 8}),
    ]
    out = analyze(records, baseline="host", objectives={"lookups_per_s": "max"})
    rows = {r["key"]: r for r in out["rows"]}
    assert rows["k1"]["speedup"] == pytest.approx(4.0)
    assert rows["k1"]["energy_saving"] == pytest.approx(5.0)
    assert rows["k3"]["speedup"] == pytest.approx(1.5)
    assert rows["k3"]["energy_saving"] == pytest.approx(2.0)
    # batch sizes are separate groups, each with its own best point
    assert sorted(g["group"] for g in out["groups"]) == ["w [batch=1]", "w [batch=8]"]
    assert {g["group"]: g["best"]["lookups_per_s"] for g in out["groups"]} == {
        "w [batch=1]": "k1",
        "w [batch=8]": "k3",
    }


def test_dominant_bottleneck() -> None:
    assert dominant_bottleneck({"bottleneck": "C/A bandwidth"}) == "C/A bandwidth"
    assert dominant_bottleneck({"time_ns": {"dram": 3.0, "units": 1.0}}) == "dram (75%)"
    assert dominant_bottleneck({"dram_ns": 1.0, "reduce_ns": 2.0}) == "reduce (67%)"
    assert dominant_bottleneck({"hit_rate": 0.5}) == "?"
