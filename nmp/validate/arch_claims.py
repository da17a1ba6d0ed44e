"""Model functions for the near-memory papers' published claims (ReCross, TRiM, RecNMP).

Each function runs design points through :func:`nmp.evaluate.point.run_point` on the paper's
own setup and returns the model's value for one claim of ``nmp/validate/claims/{recross,trim,
recnmp}.toml`` (a float for a value claim, a bool for an ordering), with a detail line naming
the setup it ran. Nothing here knows a published number: the claims file holds those, and the
verdict is computed elsewhere (:mod:`nmp.validate.claims`).

Setups (the memory every design of a comparison is pinned to, as the sweeps in
``workloads/sweeps/papers/`` do):

- ``recross``: DDR5-4800 40-40-40, one channel, one dual-rank DIMM (ReCross ISCA'23, §3).
- ``trim``: DDR5-4800 AN bin, one channel, 2 ranks (the TRiM presets' memory; TRiM's channel and
  rank counts are not in the sources found).
- ``recnmp``: DDR4-2400, 4 channels, 2 ranks each (RecNMP ISCA'20's characterization).

Points are cached (:func:`functools.cache`), so the claims of one paper share their runs: the
quick claims together run 6 designs + 3 ablation steps on ReCross's setup and a handful on the
other two.
"""

from __future__ import annotations

import functools
import math
from typing import Any

from nmp.errors import NmpError
from nmp.evaluate.point import run_point
from nmp.plugins import claim_model
from nmp.results import PointResult

WORKLOAD = "recross-eval"  # Criteo Kaggle tables, vector length 64, batch 32, pooling 80

SETUPS: dict[str, dict[str, Any]] = {
    "recross": {
        "arch.memory.preset": "ddr5-4800-40",
        "arch.memory.channels": 1,
        "arch.memory.ranks": 2,
    },
    "trim": {
        "arch.memory.preset": "ddr5-4800an",
        "arch.memory.channels": 1,
        "arch.memory.ranks": 2,
    },
    "recnmp": {
        "arch.memory.preset": "ddr4-2400",
        "arch.memory.channels": 4,
        "arch.memory.ranks": 2,
    },
}

# The ReCross ablation (Fig. 12): the cross-level hardware with its mechanisms added one at a
# time. Design names as in workloads/sweeps/papers/recross-ablation.toml.
_OFF = {
    "sap": ("arch.subarray_parallelism", False),
    "bwp": ("arch.bandwidth_aware_partition", False),
    "las": ("arch.locality_aware_scheduling", False),
}
ABLATION: dict[str, tuple[str, ...]] = {  # design -> mechanisms switched off
    "recross-base": ("sap", "bwp", "las"),
    "recross+sap": ("bwp", "las"),
    "recross+sap+bwp": ("las",),
    "recross": (),
}

# Axes the "at every ..." claims sweep: the claim's argument name -> override path.
AXES = {
    "batch": "workload.batch",
    "dim": "workload.dim",
    "channels": "arch.memory.channels",
}


def _design(name: str) -> tuple[str, dict[str, Any]]:
    """(architecture preset, overrides) of a design name: a preset or an ablation step."""
    if name in ABLATION:
        return "recross", dict(_OFF[m] for m in ABLATION[name])
    return name, {}


@functools.cache
def _run(arch: str, items: tuple[tuple[str, Any], ...]) -> PointResult:
    return run_point(arch, WORKLOAD, overrides=dict(items))


def point(
    design: str, *, setup: str = "recross", set: dict[str, Any] | None = None, **axes: Any
) -> PointResult:
    """One design point of ``design`` on ``setup``'s memory, with axis values (``batch=8``,
    ``dim=16``, ``channels=4``) and extra overrides ``set``."""
    if setup not in SETUPS:
        raise NmpError(f"unknown setup '{setup}' (known: {', '.join(SETUPS)})")
    arch, overrides = _design(design)
    overrides = {**SETUPS[setup], **overrides, **(set or {})}
    for key, value in axes.items():
        if key not in AXES:
            raise NmpError(f"unknown axis '{key}' (known: {', '.join(AXES)})")
        overrides[AXES[key]] = value
    return _run(arch, tuple(sorted(overrides.items())))


def _where(setup: str, axes: dict[str, Any]) -> str:
    mem = SETUPS[setup]
    inner = f" ({_label(axes)})" if axes else ""
    return (
        f"{WORKLOAD}{inner} on {mem['arch.memory.preset']}, "
        f"{mem['arch.memory.channels']} ch x {mem['arch.memory.ranks']} ranks"
    )


def _steps(axis: str, values: list[Any]) -> list[dict[str, Any]]:
    """The axis settings of a curve: ``values`` of ``axis``, or tables that set several axes at
    once (``{dim = 256, channels = 4}``: a linked step, as the sweeps' linked axes)."""
    if not values:
        raise NmpError(f"a claim along '{axis}' needs values")
    return [dict(v) if isinstance(v, dict) else {axis: v} for v in values]


def _label(axes: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in axes.items()) or "default"


def _ratio(design: str, baseline: str, setup: str, axes: dict[str, Any]) -> float:
    return (
        point(design, setup=setup, **axes).lookups_per_s
        / point(baseline, setup=setup, **axes).lookups_per_s
    )


def _curve(
    design: str, baseline: str, setup: str, axis: str, values: list[Any]
) -> tuple[list[float], str]:
    """``design``'s speedups over ``baseline`` at every step of ``axis``, and their listing."""
    steps = _steps(axis, values)
    ratios = [_ratio(design, baseline, setup, a) for a in steps]
    listing = "; ".join(f"{_label(a)}: {r:.2f}x" for a, r in zip(steps, ratios, strict=True))
    return ratios, listing


# ---------------------------------------------------------------------------------------------
# speed


@claim_model
def speedup(
    *, quick: bool, design: str, baseline: str, setup: str = "recross", **axes: Any
) -> dict[str, Any]:
    """Throughput of ``design`` over ``baseline`` (lookups/s ratio), both on ``setup``."""
    value = _ratio(design, baseline, setup, axes)
    return {"value": value, "detail": f"{design} / {baseline}, {_where(setup, axes)}"}


@claim_model
def latency_speedup(
    *, quick: bool, design: str, baseline: str, setup: str = "recross", **axes: Any
) -> dict[str, Any]:
    """Batch latency of ``baseline`` over ``design`` (one batch's gather-reduce)."""
    value = (
        point(baseline, setup=setup, **axes).latency_ns
        / point(design, setup=setup, **axes).latency_ns
    )
    return {"value": value, "detail": f"latency {baseline} / {design}, {_where(setup, axes)}"}


@claim_model
def max_speedup(
    *,
    quick: bool,
    design: str,
    baseline: str,
    axis: str,
    values: list[Any],
    setup: str = "recross",
) -> dict[str, Any]:
    """The largest speedup of ``design`` over ``baseline`` along ``axis`` (an "up to" claim)."""
    ratios, listing = _curve(design, baseline, setup, axis, values)
    return {"value": max(ratios), "detail": f"{design} / {baseline} ({listing})"}


@claim_model
def mean_speedup(
    *,
    quick: bool,
    design: str,
    baseline: str,
    axis: str,
    values: list[Any],
    setup: str = "recross",
) -> dict[str, Any]:
    """The geometric mean over ``axis`` of ``design``'s speedup over ``baseline`` (a claim that
    states one range for a whole curve); the detail lists every value."""
    ratios, listing = _curve(design, baseline, setup, axis, values)
    value = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    return {
        "value": value,
        "detail": f"geomean over {axis} of {design} / {baseline} ({listing}); {setup} setup",
    }


@claim_model
def faster_than_each(
    *,
    quick: bool,
    design: str,
    baselines: list[str],
    setup: str = "recross",
    axis: str = "",
    values: list[Any] | None = None,
    quick_values: list[Any] | None = None,
) -> dict[str, Any]:
    """True when ``design`` is faster than every one of ``baselines`` at every value of ``axis``
    (or at the setup's defaults when no axis is given). ``quick_values`` replaces ``values``
    under ``--quick``; the detail names the closest call."""
    steps: list[dict[str, Any]] = [{}]
    if axis:
        steps = _steps(axis, (quick_values if quick and quick_values else values) or [])
    worst: tuple[float, str, dict[str, Any]] = (math.inf, "", {})
    for axes in steps:
        for base in baselines:
            r = _ratio(design, base, setup, axes)
            if r < worst[0]:
                worst = (r, base, axes)
    ratio, base, axes = worst
    if not axis:  # one setting: every ratio fits on the line
        each = ", ".join(f"{b} {_ratio(design, b, setup, {}):.2f}x" for b in baselines)
        return {"value": ratio > 1.0, "detail": f"{design} over {each}; {setup} setup"}
    return {
        "value": ratio > 1.0,
        "detail": f"closest: {design} / {base} = {ratio:.2f}x at {_label(axes)} "
        f"({len(steps)} steps of {axis}); {setup} setup",
    }


@claim_model
def variant_speedup(
    *, quick: bool, design: str, set: dict[str, Any], setup: str = "recross"
) -> dict[str, Any]:
    """Throughput of ``design`` with the overrides ``set`` over the design as its preset has it
    (a configuration the paper explores: more units, another capacity split)."""
    value = (
        point(design, setup=setup, set=set).lookups_per_s / point(design, setup=setup).lookups_per_s
    )
    changed = ", ".join(f"{k.removeprefix('arch.')}={v}" for k, v in set.items())
    return {"value": value, "detail": f"{design} with {changed} / {design}; {setup} setup"}


@claim_model
def ablation_speedup(*, quick: bool, step: str, setup: str = "recross") -> dict[str, Any]:
    """Speedup over the host CPU of one ablation step (``recross-base`` ... ``recross``)."""
    if step not in ABLATION:
        raise NmpError(f"unknown ablation step '{step}' (known: {', '.join(ABLATION)})")
    value = _ratio(step, "host-cpu", setup, {})
    off = ", ".join(_OFF[m][0] for m in ABLATION[step]) or "none"
    return {"value": value, "detail": f"{step} / host-cpu (switched off: {off}); {setup} setup"}


@claim_model
def ablation_each_adds_speed(*, quick: bool, setup: str = "recross") -> dict[str, Any]:
    """True when each mechanism, added in the paper's order, makes ReCross faster."""
    speeds = [_ratio(step, "host-cpu", setup, {}) for step in ABLATION]
    listing = " -> ".join(f"{s:.2f}x" for s in speeds)
    holds = all(b > a for a, b in zip(speeds, speeds[1:], strict=False))
    return {"value": holds, "detail": f"{' -> '.join(ABLATION)} over host: {listing}"}


# ---------------------------------------------------------------------------------------------
# energy and area


@claim_model
def energy_saving_pct(
    *, quick: bool, design: str, baseline: str, setup: str = "recross", **axes: Any
) -> dict[str, Any]:
    """Energy per lookup that ``design`` saves against ``baseline``, in percent."""
    e_design = point(design, setup=setup, **axes).energy_pj_per_lookup
    e_base = point(baseline, setup=setup, **axes).energy_pj_per_lookup
    value = 100.0 * (1.0 - e_design / e_base)
    return {
        "value": value,
        "detail": f"{design} {e_design:.0f} vs {baseline} {e_base:.0f} pJ/lookup, "
        f"{_where(setup, axes)}",
    }


@claim_model
def area_ratio(
    *, quick: bool, design: str, baseline: str, setup: str = "recross"
) -> dict[str, Any]:
    """Added area of ``design`` over ``baseline`` (the models' area_mm2: units on every chip
    of the DIMM, buffer-chip unit, parity unit)."""
    a = point(design, setup=setup).area_mm2
    b = point(baseline, setup=setup).area_mm2
    return {"value": a / b, "detail": f"{design} {a:.2f} mm^2 / {baseline} {b:.2f} mm^2"}


# ---------------------------------------------------------------------------------------------
# RecNMP's RankCache and load imbalance


def _cache_set(cache_kib: float) -> dict[str, Any]:
    # The cache needs SRAM: cache + the preset's 32 KiB of partial sums (as papers/recnmp.toml).
    return {"arch.rank.cache_kib": cache_kib, "arch.rank.buffer_kib": cache_kib + 32.0}


@claim_model
def rankcache_hit_rate_pct(
    *, quick: bool, cache_kib: float, setup: str = "recnmp", design: str = "recnmp"
) -> dict[str, Any]:
    """Share of lookups the RankCache serves, in percent, at ``cache_kib`` KiB per rank."""
    res = point(design, setup=setup, set=_cache_set(cache_kib))
    hits = float(res.breakdown.get("cache_hits", 0.0))
    lookups = float(res.extra.get("lookups", 0))
    if lookups <= 0:
        raise NmpError(f"{design} reports no lookup count")
    return {
        "value": 100.0 * hits / lookups,
        "detail": f"{hits:.0f} of {lookups:.0f} lookups hit a {cache_kib:g} KiB RankCache, "
        f"{_where(setup, {})}",
    }


@claim_model
def rankcache_saturates(
    *, quick: bool, small_kib: float, knee_kib: float, large_kib: float, setup: str = "recnmp"
) -> dict[str, Any]:
    """True when the hit rate gains less from ``knee_kib`` to ``large_kib`` than from
    ``small_kib`` to ``knee_kib`` ("little gain beyond" the knee)."""
    rates = [
        rankcache_hit_rate_pct(quick=quick, cache_kib=c, setup=setup)["value"]
        for c in (small_kib, knee_kib, large_kib)
    ]
    gain_below, gain_above = rates[1] - rates[0], rates[2] - rates[1]
    return {
        "value": gain_above < gain_below,
        "detail": f"hit rate {small_kib:g}/{knee_kib:g}/{large_kib:g} KiB: "
        + " / ".join(f"{r:.1f} %" for r in rates),
    }


@claim_model
def load_imbalance_pct(
    *, quick: bool, design: str, setup: str = "recnmp", **axes: Any
) -> dict[str, Any]:
    """Time lost to load imbalance, in percent: the busiest node's work over the mean node's,
    minus one (the model's ``load_imbalance`` of the design's data levels)."""
    res = point(design, setup=setup, **axes)
    imbalance = float(res.breakdown.get("load_imbalance", 1.0))
    return {
        "value": 100.0 * (imbalance - 1.0),
        "detail": f"{design}: busiest node / mean node = {imbalance:.3f}, {_where(setup, axes)}",
    }


@claim_model
def area_ratio_exceeds(
    *, quick: bool, design: str, baseline: str, factor: float, setup: str = "recross"
) -> dict[str, Any]:
    """True when ``design`` adds more than ``factor`` times ``baseline``'s area."""
    out = area_ratio(quick=quick, design=design, baseline=baseline, setup=setup)
    return {"value": out["value"] > factor, "detail": f"{out['detail']} = {out['value']:.2f}x"}
