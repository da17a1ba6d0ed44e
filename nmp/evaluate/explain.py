"""Why each design stands where it does on a workload: the report's explanations.

For every point of a sweep (one design on one workload), from the model's own outputs:

- the **binding resource**: the bound (an NMP design's resource, a host's channel or compute) or
  stall (a GPU's) that sets the batch time, with its share of that time and how close the next
  one is (:func:`binding`);
- the **regime**: a design used where the model says it is idle most of the time (most of the
  batch time is the *tail*: a GPU's last wave of thread blocks, a reduction tree's last partial
  sums) is flagged as outside its regime: the batch is too small for it (:func:`regime_flags`);
- the **area** and what it counts (the parts of the breakdown, with their source);
- the **deciding assumption**: each design's preset declares the assumptions its standing rests
  on (``[[key_assumptions]]``: :class:`nmp.design.KeyAssumption`, with the ``--set`` that
  replaces each); the point is re-run under each (:func:`whatif_points`, through the sweep's
  executor), and the one that moves the point's first objective most is the deciding one. Its
  result is set beside the other designs' nominal values: the rank it would take.

Which points are re-run is the sweep's ``explain`` key: ``all``, ``best`` (the best point of
each objective in each workload, and the baseline's) or ``none``.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

from nmp.config import field_exists
from nmp.design import KeyAssumption
from nmp.errors import NmpError, SpecError
from nmp.evaluate.analysis import energy_components, time_components
from nmp.evaluate.point import load_design_spec
from nmp.evaluate.sweep import Point
from nmp.units import is_number

# chosen: a design whose batch time is more than half tail spends most of the batch waiting
# for its last wave (GPU) or its reduction tree (NMP): the batch does not fill it.
REGIME_TAIL_SHARE = 0.5
# chosen: an assumption that changes an objective by less than 1 % does not move the point
# (log ratio); the explanation then says so
MOVES = 0.01
WHATIF_FILE = "whatif.jsonl"


@functools.cache
def key_assumptions(arch: str) -> tuple[KeyAssumption, ...]:
    """The key assumptions design preset ``arch`` declares (none for a spec without any)."""
    return tuple(getattr(load_design_spec(arch), "key_assumptions", ()) or ())


def check_key_assumptions(archs: list[str]) -> None:
    """Every ``arch.*`` path a design's key assumption sets names a field of its spec; an error
    names the preset and the key (``key_assumptions[0].set.arch.host.llc_mib``)."""
    for arch in dict.fromkeys(archs):
        spec = load_design_spec(arch)
        for i, a in enumerate(key_assumptions(arch)):
            for path in a.set:
                root, _, rest = path.partition(".")
                if root == "arch" and not field_exists(spec, rest):
                    raise SpecError(
                        f"design '{arch}': no field '{rest}' in its spec",
                        key=f"key_assumptions[{i}].set.{path}",
                    )


# ---------------------------------------------------------------------------------------------
# what the breakdown says


def _lookup(data: Any, path: str) -> Any:
    for part in path.split("."):
        if not isinstance(data, dict) or part not in data:
            return None
        data = data[part]
    return data


def binding(result: dict[str, Any]) -> dict[str, Any]:
    """The resource that sets the point's batch time: ``{"resource", "share", "next",
    "next_ratio"}``; share = its time over the batch time; next = the runner-up and its time
    as a fraction of the binding one's (close to 1: two resources bind together)."""
    bd = result.get("breakdown") or {}
    times = {k: v for k, v in time_components(bd).items() if v > 0}
    stated = bd.get("bottleneck")
    if isinstance(stated, str) and stated in times:
        name = stated
    elif times:
        name = max(times, key=lambda k: times[k])
    else:
        return {"resource": "?", "share": None, "next": None, "next_ratio": None}
    latency = float(result.get("latency_ns") or 0.0)
    share = min(1.0, times[name] / latency) if latency > 0 else None
    others = {k: v for k, v in times.items() if k != name}
    nxt = max(others, key=lambda k: others[k]) if others else None
    return {
        "resource": name,
        "share": share,
        "next": nxt,
        "next_ratio": others[nxt] / times[name] if nxt else None,
    }


def tail_share(result: dict[str, Any]) -> float:
    """The fraction of the batch time that is tail: a GPU's ``tail`` stall (the last wave), an
    NMP design's ``tail_ns`` (the reduction tree after its bound)."""
    bd = result.get("breakdown") or {}
    latency = float(result.get("latency_ns") or 0.0)
    if latency <= 0:
        return 0.0
    tail: Any = time_components(bd).get("tail")
    if tail is None:
        tail = bd.get("tail_ns") if isinstance(bd.get("tail_ns"), int | float) else 0.0
    return min(1.0, float(tail) / latency)


def static_energy_share(result: dict[str, Any]) -> float:
    energy = energy_components(result.get("breakdown") or {})
    total = sum(v for v in energy.values() if v > 0)
    return energy.get("static", 0.0) / total if total > 0 else 0.0


def regime_flags(result: dict[str, Any], batch: int | None = None) -> list[str]:
    """Why the point is outside the design's regime (empty when it is inside)."""
    share = tail_share(result)
    if share <= REGIME_TAIL_SHARE:
        return []
    batch = batch or result.get("batch")
    static = static_energy_share(result)
    text = (
        f"outside its regime: {share:.0%} of its batch time is tail (the last wave or "
        "reduction step, which nothing overlaps), so the batch"
        + (f" ({batch})" if batch else "")
        + " is too small for it"
    )
    if static > REGIME_TAIL_SHARE:
        text += f"; static power is {static:.0%} of its energy"
    return [text]


def area_text(result: dict[str, Any]) -> str:
    """The point's area and what it counts (the breakdown's parts and sources)."""
    area = float(result.get("area_mm2") or 0.0)
    bd = result.get("breakdown") or {}
    parts: dict[str, Any] = bd["area_mm2"] if isinstance(bd.get("area_mm2"), dict) else {}
    sources: dict[str, Any] = bd["area_source"] if isinstance(bd.get("area_source"), dict) else {}
    if area <= 0:
        return "no area counted (the preset gives none)"
    if not parts:
        return f"{area:,.4g} mm² (the die, from its preset)"
    shown = ", ".join(
        f"{k.replace('_', ' ')} {v:,.3g}" + (f" [{sources[k]}]" if k in sources else "")
        for k, v in parts.items()
    )
    return f"{area:,.4g} mm² ({shown})"


# ---------------------------------------------------------------------------------------------
# re-running points under their key assumptions


@dataclass(frozen=True)
class WhatIf:
    """One point re-run under one of its design's key assumptions."""

    id: str  # "<point key>|<assumption name>"
    key: str  # the point's key
    assumption: KeyAssumption
    point: Point


def _explained_keys(summary: dict[str, Any], mode: str) -> list[str]:
    rows = summary.get("rows") or []
    if mode == "all":
        return [r["key"] for r in rows]
    if mode == "none":
        return []
    keys = {k for g in summary.get("groups") or [] for k in g["best"].values()}
    keys |= {r["key"] for r in rows if r.get("is_baseline")}
    return [r["key"] for r in rows if r["key"] in keys]


def whatif_points(
    records: list[dict[str, Any]], summary: dict[str, Any], mode: str
) -> list[WhatIf]:
    """The what-if points of the explained rows: each row's point with each of its design's key
    assumptions' overrides on top of its own."""
    by_key = {r["key"]: r for r in records}
    out = []
    for key in _explained_keys(summary, mode):
        rec = by_key[key]
        try:
            assumptions = key_assumptions(rec["arch"])
        except NmpError:  # a record of a preset that no longer loads: nothing to re-run
            continue
        for a in assumptions:
            point = Point(
                index=rec["index"],
                design=rec["design"],
                arch=rec["arch"],
                workload=rec["workload"],
                memory=rec.get("memory"),
                overrides={**(rec.get("overrides") or {}), **a.set},
                axes=dict(rec.get("axes") or {}),
                design_axes=dict(rec.get("design_axes") or {}),
                seed=rec.get("seed"),
            )
            out.append(WhatIf(f"{key}|{a.name}", key, a, point))
    return out


def whatif_record(w: WhatIf, outcome: dict[str, Any]) -> dict[str, Any]:
    """What ``whatif.jsonl`` keeps of a what-if run (its headline numbers, or its error)."""
    record: dict[str, Any] = {"id": w.id, "key": w.key, "assumption": w.assumption.name}
    record["set"] = dict(w.assumption.set)
    if outcome.get("ok"):
        res = outcome["result"]
        record["result"] = {
            m: res[m] for m in ("latency_ns", "lookups_per_s", "energy_pj_per_lookup", "area_mm2")
        }
        record["result"]["binding"] = binding(res)["resource"]
    else:
        record["error"] = str(outcome.get("error", "?"))
    return record


# ---------------------------------------------------------------------------------------------
# assembling the explanations


def _rank(value: float, others: list[float], sense: str) -> int:
    """1-based rank of ``value`` among ``others`` (ties count in its favour)."""
    better = sum(1 for o in others if (o > value if sense == "max" else o < value))
    return 1 + better


def _change(nominal: float, alt: float) -> float:
    if nominal > 0 and alt > 0 and math.isfinite(nominal) and math.isfinite(alt):
        return abs(math.log(alt / nominal))
    return 0.0


def explain(
    records: list[dict[str, Any]],
    summary: dict[str, Any],
    whatifs: dict[str, dict[str, Any]],
) -> None:
    """Attach ``row["why"]`` to every row of ``summary`` (see the module docstring), and
    ``group["why"]``: one line per point, best first on the first objective."""
    by_key = {r["key"]: r for r in records}
    rows = summary.get("rows") or []
    objectives = summary.get("objectives") or {"lookups_per_s": "max"}
    metric, sense = next(iter(objectives.items()))
    by_group: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_group.setdefault(row["group"], []).append(row)
    for group in summary.get("groups") or []:
        grows = by_group.get(group["group"], [])
        best_of: dict[str, list[str]] = {}
        for obj, key in group["best"].items():
            best_of.setdefault(key, []).append(obj)
        for row in grows:
            res = by_key[row["key"]]["result"]
            others = [float(r[metric]) for r in grows if r["key"] != row["key"]]
            why: dict[str, Any] = {
                "metric": metric,
                "rank": _rank(float(row[metric]), others, sense),
                "of": len(grows),
                "best_on": best_of.get(row["key"], []),
                "binding": binding(res),
                "dominated_by": dominated_by(row, grows, objectives),
                "objectives": list(objectives),
                "regime": regime_flags(res, _batch(by_key[row["key"]])),
                "area": area_text(res),
                "evidence": {},
                "whatif": [],
            }
            for a in key_assumptions_or_none(row["arch"]):
                if a.evidence:
                    value = _lookup(res.get("breakdown") or {}, a.evidence)
                    if is_number(value):
                        why["evidence"][a.evidence] = value
                done = whatifs.get(f"{row['key']}|{a.name}")
                entry: dict[str, Any] = {
                    "assumption": a.name,
                    "set": dict(a.set),
                    "source": a.source,
                    "evidence": a.evidence,
                }
                if done is None:
                    entry["status"] = "not re-run (the sweep's explain key)"
                elif "error" in done:
                    entry["status"] = f"failed: {done['error']}"
                else:
                    alt = done["result"]
                    entry["result"] = alt
                    # the first objective the assumption moves (static power: energy only)
                    changes = {
                        m: _change(float(row[m]), float(alt[m])) for m in objectives if m in alt
                    }
                    moved = next((m for m, c in changes.items() if c >= MOVES), metric)
                    peers = [float(r[moved]) for r in grows if r["key"] != row["key"]]
                    entry["metric"] = moved
                    entry["change"] = changes.get(moved, 0.0)
                    entry["rank"] = _rank(float(alt[moved]), peers, objectives.get(moved, sense))
                    entry["nominal_rank"] = _rank(
                        float(row[moved]), peers, objectives.get(moved, sense)
                    )
                why["whatif"].append(entry)
            ran = [w for w in why["whatif"] if "result" in w]
            why["deciding"] = max(ran, key=lambda w: w["change"])["assumption"] if ran else None
            row["why"] = why
        ordered = sorted(grows, key=lambda r: r["why"]["rank"])
        group["why"] = [why_line(r) for r in ordered]


def dominated_by(
    row: dict[str, Any], rows: list[dict[str, Any]], objectives: dict[str, str]
) -> list[str]:
    """The designs of ``rows`` that dominate ``row`` (at least as good on every objective,
    better on one): why a point is off its workload's Pareto set."""

    def better(a: float, b: float, sense: str) -> bool:
        return a > b if sense == "max" else a < b

    out = []
    for other in rows:
        if other["key"] == row["key"]:
            continue
        pairs = [(float(other[m]), float(row[m]), sense) for m, sense in objectives.items()]
        if all(not better(b, a, sense) for a, b, sense in pairs) and any(
            better(a, b, sense) for a, b, sense in pairs
        ):
            out.append(str(other["label"]))
    return out


def _batch(record: dict[str, Any]) -> int | None:
    """The batch size of a record's workload (its ``workload.batch`` override, else its
    preset's)."""
    batch = (record.get("overrides") or {}).get("workload.batch")
    if isinstance(batch, int):
        return batch
    try:
        return int(_workload_batch(record["workload"]))
    except (NmpError, KeyError, TypeError, ValueError):
        return None


@functools.cache
def _workload_batch(name: str) -> int:
    # numpy: loaded on use
    from nmp.workload import load_workload

    return load_workload(name).batch


def key_assumptions_or_none(arch: str) -> tuple[KeyAssumption, ...]:
    try:
        return key_assumptions(arch)
    except NmpError:
        return ()


def _fmt(value: float) -> str:
    # report's number format, without importing the report package's rich parts
    from nmp.report.format import fmt_num

    return fmt_num(value)


def _set_text(overrides: dict[str, Any]) -> str:
    def value(v: Any) -> str:
        return str(v).lower() if isinstance(v, bool) else str(v)

    return " ".join(f"--set {k}={value(v)}" for k, v in overrides.items())


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


METRIC_NAMES = {
    "lookups_per_s": "lookups/s",
    "energy_pj_per_lookup": "pJ/lookup",
    "area_mm2": "mm²",
    "latency_ns": "ns per batch",
}


def _whatif_text(row: dict[str, Any], why: dict[str, Any], w: dict[str, Any], bound: str) -> str:
    """The deciding assumption, its evidence and what the point makes under its ``--set``."""
    alt, moved = w["result"], w["metric"]
    ev = why["evidence"].get(w["evidence"])
    evidence = f" ({w['evidence']} = {ev:.3g})" if ev is not None else ""
    flag = _set_text(w["set"])
    if w["change"] < MOVES:
        return (
            f"key assumption: {w['assumption']}{evidence}; `{flag}` changes no objective by "
            "1 % or more: it does not decide this point"
        )
    rank, was = w["rank"], w["nominal_rank"]
    standing = (
        f"still {_ordinal(rank)} of {why['of']}"
        if rank == was
        else f"{_ordinal(rank)} of {why['of']} instead of {_ordinal(was)}"
    )
    if alt.get("binding") and alt["binding"] != bound:
        standing += f", then bound by {alt['binding']}"
    unit = METRIC_NAMES.get(moved, moved)
    return (
        f"deciding assumption: {w['assumption']}{evidence}; `{flag}` gives "
        f"{_fmt(alt[moved])} {unit} instead of {_fmt(row[moved])} ({standing})"
    )


def why_line(row: dict[str, Any]) -> str:
    """One sentence per point: standing, binding resource, regime, deciding assumption and its
    result, area."""
    why = row["why"]
    metric = why["metric"]
    unit = METRIC_NAMES.get(metric, metric)
    head = f"{row['label']}: {_ordinal(why['rank'])} of {why['of']} on {unit} ({_fmt(row[metric])}"
    if row.get("speedup") is not None and not row.get("is_baseline"):
        head += f", {row['speedup']:.2f}x the baseline"
    head += ")"
    if why["best_on"]:
        head += "; best on " + ", ".join(METRIC_NAMES.get(m, m) for m in why["best_on"])
    b = why["binding"]
    parts = [head]
    if why.get("dominated_by"):
        names = ", ".join(why["dominated_by"])
        objectives = " and ".join(METRIC_NAMES.get(m, m) for m in why.get("objectives", []))
        parts.append(
            f"off the Pareto set: {names} at least as good on {objectives or 'every objective'}"
        )
    if b["resource"] != "?":
        text = f"bound by {b['resource']}"
        if b["share"] is not None:
            text += f" ({b['share']:.0%} of the batch time"
            if b["next"]:
                text += f"; next {b['next']} at {b['next_ratio']:.0%} of it"
            text += ")"
        parts.append(text)
    parts += [f"**{flag}**" for flag in why["regime"]]
    deciding = next((w for w in why["whatif"] if w["assumption"] == why["deciding"]), None)
    if deciding is not None:
        parts.append(_whatif_text(row, why, deciding, b["resource"]))
    elif why["whatif"]:
        first = why["whatif"][0]
        parts.append(
            f"key assumption: {first['assumption']} (`{_set_text(first['set'])}` tests it; "
            f"{first['status']})"
        )
    parts.append(f"area {why['area']}")
    return "; ".join(parts)


def run_whatifs(
    records: list[dict[str, Any]],
    summary: dict[str, Any],
    mode: str,
    run_dir: Any,
    *,
    point_fn: Any,
    executor: Any,
    progress: Any,
) -> dict[str, dict[str, Any]]:
    """Re-run the explained points under their key assumptions (those not already in the run
    folder's ``whatif.jsonl``: a resumed run re-runs only what is missing); returns every
    what-if record by id."""
    from pathlib import Path

    from nmp.evaluate.store import JsonlLog, read_jsonl

    path = Path(run_dir) / WHATIF_FILE
    jobs = whatif_points(records, summary, mode)
    wanted = {w.id for w in jobs}
    done = {r["id"]: r for r in read_jsonl(path, repair=True) if r.get("id") in wanted}
    todo = [w for w in jobs if w.id not in done]
    if not todo:
        return done
    stage = getattr(progress, "stage", None)
    if callable(stage):
        stage("what-if", f"re-running {len(todo)} points under their designs' key assumptions")
    progress.start(len(jobs), len(jobs) - len(todo))
    try:
        with JsonlLog(path) as log:
            for i, outcome in executor.run(point_fn, [w.point for w in todo]):
                w = todo[i]
                record = whatif_record(w, outcome)
                log.append(record)
                done[w.id] = record
                detail = (
                    f"{outcome['result']['lookups_per_s']:.4g} lookups/s"
                    if outcome.get("ok")
                    else str(outcome.get("error"))
                )
                label = (
                    f"{w.point.label()} on {w.point.workload} with {_set_text(w.assumption.set)}"
                )
                progress.point(label, bool(outcome.get("ok")), detail)
    finally:
        progress.finish()
    return done
