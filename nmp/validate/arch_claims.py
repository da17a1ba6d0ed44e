"""Model functions for the near-memory papers' published claims (ReCross, TRiM, RecNMP).

Each function runs design points through :func:`nmp.evaluate.point.run_point` and returns the
model's value for one claim of ``nmp/validate/claims/{recross,trim,recnmp}.toml`` (a float for
a value claim, a bool for an ordering), with a detail line naming the setup it ran; a speed
claim also returns ``bound``, the most its stated resources allow with no model run
(:mod:`nmp.arch.first_principles`: the design's ceiling at its most favourable choices over the
baseline's at its least), ``bound_terms`` (each term's arithmetic) and ``model_ceiling`` (the
model's own ceiling, :mod:`nmp.arch.ceiling`, never called a bound); an ordering its
``margin``. Nothing here
knows a published number: the claims files hold those, and the verdict is computed elsewhere
(:mod:`nmp.validate.claims`).

Every function takes ``setup``: None runs the kit's defaults, every design of a comparison
pinned to one memory, that of the preset ``memory_of`` (the paper's own design: ``recross``,
``trim-g``, ``recnmp``), with the kit's host (its 32 MiB LLC) and workload (recross-eval, Zipf
1.05); a mapping is the paper's ``[setup]`` (``nmp.validate.setup``): keys rooted at
``arch.``, ``workload.`` or ``memory.`` apply to every design of the comparison, keys
``designs.<preset>.<path>`` to that preset's designs only (a baseline's configuration).

Points are cached (:func:`functools.cache`) on their overrides with every value equal to the
design's own default dropped, so the claims of one paper, its two columns and the runner's
one-value-at-a-time attribution share their runs.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import Any

from nmp.arch import memview as mv
from nmp.arch.ceiling import host_ceiling, near_memory_ceiling
from nmp.arch.energy import read_share
from nmp.arch.first_principles import FirstPrinciples, first_principles, workload_stats
from nmp.arch.point import load_memory_for
from nmp.arch.policies import POLICIES
from nmp.arch.presets import load_arch_spec
from nmp.config import preset_names, split_overrides
from nmp.errors import NmpError, SpecError
from nmp.evaluate.point import run_point
from nmp.memory import load_memory
from nmp.plugins import claim_model
from nmp.results import PointResult
from nmp.workload import load_workload

WORKLOAD = "recross-eval"  # Criteo Kaggle tables, vector length 64, batch 32, pooling 80
ROOTS = ("arch", "workload", "memory")
DESIGNS_PREFIX = "designs."

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


def _lookup(obj: Any, path: str) -> Any:
    for part in path.split("."):
        obj = obj[part] if isinstance(obj, dict) else getattr(obj, part)
    return obj


@functools.cache
def _arch_spec(preset: str):
    return load_arch_spec(preset)


@functools.cache
def _memory_spec(preset: str):
    return load_memory(preset)


@functools.cache
def _workload_spec():
    return load_workload(WORKLOAD)


def _default(preset: str, key: str, overrides: dict[str, Any]) -> Any:
    """The value ``key`` has in ``preset``'s design point without overrides (memory keys: on
    the memory preset the overrides choose)."""
    root, _, path = key.partition(".")
    try:
        if root == "arch":
            return _lookup(_arch_spec(preset), path)
        if root == "workload":
            return _lookup(_workload_spec(), path)
        mem = overrides.get("arch.memory.preset", _arch_spec(preset).memory.preset)
        return _lookup(_memory_spec(mem), path)
    except (AttributeError, KeyError, TypeError):
        return _NO_DEFAULT


_NO_DEFAULT = object()


def setup_overrides(preset: str, setup: Mapping[str, Any] | None) -> dict[str, Any]:
    """The overrides a paper's ``setup`` gives the points of ``preset``: every key rooted at
    arch. / workload. / memory., and ``designs.<preset>.<key>`` for this preset; any other key
    is an error (a design-specific key must name an architecture preset)."""
    out: dict[str, Any] = {}
    for key, value in (setup or {}).items():
        if key.startswith(DESIGNS_PREFIX):
            name, _, path = key[len(DESIGNS_PREFIX) :].partition(".")
            if name not in preset_names("arch"):
                raise SpecError(
                    f"'{name}' is not an architecture preset "
                    f"(known: {', '.join(preset_names('arch'))})",
                    key=key,
                )
            if path.partition(".")[0] not in ROOTS:
                raise SpecError("a design's setup key starts with arch., workload. or memory.")
            if name == preset:
                out[path] = value
        elif key.partition(".")[0] in ROOTS and "." in key:
            out[key] = value
        else:
            raise SpecError(
                "unknown setup key: the NMP claims take arch.*, workload.*, memory.* or "
                "designs.<preset>.*",
                key=key,
            )
    return out


def _overrides(
    design: str,
    setup: Mapping[str, Any] | None,
    memory_of: str,
    extra: dict[str, Any] | None,
    axes: dict[str, Any],
) -> tuple[str, tuple[tuple[str, Any], ...]]:
    """(preset, canonical overrides) of one point: the kit's comparison memory (that of
    ``memory_of``), the setup's values, the design's own switches, ``extra`` and the axes;
    values equal to the preset's own are dropped so equal points share one run."""
    preset, own = _design(design)
    mem = _arch_spec(memory_of).memory
    out: dict[str, Any] = {
        "arch.memory.preset": mem.preset,
        "arch.memory.channels": mem.channels,
        "arch.memory.ranks": mem.ranks,
    }
    out.update(setup_overrides(preset, setup))
    out.update(own)
    out.update(extra or {})
    for key, value in axes.items():
        if key not in AXES:
            raise NmpError(f"unknown axis '{key}' (known: {', '.join(AXES)})")
        out[AXES[key]] = value
    kept = {k: v for k, v in out.items() if _default(preset, k, out) != v}
    return preset, tuple(sorted(kept.items()))


@functools.cache
def _run(arch: str, items: tuple[tuple[str, Any], ...]) -> PointResult:
    return run_point(arch, WORKLOAD, overrides=dict(items))


def point(
    design: str,
    *,
    setup: Mapping[str, Any] | None = None,
    memory_of: str = "recross",
    set: dict[str, Any] | None = None,
    **axes: Any,
) -> PointResult:
    """One design point of ``design`` under ``setup`` (None: the kit's defaults, on the memory
    of preset ``memory_of``), with axis values (``batch=8``, ``dim=16``, ``channels=4``) and
    extra overrides ``set``."""
    return _run(*_overrides(design, setup, memory_of, set, axes))


@functools.cache
def _ceiling(arch: str, items: tuple[tuple[str, Any], ...]):
    """The physical ceiling (:mod:`nmp.arch.ceiling`) of the point ``_run(arch, items)``."""
    res = _run(arch, items)
    grouped = split_overrides(dict(items), ROOTS)
    spec = load_arch_spec(arch, grouped["arch"])
    mem = load_memory_for(spec, None, grouped["memory"])
    wl = load_workload(WORKLOAD, grouped["workload"] or None)
    lookups = int(res.extra["lookups"])
    per_bag = [(t.dim, wl.table_pooling(i).mean_lookups) for i, t in enumerate(wl.tables)]
    mean_dim = sum(d * p for d, p in per_bag) / max(sum(p for _, p in per_bag), 1.0)
    if not POLICIES.get(spec.policy).near_memory:
        flops = lookups * mean_dim * (2 if wl.weighted else 1)
        return host_ceiling(spec, mem, res.breakdown, lookups, flops)
    return near_memory_ceiling(spec, mem, res.breakdown, lookups, mean_dim)


def ceiling(
    design: str, *, setup: Mapping[str, Any] | None = None, memory_of: str = "recross", **axes
):
    """The ceiling of ``design``'s point (same arguments as :func:`point`)."""
    return _ceiling(*_overrides(design, setup, memory_of, None, axes))


@functools.cache
def _workload(items: tuple[tuple[str, Any], ...]):
    return load_workload(WORKLOAD, dict(items) or None)


@functools.cache
def _stats(items: tuple[tuple[str, Any], ...]):
    return workload_stats(_workload(items))


def _stated(preset: str, setup: Mapping[str, Any] | None) -> frozenset[str]:
    """The spec keys of ``preset`` (``instruction.bits_per_lookup``) that the paper's setup
    states with a source (``SetupMapping.sourced``); the kit's defaults state none."""
    sourced: frozenset[str] = getattr(setup, "sourced", frozenset())
    out = set()
    for key in sourced:
        if key.startswith(DESIGNS_PREFIX):
            name, _, key = key[len(DESIGNS_PREFIX) :].partition(".")
            if name != preset:
                continue
        if key.startswith("arch."):
            out.add(key.removeprefix("arch."))
    return frozenset(out)


@functools.cache
def _fp(arch: str, items: tuple[tuple[str, Any], ...], role: str, stated: frozenset[str]):
    """The first-principles ceiling (:mod:`nmp.arch.first_principles`) of the point
    ``(arch, items)``: specs and workload only, no model run."""
    grouped = split_overrides(dict(items), ROOTS)
    spec = load_arch_spec(arch, grouped["arch"])
    mem = load_memory_for(spec, None, grouped["memory"])
    wl_items = tuple(sorted(grouped["workload"].items()))
    return first_principles(
        spec, mem, _workload(wl_items), role=role, stated=stated, stats=_stats(wl_items)
    )


def fp_ceiling(
    design: str,
    *,
    role: str = "design",
    setup: Mapping[str, Any] | None = None,
    memory_of: str = "recross",
    set: dict[str, Any] | None = None,
    **axes: Any,
) -> FirstPrinciples:
    """The first-principles ceiling of ``design``'s point (same arguments as :func:`point`)."""
    preset, items = _overrides(design, setup, memory_of, set, axes)
    return _fp(preset, items, role, _stated(preset, setup))


def _where(setup: Mapping[str, Any] | None, memory_of: str, axes: dict[str, Any]) -> str:
    """The workload and memory a comparison ran on, and which column it is."""
    mem = _arch_spec(memory_of).memory
    over = {**setup_overrides(memory_of, setup), **{AXES[k]: v for k, v in axes.items()}}
    preset = over.get("arch.memory.preset", mem.preset)
    channels = over.get("arch.memory.channels", mem.channels)
    ranks = over.get("arch.memory.ranks", mem.ranks)
    inner = f" ({_label(axes)})" if axes else ""
    which = "paper's setup" if setup is not None else "kit defaults"
    return f"{WORKLOAD}{inner} on {preset}, {channels} ch x {ranks} ranks; {which}"


def _steps(axis: str, values: list[Any]) -> list[dict[str, Any]]:
    """The axis settings of a curve: ``values`` of ``axis``, or tables that set several axes at
    once (``{dim = 256, channels = 4}``: a linked step, as the sweeps' linked axes)."""
    if not values:
        raise NmpError(f"a claim along '{axis}' needs values")
    return [dict(v) if isinstance(v, dict) else {axis: v} for v in values]


def _label(axes: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in axes.items()) or "default"


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
    steps = _steps(axis, values)
    ratios = [_ratio(design, baseline, setup, memory_of, a) for a in steps]
    bounds = [_ratio_bound(design, baseline, setup, memory_of, a) for a in steps]
    models = [_model_ratio_ceiling(design, baseline, setup, memory_of, a)[0] for a in steps]
    listing = "; ".join(
        f"{_label(a)}: {r:.2f}x (bound {b[0]:.2f}x)"
        for a, r, b in zip(steps, ratios, bounds, strict=True)
    )
    return ratios, bounds, models, listing


def _geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


# ---------------------------------------------------------------------------------------------
# speed


@claim_model
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
        "detail": f"{design} / {baseline}, {_where(setup, memory_of, axes)}",
        **_bound_out(
            *_ratio_bound(design, baseline, setup, memory_of, axes),
            _model_ratio_ceiling(design, baseline, setup, memory_of, axes),
        ),
    }


@claim_model
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
    preset, items = _overrides(design, setup, memory_of, None, axes)
    grouped = split_overrides(dict(items), ROOTS)
    mem = load_memory_for(load_arch_spec(preset, grouped["arch"]), None, grouped["memory"])
    return (mv.trcd(mem) + mv.timing(mem, "nCL")) * mv.tck_ns(mem)


@claim_model
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
        "detail": f"latency {baseline} / {design}, {_where(setup, memory_of, axes)}",
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
        steps = _steps(axis, (quick_values if quick and quick_values else values) or [])
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
                low = (b, f"over {base} at {_label(axes)}: {how}", terms)
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
    where = _where(setup, memory_of, {})
    if not axis:  # one setting: every ratio fits on the line
        each = ", ".join(f"{b} {_ratio(design, b, setup, memory_of, {}):.2f}x" for b in baselines)
        return {**out, "detail": f"{design} over {each}; {where}"}
    return {
        **out,
        "detail": f"closest: {design} / {base} = {ratio:.2f}x at {_label(axes)} "
        f"({len(steps)} steps of {axis}); {where}",
    }


@claim_model
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
    cap = _ceiling(*_overrides(design, setup, memory_of, set, {}))
    changed = ", ".join(f"{k.removeprefix('arch.')}={v}" for k, v in set.items())
    model = cap.lookups_per_s / base.lookups_per_s
    bound, how, terms = _ratio_bound(design, design, setup, memory_of, {}, design_set=set)
    return {
        "value": other.lookups_per_s / base.lookups_per_s,
        "detail": f"{design} with {changed} / {design}; {_where(setup, memory_of, {})}",
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
def ablation_speedup(
    *, quick: bool, step: str, setup: Mapping[str, Any] | None = None, memory_of: str = "recross"
) -> dict[str, Any]:
    """Speedup over the host CPU of one ablation step (``recross-base`` ... ``recross``)."""
    if step not in ABLATION:
        raise NmpError(f"unknown ablation step '{step}' (known: {', '.join(ABLATION)})")
    value = _ratio(step, "host-cpu", setup, memory_of, {})
    off = ", ".join(_OFF[m][0] for m in ABLATION[step]) or "none"
    return {
        "value": value,
        "detail": f"{step} / host-cpu (switched off: {off}); {_where(setup, memory_of, {})}",
        **_bound_out(
            *_ratio_bound(step, "host-cpu", setup, memory_of, {}),
            _model_ratio_ceiling(step, "host-cpu", setup, memory_of, {}),
        ),
    }


@claim_model
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


# ---------------------------------------------------------------------------------------------
# energy and area


@functools.cache
def _energy_floor(arch: str, items: tuple[tuple[str, Any], ...]) -> tuple[float, str]:
    """(the least energy per lookup the point's own work allows, how): every column read
    charged at the cheapest level of the design's read path (``arch.dram_energy``), the rest
    as modeled (activations, refresh, background, I/O, units)."""
    res = _run(arch, items)
    where, levels = res.breakdown.get("dram_energy"), res.breakdown.get("levels")
    if not where or not levels:
        return res.energy_pj_per_lookup, "as modeled (no near-memory read path)"
    spec = load_arch_spec(arch, split_overrides(dict(items), ROOTS)["arch"])
    lookups = float(res.extra["lookups"])
    cheapest = min(read_share(spec, lv) for lv, d in levels.items() if d["lookups"])
    full_read = where["read_path_pj"] + where["read_path_saved_pj"]
    floor = res.energy_pj_per_lookup * lookups - where["read_path_pj"] + cheapest * full_read
    return floor / lookups, (
        f"every read at share {cheapest:g} of {full_read / lookups:.0f} pJ/lookup of column "
        f"reads: {floor / lookups:.0f} pJ/lookup"
    )


@claim_model
def energy_saving_pct(
    *,
    quick: bool,
    design: str,
    baseline: str,
    setup: Mapping[str, Any] | None = None,
    memory_of: str = "recross",
    **axes: Any,
) -> dict[str, Any]:
    """Energy per lookup that ``design`` saves against ``baseline``, in percent. Its
    ``model_ceiling`` is the saving with every read of ``design`` at its cheapest level
    (:func:`_energy_floor`): it rests on the model's run, so it is no physical bound."""
    kw = {"setup": setup, "memory_of": memory_of, **axes}
    mine, base = point(design, **kw), point(baseline, **kw)
    e_design, e_base = mine.energy_pj_per_lookup, base.energy_pj_per_lookup
    floor, how = _energy_floor(*_overrides(design, setup, memory_of, None, axes))
    bound = 100.0 * (1.0 - floor / e_base)
    return {
        "value": 100.0 * (1.0 - e_design / e_base),
        "detail": f"{design} {e_design:.0f} vs {baseline} {e_base:.0f} pJ/lookup, "
        f"{_where(setup, memory_of, axes)}",
        "model_ceiling": bound,
        "model_ceiling_detail": f"{design} >= {how}; {baseline} modeled {e_base:.0f}: saving <= "
        f"{bound:.1f} %",
    }


@claim_model
def area_ratio(
    *,
    quick: bool,
    design: str,
    baseline: str,
    setup: Mapping[str, Any] | None = None,
    memory_of: str = "recross",
) -> dict[str, Any]:
    """Added area of ``design`` over ``baseline`` (the models' area_mm2: units on every chip
    of the DIMM, buffer-chip unit, parity unit)."""
    a = point(design, setup=setup, memory_of=memory_of).area_mm2
    b = point(baseline, setup=setup, memory_of=memory_of).area_mm2
    return {"value": a / b, "detail": f"{design} {a:.2f} mm^2 / {baseline} {b:.2f} mm^2"}


@claim_model
def area_ratio_exceeds(
    *,
    quick: bool,
    design: str,
    baseline: str,
    factor: float,
    setup: Mapping[str, Any] | None = None,
    memory_of: str = "recross",
) -> dict[str, Any]:
    """True when ``design`` adds more than ``factor`` times ``baseline``'s area."""
    out = area_ratio(
        quick=quick, design=design, baseline=baseline, setup=setup, memory_of=memory_of
    )
    return {
        "value": out["value"] > factor,
        "margin": out["value"] / factor - 1.0,
        "detail": f"{out['detail']} = {out['value']:.2f}x",
    }


# ---------------------------------------------------------------------------------------------
# RecNMP's RankCache and load imbalance


def _cache_set(cache_kib: float) -> dict[str, Any]:
    # The cache needs SRAM: cache + the preset's 32 KiB of partial sums (as papers/recnmp.toml).
    return {"arch.rank.cache_kib": cache_kib, "arch.rank.buffer_kib": cache_kib + 32.0}


@claim_model
def rankcache_hit_rate_pct(
    *,
    quick: bool,
    cache_kib: float,
    setup: Mapping[str, Any] | None = None,
    memory_of: str = "recnmp",
    design: str = "recnmp",
) -> dict[str, Any]:
    """Share of lookups the RankCache serves, in percent, at ``cache_kib`` KiB per rank."""
    res = point(design, setup=setup, memory_of=memory_of, set=_cache_set(cache_kib))
    hits = float(res.breakdown.get("cache_hits", 0.0))
    lookups = float(res.extra.get("lookups", 0))
    if lookups <= 0:
        raise NmpError(f"{design} reports no lookup count")
    return {
        "value": 100.0 * hits / lookups,
        "detail": f"{hits:.0f} of {lookups:.0f} lookups hit a {cache_kib:g} KiB RankCache, "
        f"{_where(setup, memory_of, {})}",
    }


@claim_model
def rankcache_saturates(
    *,
    quick: bool,
    small_kib: float,
    knee_kib: float,
    large_kib: float,
    setup: Mapping[str, Any] | None = None,
    memory_of: str = "recnmp",
) -> dict[str, Any]:
    """True when the hit rate gains less from ``knee_kib`` to ``large_kib`` than from
    ``small_kib`` to ``knee_kib`` ("little gain beyond" the knee). The margin is the difference
    of the two gains as a share of the largest cache's hit rate: gains of a few hundredths of a
    point on a saturated cache are noise, not a knee."""
    rates = [
        rankcache_hit_rate_pct(quick=quick, cache_kib=c, setup=setup, memory_of=memory_of)["value"]
        for c in (small_kib, knee_kib, large_kib)
    ]
    gain_below, gain_above = rates[1] - rates[0], rates[2] - rates[1]
    return {
        "value": gain_above < gain_below,
        "margin": (gain_below - gain_above) / max(rates[2], 1e-9),
        "detail": f"hit rate {small_kib:g}/{knee_kib:g}/{large_kib:g} KiB: "
        + " / ".join(f"{r:.2f} %" for r in rates),
    }


@claim_model
def load_imbalance_pct(
    *,
    quick: bool,
    design: str,
    setup: Mapping[str, Any] | None = None,
    memory_of: str = "recnmp",
    **axes: Any,
) -> dict[str, Any]:
    """Time lost to load imbalance, in percent: the busiest node's work over the mean node's,
    minus one (the model's ``load_imbalance`` of the design's data levels)."""
    res = point(design, setup=setup, memory_of=memory_of, **axes)
    imbalance = float(res.breakdown.get("load_imbalance", 1.0))
    return {
        "value": 100.0 * (imbalance - 1.0),
        "detail": f"{design}: busiest node / mean node = {imbalance:.3f}, "
        f"{_where(setup, memory_of, axes)}",
    }
