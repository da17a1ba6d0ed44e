"""Area of a design: its processing units (from the presets' cited per-chip figures) plus the
parity units that make in-memory fault tolerance possible; for a design whose host CPU does
the work (no near-memory units), the CPU's die (``host.die_area_mm2``, with its source).

``area_mm2`` of a level is one unit's area on one chip: on the buffer chip for the rank level,
on every DRAM chip of the rank for bank-group and bank units (each chip holds its slice of the
unit, as in TRiM and ReCross). The parity unit's area and clock come from ``nmp rtl report``
(:func:`nmp.rtl.synth.parity_unit_figures`, scaled to 40 nm) when its cached figures exist;
otherwise a placeholder, reported as such in the breakdown.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from nmp.arch import memview as mv
from nmp.parity_codes import PARITY_CODES

UNIT_TECH_NM = 40.0  # the node the units' figures are given at (ReCross: 40 nm)
# Placeholder when no RTL figures are available: a 64-bit XOR datapath with a small
# read-modify-write pipeline, chosen as 0.02 mm^2 at 40 nm (about 10k gates x 2 um^2).
PLACEHOLDER_PARITY_AREA_MM2 = 0.02
PLACEHOLDER_PARITY_CLOCK_MHZ = 500.0


@dataclass
class AreaReport:
    total: float
    by_level: dict[str, float] = field(default_factory=dict)
    parity_source: str = ""
    # where a part's figure comes from, for parts a report names ("host_die": a datasheet)
    sources: dict[str, str] = field(default_factory=dict)


def parity_unit_figures(width_bits: int = 64, *, gf: bool = False) -> tuple[float, float, str]:
    """(area mm^2, clock MHz, source) of one parity unit at 40 nm: the XOR datapath, or with
    ``gf`` the GF(2^8) multiply-and-XOR one (a Reed-Solomon parity unit)."""
    try:
        # numba, pyrtl: loaded on use (start-up time)
        from nmp.rtl.synth import CACHE_PATH
        from nmp.rtl.synth import parity_unit_figures as rtl_figures

        if CACHE_PATH.exists():
            fig = rtl_figures(width_bits, gf=gf, tech_nm=UNIT_TECH_NM)
            return fig.pyrtl_area_mm2, fig.fmax_mhz, f"nmp rtl report ({CACHE_PATH.name})"
    except Exception:  # noqa: BLE001 - any failure falls back to the documented placeholder
        pass
    return PLACEHOLDER_PARITY_AREA_MM2, PLACEHOLDER_PARITY_CLOCK_MHZ, "placeholder (no RTL figures)"


def design_area_mm2(arch) -> AreaReport:
    spec, mem = arch.spec, arch.mem
    ranks = mv.org(mem, "channels") * mv.org(mem, "ranks")
    chips = mv.chips_per_rank(mem)
    by_level: dict[str, float] = {}
    for lv in ("rank", "bankgroup", "bank"):
        unit = spec.level(lv)
        if unit.units:
            per_rank = unit.units * unit.area_mm2 * (1 if lv == "rank" else chips)
            by_level[lv] = per_rank * ranks
    src = ""
    sources: dict[str, str] = {}
    if not arch.policy.near_memory and spec.host.die_area_mm2 > 0:
        # the host does the work: its die is the design's area, as a GPU's die is a GPU's
        by_level["host_die"] = spec.host.die_area_mm2
        sources["host_die"] = spec.host.die_area_source or "preset (no source given)"
    if arch.policy.near_memory:
        p = spec.parity
        if p.unit_area_mm2 >= 0:
            area, src = p.unit_area_mm2, "preset"
        else:
            area, _, src = parity_unit_figures(gf=PARITY_CODES.get(p.code).unit_multiplies)
        lay = arch.layouts.get(p.level)
        nodes = lay.nodes if lay is not None else ranks
        by_level["parity"] = area * nodes
    return AreaReport(float(sum(by_level.values())), by_level, src, sources)


__all__ = ["AreaReport", "design_area_mm2", "parity_unit_figures"]
