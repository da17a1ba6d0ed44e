"""Model functions for the near-memory papers' energy, area and RankCache claims.

As :mod:`nmp.papers.nmp_speed` for speed: each compares design points
(:mod:`nmp.papers.nmp_points`) under a paper's setup or the kit's defaults and returns the
model's value; an energy saving also its ``model_ceiling`` (every read at its cheapest level),
which rests on the model's run and so is no physical bound.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from nmp.arch.energy import read_share
from nmp.arch.presets import load_arch_spec
from nmp.config import split_overrides
from nmp.errors import NmpError
from nmp.papers import nmp_points as pts
from nmp.papers.nmp_points import ROOTS, over_seeds, point, point_overrides, where_text
from nmp.plugins import claim_model


@functools.cache
def _energy_floor(arch: str, items: tuple[tuple[str, Any], ...]) -> tuple[float, str]:
    """(the least energy per lookup the point's own work allows, how): every column read
    charged at the cheapest level of the design's read path (``arch.dram_energy``), the rest
    as modeled (activations, refresh, background, I/O, units)."""
    res = pts.run_items(arch, items)
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
@over_seeds
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
    floor, how = _energy_floor(*point_overrides(design, setup, memory_of, None, axes))
    bound = 100.0 * (1.0 - floor / e_base)
    return {
        "value": 100.0 * (1.0 - e_design / e_base),
        "detail": f"{design} {e_design:.0f} vs {baseline} {e_base:.0f} pJ/lookup, "
        f"{where_text(setup, memory_of, axes)}",
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
@over_seeds
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
        f"{where_text(setup, memory_of, {})}",
    }


@claim_model
@over_seeds
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
@over_seeds
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
        f"{where_text(setup, memory_of, axes)}",
    }
