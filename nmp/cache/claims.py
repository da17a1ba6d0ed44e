"""Model functions of EVStore's published claims (``nmp/validate/claims/evstore.toml``).

Every function runs the cache model (:func:`nmp.cache.serve.run_cache`) on criteo-kaggle and
returns ``{"value": ..., "detail": ...}``. Runs are cached per process so that claims sharing a
configuration share one simulation. ``quick=True`` measures 10K requests after 5K warm-up
requests (the full setting: 40K after 20K) and skips the real backend; said in the detail.
"""

from __future__ import annotations

import functools

from nmp.cache.serve import CacheConfig, run_cache
from nmp.plugins import claim_model

_SIZES_MB = (0.25, 1.0, 4.0)


@functools.cache
def _run(policy: str, l1_mb: float, quick: bool, accuracy: bool = False, **layers) -> dict:
    n = 10_000 if quick else 40_000
    cfg = CacheConfig(
        policy=policy,
        l1_mb=l1_mb,
        requests=n,
        warmup=n // 2,
        backend="",
        accuracy=accuracy,
        **layers,
    )
    return run_cache(cfg)


def _setup(quick: bool) -> str:
    n = 10_000 if quick else 40_000
    return f"criteo-kaggle, {n} requests after {n // 2} warm-up ({'quick' if quick else 'full'})"


@claim_model
def perfect_band(*, quick: bool, per_key=(0.6, 0.9), perfect=(0.01, 0.5)) -> dict:
    """Where a configuration's per-key hit rate lies in ``per_key``, does its perfect hit rate
    lie in ``perfect``? Over every policy at L1 0.25, 1 and 4 MiB."""
    seen, ok = [], True
    for policy in ("lru", "lfu", "groupscore", "evstore"):
        for mb in _SIZES_MB:
            r = _run(policy, mb, quick)
            if per_key[0] <= r["hit_rate"] <= per_key[1]:
                inside = perfect[0] <= r["perfect_hit_rate"] <= perfect[1]
                ok &= inside
                seen.append(f"{policy}@{mb:g}MiB {r['hit_rate']:.2f}->{r['perfect_hit_rate']:.3f}")
    return {
        "value": bool(seen) and ok,
        "detail": f"{_setup(quick)}; per-key -> perfect: {', '.join(seen) or 'none in range'}",
    }


@claim_model
def perfect_over(*, quick: bool, policy: str, baseline: str, l1_mb: float) -> dict:
    """Is ``policy``'s perfect hit rate above ``baseline``'s at the same L1 size?"""
    a, b = _run(policy, l1_mb, quick), _run(baseline, l1_mb, quick)
    return {
        "value": a["perfect_hit_rate"] > b["perfect_hit_rate"],
        "detail": f"{_setup(quick)}; L1 {l1_mb:g} MiB: {policy} {a['perfect_hit_rate']:.4f}, "
        f"{baseline} {b['perfect_hit_rate']:.4f} (per-key {a['hit_rate']:.3f} vs "
        f"{b['hit_rate']:.3f})",
    }


@claim_model
def latency_below(*, quick: bool, metric: str, l1_mb: float, baseline: str) -> dict:
    """Is EVStore's ``metric`` latency below ``baseline``'s given the same total memory (the
    baseline's L1 gets all of EVStore's L1 + L2 + L3 bytes)?"""
    ev = _run("evstore", l1_mb, quick)
    base = _run(baseline, ev["memory_bytes"] / 2**20, quick)
    return {
        "value": ev[metric] < base[metric],
        "detail": f"{_setup(quick)}; {ev['memory_bytes'] / 2**20:g} MiB each: evstore "
        f"{ev[metric]:.2f} us, {baseline} {base[metric]:.2f} us ({metric})",
    }


@claim_model
def auc_loss_below(*, quick: bool, l1_mb: float, l2_dtype: str, max_loss: float) -> dict:
    """Is EVStore's AUC loss (exact - served) below ``max_loss``?"""
    r = _run("evstore", l1_mb, quick, accuracy=True, l2_dtype=l2_dtype)
    return {
        "value": -r["auc_change"] < max_loss,
        "detail": f"{_setup(quick)}; L1 {l1_mb:g} MiB, L2 {l2_dtype}: AUC change "
        f"{r['auc_change']:+.5f} (95 % CI {r['auc_change_ci_lo']:+.5f}.."
        f"{r['auc_change_ci_hi']:+.5f}), {100 * r['acc_l2_share']:.1f} % of lookups from L2, "
        f"{100 * r['acc_l3_share']:.1f} % from L3",
    }


@claim_model
def memory_reduction(*, quick: bool, l1_mb: float, at_least: float) -> dict:
    """Is EVStore's memory reduction against the whole table in DRAM at least ``at_least``?"""
    r = _run("evstore", l1_mb, quick)
    return {
        "value": r["memory_reduction"] >= at_least,
        "detail": f"{_setup(quick)}; reduction {r['memory_reduction']:.4f}: "
        f"{r['memory_bytes'] / 2**20:g} MiB of "
        f"{r['table_bytes'] / 2**30:.2f} GiB at per-key hit rate {r['hit_rate']:.3f}, perfect "
        f"{r['perfect_hit_rate']:.4f}",
    }
