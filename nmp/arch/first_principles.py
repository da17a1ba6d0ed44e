"""The first-principles ceiling of a design point: what its stated resources allow, no model run.

:mod:`nmp.arch.ceiling` keeps what a point's replays decided (its ACTs, its bytes per path):
the model's own ceiling (``model_ceiling`` in ``nmp validate``). This module computes a ceiling
from the specs alone - the memory standard's timing, the design's data paths, unit counts and
instruction delivery - and the workload's own statistics (lookups, row bytes, the distinct rows
of a batch drawn by the workload generator, which is the input, not the model). Nothing here
reads a :class:`~nmp.results.PointResult`, so the bound does not move when the model does.

Terms (each the shortest time the batch can take on that resource; the ceiling is the longest):

* ``act_budget``: the batch's activations, one per max(tRRD_S, tFAW / 4) per rank;
* ``row_cycles``: the activations over every bank (and open subarray with MASA), one per tRC;
* ``data_paths``: the rows' bursts over every data path the design has (rank bus per nBL,
  bank-group and bank column paths per tCCD_L), with the lookups split over the levels as
  favourably as a linear program finds (capacity ignored);
* ``ca``: per rank, a rank unit's READ commands per burst and an in-DRAM unit's instruction
  cycles, over the split above;
* ``compute``: every element added over every unit's lanes x clock, over the split above (a
  design's units whose lanes and clock no source states are taken as keeping up with their
  data paths: the term is then listed among the choices, not the terms);
* ``host_link``: every instruction and pooled result over the channels (near-memory designs);
* ``channel`` / ``host_compute``: the host CPU's reads past its LLC and its adds.

A resource the sources leave open is a *choice*. ``role="design"`` (the numerator of a
speedup) takes each choice at its most favourable legitimate value; ``role="baseline"`` (the
denominator) at its least favourable, so ``design / baseline`` is the most a design could gain
over a baseline that reaches its own physical peak. Each choice is named with its alternative
in :attr:`FirstPrinciples.choices`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nmp.arch import memview as mv
from nmp.arch.ceiling import BatchTerms
from nmp.arch.layout import build_layout
from nmp.arch.placement import level_effective_gbps, level_node_peak_gbps
from nmp.arch.policies import POLICIES
from nmp.arch.salp_readings import SALP_READINGS_REGISTRY
from nmp.arch.spec import ArchSpec
from nmp.memory.standards import load_standard
from nmp.workload import generate_batch

ROLES = ("design", "baseline")
BYTES_PER_ELEMENT = 4  # FP32 rows (the units' lanes are FP32)


@dataclass(frozen=True)
class WorkloadStats:
    """What a batch of the workload asks for, from the workload alone."""

    lookups: int
    bags: int  # batch x tables: one pooled vector each
    dim: float  # mean elements per lookup
    row_bytes: float  # mean bytes per lookup (dim x 4)
    distinct: int  # distinct rows of one batch (seed: the workload's)

    def to_json(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in ("lookups", "bags", "dim", "row_bytes", "distinct")}


def workload_stats(wl) -> WorkloadStats:
    """Lookups, bags, mean row size and distinct rows of one batch of ``wl`` (its own seed)."""
    batch = generate_batch(wl)
    lookups = sum(int(t.indices.size) for t in batch.tables)
    distinct = sum(int(np.unique(t.indices).size) for t in batch.tables)
    dims = [(wl.tables[i].dim, int(t.indices.size)) for i, t in enumerate(batch.tables)]
    dim = sum(d * n for d, n in dims) / max(lookups, 1)
    bags = sum(int(t.offsets.size) - 1 for t in batch.tables)
    return WorkloadStats(lookups, bags, dim, dim * BYTES_PER_ELEMENT, distinct)


@dataclass
class FirstPrinciples(BatchTerms):
    """A design point's first-principles ceiling: its terms, their arithmetic, its choices."""

    role: str
    lookups: int
    terms_ns: dict[str, float] = field(default_factory=dict)
    arithmetic: dict[str, str] = field(default_factory=dict)
    choices: list[str] = field(default_factory=list)
    split: dict[str, float] = field(default_factory=dict)  # share of lookups per level

    def add(self, name: str, time_ns: float, how: str) -> None:
        self.terms_ns[name] = float(time_ns)
        self.arithmetic[name] = f"{how} = {time_ns / 1e3:.2f} us"

    def text(self) -> str:
        b = self.binding
        return (
            f"{self.lookups} lookups in >= {self.time_ns / 1e3:.2f} us ({b}: "
            f"{self.arithmetic.get(b, '')}) = {self.lookups_per_s / 1e6:.0f} M lookups/s"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "lookups": self.lookups,
            "lookups_per_s": self.lookups_per_s,
            "binding": self.binding,
            "terms": {
                k: {"time_ns": v, "arithmetic": self.arithmetic[k]}
                for k, v in self.terms_ns.items()
            },
            "split": dict(self.split),
            "choices": list(self.choices),
        }


def _bursts(nbytes: float, tx: int) -> int:
    return max(1, math.ceil(nbytes / tx))


def _fewest_misses(ws: WorkloadStats, cache_rows: int) -> int:
    """The fewest reads a warm cache of ``cache_rows`` rows leaves a batch: every distinct row
    beyond the cache's is read at least once."""
    return max(ws.distinct - cache_rows, 0)


def _act_terms(fp: FirstPrinciples, spec: ArchSpec, mem, acts: float, how: str) -> None:
    """The activation budget of every rank and the row cycles of every bank."""
    tck = mv.tck_ns(mem)
    ranks = mv.org(mem, "channels") * mv.org(mem, "ranks")
    gap = max(mv.timing(mem, "nRRDS"), mv.timing(mem, "nFAW") / 4)
    fp.add(
        "act_budget",
        acts / ranks * gap * tck,
        f"{acts:.0f} ACTs ({how}) / {ranks} ranks x max(tRRD_S {mv.timing(mem, 'nRRDS')}, "
        f"tFAW {mv.timing(mem, 'nFAW')} / 4) tCK x {tck:.4f} ns",
    )
    banks = ranks * mv.org(mem, "bankgroups") * mv.org(mem, "banks")
    open_per_bank = _open_rows_per_bank(spec)
    fp.add(
        "row_cycles",
        acts / (banks * open_per_bank) * mv.timing(mem, "nRC") * tck,
        f"{acts:.0f} ACTs / ({banks} banks x {open_per_bank} open subarrays) x tRC "
        f"{mv.timing(mem, 'nRC')} tCK",
    )


def _open_rows_per_bank(spec: ArchSpec) -> int:
    """Rows a bank keeps open for later lookups: its SALP reading's, where bank units read
    with subarray parallelism (MASA: several subarrays' rows), else one."""
    if not (spec.subarray_parallelism and spec.bank.units > 0):
        return 1
    return SALP_READINGS_REGISTRY.get(spec.bank.salp).open_rows


def _acts(spec: ArchSpec, mem, ws: WorkloadStats, role: str, reads_per_lookup: int) -> tuple:
    """(ACTs of a batch, how): the design's fewest - each distinct row's DRAM page once, pages
    packed with hot rows, rows left open from the batch before free - or the baseline's most,
    one per lookup (a row never spans a page here)."""
    page = mv.lines_per_page(mem) * mv.tx_bytes(mem)
    if role == "baseline":
        return float(ws.lookups * reads_per_lookup), "one per lookup and node read: no row reuse"
    per_page = max(1, page // max(int(ws.row_bytes), 1))
    ranks = mv.org(mem, "channels") * mv.org(mem, "ranks")
    banks = ranks * mv.org(mem, "bankgroups") * mv.org(mem, "banks")
    open_rows = banks * _open_rows_per_bank(spec)
    pages = math.ceil(ws.distinct / per_page) * reads_per_lookup
    return float(max(pages - open_rows, 0)), (
        f"{ws.distinct} distinct rows packed {per_page} per {page} B page, less {open_rows} rows "
        "left open"
    )


def _units_stated(spec: ArchSpec, stated: Iterable[str]) -> bool:
    """Whether a source states every data level's lanes and clock (else they are chosen)."""
    keys = set(stated)
    return all({f"{lv}.lanes", f"{lv}.clock_mhz"} <= keys for lv in spec.data_levels)


def _min_instruction_cycles(mem) -> int:
    """C/A cycles of one READ command in the standard's encoding (DDR5: 2): the least a lookup's
    instruction can take on a C/A bus that carries the standard's commands."""
    return int(load_standard(mem.standard).multi_cycle.get("RD", 1))


def _instruction(spec: ArchSpec, mem, role: str, stated: Iterable[str]) -> tuple[float, str]:
    """(bits per lookup, how) of the design's instruction: the preset's when a source states it
    or for a baseline; otherwise (a design's chosen format) the fewest the C/A allows."""
    ins = spec.instruction
    if role == "baseline" or "instruction.bits_per_lookup" in set(stated):
        return float(ins.bits_per_lookup), f"{ins.bits_per_lookup}-bit instruction (the preset's)"
    cycles = _min_instruction_cycles(mem)
    bits = cycles * ins.dram_ca_bits_per_cycle
    return bits, (
        f"{bits:g}-bit instruction ({cycles} C/A cycles of a {mem.standard} READ: the fewest the "
        f"command encoding allows, chosen; alternative: the preset's {ins.bits_per_lookup} bits)"
    )


def _host(spec: ArchSpec, mem, ws: WorkloadStats, role: str) -> FirstPrinciples:
    """The host CPU: its reads past the LLC over the channels, its adds, the DRAM's ACTs."""
    fp = FirstPrinciples(role, ws.lookups)
    tck, tx = mv.tck_ns(mem), mv.tx_bytes(mem)
    ch = mv.org(mem, "channels")
    bursts = _bursts(ws.row_bytes, tx)
    reads = ws.lookups
    if spec.host.llc_mib > 0:
        if role == "design":
            rows = int(spec.host.llc_mib * 2**20 // max(ws.row_bytes, 1))
            reads = _fewest_misses(ws, rows)
            fp.choices.append(
                f"LLC {spec.host.llc_mib:g} MiB ({rows} rows) warm with the hottest rows: only "
                f"the {reads} distinct rows beyond it are read; alternative: its simulated hits"
            )
        else:
            fp.choices.append(
                f"LLC {spec.host.llc_mib:g} MiB serves nothing; alternative: its simulated hits"
            )
    nbytes = reads * bursts * tx
    peak = mv.channel_peak_gbps(mem)
    fp.add(
        "channel",
        nbytes / (ch * peak),
        f"{reads} rows x {bursts} x {tx} B / ({ch} ch x {peak:.2f} GB/s)",
    )
    h = spec.host
    lanes = h.cores * h.simd_lanes * h.clock_ghz
    adds = ws.lookups * ws.dim
    fp.add("host_compute", adds / lanes, f"{adds:.0f} adds / ({h.cores} x {h.simd_lanes} x "
           f"{h.clock_ghz:g} GHz)")  # fmt: skip
    acts, how = _acts(spec, mem, ws, role, 1)
    _act_terms(fp, spec, mem, min(acts, reads), how)
    rd = _min_instruction_cycles(mem)
    fp.add(
        "ca",
        reads * bursts * rd / ch * tck,
        f"{reads} rows x {bursts} READs x {rd} tCK / {ch} ch",
    )
    return fp


@dataclass(frozen=True)
class Route:
    """One way a level's lookups reach its units: the data path they cross."""

    level: str
    path: str


def _paths(
    spec: ArchSpec, mem, role: str, row_bytes: float
) -> tuple[list[Route], dict[str, float], dict[str, float], dict[str, str]]:
    """(routes, path -> peak GB/s, level -> elements per ns of all its units, path -> how).
    With ``shared_bankgroup_column_path``, bank units in a bank group with a bank-group unit
    read over that unit's path (a route of their own onto it). A baseline's bank path carries
    one random row per row cycle (its SALP reading); a design's, a burst per tCCD_L."""
    lays = build_layout(spec, mem)
    routes: list[Route] = []
    peaks: dict[str, float] = {}
    lanes: dict[str, float] = {}
    hows: dict[str, str] = {}
    for lv in spec.data_levels:
        lay, unit = lays[lv], spec.level(lv)
        node = level_node_peak_gbps(lv, lay, mem)
        if role == "baseline" and lv == "bank":
            node = level_effective_gbps(lv, lay, mem, spec, max(int(row_bytes), 1))
        nodes = lay.nodes
        lanes[lv] = nodes * unit.lanes * unit.clock_mhz / 1e3
        if lv == "bank" and spec.shared_bankgroup_column_path and "bankgroup" in lays:
            groups = {int(g) for g in lays["bankgroup"].unit_bg.ravel()}
            sharing = sum(int(lay.unit_bg[u, 0]) in groups for u in range(lay.units))
            if sharing:
                routes.append(Route(lv, "bankgroup"))
                nodes = nodes * (lay.units - sharing) // lay.units
        if nodes:
            routes.append(Route(lv, lv))
            peaks[lv] = node * nodes
            hows[lv] = f"{lv} {nodes} x {node:.2f}"
    return routes, peaks, lanes, hows


def _rank_cache_miss(spec: ArchSpec, ws: WorkloadStats, role: str, ranks: int, lanes, fp):
    """The share of lookups a RankCache leaves to DRAM: the design's serves every repeat it
    can hold (warm with the hottest rows), the baseline's nothing; 1.0 without one."""
    if spec.rank.cache_kib <= 0 or "rank" not in lanes:
        return 1.0
    if role != "design":
        fp.choices.append(
            f"RankCache {spec.rank.cache_kib:g} KiB serves nothing; alternative: its simulated hits"
        )
        return 1.0
    rows = int(spec.rank.cache_kib * 1024 // max(ws.row_bytes, 1)) * ranks
    miss = _fewest_misses(ws, rows) / ws.lookups
    fp.choices.append(
        f"RankCache {spec.rank.cache_kib:g} KiB x {ranks} ranks ({rows} rows) warm with "
        f"the hottest rows: {100 * (1 - miss):.1f} % hits; alternative: its simulated "
        "hits"
    )
    return miss


@dataclass
class _SplitProgram:
    """The LP of the lookups' split over the routes: variables, the share of lookups on each
    route then T (ns), minimise T; each row a resource's time at the split, minus T."""

    routes: list
    path_rows: list  # per data path: its bytes / its GB/s
    lane_rows: list  # per level: its elements / its units' lanes x clock
    ca_row: np.ndarray  # the command/address bus, per rank

    def solve(self) -> np.ndarray:
        """The shares (equal where the LP fails)."""
        from scipy.optimize import linprog  # loaded on use (start-up time)

        n = len(self.routes)
        a_ub = np.array([*self.path_rows, *self.lane_rows, self.ca_row])
        res = linprog(np.r_[np.zeros(n), 1.0], A_ub=a_ub, b_ub=np.zeros(len(a_ub)),
                      A_eq=np.array([np.r_[np.ones(n), 0.0]]), b_eq=[1.0],
                      bounds=[(0, 1)] * n + [(0, None)], method="highs")  # fmt: skip
        return res.x[:n] if res.success else np.full(n, 1.0 / n)


def _split_program(
    spec, ws, role, stated, routes, peaks, lanes, reads, bursts, tx, per_rank_ca_ns
) -> _SplitProgram:
    """The split's rows: each data path's bytes (``reads``: a route's DRAM reads per lookup,
    below 1 behind a RankCache) over its GB/s, each level's elements over its units' lanes x
    clock (infinite where the setup does not state the units), and the C/A bus
    (``per_rank_ca_ns(i, route)``)."""
    n = len(routes)

    def row_of(weight) -> np.ndarray:
        row = np.zeros(n + 1)
        for i, r in enumerate(routes):
            row[i] = weight(i, r)
        row[-1] = -1.0
        return row

    path_rows = [
        row_of(lambda i, r, path=path, peak=peak: (
            ws.lookups * bursts * tx * reads[i] / peak if r.path == path else 0.0))
        for path, peak in peaks.items()
    ]  # fmt: skip
    lane_rows = []
    for lv, lane in lanes.items():
        if role == "design" and not _units_stated(spec, stated):
            lane = math.inf  # chosen units: taken as keeping up (the term is reported aside)
        lane_rows.append(
            row_of(lambda i, r, lv=lv, lane=lane: (
                ws.lookups * ws.dim / lane if r.level == lv else 0.0))
        )  # fmt: skip
    return _SplitProgram(routes, path_rows, lane_rows, row_of(per_rank_ca_ns))


def _near_memory(
    spec: ArchSpec, mem, ws: WorkloadStats, role: str, stated: Iterable[str]
) -> FirstPrinciples:
    """A near-memory design: the LP of the lookups' split over its levels, and the fixed terms."""
    fp = FirstPrinciples(role, ws.lookups)
    tck, tx = mv.tck_ns(mem), mv.tx_bytes(mem)
    ch = mv.org(mem, "channels")
    ranks = ch * mv.org(mem, "ranks")
    vertical = POLICIES.get(spec.policy).slices_rows  # every lookup reaches every rank
    slice_bytes = ws.row_bytes / ranks if vertical else ws.row_bytes
    bursts = _bursts(slice_bytes, tx) * (ranks if vertical else 1)
    routes, peaks, lanes, hows = _paths(spec, mem, role, ws.row_bytes)
    miss = _rank_cache_miss(spec, ws, role, ranks, lanes, fp)
    bits, how_bits = _instruction(spec, mem, role, stated)
    rd = _min_instruction_cycles(mem)
    ins_cycles = bits / spec.instruction.dram_ca_bits_per_cycle
    reads = [miss if r.level == "rank" else 1.0 for r in routes]

    def per_rank_ca_ns(i, r) -> float:
        per = bursts * rd * reads[i] if r.level == "rank" else ins_cycles
        return ws.lookups * per / ranks * tck

    prog = _split_program(
        spec, ws, role, stated, routes, peaks, lanes, reads, bursts, tx, per_rank_ca_ns
    )
    x = prog.solve()
    n = len(routes)
    shares: dict[str, float] = {}
    for r, v in zip(routes, x, strict=True):
        shares[r.level] = shares.get(r.level, 0.0) + float(v)
    fp.split = shares
    split = ", ".join(f"{lv} {100 * v:.0f} %" for lv, v in shares.items())
    t_data = max(float(row[:n] @ x) for row in prog.path_rows)
    fp.add(
        "data_paths",
        t_data,
        f"{ws.lookups} lookups x {bursts} bursts x {tx} B"
        + (f" x {miss:.3f} missing the RankCache at the rank" if miss < 1 else "")
        + f", split {split} over paths of GB/s ({' + '.join(hows.values())})",
    )
    _compute_term(fp, spec, ws, role, stated, lanes, shares, split)
    fp.add(
        "ca",
        float(prog.ca_row[:n] @ x),
        f"per rank: rank-unit lookups x {bursts} READs x {rd} tCK, in-DRAM lookups x {how_bits} "
        f"/ {spec.instruction.dram_ca_bits_per_cycle:g} C/A bits per tCK; split {split}; / "
        f"{ranks} ranks x {tck:.4f} ns",
    )
    fp.choices.append(f"lookups split over the levels as the LP finds best ({split}), capacity "
                      "ignored; alternative: the preset's capacity split")  # fmt: skip
    _host_link_term(fp, spec, mem, ws, role, bits, ranks, vertical)
    acts, how = _acts(spec, mem, ws, role, ranks if vertical else 1)
    _act_terms(fp, spec, mem, acts * (miss if list(lanes) == ["rank"] else 1.0), how)
    if role == "design" and spec.level("bank").units:
        fp.choices.append("bank units read a burst per tCCD_L (rows open); alternative: one "
                          "random row per row cycle (SALP reading)")  # fmt: skip
    return fp


def _compute_term(fp, spec, ws, role, stated, lanes, shares, split) -> None:
    """The units' arithmetic at the split: a term, or (units the setup does not state) a
    choice taken as keeping up, with its figure beside it."""
    t_comp = max(ws.lookups * shares.get(lv, 0.0) * ws.dim / v for lv, v in lanes.items())
    how_comp = (
        f"{ws.lookups} x {ws.dim:g} elements, split {split}, over every unit's lanes x clock "
        f"({' + '.join(f'{lv} {v:.1f}' for lv, v in lanes.items())} per ns)"
    )
    if role == "design" and not _units_stated(spec, stated):
        fp.choices.append(
            f"the units' lanes x clock (chosen) keep up with their data paths; alternative: the "
            f"preset's, {how_comp} = {t_comp / 1e3:.2f} us"
        )
    else:
        fp.add("compute", t_comp, how_comp)


def _host_link_term(fp, spec, mem, ws, role, bits, ranks, vertical) -> None:
    """The host link: an instruction per lookup and a pooled vector per bag (the design's
    fewest: one per bag; the baseline's most: one per bag and rank)."""
    tck, ch = mv.tck_ns(mem), mv.org(mem, "channels")
    per_bag = 1 if role == "design" or vertical else min(ranks, 1 + ws.lookups // ws.bags)
    result_bytes = ws.bags * per_bag * ws.row_bytes
    host_bits = spec.instruction.host_bits_per_cycle
    peak = mv.channel_peak_gbps(mem)
    fp.add(
        "host_link",
        (ws.lookups * bits / host_bits * tck + result_bytes / peak) / ch,
        f"({ws.lookups} x {bits:g} bits / {host_bits:g} bits per tCK x {tck:.4f} ns + "
        f"{ws.bags} bags x {per_bag} x {ws.row_bytes:g} B / {peak:.2f} GB/s) / {ch} ch",
    )


def first_principles(
    spec: ArchSpec,
    mem,
    wl,
    *,
    role: str = "design",
    stated: Iterable[str] = (),
    stats: WorkloadStats | None = None,
) -> FirstPrinciples:
    """The ceiling of ``spec`` on ``mem`` running ``wl`` from stated resources only. ``role``:
    "design" takes every choice at its most favourable legitimate value, "baseline" at its
    least; ``stated``: the spec keys (``instruction.bits_per_lookup``) a source states;
    ``stats``: :func:`workload_stats` of ``wl`` when the caller has them."""
    if role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}")
    ws = stats or workload_stats(wl)
    if not POLICIES.get(spec.policy).near_memory:
        return _host(spec, mem, ws, role)
    return _near_memory(spec, mem, ws, role, stated)


__all__ = ["FirstPrinciples", "WorkloadStats", "first_principles", "workload_stats"]
