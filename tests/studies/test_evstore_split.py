"""papers/evstore-split: EVStore's layer split (L2 and L3 bytes per L1 byte, chosen 1 and 0.25 in
nmp/cache/evstore.py) moved at a fixed total beside LRU and groupScore with the same bytes. The
mechanism: an int8 L2 row takes 24 of an fp32 row's 64 bytes, so bytes moved from L1 to L2 hold
more rows (the per-key hit rate rises with L2's share); L3's 16-byte entries serve few lookups
at the bound 0.5, so bytes moved to L3 lose rows (it falls with L3's share); with neither layer
EVStore is groupScore alone."""

from __future__ import annotations

import pytest

from nmp.cache.serve import CacheConfig, layer_bytes, run_cache
from nmp.cache.study import check_params, configs, split_layers, split_total_mb
from nmp.evaluate.study import load_custom_study
from nmp.units import MIB

# a shorter stream than the study's (40K after 20K) keeps the test to seconds; at it the study's
# 2.25 MiB holds nearly every key the stream sees, so the monotone test uses a quarter of it
# (L1 0.25 MiB at the default split), where capacity still binds
SHORT = {"requests": 8000, "warmup": 4000, "accuracy": False, "backend": ""}


def _study_params() -> dict:
    study = load_custom_study("papers/evstore-split")
    assert study is not None and study.runner == "nmp.cache.study:run_study"
    return study.params


def test_the_study_holds_the_total_and_moves_each_ratio_at_half_and_double() -> None:
    params = _study_params()
    p = check_params(params)
    assert p["layer_splits"][0] == [1.0, 0.25]  # EVStore's default split first
    ratios = {tuple(s) for s in p["layer_splits"]}
    assert {(0.5, 0.25), (2.0, 0.25), (1.0, 0.125), (1.0, 0.5)} <= ratios  # x0.5 and x2
    assert {(0.0, 0.25), (1.0, 0.0), (0.0, 0.0)} <= ratios  # each layer left out
    total = split_total_mb("evstore", p["dtype_l1_mb"])
    assert total == pytest.approx(2.25)
    split = [c for c in configs(params) if c.l2_mb is not None and c.l3_mb is not None]
    assert len(split) == len(p["layer_splits"]) * len(p["request_models"])
    for cfg in split:  # every split has the default split's bytes
        assert sum(layer_bytes(cfg)) == pytest.approx(total * MIB, abs=3)
    baselines = [c for c in configs(params) if c.l2_mb is None and c.l1_mb == pytest.approx(total)]
    assert {c.policy for c in baselines} == {"lru", "groupscore"}


def test_split_layers_is_the_ratio_of_the_total() -> None:
    assert split_layers(2.25, [1.0, 0.25]) == pytest.approx((1.0, 1.0, 0.25))
    assert split_layers(2.25, [0.0, 0.0]) == pytest.approx((2.25, 0.0, 0.0))
    l1, l2, l3 = split_layers(3.0, [2.0, 0.5])
    assert (l2 / l1, l3 / l1, l1 + l2 + l3) == pytest.approx((2.0, 0.5, 3.0))


def _evstore(split: list[float], total: float = 2.25, **kw) -> dict:
    l1, l2, l3 = split_layers(total, split)
    cfg = CacheConfig(policy="evstore", l1_mb=l1, l2_mb=l2, l3_mb=l3, **SHORT, **kw)
    return run_cache(cfg)


def test_hit_rate_rises_with_l2_and_falls_with_l3() -> None:
    total = split_total_mb("evstore", 0.25)
    l2 = [_evstore([a, 0.25], total)["hit_rate"] for a in (0.5, 1.0, 2.0)]
    assert l2[0] < l2[1] < l2[2]
    l3 = [_evstore([1.0, b], total)["hit_rate"] for b in (0.125, 0.25, 0.5)]
    assert l3[0] > l3[1] > l3[2]


def test_evstore_without_l2_and_l3_is_groupscore() -> None:
    alone = _evstore([0.0, 0.0], request_model="users")  # all of 2.25 MiB in L1
    group = run_cache(CacheConfig(policy="groupscore", l1_mb=2.25, request_model="users", **SHORT))
    for key in ("hit_rate", "perfect_hit_rate", "avg_latency_us", "p90_latency_us"):
        assert alone[key] == group[key]
