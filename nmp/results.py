"""Results shared by every model: what one operation cost, and one design point's metrics.

Memory-level statistics (``MemStats``) live in :mod:`nmp.memory`; operators above memory
(gather-reduce on an NMP design, the GPU embedding stage, a parity update) return an
:class:`OpResult`, and a design point of a sweep is a :class:`PointResult`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nmp.units import is_number


@dataclass
class OpResult:
    """Cost of one operation on one design.

    ``energy_pj`` is split by component (``dram_core``, ``dram_io``, ``units``, ``sram``, ...);
    ``bytes_by_level`` counts the bytes that moved at each level (``channel``, ``rank``,
    ``bankgroup``, ``bank``, ``hbm``, ``l2``, ...). ``output`` holds functional results where the
    operation was executed (e.g. pooled embeddings, float32 [batch, dim] per table).
    """

    cycles: float
    t_ns: float
    energy_pj: dict[str, float] = field(default_factory=dict)
    bytes_by_level: dict[str, float] = field(default_factory=dict)
    breakdown: dict[str, Any] = field(default_factory=dict)
    load_imbalance: float = 1.0
    output: Any = None

    @property
    def total_energy_pj(self) -> float:
        return float(sum(self.energy_pj.values()))


@dataclass
class PointResult:
    """One design point: the JSON contract of ``nmp run --json`` and of a sweep's rows.

    Required keys (see ``to_json``): ``arch``, ``workload``, ``latency_ns``, ``lookups_per_s``,
    ``energy_pj_per_lookup``, ``area_mm2``, ``breakdown``.
    """

    arch: str
    workload: str
    memory: str
    latency_ns: float
    lookups_per_s: float
    energy_pj_per_lookup: float
    area_mm2: float
    breakdown: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "extra"}
        out.update(self.extra)
        return jsonable(out)


# A point's headline figures: each a number in [0, 1e18] (no quantity the kit models is larger:
# a saved 1e308 reached the plots' axes, 10**400 no float), the time and the rate above 0 (a
# batch takes time; a rate of 0 is no speed-up to compare)
HEADLINE_FIGURES = ("latency_ns", "lookups_per_s", "energy_pj_per_lookup", "area_mm2")
POSITIVE_FIGURES = ("latency_ns", "lookups_per_s")
MAX_FIGURE = 1e18


def result_problem(data: Any) -> tuple[str, str] | None:
    """(key, what is wrong) where ``data`` is not a :meth:`PointResult.to_json` (its names
    and headline figures), else None: what a report may read from a saved point."""
    if not isinstance(data, dict):
        return "result", f"must be an object, got {type(data).__name__}"
    for name in ("arch", "workload"):
        if not isinstance(data.get(name), str):
            return f"result.{name}", "must be a string"
    for name in HEADLINE_FIGURES:
        v = data.get(name)
        if not is_number(v):
            return f"result.{name}", f"must be a number, got {_short(v)}"
        low = "above 0" if name in POSITIVE_FIGURES else "at least 0"
        if not (v > 0 if name in POSITIVE_FIGURES else v >= 0) or not v <= MAX_FIGURE:
            return f"result.{name}", f"must be {low} and at most 1e18, got {_short(v)}"
    if not isinstance(data.get("breakdown", {}), dict):
        return "result.breakdown", "must be an object"
    if not isinstance(data.get("breakdown", {}).get("bottleneck", ""), str):
        return "result.breakdown.bottleneck", "must be a string"
    return None


def _short(value: Any) -> str:
    """A value for a message: a number in three figures where its digits are many."""
    text = repr(value)
    if len(text) <= 24:
        return text
    return (
        format(float(value), ".3g")
        if is_number(value) and abs(value) < 1e308
        else text[:24] + "..."
    )


def jsonable(value: Any) -> Any:
    """numpy scalars/arrays and dataclasses to plain JSON types, recursively."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return jsonable(dataclasses.asdict(value))
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    return value
