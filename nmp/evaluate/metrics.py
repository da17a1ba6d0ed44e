"""The figures of a design point that a sweep can optimize and a study can compare, each with the
direction that is better (``"max"`` or ``"min"``) and how a report names it. Without numpy: the
sweep file's checks and a study's parameters read it before any model runs."""

from __future__ import annotations

# PointResult field -> the better direction
METRICS = {
    "lookups_per_s": "max",
    "energy_pj_per_lookup": "min",
    "area_mm2": "min",
    "latency_ns": "min",
}
LABELS = {
    "lookups_per_s": "lookups/s",
    "energy_pj_per_lookup": "energy per lookup",
    "area_mm2": "area",
    "latency_ns": "latency",
}


def better_ratio(metric: str, design: float, reference: float) -> float:
    """> 1 when ``design`` is better than ``reference`` on ``metric``: design / reference for a
    figure to maximize, reference / design for one to minimize."""
    return design / reference if METRICS[metric] == "max" else reference / design


def ratio_name(metric: str, design: str, reference: str) -> str:
    """What :func:`better_ratio` divides, in words ("trim-g / host-cpu lookups/s")."""
    first, second = (design, reference) if METRICS[metric] == "max" else (reference, design)
    return f"{first} / {second} {LABELS[metric]}"
