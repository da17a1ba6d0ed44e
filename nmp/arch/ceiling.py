"""The model's own ceiling of a design point (``model_ceiling`` in ``nmp validate``).

Not a physical bound: it keeps what the point's replays decided, so it inherits the model's
scheduler window and row hits. The first-principles bound, computed from the stated resources
with no model run, is :mod:`nmp.arch.first_principles`.

The timing model (:mod:`nmp.arch.timing`) replays every node's requests and takes the slowest
bound. Its ceiling assumes instead that every shared resource runs at its peak with the work
spread perfectly over it, keeping only what the point's own replays decided (how many ACTs its
lookups needed, how many bytes crossed each path): any schedule of the same work takes at least

* **activation window**: the point's ACTs, spread over every rank, at one ACT per
  max(tRRD_S, tFAW / 4) per rank;
* **column paths**: the bytes the units read and the partial sums they receive, over the sum of
  every data path's peak (rank bus, bank-group and bank column paths), whichever split;
* **C/A**: per rank, the instructions of lookups served inside the DRAM chips and the rank
  units' own DRAM commands, at the C/A bus's bits per cycle, spread over the ranks;
* **host link**: every instruction and every pooled result over the channels at their peak;
* **compute**: every element added, over every unit's lanes at its clock;
* **host CPU** (the host design): the reads that miss its LLC at the channels' peak, and its
  adds on its SIMD lanes.

A figure above this ceiling cannot come from the model as it runs this work, whatever the
schedule; whether it is above physics is for the first-principles bound to say. The
arithmetic is kept as text for the report.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from nmp.arch import memview as mv
from nmp.arch.layout import build_layout
from nmp.arch.spec import ArchSpec


class BatchTerms:
    """A batch time set by named terms (each the shortest batch time one resource allows): the
    longest binds. Shared by the model's ceiling and the first-principles bound."""

    lookups: int
    terms_ns: dict[str, float]

    @property
    def time_ns(self) -> float:
        return max(self.terms_ns.values(), default=0.0)

    @property
    def binding(self) -> str:
        return max(self.terms_ns, key=lambda k: self.terms_ns[k]) if self.terms_ns else ""

    @property
    def lookups_per_s(self) -> float:
        t = self.time_ns
        return self.lookups / t * 1e9 if t > 0 else float("inf")


@dataclass
class Ceiling(BatchTerms):
    """The ceiling of one design point: its shortest batch time and the terms that set it."""

    lookups: int
    terms_ns: dict[str, float] = field(default_factory=dict)  # bound -> shortest batch ns
    arithmetic: dict[str, str] = field(default_factory=dict)  # bound -> how it was computed

    def text(self) -> str:
        """The binding term's arithmetic and the others' times."""
        if not self.terms_ns:
            return "no bound"
        b = self.binding
        others = ", ".join(
            f"{k} {v / 1e3:.1f} us" for k, v in self.terms_ns.items() if k != b and v > 0
        )
        return (
            f"{self.lookups} lookups in >= {self.time_ns / 1e3:.1f} us ({b}: "
            f"{self.arithmetic.get(b, '')}) = {self.lookups_per_s / 1e6:.0f} M lookups/s; "
            f"others: {others}"
        )


def _us(ns: float) -> str:
    return f"{ns / 1e3:.1f} us"


def host_ceiling(spec: ArchSpec, mem, breakdown: dict, lookups: int, flops: float) -> Ceiling:
    """The host CPU: the bytes its LLC lets through at the channels' peak, its adds on its
    lanes."""
    ch = mv.org(mem, "channels")
    peak = mv.channel_peak_gbps(mem) * ch
    nbytes = float(breakdown["channel"]["bytes"])
    h = spec.host
    lanes = h.cores * h.simd_lanes * h.clock_ghz
    c = Ceiling(lookups)
    c.terms_ns["channel"] = nbytes / peak
    c.arithmetic["channel"] = (
        f"{nbytes / 1e6:.2f} MB past the LLC / ({ch} ch x {peak / ch:.1f} GB/s) = "
        f"{_us(nbytes / peak)}"
    )
    c.terms_ns["host_compute"] = flops / lanes
    c.arithmetic["host_compute"] = f"{flops:.0f} adds / {lanes:.0f} per ns"
    return c


def column_peak_gbps(spec: ArchSpec, mem, levels: dict) -> tuple[float, str]:
    """The sum of every data path's peak in the design (GB/s) and its arithmetic; with
    ``shared_bankgroup_column_path``, a bank unit in a bank group with a bank-group unit adds
    no path of its own."""
    total, parts = 0.0, []
    for lv, d in levels.items():
        peak = float(d["peak_gbps"])
        total += peak
        parts.append(f"{lv} {d['nodes']} x {float(d['node_peak_gbps']):.1f}")
    if spec.shared_bankgroup_column_path and {"bankgroup", "bank"} <= set(levels):
        lays = build_layout(spec, mem)
        groups = {int(g) for g in lays["bankgroup"].unit_bg.ravel()}
        bank = lays["bank"]
        sharing = sum(int(bank.unit_bg[u, 0]) in groups for u in range(bank.units))
        if sharing and lays["bankgroup"].capacity_banks and bank.capacity_banks:
            n = sharing * bank.channels * bank.ranks
            node_peak = float(levels["bank"]["node_peak_gbps"])
            total -= n * node_peak
            parts.append(f"- {n} bank units sharing a bank group's path x {node_peak:.1f}")
    return total, " + ".join(parts).replace("+ -", "-")


def near_memory_ceiling(
    spec: ArchSpec, mem, breakdown: dict, lookups: int, mean_dim: float
) -> Ceiling:
    """A near-memory design (see the module docstring) from its point's breakdown."""
    tck = mv.tck_ns(mem)
    ch, rk = mv.org(mem, "channels"), mv.org(mem, "ranks")
    ranks = ch * rk
    levels = breakdown.get("levels", {})
    c = Ceiling(lookups)
    gap = max(mv.timing(mem, "nRRDS"), mv.timing(mem, "nFAW") / 4)
    t_act = float(breakdown["bounds_ns"].get("act_window", 0.0))
    acts = t_act / (gap * tck) * ranks
    c.terms_ns["act_window"] = t_act
    c.arithmetic["act_window"] = (
        f"{acts:.0f} ACTs / {ranks} ranks x max(tRRD_S, tFAW/4) = {gap:g} tCK x "
        f"{tck:.4f} ns = {_us(t_act)}"
    )
    nbytes = sum(float(d["bytes"]) for d in levels.values())
    peak, how = column_peak_gbps(spec, mem, levels)
    if peak > 0:
        c.terms_ns["column_paths"] = nbytes / peak
        c.arithmetic["column_paths"] = (
            f"{nbytes / 1e6:.2f} MB read and summed / ({how} = {peak:.1f} GB/s) = "
            f"{_us(nbytes / peak)}"
        )
    ins = spec.instruction
    in_dram = sum(int(levels[lv]["lookups"]) for lv in ("bankgroup", "bank") if lv in levels)
    ca_cycles = in_dram * ins.bits_per_lookup / ins.dram_ca_bits_per_cycle
    rank_cmd = float(breakdown.get("instruction", {}).get("rank_command_cycles", 0.0))
    t_ca = (ca_cycles + rank_cmd) / ranks * tck
    if t_ca > 0:
        c.terms_ns["instruction_ca"] = t_ca
        c.arithmetic["instruction_ca"] = (
            f"({in_dram} in-DRAM lookups x {ins.bits_per_lookup} bits / "
            f"{ins.dram_ca_bits_per_cycle:g} bits per tCK + {rank_cmd:.0f} rank-unit command "
            f"tCK) / {ranks} ranks = {_us(t_ca)}"
        )
    chan = breakdown.get("channel", {})
    ins_bytes = lookups * ins.bits_per_lookup / 8
    result_bytes = max(float(chan.get("bytes", 0.0)) - ins_bytes, 0.0)
    t_link = (
        lookups * ins.bits_per_lookup / ins.host_bits_per_cycle * tck
        + result_bytes / mv.channel_peak_gbps(mem)
    ) / ch
    c.terms_ns["host_link"] = t_link
    c.arithmetic["host_link"] = (
        f"({lookups} x {ins.bits_per_lookup} bits / {ins.host_bits_per_cycle:g} bits per tCK + "
        f"{result_bytes / 1e6:.2f} MB of results / {mv.channel_peak_gbps(mem):.1f} GB/s) / "
        f"{ch} ch = {_us(t_link)}"
    )
    elements, lanes = 0.0, 0.0
    for lv, d in levels.items():
        unit = spec.level(lv)
        sums_in = float(d.get("partial_sum_bytes_in", 0.0)) / 4
        elements += float(d["lookups"]) * mean_dim + sums_in
        lanes += int(d["nodes"]) * unit.lanes * unit.clock_mhz / 1e3  # elements per ns
    if lanes > 0:
        c.terms_ns["compute"] = elements / lanes
        c.arithmetic["compute"] = (
            f"{elements:.0f} elements added / {lanes:.1f} per ns (every unit's lanes x clock) "
            f"= {_us(elements / lanes)}"
        )
    return c


__all__ = ["Ceiling", "column_peak_gbps", "host_ceiling", "near_memory_ceiling"]
