"""What a sweep's results say: speedup and energy saving over the baseline, Pareto sets, best
points and each point's dominant bottleneck.

Points are compared within a *group*: one workload with the same values of every ``workload.*``
axis (a batch of 1 and a batch of 128 are different problems, not competing designs). Inside a
group, a point's baseline is the baseline design's point with the same memory choice and the
same sweep-wide axis values (it falls back to any memory when the baseline has a fixed one).
"""

from __future__ import annotations

import functools
import math
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from nmp.config import apply_overrides
from nmp.errors import NmpError
from nmp.evaluate.point import design_memory_args, load_design_spec, own_memory
from nmp.units import is_number

# Keys of a breakdown that hold time split by component, in order of preference.
TIME_KEYS = ("bounds_ns", "stall_ns", "time_ns", "t_ns", "stalls_ns", "time", "stalls")
ENERGY_KEYS = ("energy_pj", "energy", "energy_breakdown_pj")


def pareto_mask(values: np.ndarray, senses: Sequence[str]) -> np.ndarray:
    """Boolean mask of the non-dominated rows of ``values`` [n, m].

    ``senses[j]`` is ``"max"`` or ``"min"``. Row a dominates row b when it is at least as good
    on every objective and strictly better on one; equal rows do not dominate each other. NaN
    counts as the worst value.
    """
    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 2 or v.shape[1] != len(senses):
        raise ValueError("values must be [n, len(senses)]")
    sign = np.array([1.0 if s == "max" else -1.0 for s in senses])
    g = v * sign  # larger is better on every column
    g = np.where(np.isnan(g), -np.inf, g)
    n = g.shape[0]
    mask = np.ones(n, dtype=bool)
    # Blocks of rows keep the n x n x m comparison in bounded memory.
    block = max(1, 4_000_000 // max(1, n * g.shape[1]))
    for start in range(0, n, block):
        b = g[start : start + block]
        ge: Any = (g[None, :, :] >= b[:, None, :]).all(axis=2)  # [b, n]: j >= i everywhere
        gt: Any = (g[None, :, :] > b[:, None, :]).any(axis=2)
        mask[start : start + block] = ~(ge & gt).any(axis=1)
    return mask


def _numeric_dict(value: Any) -> dict[str, float] | None:
    if not isinstance(value, dict) or not value:
        return None
    out = {}
    for k, v in value.items():
        if not is_number(v):
            return None
        out[str(k)] = float(v)
    return out


def components(breakdown: dict[str, Any], keys: Sequence[str], suffix: str) -> dict[str, float]:
    """A split of time or energy by component from a point's breakdown: the first of ``keys``
    that is a table of numbers, else the top-level numbers whose name ends in ``suffix``."""
    for key in keys:
        found = _numeric_dict(breakdown.get(key))
        if found:
            return found
    return {
        k[: -len(suffix)]: float(v)
        for k, v in breakdown.items()
        if k.endswith(suffix) and is_number(v)
    }


def time_components(breakdown: dict[str, Any]) -> dict[str, float]:
    return components(breakdown or {}, TIME_KEYS, "_ns")


def energy_components(breakdown: dict[str, Any]) -> dict[str, float]:
    return components(breakdown or {}, ENERGY_KEYS, "_pj")


def dominant_bottleneck(breakdown: dict[str, Any]) -> str:
    """What limits the point: the model's own verdict (``breakdown['bottleneck']``) if it gives
    one, else the largest component of its time split; ``"?"`` when the breakdown has neither."""
    stated = (breakdown or {}).get("bottleneck")
    if isinstance(stated, str) and stated:
        return stated
    times = time_components(breakdown)
    if times:
        name, value = max(times.items(), key=lambda kv: kv[1])
        total = sum(v for v in times.values() if v > 0)
        share = f" ({value / total:.0%})" if total > 0 and len(times) > 1 else ""
        return f"{name}{share}"
    return "?"


def _group_key(record: dict[str, Any]) -> tuple[str, str]:
    wl_axes = {
        k: v
        for k, v in {**record.get("axes", {}), **record.get("design_axes", {})}.items()
        if k.startswith("workload.")
    }
    inner = ", ".join(f"{k.split('.', 1)[1]}={v}" for k, v in sorted(wl_axes.items()))
    return record["workload"], inner


def group_label(group: tuple[str, str]) -> str:
    workload, inner = group
    return f"{workload} [{inner}]" if inner else workload


def point_label(record: dict[str, Any], *, with_workload_axes: bool = False) -> str:
    values = {**record.get("axes", {}), **record.get("design_axes", {})}
    if not with_workload_axes:
        values = {k: v for k, v in values.items() if not k.startswith("workload.")}
    inner = ", ".join(f"{k.split('.', 1)[1]}={v}" for k, v in values.items())
    mem = f" @{record['memory']}" if record.get("memory") else ""
    return f"{record['design']}{mem}" + (f" [{inner}]" if inner else "")


def _ctx(record: dict[str, Any], with_memory: bool) -> tuple[Any, ...]:
    axes = repr(sorted(record.get("axes", {}).items()))
    return (record["workload"], record.get("memory") if with_memory else "*", axes)


def _ratio(num: float, den: float) -> float | None:
    if not (math.isfinite(num) and math.isfinite(den)) or den <= 0 or num <= 0:
        return None
    return num / den


@functools.cache
def _memory_system(arch: str, memory: str | None, items: tuple[tuple[str, Any], ...]) -> str:
    if own_memory(arch):
        return ""
    overrides = dict(items)
    spec = load_design_spec(arch, memory)
    own = {k[len("arch.") :]: v for k, v in overrides.items() if k.startswith("arch.memory.")}
    if own:
        spec = apply_overrides(spec, own, root="arch")
    found = design_memory_args(spec)
    if found is None:
        return ""
    preset, kw = found
    label = f"{preset}, {kw['channels']} ch x {kw['ranks']} ranks"
    timing = [f"{k}={v}" for k, v in sorted(overrides.items()) if k.startswith("memory.")]
    return label + (f" ({', '.join(timing)})" if timing else "")


def memory_system(arch: str, memory: str | None = None, overrides: dict | None = None) -> str:
    """The DRAM system a design point runs on, as "preset, C ch x R ranks" (plus any
    ``memory.*`` overrides); "" for a GPU, whose HBM is part of its preset. Resolved from the
    design's preset, the sweep's memory choice and the point's ``arch.memory.*`` overrides."""
    keep = tuple(
        sorted(
            (k, v)
            for k, v in (overrides or {}).items()
            if k.startswith(("arch.memory.", "memory."))
        )
    )
    try:
        try:
            return _memory_system(arch, memory, keep)
        except TypeError:  # an unhashable override value (a list): resolve without the cache
            return _memory_system.__wrapped__(arch, memory, keep)
    except NmpError:  # not a preset the kit knows (a record from elsewhere): no memory to show
        return ""


def memory_warnings(rows: list[dict[str, Any]]) -> list[str]:
    """One line per set of compared points whose DRAM-side designs ran on different memory
    systems (points are compared within a group at the same sweep-wide axis values); a
    speedup between them includes the difference in memory. GPUs have their own HBM and are
    not counted."""
    contexts: dict[tuple[str, str], dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for r in rows:
        if not r.get("memory_system"):
            continue
        ctx = (r["group"], repr(sorted(r.get("sweep_axes", {}).items())))
        contexts[ctx][r["memory_system"]].add(r["design"])
    seen: dict[str, list[str]] = {}
    for (group, _), by_memory in contexts.items():
        if len(by_memory) < 2:
            continue
        text = "; ".join(
            f"{', '.join(sorted(designs))} on {mem}" for mem, designs in sorted(by_memory.items())
        )
        seen.setdefault(text, []).append(group)
    return [
        f"designs compared in {groups[0]}"
        + (f" (and {len(groups) - 1} more groups)" if len(groups) > 1 else "")
        + f" ran on different memory systems: {text}. Their speedups include the difference "
        "in memory, not only in design; pin one memory per design (arch.memory.*) to compare "
        "designs."
        for text, groups in seen.items()
    ]


def analyze(
    records: list[dict[str, Any]], *, baseline: str, objectives: dict[str, str]
) -> dict[str, Any]:
    """Rows (one per point, in sweep order) with speedup, energy saving, bottleneck and Pareto
    membership, and per group the Pareto set and the best point of each objective."""
    records = sorted(records, key=lambda r: r["index"])
    base_exact: dict[tuple[Any, ...], dict[str, Any]] = {}
    base_any: dict[tuple[Any, ...], dict[str, Any]] = {}
    for r in records:
        if r["design"] == baseline:
            # The first baseline point of a context (its own axes' first values) is the reference.
            base_exact.setdefault(_ctx(r, True), r)
            base_any.setdefault(_ctx(r, False), r)
    rows = []
    for r in records:
        res = r["result"]
        base = base_exact.get(_ctx(r, True)) or base_any.get(_ctx(r, False))
        speedup = saving = None
        if base is not None:
            speedup = _ratio(res["lookups_per_s"], base["result"]["lookups_per_s"])
            saving = _ratio(base["result"]["energy_pj_per_lookup"], res["energy_pj_per_lookup"])
        group = _group_key(r)
        rows.append(
            {
                "key": r["key"],
                "index": r["index"],
                "group": group_label(group),
                "design": r["design"],
                "arch": r["arch"],
                "workload": r["workload"],
                "memory": r.get("memory") or res.get("memory") or "",
                "memory_system": memory_system(
                    r["arch"], r.get("memory"), r.get("overrides") or {}
                ),
                "sweep_axes": dict(r.get("axes", {})),
                "label": point_label(r),
                "axes": {**r.get("axes", {}), **r.get("design_axes", {})},
                "latency_ns": res["latency_ns"],
                "lookups_per_s": res["lookups_per_s"],
                "energy_pj_per_lookup": res["energy_pj_per_lookup"],
                "area_mm2": res["area_mm2"],
                "speedup": speedup,
                "energy_saving": saving,
                "bottleneck": dominant_bottleneck(res.get("breakdown") or {}),
                "is_baseline": r["design"] == baseline,
                "pareto": False,
                "time_split_ns": time_components(res.get("breakdown") or {}),
                "energy_split_pj": energy_components(res.get("breakdown") or {}),
            }
        )
    names = list(objectives)
    senses = [objectives[n] for n in names]
    by_group: dict[str, list[int]] = defaultdict(list)
    for i, row in enumerate(rows):
        by_group[row["group"]].append(i)
    groups = []
    for label, idx in by_group.items():
        values = np.array([[rows[i][n] for n in names] for i in idx], dtype=np.float64)
        mask = pareto_mask(values, senses)
        for i, keep in zip(idx, mask, strict=True):
            rows[i]["pareto"] = bool(keep)
        best = {}
        for j, (name, sense) in enumerate(zip(names, senses, strict=True)):
            col = values[:, j]
            col = np.where(np.isnan(col), -np.inf if sense == "max" else np.inf, col)
            pick = int(np.argmax(col) if sense == "max" else np.argmin(col))
            best[name] = rows[idx[pick]]["key"]
        pareto = [rows[i]["key"] for i in idx if rows[i]["pareto"]]
        groups.append({"group": label, "points": len(idx), "best": best, "pareto": pareto})
    return {
        "baseline": baseline,
        "objectives": objectives,
        "rows": rows,
        "groups": groups,
        "warnings": memory_warnings(rows),
    }
