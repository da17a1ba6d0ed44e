"""Model side of RecShard's published claims (``claims.toml`` beside this file).

Every value comes from :func:`nmp.shard.run.run_shard` on Criteo Terabyte in the capacity-
constrained setups (HBM for embeddings smaller than the tables). ``quick`` runs 4 GPUs with 1 GiB
each (4 GiB for 11.7 GiB of tables); the full run 4, 8 and 16 GPUs with 0.25 and 1 GiB each.
Ratios over the three greedy baselines are averaged geometrically (the paper says "on average"
without naming the mean).

Setup keys (``setup``; None = the kit's defaults, see :data:`SETUP_DEFAULTS`):

* ``shard.profile_policy``: what the placements are timed on (:data:`nmp.shard.run.
  PROFILE_POLICIES`): ``"held-out"`` batches the profile did not see (the kit's default: the
  statistics of a sample) or the ``"served"`` batches themselves (RecShard's setting: it
  derives its statistics from the training data it then trains on);
* ``shard.profile_batches``: batches of 2048 samples in the profile.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import Any

from nmp.claim_setup import resolve_setup
from nmp.errors import NmpError
from nmp.plugins import claim_model
from nmp.shard.run import HELD_OUT, PROFILE_POLICIES

WORKLOAD = "criteo-terabyte"
TOPOLOGY = "a100x8-pcie4"
BASELINES = ("size", "lookup", "size-lookup")
# The workload's seeds each point runs at (profile and timed batches drawn anew). Held out, the
# MILP gives the rows its profile never saw no weight, so it is indifferent to where they go and
# picks one of many placements its statistics rank equal: RecShard's step over the best greedy
# sharder's moved 0.89-1.52x over seeds 0-5 at 4 GPUs x 1 GiB and 1.61-3.60x at 16 (2026-12-01).
# Every value is taken over these seeds (ratios averaged geometrically; "fastest" must hold at
# each), so no one draw stands for the sharder. Five: the first five, chosen before reading them.
SEEDS = (0, 1, 2, 3, 4)
SETUP_DEFAULTS: dict[str, Any] = {"shard.profile_policy": HELD_OUT, "shard.profile_batches": 8}
_CHOICES = {"shard.profile_policy": PROFILE_POLICIES}


def _values(setup: Mapping[str, Any] | None, fn: str) -> tuple[str, int]:
    v = resolve_setup(setup, SETUP_DEFAULTS, model=f"{__name__}:{fn}", choices=_CHOICES)
    if v["shard.profile_batches"] < 1:
        raise NmpError(f"{__name__}:{fn}: setup key 'shard.profile_batches' must be >= 1")
    return v["shard.profile_policy"], v["shard.profile_batches"]


def points(quick: bool) -> list[tuple[int, float]]:
    """The (GPUs, HBM GiB per GPU) points the model runs (and the bounds are taken at)."""
    return [(4, 1.0)] if quick else [(g, h) for g in (4, 8, 16) for h in (0.25, 1.0)]


@functools.cache
def _rows(quick: bool, policy: str, profile_batches: int) -> tuple:
    # numpy: loaded on use (start-up time)
    from nmp.shard.run import run_shard

    out = []
    for gpus, hbm in points(quick):
        for seed in SEEDS:
            point = {}
            for name in ("recshard", *BASELINES):
                point[name] = run_shard(
                    workload=WORKLOAD,
                    sharder=name,
                    topology=TOPOLOGY,
                    topology_overrides={"gpus": gpus, "hbm_gib": hbm},
                    profile_batches=profile_batches,
                    profile_policy=policy,
                    seed=seed,
                )
            out.append(((gpus, hbm), point))
    return tuple(out)


@functools.cache
def _lower_bounds(quick: bool, policy: str) -> tuple:
    # numpy: loaded on use (start-up time)
    from nmp.shard.run import step_lower_bound

    return tuple(
        step_lower_bound(
            workload=WORKLOAD,
            topology=TOPOLOGY,
            topology_overrides={"gpus": g, "hbm_gib": h},
            profile_policy=policy,
        )
        for g, h in points(quick)
    )


def _detail(quick: bool, policy: str, profile_batches: int) -> str:
    setups = ", ".join(f"{g}x{h:g} GiB" for g, h in points(quick))
    timed = "held-out batches" if policy == HELD_OUT else "the profiled (served) batches"
    quick_note = " (quick)" if quick else ""
    return (
        f"{WORKLOAD} on {TOPOLOGY}, GPUs x HBM per GPU: {setups}, {profile_batches}-batch "
        f"profile, timed on {timed}, seeds {SEEDS[0]}-{SEEDS[-1]}{quick_note}"
    )


def _spread(rows: tuple, values: list[float]) -> str:
    """Per point, the range of ``values`` (one per row and baseline, in row order) over its
    seeds and baselines."""
    per: dict[tuple[int, float], list[float]] = {}
    for ((g, h), _), i in zip(rows, range(0, len(values), len(BASELINES)), strict=True):
        per.setdefault((g, h), []).extend(values[i : i + len(BASELINES)])
    return ", ".join(
        f"{g}x{h:g}: {min(v):.3g}-{max(v):.3g}" if len(v) > 1 else f"{g}x{h:g}: {v[0]:.3g}"
        for (g, h), v in per.items()
    )


def _geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def _ratios(rows: tuple, metric: str) -> list[float]:
    out = []
    for _, point in rows:
        rec = point["recshard"][metric]
        out += [point[b][metric] / rec if rec > 0 else math.inf for b in BASELINES]
    return out


def _ratio(quick: bool, setup, metric: str, fn: str) -> dict:
    policy, prof = _values(setup, fn)
    rows = _rows(quick, policy, prof)
    ratios = _ratios(rows, metric)
    finite = [r for r in ratios if math.isfinite(r) and r > 0]
    return {
        "value": _geomean(finite) if finite else math.inf,
        "detail": f"{_detail(quick, policy, prof)}; {metric} baseline/recshard per point, over "
        f"its seeds and baselines: " + _spread(rows, ratios),
        "ratios": ratios,
        "policy": policy,
        "profile_batches": prof,
    }


@claim_model
def throughput_gain(*, quick: bool, setup: Mapping[str, Any] | None = None) -> dict:
    """Embedding throughput of RecShard over the baselines: baseline step / RecShard step.

    ``bound``: the same mean with RecShard's step replaced by the model's lower bound on any
    placement's step (:func:`nmp.shard.bound.placement_lower_bound`: each table served by its
    faster path, HBM or the link, the tables spread evenly over the GPUs): no sharder can gain
    more here."""
    out = _ratio(quick, setup, "step_ms", "throughput_gain")
    lbs = dict(zip(points(quick), _lower_bounds(quick, out["policy"]), strict=True))
    bound_ratios, parts = [], []
    rows = _rows(quick, out["policy"], out["profile_batches"])
    for i, ((g, h), point) in enumerate(rows):
        lb = lbs[(g, h)]
        lb_ms = lb["lb_ns"] / 1e6
        bound_ratios += [point[b]["step_ms"] / lb_ms for b in BASELINES]
        if i % len(SEEDS):
            continue  # (the text gives each point's first seed; the mean takes every seed)
        steps = "/".join(f"{point[b]['step_ms']:.4f}" for b in BASELINES)
        parts.append(
            f"{g}x{h:g}: baselines {steps} ms over lower bound max({lb['max_table_ns'] / 1e6:.4f}, "
            f"{lb['sum_table_ns'] / 1e6:.4f}/{g}) = {lb_ms:.4f} ms"
        )
    bound = _geomean(bound_ratios)
    return {
        "value": out["value"],
        "detail": out["detail"],
        "bound": bound,
        "bound_detail": f"geomean of baseline step / the lower bound of any placement's step "
        f"(each table by its faster path, HBM or link; tables spread evenly) = {bound:.3g}x: "
        + "; ".join(parts),
    }


@claim_model
def load_balance_gain(*, quick: bool, setup: Mapping[str, Any] | None = None) -> dict:
    """Baselines' load-balance ratio (max/mean GPU time) over RecShard's.

    ``bound``: RecShard's ratio is at least 1 (max >= mean), so the gain is at most the
    baselines' own ratio (geomean), itself at most the GPU count."""
    out = _ratio(quick, setup, "load_balance", "load_balance_gain")
    rows = _rows(quick, out["policy"], out["profile_batches"])
    base = [point[b]["load_balance"] for _, point in rows for b in BASELINES]
    bound = _geomean(base)
    return {
        "value": out["value"],
        "detail": out["detail"],
        "bound": bound,
        "bound_detail": "RecShard's max/mean is at least 1, so the gain is at most the "
        "baselines' own max/mean (per point, over its seeds): "
        + _spread(rows, base)
        + f", geomean {bound:.3g}x (at most the GPU count)",
    }


@claim_model
def slow_access_reduction_over(
    *, quick: bool, at_least: float, setup: Mapping[str, Any] | None = None
) -> dict:
    """Whether the baselines' host-tier accesses per batch are over ``at_least`` times
    RecShard's at every point and against every baseline (RecShard at 0 counts as over)."""
    policy, prof = _values(setup, "slow_access_reduction_over")
    ratios = []
    rows = _rows(quick, policy, prof)
    for _, point in rows:
        rec = point["recshard"]["slow_accesses_per_batch"]
        for b in BASELINES:
            base = point[b]["slow_accesses_per_batch"]
            ratios.append(math.inf if rec == 0 and base > 0 else base / rec if rec else 1.0)
    finite = [r for r in ratios if math.isfinite(r)]
    return {
        "value": all(r > at_least for r in ratios),
        # by how much the smallest reduction clears the claimed one (RecShard at 0 everywhere:
        # no finite ratio, judged on the bool)
        "margin": min(finite) / at_least - 1.0 if finite else None,
        "detail": f"{_detail(quick, policy, prof)}; host-tier accesses baseline/recshard per "
        "point, over its seeds and baselines: "
        + (_spread(rows, ratios) if finite else "inf (recshard 0 at every point)"),
    }


@claim_model
def fastest_everywhere(*, quick: bool, setup: Mapping[str, Any] | None = None) -> dict:
    """Whether RecShard's step is at most every baseline's at every capacity-bound point; the
    detail gives the smallest margin (best baseline / RecShard - 1)."""
    policy, prof = _values(setup, "fastest_everywhere")
    worst = []
    for (g, h), point in _rows(quick, policy, prof):
        best_base = min(point[b]["step_ms"] for b in BASELINES)
        worst.append((g, h, point["recshard"]["step_ms"], best_base))
    holds = all(rec <= base for _, _, rec, base in worst)
    margin = min(base / rec - 1.0 for _, _, rec, base in worst)
    per: dict[tuple[int, float], list[float]] = {}
    for g, h, rec, base in worst:
        per.setdefault((g, h), []).append(base / rec - 1.0)
    return {
        "value": holds,
        "margin": margin,
        "detail": f"{_detail(quick, policy, prof)}; best baseline step / recshard's - 1 per "
        "point (seeds where recshard is slower): "
        + ", ".join(
            f"{g}x{h:g}: {100 * min(m):+.1f} to {100 * max(m):+.1f} % "
            f"({sum(x < 0 for x in m)} of {len(m)})"
            for (g, h), m in per.items()
        )
        + f"; smallest margin {100 * margin:+.1f} %",
    }
