"""Sensitivity study: which modelling assumptions decide the ordering of two designs.

A custom study (``runner = "nmp.evaluate.sensitivity:run_study"``; see
``workloads/sweeps/papers/sensitivity-recross-trim.toml``). Both designs run on one memory
(``params.set``) at the nominal values of every assumption, then once per assumption at its low
and at its high value, everything else nominal (one-at-a-time, as a tornado diagram reads).
The figure of merit is the throughput ratio ``design / reference`` (``metric =
"lookups_per_s"``, the default), or for a figure to minimize (``"energy_pj_per_lookup"``,
``"area_mm2"``, ``"latency_ns"``: :mod:`nmp.evaluate.metrics`) ``reference / design``: above
1.0 the design is better either way. An assumption whose low
or high value moves the ratio across 1.0 is one the ordering of the two designs depends on.

Params::

    design = "recross"                # the numerator of the ratio
    reference = "trim-g"              # the denominator
    workload = "recross-eval"
    metric = "lookups_per_s"          # or energy_pj_per_lookup, area_mm2, latency_ns
    set = { "arch.memory.preset" = "ddr5-4800-40", ... }   # both designs, every point
    [[assumptions]]
    name = "workload skew (Zipf exponent)"
    source = "chosen: 1.05; Criteo's exponent is not in the sources"
    low = { "workload.alpha" = 0.8 }  # overrides at the low end (several keys move together)
    high = { "workload.alpha" = 1.3 }
    designs = ["recross", "trim-g"]   # which designs the assumption applies to (default both)

Two settings of one preset (a GPU kernel variant against the stock one, SALP on and off) are
two sides too: ``design_set`` and ``reference_set`` add each side's own overrides (after
``set``), and ``design_label`` / ``reference_label`` name the sides (the presets' names by
default; required where both are one preset). An assumption's ``designs`` names sides by label.
"""

from __future__ import annotations

import csv
import io
import json
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nmp.errors import NmpError
from nmp.evaluate.executor import point_worker_init
from nmp.evaluate.metrics import METRICS, better_ratio, ratio_name
from nmp.fileio import atomic_write_text
from nmp.plugins import study_runner


@dataclass(frozen=True)
class Assumption:
    """One assumption of the model, at a low and a high value (override sets)."""

    name: str
    low: dict[str, Any]
    high: dict[str, Any]
    designs: tuple[str, ...]
    source: str = ""


@dataclass(frozen=True)
class Side:
    """One side of the ratio: a preset, its own overrides, and its name in the study."""

    label: str
    arch: str
    set: dict[str, Any]


@dataclass(frozen=True)
class SensitivitySetup:
    sides: tuple[Side, Side]  # (design, reference)
    workload: str
    set: dict[str, Any]
    assumptions: tuple[Assumption, ...]
    metric: str = "lookups_per_s"

    @property
    def design(self) -> str:
        """The design side's label (the numerator of the ratio)."""
        return self.sides[0].label

    @property
    def reference(self) -> str:
        return self.sides[1].label

    def side(self, label: str) -> Side:
        return self.sides[0] if label == self.sides[0].label else self.sides[1]

    def ratio(self, design: dict[str, float], reference: dict[str, float]) -> float:
        """> 1 when the design is better on the metric (faster, less energy per lookup)."""
        return better_ratio(self.metric, design[self.metric], reference[self.metric])

    def ratio_name(self) -> str:
        return ratio_name(self.metric, self.design, self.reference)


def _table(value: Any, key: str) -> dict[str, Any]:
    if not isinstance(value, dict) or not value:
        raise NmpError(f"params.{key}: must be a table of overrides (dotted path = value)")
    for path in value:
        if path.split(".", 1)[0] not in ("arch", "workload", "memory"):
            raise NmpError(f"params.{key}.{path}: overrides start with arch., workload. or memory.")
    return dict(value)


def parse_params(params: dict[str, Any]) -> SensitivitySetup:
    """The study's params, checked; errors name the key."""
    for key in ("design", "reference", "workload"):
        if not isinstance(params.get(key), str) or not params[key]:
            raise NmpError(f"params.{key}: must name a preset")
    unknown = sorted(set(params) - _KEYS)
    if unknown:
        raise NmpError(f"params: unknown key(s) {', '.join(unknown)}")
    sides = tuple(_side(params, role) for role in ("design", "reference"))
    if sides[0].label == sides[1].label:
        raise NmpError(
            f"params.design_label, params.reference_label: the two sides need two names "
            f"(both are '{sides[0].label}')"
        )
    design, reference = sides[0].label, sides[1].label
    raw = params.get("assumptions")
    if not isinstance(raw, list) or not raw:
        raise NmpError("params.assumptions: needs at least one [[params.assumptions]] table")
    out = []
    for i, a in enumerate(raw):
        key = f"assumptions[{i}]"
        if not isinstance(a, dict):
            raise NmpError(f"params.{key}: must be a table")
        extra = sorted(set(a) - {"name", "low", "high", "designs", "source"})
        if extra:
            raise NmpError(f"params.{key}: unknown key(s) {', '.join(extra)}")
        if not isinstance(a.get("name"), str) or not a["name"]:
            raise NmpError(f"params.{key}.name: must be a non-empty string")
        designs = tuple(a.get("designs", (design, reference)))
        stray = [d for d in designs if d not in (design, reference)]
        if not designs or stray:
            raise NmpError(
                f"params.{key}.designs: must name '{design}' and/or '{reference}' "
                f"(params.design, params.reference)" + (f", got {stray[0]!r}" if stray else "")
            )
        out.append(
            Assumption(
                a["name"],
                _table(a.get("low"), f"{key}.low"),
                _table(a.get("high"), f"{key}.high"),
                designs,
                str(a.get("source", "")),
            )
        )
    names = [a.name for a in out]
    if len(set(names)) != len(names):
        raise NmpError("params.assumptions: names must be unique")
    common = _table(params["set"], "set") if "set" in params else {}
    metric = params.get("metric", "lookups_per_s")
    if metric not in METRICS:
        raise NmpError(f"params.metric: must be one of {', '.join(METRICS)}, got {metric!r}")
    return SensitivitySetup((sides[0], sides[1]), params["workload"], common, tuple(out), metric)


_KEYS = {"design", "reference", "workload", "set", "assumptions", "metric"} | {
    f"{role}_{part}" for role in ("design", "reference") for part in ("set", "label")
}


def _side(params: dict[str, Any], role: str) -> Side:
    """The ``design`` or ``reference`` side: its preset, its label and its own overrides."""
    label = params.get(f"{role}_label", params[role])
    if not isinstance(label, str) or not label:
        raise NmpError(f"params.{role}_label: must be a non-empty string")
    own = _table(params[f"{role}_set"], f"{role}_set") if f"{role}_set" in params else {}
    return Side(label, params[role], own)


def _run(job: tuple[str, str, tuple[tuple[str, Any], ...]]) -> dict[str, float]:
    # numpy: loaded on use (start-up time)
    from nmp.evaluate.point import run_point

    arch, workload, items = job
    res = run_point(arch, workload, overrides=dict(items))
    return {m: float(getattr(res, m)) for m in METRICS}


def _jobs(setup: SensitivitySetup) -> dict[tuple[str, str, str], tuple]:
    """(assumption or "", "low"/"high"/"nominal", side's label) -> the point to run."""
    jobs = {}
    for d in (setup.design, setup.reference):
        side = setup.side(d)
        over = {**setup.set, **side.set}
        jobs[("", "nominal", d)] = (side.arch, setup.workload, tuple(sorted(over.items())))
    for a in setup.assumptions:
        for end in ("low", "high"):
            for d in (setup.design, setup.reference):
                side = setup.side(d)
                moved = getattr(a, end) if d in a.designs else {}
                over = {**setup.set, **side.set, **moved}
                jobs[(a.name, end, d)] = (side.arch, setup.workload, tuple(sorted(over.items())))
    return jobs


def _label(overrides: dict[str, Any]) -> str:
    """The value of an override set: one value when every key takes the same, else key=value
    with the last two parts of each key (bankgroup.lanes=8)."""
    values = list(overrides.values())
    if all(v == values[0] for v in values):
        return str(values[0])
    return ", ".join(f"{'.'.join(k.split('.')[-2:])}={v}" for k, v in overrides.items())


def check_params(params: dict[str, Any]) -> None:
    """``nmp evaluate --check``: the study's parameters, as :func:`parse_params` reads them."""
    parse_params(params)


@study_runner
def run_study(params: dict[str, Any], *, out_dir: Path, jobs: int = 1) -> list[dict[str, Any]]:
    """Run the sensitivity study into ``out_dir`` (report.md, results.csv, results.jsonl,
    tornado.png); returns one row per assumption, widest swing first."""
    # matplotlib: loaded on use (start-up time)
    from nmp.report.tornado import plot_tornado, tornado_order

    setup = parse_params(params)
    todo = _jobs(setup)
    unique = sorted(set(todo.values()), key=repr)
    if jobs > 1:
        with ProcessPoolExecutor(max_workers=jobs, initializer=point_worker_init) as pool:
            measured = dict(zip(unique, pool.map(_run, unique), strict=True))
    else:
        measured = {job: _run(job) for job in unique}

    def ratio(name: str, side: str) -> float:
        return setup.ratio(
            measured[todo[(name, side, setup.design)]],
            measured[todo[(name, side, setup.reference)]],
        )

    nominal = ratio("", "nominal")
    rows = []
    for a in setup.assumptions:
        lo, hi = ratio(a.name, "low"), ratio(a.name, "high")
        rows.append(
            {
                "assumption": a.name,
                "low": _label(a.low),
                "high": _label(a.high),
                "applies_to": "+".join(a.designs),
                "ratio_low": lo,
                "ratio_nominal": nominal,
                "ratio_high": hi,
                "swing": abs(hi - lo),
                "decides_order": (min(lo, hi, nominal) < 1.0 < max(lo, hi, nominal)),
                "source": a.source,
            }
        )
    rows = tornado_order(rows)
    bars = [
        {**r, "label": r["assumption"], "low_label": r["low"], "high_label": r["high"]}
        for r in rows
    ]
    title = f"{setup.ratio_name()} on {setup.workload}: each assumption at its low and high value"
    plot_tornado(
        bars,
        nominal,
        out_dir / "tornado.png",
        title=title,
        xlabel=f"{setup.ratio_name()} (> 1: {setup.design} better)",
    )
    _write_tables(rows, out_dir)
    atomic_write_text(out_dir / "report.md", _report(setup, rows, nominal))
    return rows


def _write_tables(rows: list[dict[str, Any]], out_dir: Path) -> None:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    atomic_write_text(out_dir / "results.csv", buf.getvalue())
    atomic_write_text(
        out_dir / "results.jsonl", "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows)
    )


def _report(setup: SensitivitySetup, rows: list[dict[str, Any]], nominal: float) -> str:
    pinned = ", ".join(f"{k} = {v}" for k, v in setup.set.items()) or "each preset's own"
    deciding = [r["assumption"] for r in rows if r["decides_order"]]
    out = [
        f"# Sensitivity: {setup.design} against {setup.reference}",
        "",
        f"Ratio {setup.ratio_name()} on `{setup.workload}` (> 1: {setup.design} better), both "
        f"on one memory ({pinned}). Nominal ratio: **{nominal:.3f}** "
        f"({setup.design} {'better' if nominal > 1 else 'worse'}). Each assumption moves to "
        "its low and high value with every other at its nominal value (one at a time).",
        "",
        *_sides_line(setup),
        "Assumptions that move the ratio across 1.0 (the ordering depends on them): "
        + (", ".join(f"**{d}**" for d in deciding) if deciding else "none"),
        "",
        "| assumption | applies to | low | ratio at low | high | ratio at high | swing | source |",
        "|---|---|---|---:|---|---:|---:|---|",
    ]
    for r in rows:
        out.append(
            f"| {r['assumption']} | {r['applies_to']} | {r['low']} | {r['ratio_low']:.3f} | "
            f"{r['high']} | {r['ratio_high']:.3f} | {r['swing']:.3f} | {r['source']} |"
        )
    out += ["", "![tornado](tornado.png)", ""]
    return "\n".join(out)


def _sides_line(setup: SensitivitySetup) -> list[str]:
    """The sides' presets and own overrides, where a side is more than a preset by its name."""
    sides = [setup.side(d) for d in (setup.design, setup.reference)]
    if all(s.label == s.arch and not s.set for s in sides):
        return []
    parts = []
    for s in sides:
        own = ", ".join(f"{k} = {v}" for k, v in s.set.items())
        parts.append(f"`{s.label}`: preset `{s.arch}`" + (f" with {own}" if own else ""))
    return ["Sides: " + "; ".join(parts) + ".", ""]
