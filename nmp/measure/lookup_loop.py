"""The lookup loop's own costs, measured with the loop: ``embedding_bag`` on one core over one
table of uniform random rows, the table sized to sit in the L1, the L2, the LLC or DRAM
(docs/host-model.md).

From the L1-resident tables (two row widths) come the loop's arithmetic: a fixed cost per
lookup (``lookup_cycles``) and a cost per SIMD vector of a row (``vector_cycles``). From the
larger tables come the lines the loop keeps in flight from each level
(``<level>_lines_in_flight``): the time per lookup beyond the arithmetic is the stall of the
row's lines, and by Little's law a level whose lines stall the loop ``s`` ns each at latency
``t`` has ``t / s`` of them in flight. That count is what a pointer chase cannot give: the
loop's out-of-order window, its software prefetches and the L2's prefetch of a row's trailing
lines, as the loop meets them. The tables get 4-KiB pages (as a framework's tables do); a
table beyond the TLB's reach walks once per lookup, and those walks' stall (the model's, at
the measured walk time over the walks in flight) is taken out before the lines'.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from nmp.units import KIB, MIB

# chosen: rows of the kit's workloads (recross-eval and the Criteo presets: dim 64 FP32, 256 B)
LOOP_DIM = 64
# chosen: a narrower row (one AVX-512 vector) for the arithmetic's slope between two widths
SMALL_DIM = 16
# chosen: 64 rows per L1-resident table (4 KiB at dim 16, 16 KiB at dim 64: in any L1)
L1_ROWS = 64
# chosen: the most lines a loop can keep in flight from a level, where its stall is too small
# to measure (a Golden Cove reorder buffer's 512 entries bound the loads a loop has issued)
MAX_LINES_IN_FLIGHT = 512.0
LEVELS = ("l2", "llc", "dram")
L1_ROUNDS = 3  # chosen: rounds of the two L1 tables (each run is the fastest of 3 passes)


@dataclass
class LoopMeasurement:
    """ns per lookup of the loop on one core, by table: 'l1_small' (dim SMALL_DIM), 'l1',
    'l2', 'llc', 'dram' (dim LOOP_DIM); and each table's bytes."""

    ns: dict[str, float] = field(default_factory=dict)
    set_bytes: dict[str, int] = field(default_factory=dict)


def measure_loop(
    run: Callable[[int, int], float],
    sets: dict[str, int],
    on_step: Callable[[str], None] = lambda _: None,
) -> LoopMeasurement:
    """Run the loop (``run(table_bytes, dim)`` -> ns per lookup) on the L1 tables and on one
    table of each of ``sets`` (level -> bytes)."""
    m = LoopMeasurement()
    l1 = {
        "l1_small": (L1_ROWS * SMALL_DIM * 4, SMALL_DIM),
        "l1": (L1_ROWS * LOOP_DIM * 4, LOOP_DIM),
    }
    # the two L1 tables differ by well under a ns per lookup: each is timed L1_ROUNDS times,
    # interleaved with the other, and keeps the median round (each round the fastest of its
    # passes): the check's figures are medians too, and the skewed rows, mostly L1 hits,
    # rest on this arithmetic (the fastest of nine passes made the model up to 1.3x too fast
    # there on a loaded machine)
    times: dict[str, list[float]] = {name: [] for name in l1}
    for _ in range(L1_ROUNDS):
        for name, (b, dim) in l1.items():
            on_step(f"embedding_bag on a {b / KIB:,.0f} KiB table ({name})")
            times[name].append(run(b, dim))
            m.set_bytes[name] = b
    for name, ts in times.items():
        m.ns[name] = float(np.median(ts))
    for name, b in sets.items():
        on_step(f"embedding_bag on a {b / KIB:,.0f} KiB table ({name})")
        m.ns[name] = run(b, LOOP_DIM)
        m.set_bytes[name] = b
    return m


def walks_per_lookup(set_bytes: int, tlb_reach_bytes: int) -> float:
    """TLB misses per lookup of a uniform table (rows within a page): the share of its pages
    a TLB reaching ``tlb_reach_bytes`` does not hold."""
    return max(0.0, 1.0 - tlb_reach_bytes / max(set_bytes, 1))


def served_shares(set_bytes: int, l1: int, l2: int, llc: int) -> np.ndarray:
    """The share of a uniform table's lines each level (L1, L2, LLC, DRAM) serves once warm:
    an LRU cache of ``c`` bytes holds ``c / set`` of it; the L2 sees the L1's misses, the LLC
    every read (as the model's caches, :mod:`nmp.arch.host_hierarchy`)."""
    reach = np.array([l1, l1 + l2, max(llc, l1 + l2), math.inf], dtype=float)
    cumulative = np.minimum(reach / max(set_bytes, 1), 1.0)
    return np.diff(np.concatenate([[0.0], cumulative]))


def derive_loop(
    m: LoopMeasurement,
    *,
    clock_ghz: float,
    lanes: int,
    latency_ns: dict[str, float],
    caches,
    tlb_reach_bytes: int = 0,
    walk_stall_ns: float = 0.0,
) -> tuple[dict[str, float], dict[str, str]]:
    """The preset's loop values and each one's source. ``latency_ns``: each level's
    load-to-use latency (the chase); ``caches``: (l1, l2, llc) bytes; a TLB miss stalls the
    loop ``walk_stall_ns`` (its walk over the walks in flight)."""
    out: dict[str, float] = {}
    notes: dict[str, str] = {}
    v_small, v_loop = SMALL_DIM / lanes, LOOP_DIM / lanes
    slope = (m.ns["l1"] - m.ns["l1_small"]) * clock_ghz / max(v_loop - v_small, 1e-9)
    out["vector_cycles"] = round(max(slope, 0.0), 3)
    out["lookup_cycles"] = round(max(m.ns["l1_small"] * clock_ghz - slope * v_small, 0.0), 3)
    src = (
        f"embedding_bag on L1-resident tables: {m.ns['l1_small']:.2f} ns per lookup at dim "
        f"{SMALL_DIM}, {m.ns['l1']:.2f} at dim {LOOP_DIM}"
    )
    notes["vector_cycles"] = f"{src}: the slope per {lanes}-lane vector"
    notes["lookup_cycles"] = f"{src}: the intercept"
    compute_ns = (out["lookup_cycles"] + out["vector_cycles"] * v_loop) / clock_ghz
    lines_per_row = LOOP_DIM * 4 // 64
    stall = {"l1": 0.0}
    order = ["l1", "l2", "llc", "dram"]
    for i, lv in enumerate(order[1:], start=1):
        if lv not in m.ns:
            continue
        share = served_shares(m.set_bytes[lv], *caches)
        known = sum(share[j] * stall.get(order[j], 0.0) for j in range(i))
        beyond = max(float(share[i:].sum()), 1e-9)  # levels not yet solved stall as this one
        walks = walks_per_lookup(m.set_bytes[lv], tlb_reach_bytes) if tlb_reach_bytes else 0.0
        per_line = (m.ns[lv] - compute_ns - walks * walk_stall_ns) / lines_per_row
        stall[lv] = max(float((per_line - known) / beyond), 0.0)
        lat = latency_ns[lv]
        key = f"{lv}_lines_in_flight"
        out[key] = round(float(lat / max(stall[lv], lat / MAX_LINES_IN_FLIGHT)), 2)
        notes[key] = (
            f"embedding_bag on a {m.set_bytes[lv] / MIB:g} MiB table: {m.ns[lv]:.2f} ns per "
            f"lookup, {stall[lv]:.2f} ns of stall per line beyond the arithmetic and "
            f"{walks:.2f} walks (cache shares {', '.join(f'{s:.2f}' for s in share)}), at "
            f"{lat:.0f} ns latency"
        )
    return out, notes


__all__ = [
    "LOOP_DIM",
    "LoopMeasurement",
    "derive_loop",
    "measure_loop",
    "served_shares",
    "walks_per_lookup",
]
