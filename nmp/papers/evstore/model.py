"""Model functions of EVStore's published claims (``nmp/papers/evstore/claims.toml``).

Every function runs the cache model (:func:`nmp.cache.serve.run_cache`) on criteo-kaggle and
returns ``{"value": ..., "detail": ...}``. Runs are cached per process so that claims sharing a
configuration share one simulation. ``quick=True`` measures 10K requests after 5K warm-up
requests (the full setting: 40K after 20K) and skips the real backend; said in the detail.

Setup keys (``setup``; None = the kit's defaults, :data:`SETUP_DEFAULTS`): ``requests.model``
("independent": every table's key drawn on its own, the kit's default; "users": users whose
histories draw related rows across tables, :mod:`nmp.cache.users`, as the paper's requests come
from real users) and the users generator's parameters ``requests.users``,
``requests.user_history``, ``requests.user_locality``, ``requests.user_alpha``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import Any

from nmp.cache.request_models import REQUEST_MODELS
from nmp.cache.serve import CacheConfig, run_cache
from nmp.claim_setup import resolve_setup
from nmp.plugins import claim_model

_SIZES_MB = (0.25, 1.0, 4.0)
_D = CacheConfig()
SETUP_DEFAULTS: dict[str, Any] = {
    "requests.model": _D.request_model,
    "requests.users": _D.users,
    "requests.user_history": _D.user_history,
    "requests.user_locality": _D.user_locality,
    "requests.user_alpha": _D.user_alpha,
}


def _requests(setup: Mapping[str, Any] | None, fn: str) -> tuple:
    v = resolve_setup(
        setup,
        SETUP_DEFAULTS,
        model=f"{__name__}:{fn}",
        choices={"requests.model": REQUEST_MODELS.names()},
    )
    return tuple(v.items())


@functools.cache
def _run(
    policy: str, l1_mb: float, quick: bool, req: tuple, accuracy: bool = False, **layers
) -> dict:
    n = 10_000 if quick else 40_000
    r = dict(req)
    cfg = CacheConfig(
        policy=policy,
        l1_mb=l1_mb,
        requests=n,
        warmup=n // 2,
        backend="",
        accuracy=accuracy,
        request_model=r["requests.model"],
        users=r["requests.users"],
        user_history=r["requests.user_history"],
        user_locality=r["requests.user_locality"],
        user_alpha=r["requests.user_alpha"],
        **layers,
    )
    return run_cache(cfg)


def _setup(quick: bool, req: tuple) -> str:
    n = 10_000 if quick else 40_000
    r = dict(req)
    model = REQUEST_MODELS.get(r["requests.model"])
    how = model.description
    if model.has_users:
        how = (
            f"{model.name} generator ({r['requests.users']} users, history "
            f"{r['requests.user_history']}, locality {r['requests.user_locality']:g})"
        )
    return (
        f"criteo-kaggle, {how}, {n} requests after {n // 2} warm-up "
        f"({'quick' if quick else 'full'})"
    )


@claim_model
def perfect_band(
    *,
    quick: bool,
    per_key=(0.6, 0.9),
    perfect=(0.01, 0.5),
    setup: Mapping[str, Any] | None = None,
) -> dict:
    """Where a configuration's per-key hit rate lies in ``per_key``, does its perfect hit rate
    lie in ``perfect``? Over every policy at L1 0.25, 1 and 4 MiB."""
    req = _requests(setup, "perfect_band")
    seen, ok = [], True
    for policy in ("lru", "lfu", "groupscore", "evstore"):
        for mb in _SIZES_MB:
            r = _run(policy, mb, quick, req)
            if per_key[0] <= r["hit_rate"] <= per_key[1]:
                inside = perfect[0] <= r["perfect_hit_rate"] <= perfect[1]
                ok &= inside
                seen.append(f"{policy}@{mb:g}MiB {r['hit_rate']:.2f}->{r['perfect_hit_rate']:.3f}")
    return {
        "value": bool(seen) and ok,
        "detail": f"{_setup(quick, req)}; per-key -> perfect: {', '.join(seen) or 'none in range'}",
    }


@claim_model
def perfect_over(
    *,
    quick: bool,
    policy: str,
    baseline: str,
    l1_mb: float,
    setup: Mapping[str, Any] | None = None,
) -> dict:
    """Is ``policy``'s perfect hit rate above ``baseline``'s at the same L1 size? ``margin`` is
    the relative lead (policy / baseline - 1), or 0 where the difference is within its noise:
    two perfect rates of a few hundredths of a percent differ by a handful of requests, which
    is not a lead (95 % band of a difference of two proportions of ``requests`` each)."""
    req = _requests(setup, "perfect_over")
    a, b = _run(policy, l1_mb, quick, req), _run(baseline, l1_mb, quick, req)
    pa, pb, n = a["perfect_hit_rate"], b["perfect_hit_rate"], a["requests"]
    noise = 1.96 * math.sqrt((pa * (1 - pa) + pb * (1 - pb)) / max(n, 1))
    lead = pa / pb - 1.0 if pb > 0 else (math.inf if pa > 0 else 0.0)
    return {
        "value": pa > pb,
        "margin": lead if abs(pa - pb) > noise else min(lead, 0.0),
        "detail": f"{_setup(quick, req)}; L1 {l1_mb:g} MiB: {policy} {pa:.4f}, {baseline} "
        f"{pb:.4f} (difference {pa - pb:+.4f}, noise ±{noise:.4f} over {n} requests; per-key "
        f"{a['hit_rate']:.3f} vs {b['hit_rate']:.3f}; if keys hit independently "
        f"{a['perfect_if_independent']:.4f} vs {b['perfect_if_independent']:.4f})",
    }


@claim_model
def latency_below(
    *,
    quick: bool,
    metric: str,
    l1_mb: float,
    baseline: str,
    setup: Mapping[str, Any] | None = None,
) -> dict:
    """Is EVStore's ``metric`` latency below ``baseline``'s given the same total memory (the
    baseline's L1 gets all of EVStore's L1 + L2 + L3 bytes)? ``margin``: baseline / EVStore - 1.

    A request pays one SSD read when any of its lookups misses, so the p-th percentile latency
    can drop below an SSD read only where more than p % of the requests hit perfectly: the
    detail gives both policies' perfect hit rates beside the latencies."""
    req = _requests(setup, "latency_below")
    ev = _run("evstore", l1_mb, quick, req)
    base = _run(baseline, ev["memory_bytes"] / 2**20, quick, req)
    return {
        "value": ev[metric] < base[metric],
        "margin": base[metric] / ev[metric] - 1.0,
        "detail": f"{_setup(quick, req)}; {ev['memory_bytes'] / 2**20:g} MiB each: evstore "
        f"{ev[metric]:.2f} us, {baseline} {base[metric]:.2f} us ({metric}); perfect hit rate "
        f"{ev['perfect_hit_rate']:.3f} vs {base['perfect_hit_rate']:.3f}, SSD read "
        f"{ev['tier_ssd_us']:g} us",
    }


@claim_model
def auc_loss_below(
    *,
    quick: bool,
    l1_mb: float,
    l2_dtype: str,
    max_loss: float,
    setup: Mapping[str, Any] | None = None,
) -> dict:
    """Is EVStore's AUC loss (exact - served) below ``max_loss``? (The accuracy experiment
    serves the trainer's own stream: the request setup keys change the hit rates only.)"""
    req = _requests(setup, "auc_loss_below")
    r = _run("evstore", l1_mb, quick, req, accuracy=True, l2_dtype=l2_dtype)
    return {
        "value": -r["auc_change"] < max_loss,
        "detail": f"{_setup(quick, req)}; L1 {l1_mb:g} MiB, L2 {l2_dtype}: AUC change "
        f"{r['auc_change']:+.5f} (95 % CI {r['auc_change_ci_lo']:+.5f}.."
        f"{r['auc_change_ci_hi']:+.5f}), {100 * r['acc_l2_share']:.1f} % of lookups from L2, "
        f"{100 * r['acc_l3_share']:.1f} % from L3",
    }


@claim_model
def memory_reduction(
    *, quick: bool, l1_mb: float, at_least: float, setup: Mapping[str, Any] | None = None
) -> dict:
    """Is EVStore's memory reduction against the whole table in DRAM at least ``at_least``?"""
    req = _requests(setup, "memory_reduction")
    r = _run("evstore", l1_mb, quick, req)
    return {
        "value": r["memory_reduction"] >= at_least,
        "detail": f"{_setup(quick, req)}; reduction {r['memory_reduction']:.4f}: "
        f"{r['memory_bytes'] / 2**20:g} MiB of "
        f"{r['table_bytes'] / 2**30:.2f} GiB at per-key hit rate {r['hit_rate']:.3f}, perfect "
        f"{r['perfect_hit_rate']:.4f}",
    }
