"""Model functions for the near-memory papers' speed claims (ReCross, TRiM, RecNMP).

Each function compares design points (:mod:`nmp.papers.nmp_points`) and returns the
model's value for one claim of ``nmp/papers/{recross,trim,recnmp}/claims.toml`` (a float
for a value claim, a bool for an ordering, with its ``margin``), with a detail line naming the
setup it ran, ``bound``, the most its stated resources allow with no model run
(:mod:`nmp.arch.first_principles`: the design's ceiling at its most favourable choices over the
baseline's at its least), ``bound_terms`` (each term's arithmetic) and ``model_ceiling`` (the
model's own ceiling, :mod:`nmp.arch.ceiling`, never called a bound). Nothing here knows a
published number: the claims files hold those, and the verdict is computed elsewhere
(:mod:`nmp.validate.claims`). Energy, area and RankCache claims: :mod:`nmp.papers.nmp_costs`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from nmp.arch import memview as mv
from nmp.arch.point import load_memory_for
from nmp.arch.presets import load_arch_spec
from nmp.config import split_overrides
from nmp.errors import NmpError
from nmp.papers import nmp_points as pts
from nmp.papers.nmp_points import (  # noqa: F401  (re-exported: the claims' helpers)
    ABLATION,
    OFF,
    ROOTS,
    axes_label,
    axis_steps,
    ceiling,
    fp_ceiling,
    over_seeds,
    point,
    point_overrides,
    setup_overrides,
    where_text,
)
from nmp.plugins import claim_model


def _ratio(design: str, baseline: str, setup, memory_of: str, axes: dict[str, Any]) -> float:
    kw = {"setup": setup, "memory_of": memory_of, **axes}
    return point(design, **kw).lookups_per_s / point(baseline, **kw).lookups_per_s


def _ratio_bound(
    design: str,
    baseline: str,
    setup,
    memory_of: str,
    axes: dict[str, Any],
    design_set: dict[str, Any] | None = None,
) -> tuple[float, str, dict[str, Any]]:
    """(the most ``design`` can gain over ``baseline`` from first principles, its arithmetic,
    its terms): the design's ceiling with every choice at its most favourable over the
    baseline's with every choice at its least (:mod:`nmp.arch.first_principles`)."""
    kw = {"setup": setup, "memory_of": memory_of, **axes}
    mine = fp_ceiling(design, role="design", set=design_set, **kw)
    base = fp_ceiling(baseline, role="baseline", **kw)
    bound = mine.lookups_per_s / base.lookups_per_s
    how = (
        f"{design} <= {mine.lookups_per_s / 1e6:.0f} M lookups/s ({mine.binding}); {baseline} at "
        f"its peak <= {base.lookups_per_s / 1e6:.0f} M lookups/s ({base.binding}): bound "
        f"{bound:.2f}x"
    )
    terms = {
        "bound": bound,
        "arithmetic": how,
        "design": {"name": design, **mine.to_json()},
        "baseline": {"name": baseline, **base.to_json()},
    }
    return bound, how, terms


def _model_ratio_ceiling(
    design: str, baseline: str, setup, memory_of: str, axes: dict[str, Any]
) -> tuple[float, str]:
    """(the model's own ceiling of the ratio, its arithmetic): the design's model ceiling
    (:mod:`nmp.arch.ceiling`, from its replays) over the baseline's modeled lookups/s. Not a
    physical bound: it inherits the model's ACTs and bytes."""
    kw = {"setup": setup, "memory_of": memory_of, **axes}
    cap = ceiling(design, **kw)
    base = point(baseline, **kw).lookups_per_s
    value = cap.lookups_per_s / base
    return value, (
        f"{design} <= {cap.lookups_per_s / 1e6:.0f} M lookups/s ({cap.text()}); {baseline} "
        f"modeled {base / 1e6:.0f} M lookups/s: {value:.2f}x"
    )


def _bound_out(bound: float, how: str, terms: dict[str, Any], model: tuple[float, str]) -> dict:
    return {
        "bound": bound,
        "bound_detail": how,
        "bound_terms": terms,
        "model_ceiling": model[0],
        "model_ceiling_detail": model[1],
    }


def _curve(
    design: str, baseline: str, setup, memory_of: str, axis: str, values: list[Any]
) -> tuple[list[float], list[tuple[float, str, dict]], list[float], str]:
    """``design``'s speedups over ``baseline`` at every step of ``axis``, their first-principles
    bounds, their model ceilings, and their listing."""
    steps = axis_steps(axis, values)
    ratios = [_ratio(design, baseline, setup, memory_of, a) for a in steps]
    bounds = [_ratio_bound(design, baseline, setup, memory_of, a) for a in steps]
    models = [_model_ratio_ceiling(design, baseline, setup, memory_of, a)[0] for a in steps]
    listing = "; ".join(
        f"{axes_label(a)}: {r:.2f}x (bound {b[0]:.2f}x)"
        for a, r, b in zip(steps, ratios, bounds, strict=True)
    )
    return ratios, bounds, models, listing


def _geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


# ---------------------------------------------------------------------------------------------
# speed


@claim_model
@over_seeds
def speedup(
    *,
    quick: bool,
    design: str,
    baseline: str,
    setup: Mapping[str, Any] | None = None,
    memory_of: str = "recross",
    **axes: Any,
) -> dict[str, Any]:
    """Throughput of ``design`` over ``baseline`` (lookups/s ratio), both on one setup."""
    value = _ratio(design, baseline, setup, memory_of, axes)
    return {
        "value": value,
        "detail": f"{design} / {baseline}, {where_text(setup, memory_of, axes)}",
        **_bound_out(
            *_ratio_bound(design, baseline, setup, memory_of, axes),
            _model_ratio_ceiling(design, baseline, setup, memory_of, axes),
        ),
    }


@claim_model
@over_seeds
def end_to_end_floor(
    *,
    quick: bool,
    design: str,
    baseline: str,
    end_to_end: float,
    setup: Mapping[str, Any] | None = None,
    memory_of: str = "recross",
    **axes: Any,
) -> dict[str, Any]:
    """True when ``design``'s embedding-stage speedup over ``baseline`` is at least
    ``end_to_end``, a paper's end-to-end figure: a design that speeds up only the embedding
    stage cannot speed up the whole step by more than the stage (Amdahl), so this compares end
    to end with end to end. The detail gives the embedding share of the baseline's step the
    two figures together imply; the bound (over ``end_to_end``) is the stage's
    first-principles bound, below 1 when the end-to-end figure cannot hold."""
    stage = speedup(
        quick=quick, design=design, baseline=baseline, setup=setup, memory_of=memory_of, **axes
    )
    s = float(stage["value"])
    share = (1 - 1 / end_to_end) / (1 - 1 / s) if s > 1 else math.inf
    implied = f"{100 * share:.0f} %" if share <= 1 else "more than all"
    return {
        "value": s >= end_to_end,
        "margin": s / end_to_end - 1.0,
        "detail": f"{stage['detail']}: embedding stage {s:.2f}x; end to end {end_to_end:g}x "
        f"needs the embedding stage to be {implied} of the {baseline}'s step",
        "bound": stage["bound"] / end_to_end,
        "bound_detail": f"the stage's bound over {end_to_end:g}x: {stage['bound_detail']}",
        "bound_terms": stage["bound_terms"],
        "model_ceiling": stage["model_ceiling"] / end_to_end,
        "model_ceiling_detail": stage["model_ceiling_detail"],
    }


def _first_access_ns(design: str, setup, memory_of: str, axes: dict[str, Any]) -> float:
    """The least time before any batch's first data: one ACT to READ and the CAS latency."""
    preset, items = point_overrides(design, setup, memory_of, None, axes)
    grouped = split_overrides(dict(items), ROOTS)
    mem = load_memory_for(load_arch_spec(preset, grouped["arch"]), None, grouped["memory"])
    return (mv.trcd(mem) + mv.timing(mem, "nCL")) * mv.tck_ns(mem)


@claim_model
@over_seeds
def latency_speedup(
    *,
    quick: bool,
    design: str,
    baseline: str,
    setup: Mapping[str, Any] | None = None,
    memory_of: str = "recross",
    **axes: Any,
) -> dict[str, Any]:
    """Batch latency of ``baseline`` over ``design`` (one batch's gather-reduce). The bound:
    the baseline's first-principles batch time (its least favourable choices) over the
    design's (its most favourable), each after its first access (tRCD + tCL)."""
    kw = {"setup": setup, "memory_of": memory_of, **axes}
    base, mine = point(baseline, **kw), point(design, **kw)
    d_fp = fp_ceiling(design, role="design", **kw)
    b_fp = fp_ceiling(baseline, role="baseline", **kw)
    first_d = _first_access_ns(design, setup, memory_of, axes)
    first_b = _first_access_ns(baseline, setup, memory_of, axes)
    bound = (b_fp.time_ns + first_b) / (d_fp.time_ns + first_d)
    how = (
        f"{baseline} >= {b_fp.time_ns / 1e3:.2f} us ({b_fp.binding}) + first access "
        f"{first_b:.0f} ns over {design} >= {d_fp.time_ns / 1e3:.2f} us ({d_fp.binding}) + "
        f"{first_d:.0f} ns: bound {bound:.2f}x"
    )
    terms = {
        "bound": bound,
        "arithmetic": how,
        "design": {"name": design, "first_access_ns": first_d, **d_fp.to_json()},
        "baseline": {"name": baseline, "first_access_ns": first_b, **b_fp.to_json()},
    }
    cap = ceiling(design, **kw)
    tail = float(mine.breakdown.get("tail_ns", 0.0))
    model = base.latency_ns / (cap.time_ns + tail)
    return {
        "value": base.latency_ns / mine.latency_ns,
        "detail": f"latency {baseline} / {design}, {where_text(setup, memory_of, axes)}",
        **_bound_out(
            bound,
            how,
            terms,
            (
                model,
                f"{baseline} modeled {base.latency_ns / 1e3:.1f} us / ({design} >= "
                f"{cap.time_ns / 1e3:.1f} us + tail {tail:.0f} ns) = {model:.2f}x; {cap.text()}",
            ),
        ),
    }


@claim_model
@over_seeds
def max_speedup(
    *,
    quick: bool,
    design: str,
    baseline: str,
    axis: str,
    values: list[Any],
    setup: Mapping[str, Any] | None = None,
    memory_of: str = "recross",
) -> dict[str, Any]:
    """The largest speedup of ``design`` over ``baseline`` along ``axis`` (an "up to" claim);
    the bound is the largest step bound."""
    ratios, bounds, models, listing = _curve(design, baseline, setup, memory_of, axis, values)
    top = max(range(len(bounds)), key=lambda i: bounds[i][0])
    return {
        "value": max(ratios),
        "detail": f"{design} / {baseline} ({listing})",
        **_bound_out(
            bounds[top][0],
            f"the largest step bound over {axis}: {bounds[top][1]}",
            {**bounds[top][2], "steps": [b[0] for b in bounds]},
            (max(models), "the largest step's model ceiling"),
        ),
    }


@claim_model
@over_seeds
def mean_speedup(
    *,
    quick: bool,
    design: str,
    baseline: str,
    axis: str,
    values: list[Any],
    setup: Mapping[str, Any] | None = None,
    memory_of: str = "recross",
) -> dict[str, Any]:
    """The geometric mean over ``axis`` of ``design``'s speedup over ``baseline`` (a claim that
    states one range for a whole curve); the detail lists every value, the bound is the
    geometric mean of the step bounds."""
    ratios, bounds, models, listing = _curve(design, baseline, setup, memory_of, axis, values)
    gm = _geomean([b[0] for b in bounds])
    low = min(range(len(bounds)), key=lambda i: bounds[i][0])
    return {
        "value": _geomean(ratios),
        "detail": f"geomean over {axis} of {design} / {baseline} ({listing})",
        **_bound_out(
            gm,
            f"geomean of the step bounds over {axis} (lowest: {bounds[low][1]})",
            {"bound": gm, "steps": [b[0] for b in bounds], "lowest": bounds[low][2]},
            (_geomean(models), "geomean of the steps' model ceilings"),
        ),
    }


@claim_model
@over_seeds
def faster_than_each(
    *,
    quick: bool,
    design: str,
    baselines: list[str],
    setup: Mapping[str, Any] | None = None,
    memory_of: str = "recross",
    axis: str = "",
    values: list[Any] | None = None,
    quick_values: list[Any] | None = None,
) -> dict[str, Any]:
    """True when ``design`` is faster than every one of ``baselines`` at every value of ``axis``
    (or at the setup's defaults when no axis is given). ``quick_values`` replaces ``values``
    under ``--quick``. The margin is the closest speedup less one; the bound the lowest
    first-principles bound of ``design`` over a baseline (below 1: the order cannot hold)."""
    steps: list[dict[str, Any]] = [{}]
    if axis:
        steps = axis_steps(axis, (quick_values if quick and quick_values else values) or [])
    worst: tuple[float, str, dict[str, Any]] = (math.inf, "", {})
    low: tuple[float, str, dict[str, Any]] = (math.inf, "", {})
    model_low = math.inf
    for axes in steps:
        for base in baselines:
            r = _ratio(design, base, setup, memory_of, axes)
            if r < worst[0]:
                worst = (r, base, axes)
            b, how, terms = _ratio_bound(design, base, setup, memory_of, axes)
            if b < low[0]:
                low = (b, f"over {base} at {axes_label(axes)}: {how}", terms)
            model_low = min(
                model_low, _model_ratio_ceiling(design, base, setup, memory_of, axes)[0]
            )
    ratio, base, axes = worst
    out = {
        "value": ratio > 1.0,
        "margin": ratio - 1.0,
        **_bound_out(
            low[0], f"lowest bound: {low[1]}", low[2], (model_low, "the lowest model ceiling")
        ),
    }
    where = where_text(setup, memory_of, {})
    if not axis:  # one setting: every ratio fits on the line
        each = ", ".join(f"{b} {_ratio(design, b, setup, memory_of, {}):.2f}x" for b in baselines)
        return {**out, "detail": f"{design} over {each}; {where}"}
    return {
        **out,
        "detail": f"closest: {design} / {base} = {ratio:.2f}x at {axes_label(axes)} "
        f"({len(steps)} steps of {axis}); {where}",
    }


@claim_model
@over_seeds
def variant_speedup(
    *,
    quick: bool,
    design: str,
    set: dict[str, Any],
    setup: Mapping[str, Any] | None = None,
    memory_of: str = "recross",
) -> dict[str, Any]:
    """Throughput of ``design`` with the overrides ``set`` over the design as its preset has it
    (a configuration the paper explores: more units, another capacity split)."""
    other = point(design, setup=setup, memory_of=memory_of, set=set)
    base = point(design, setup=setup, memory_of=memory_of)
    cap = pts.ceiling_items(*point_overrides(design, setup, memory_of, set, {}))
    changed = ", ".join(f"{k.removeprefix('arch.')}={v}" for k, v in set.items())
    model = cap.lookups_per_s / base.lookups_per_s
    bound, how, terms = _ratio_bound(design, design, setup, memory_of, {}, design_set=set)
    return {
        "value": other.lookups_per_s / base.lookups_per_s,
        "detail": f"{design} with {changed} / {design}; {where_text(setup, memory_of, {})}",
        **_bound_out(
            bound,
            f"the variant ({changed}) over {how}",
            terms,
            (
                model,
                f"the variant <= {cap.lookups_per_s / 1e6:.0f} M lookups/s ({cap.text()}); "
                f"{design} modeled {base.lookups_per_s / 1e6:.0f} M: {model:.2f}x",
            ),
        ),
    }


@claim_model
@over_seeds
def ablation_speedup(
    *, quick: bool, step: str, setup: Mapping[str, Any] | None = None, memory_of: str = "recross"
) -> dict[str, Any]:
    """Speedup over the host CPU of one ablation step (``recross-base`` ... ``recross``)."""
    if step not in ABLATION:
        raise NmpError(f"unknown ablation step '{step}' (known: {', '.join(ABLATION)})")
    value = _ratio(step, "host-cpu", setup, memory_of, {})
    off = ", ".join(OFF[m][0] for m in ABLATION[step]) or "none"
    return {
        "value": value,
        "detail": f"{step} / host-cpu (switched off: {off}); {where_text(setup, memory_of, {})}",
        **_bound_out(
            *_ratio_bound(step, "host-cpu", setup, memory_of, {}),
            _model_ratio_ceiling(step, "host-cpu", setup, memory_of, {}),
        ),
    }


@claim_model
@over_seeds
def ablation_each_adds_speed(
    *, quick: bool, setup: Mapping[str, Any] | None = None, memory_of: str = "recross"
) -> dict[str, Any]:
    """True when each mechanism, added in the paper's order, makes ReCross faster; the margin
    is the smallest step's gain, the bound the smallest first-principles bound of a step over
    the step before it."""
    steps = list(ABLATION)
    speeds = [_ratio(step, "host-cpu", setup, memory_of, {}) for step in steps]
    gains = [b / a for a, b in zip(speeds, speeds[1:], strict=False)]
    pairs = list(zip(steps, steps[1:], strict=False))
    bounds = [_ratio_bound(b, a, setup, memory_of, {}) for a, b in pairs]
    models = [_model_ratio_ceiling(b, a, setup, memory_of, {})[0] for a, b in pairs]
    low = min(range(len(bounds)), key=lambda i: bounds[i][0])
    listing = " -> ".join(f"{s:.2f}x" for s in speeds)
    return {
        "value": all(g > 1.0 for g in gains),
        "margin": min(gains) - 1.0,
        "detail": f"{' -> '.join(steps)} over host: {listing}",
        **_bound_out(
            bounds[low][0],
            "each step's first-principles ceiling over the step before: "
            + ", ".join(f"{b[0]:.2f}x" for b in bounds),
            bounds[low][2],
            (min(models), "the lowest step's model ceiling"),
        ),
    }
