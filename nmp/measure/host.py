"""``nmp measure host``: the machine's microbenchmarks, turned into a host preset.

Each value of the preset comes from one measurement (its comment in the TOML says which):
cache sizes and ways from sysfs; each level's load latency from the pointer chase at a working
set inside that level; the misses a core keeps in flight (its memory-level parallelism) from
several independent chases in one thread, by Little's law (rows per ns x latency); the LLC's
and DRAM's read bandwidth from chases on every core; the lookup kernel's fixed work per lookup
from ``embedding_bag`` on a table that fits the L1 (:mod:`nmp.measure.kernel`).
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from nmp.arch.host_hierarchy import PAGE_BYTES
from nmp.errors import NmpError
from nmp.measure import sysinfo
from nmp.measure.lookup_loop import LoopMeasurement, derive_loop, measure_loop
from nmp.measure.probe import chase, chases, stream_gbps
from nmp.units import GIB, KIB, MIB

# Chains per thread tried for the misses in flight (the probe's powers of two).
CHAIN_COUNTS = (1, 2, 4, 8, 16, 32)
# The memory preset the measured host's DRAM is replayed on (chosen: the kit's DDR5 preset;
# sysfs does not say what DRAM a machine has), with as many channels as its measured bandwidth.
MEMORY_PRESET = "ddr5-4800-40"
MEMORY_CHANNEL_GBPS = 19.2  # DDR5-4800 on a 32-bit channel: 4800 MT/s x 4 B
# chosen: sysfs does not give the TLB; 2048 4-KiB entries is the second-level TLB of Golden
# Cove and Zen 3 (Intel/AMD optimization manuals)
TLB_ENTRIES = 2048


@dataclass
class Measured:
    """One machine's measurements and the host preset values derived from them."""

    cpu: str
    date: str
    cores: int
    caches: dict[int, sysinfo.CacheInfo]
    latency_ns: dict[int, float] = field(default_factory=dict)  # working-set bytes -> ns
    mlp: dict[str, dict[int, float]] = field(default_factory=dict)  # where -> chains -> lines/ns
    bandwidth_gbps: dict[str, dict[int, float]] = field(default_factory=dict)  # where -> threads
    chase_latency_ns: dict[str, float] = field(default_factory=dict)  # where -> 1-chain ns
    loop: LoopMeasurement | None = None  # embedding_bag per lookup, by table (lookup_loop)
    call: Any = None  # kernel.CallCost: a call's fixed CPU cost (None: not measured)
    host: dict[str, Any] = field(default_factory=dict)  # the preset's [host] values
    notes: dict[str, str] = field(default_factory=dict)  # key -> where its value comes from
    channels: int = 1
    warnings: list[str] = field(default_factory=list)  # what the preset may misread here


def sizes_between(lo: int, hi: int) -> list[int]:
    """Working-set sizes doubling from ``lo`` to at most ``hi``, and ``hi`` itself."""
    out, s = [], lo
    while s < hi:
        out.append(s)
        s *= 2
    return [*out, hi]


def steps_for(bytes_: int, l2_bytes: int, quick: bool) -> int:
    """Rows per chain: enough that a point takes tens of ms (chosen), far fewer beyond the L2,
    where a load takes 20-100x longer."""
    n = 2_000_000 if bytes_ <= l2_bytes else 200_000
    return max(n // (20 if quick else 1), 1000)


def point_at_most(curve: dict[int, float], limit: float) -> tuple[int, float]:
    """The largest measured working set no larger than ``limit`` (else the smallest)."""
    fit = [b for b in curve if b <= limit]
    b = max(fit) if fit else min(curve)
    return b, curve[b]


def misses_in_flight(rows_per_ns: dict[int, float], latency_ns: float) -> float:
    """Little's law: the most rows in flight any chain count reached (throughput x latency)."""
    return max(rows_per_ns.values()) * latency_ns


# chosen: the chase at half the LLC within this share of DRAM's latency means the LLC is hardly
# there for this core. The kit's guests (docs/host-model.md): the Zen 3's at 16 MiB 86 % of
# DRAM's, the Zen 4's 88-95 %, the Intel's no LLC step at all; inside the share they gave
# 13-23 ns, under a quarter of DRAM's
LLC_SHARE_WARNING = 0.8

# Rows of the misses-in-flight chases: single lines, each a demand miss.
LINE_ROW_BYTES = 64


def measure(
    *,
    max_bytes: int | None = None,
    quick: bool = False,
    threads: int | None = None,
    on_step: Callable[[str], None] = lambda _: None,
    kernel: Callable[[int, int], float] | None = None,
    call: Callable[[int], Any] | None = None,
) -> Measured:
    """Measure this machine (``max_bytes``: the largest working set, default 4x the LLC,
    at least 256 MiB, at most 1 GiB; ``threads``: the most threads, default every usable
    CPU); ``kernel``: the lookup loop (``kernel(table_bytes, dim)`` -> ns per lookup);
    ``call``: a call's fixed cost (``call(threads)`` -> :class:`nmp.measure.kernel.CallCost`)."""
    caches = sysinfo.data_caches()
    if 1 not in caches:
        raise NmpError("sysfs lists no level-1 data cache for cpu0")
    l1 = int(caches[1].kib * KIB)
    l2 = int(caches[2].kib * KIB) if 2 in caches else 4 * l1
    llc_level = max(caches)
    llc = int(caches[llc_level].kib * KIB) if llc_level >= 3 else 0
    top = max_bytes or min(max(4 * max(llc, l2), 256 * MIB), 1024 * MIB)
    cores = threads or sysinfo.usable_cpus()
    m = Measured(sysinfo.cpu_model(), dt.date.today().isoformat(), cores, caches)
    for b in sizes_between(16 * KIB, top):
        on_step(f"latency at {b / KIB:,.0f} KiB")
        # the least disturbed of a few runs where they are cheap: on a shared machine, other
        # programs' time slices evict the private caches (chosen: 3)
        tries = 3 if b <= 2 * l2 else 1
        m.latency_ns[b] = min(
            chase(b, steps=steps_for(b, l2, quick)).ns_per_row for _ in range(tries)
        )
    l2_set = point_at_most(m.latency_ns, l2 / 2)[0]
    dram_set = max(m.latency_ns)
    runs = (
        ("l2", l2_set, LINE_ROW_BYTES, True),
        ("dram", dram_set, LINE_ROW_BYTES, True),
        ("dram_4k", dram_set, LINE_ROW_BYTES, False),
    )
    for where, size, row, huge in runs:
        on_step(f"misses in flight at {size / KIB:,.0f} KiB, {row}-B rows")
        steps = steps_for(size, l2, quick) * 4
        res = chases(size, CHAIN_COUNTS, steps=steps, row_bytes=row, huge=huge)
        # lines per ns, by chain count
        m.mlp[where] = {
            k: r.rows_per_ns * (row // 64) for k, r in zip(CHAIN_COUNTS, res, strict=True)
        }
        # one chain's time per row, the latency Little's law pairs with this run's throughput
        m.chase_latency_ns[where] = res[0].ns_per_row
    llc_set = point_at_most(m.latency_ns, llc / 2)[0] if llc else dram_set
    for where, size in (("llc", llc_set), ("dram", dram_set)):
        m.bandwidth_gbps[where] = {}
        for t in range(1, cores + 1):
            on_step(f"read bandwidth at {size / KIB:,.0f} KiB, {t} threads")
            passes = max(int(4 * GIB // size) // (10 if quick else 1), 1)
            m.bandwidth_gbps[where][t] = stream_gbps(size, threads=t, passes=passes)
    if kernel is not None:
        # the LLC's table within the TLB's reach (its walks are the TLB's, not the LLC's)
        loop_llc = min(llc // 2, max(TLB_ENTRIES * PAGE_BYTES, 2 * l2))
        sets = {"l2": l2_set} | ({"llc": loop_llc} if llc else {}) | {"dram": dram_set}
        m.loop = measure_loop(kernel, sets, on_step)
    if call is not None:
        on_step(f"embedding_bag's fixed cost per call, 1 and {cores} threads")
        m.call = call(cores)
    derive_preset(m, l1, l2, llc)
    return m


def derive_preset(m: Measured, l1: int, l2: int, llc: int) -> None:
    """The [host] values (and each one's source) from the measurements."""
    c, h, notes = m.caches, m.host, m.notes
    clock = sysinfo.clock_ghz() or 2.0
    lanes = sysinfo.simd_lanes()
    src = f"measured on {m.cpu}, {m.date}"
    h.update(cpu=m.cpu, source=src, cores=m.cores, threads=0, clock_ghz=round(clock, 3))
    notes["clock_ghz"] = "/proc/cpuinfo 'cpu MHz' (2.0 where it gives none)"
    h["simd_lanes"] = lanes
    notes["simd_lanes"] = "/proc/cpuinfo flags: 16 with avx512f, 8 with avx2, else 4"
    b1, lat1 = point_at_most(m.latency_ns, l1 / 2)
    b2, lat2 = point_at_most(m.latency_ns, l2 / 2)
    dram_set = max(m.latency_ns)
    lat_d = m.latency_ns[dram_set]
    chase_note = "pointer chase on 2-MiB pages"
    h["l1_kib"], h["l1_ways"] = c[1].kib, c[1].ways
    notes["l1_kib"] = notes["l1_ways"] = "sysfs (cpu0/cache)"
    h["l1_latency_ns"] = round(lat1, 3)
    notes["l1_latency_ns"] = f"{chase_note}, {b1 / KIB:g} KiB working set"
    # every demand miss past the L1 waits in a fill buffer: as many as the most either level
    # reached with single-line rows
    lat = m.chase_latency_ns
    mlp_l2 = misses_in_flight(m.mlp["l2"], lat["l2"])
    mlp_d = misses_in_flight(m.mlp["dram"], lat["dram"])
    h["l1_fill_buffers"] = round(max(mlp_l2, mlp_d), 2)
    notes["l1_fill_buffers"] = (
        f"Little's law on independent chases of 64-B rows: {mlp_l2:.1f} lines in flight at "
        f"{b2 / KIB:g} KiB, {mlp_d:.1f} at {dram_set / MIB:g} MiB (the larger)"
    )
    if 2 in c:
        h["l2_kib"], h["l2_ways"] = c[2].kib, c[2].ways
        notes["l2_kib"] = notes["l2_ways"] = "sysfs (cpu0/cache)"
    h["l2_latency_ns"] = round(lat2, 3)
    notes["l2_latency_ns"] = f"{chase_note}, {b2 / KIB:g} KiB working set"
    # the misses past the L2 that the chases at the DRAM set kept in flight (with single
    # lines, whose every miss passed the L2)
    h["l2_mshrs"] = round(mlp_d, 2)
    notes["l2_mshrs"] = (
        f"Little's law on independent chases at {dram_set / MIB:g} MiB: "
        f"{max(m.mlp['dram'].values()):.4f} lines/ns x {lat['dram']:.0f} ns"
    )
    # chosen: the L2 delivers a line per cycle to its L1 (64 B/cycle) on every x86 core since
    # Skylake (Intel and AMD optimization manuals); a chase cannot reach it
    h["l2_bytes_per_cycle"] = 64.0
    notes["l2_bytes_per_cycle"] = "chosen: 64 B/cycle (Intel/AMD optimization manuals)"
    if llc:
        bl, lat3 = point_at_most(m.latency_ns, llc / 2)
        h["llc_mib"], h["llc_ways"] = round(llc / MIB, 3), c[max(c)].ways
        notes["llc_mib"] = notes["llc_ways"] = "sysfs (cpu0/cache)"
        h["llc_latency_ns"] = round(lat3, 3)
        notes["llc_latency_ns"] = f"{chase_note}, {bl / MIB:g} MiB working set"
        if lat3 >= LLC_SHARE_WARNING * lat_d:
            m.warnings.append(
                f"the pointer chase at {bl / MIB:g} MiB, half the LLC sysfs lists "
                f"({llc / MIB:g} MiB), took {lat3:.0f} ns, {100 * lat3 / lat_d:.0f} % of DRAM's "
                f"{lat_d:.0f} ns: this core's share of the LLC looks far smaller than sysfs "
                "says (a VM's, or one shared with busy neighbours), so the preset reads tables "
                "between that share and the LLC's size as LLC hits that come from DRAM; "
                "`--check` shows by how much (docs/host-model.md)"
            )
        h["llc_gbps"] = round(max(m.bandwidth_gbps["llc"].values()), 3)
        notes["llc_gbps"] = (
            f"sequential reads on 1..{m.cores} threads at {bl / MIB:g} MiB (the most)"
        )
    else:
        h["llc_mib"] = 0.0
        notes["llc_mib"] = "sysfs lists no level-3 cache"
    h["dram_latency_ns"] = round(lat_d, 3)
    notes["dram_latency_ns"] = f"{chase_note}, {dram_set / MIB:g} MiB working set"
    walk = max(lat["dram_4k"] - lat["dram"], 0.0)
    h["page_walk_ns"] = round(walk, 3)
    notes["page_walk_ns"] = (
        f"pointer chase at {dram_set / MIB:g} MiB on 4-KiB pages ({lat['dram_4k']:.0f} ns) "
        f"less on 2-MiB pages ({lat['dram']:.0f} ns)"
    )
    walkers = max(m.mlp["dram_4k"].values()) * walk
    h["page_walkers"] = round(max(walkers, 1.0), 2)
    notes["page_walkers"] = (
        f"Little's law: {max(m.mlp['dram_4k'].values()):.4f} lines/ns on 4-KiB pages x "
        f"{walk:.0f} ns per walk"
    )
    h["tlb_entries"] = TLB_ENTRIES
    notes["tlb_entries"] = "chosen: 2048 (Golden Cove / Zen 3 STLB); sysfs does not give it"
    if m.loop is not None:
        _derive_loop(m, clock, lanes, l1, l2, llc)
    if m.call is not None:
        _derive_call(m)
    dram_bw = max(m.bandwidth_gbps["dram"].values())
    m.channels = channels_for(dram_bw)


def channels_for(dram_gbps: float) -> int:
    """Enough :data:`MEMORY_CHANNEL_GBPS` channels for ``dram_gbps``, rounded up to a power of
    two: the kit's memory organizations take no other count (3 was written, then refused)."""
    need = max(1, math.ceil(dram_gbps / MEMORY_CHANNEL_GBPS))
    return 1 << (need - 1).bit_length()


def _derive_loop(m: Measured, clock: float, lanes: int, l1: int, l2: int, llc: int) -> None:
    """The lookup loop's arithmetic and lines in flight per level (:mod:`lookup_loop`); the L2's
    misses in flight at least as many as the loop kept past the L2."""
    assert m.loop is not None
    h = m.host
    lat = {lv: h.get(f"{lv}_latency_ns", 0.0) for lv in ("l2", "llc", "dram")}
    values, notes = derive_loop(
        m.loop,
        clock_ghz=clock,
        lanes=lanes,
        latency_ns=lat,
        caches=(l1, l2, llc),
        tlb_reach_bytes=int(h["tlb_entries"]) * PAGE_BYTES,
        walk_stall_ns=h["page_walk_ns"] / h["page_walkers"],
    )
    h.update(values)
    m.notes.update(notes)
    past_l2 = [values.get(k, 0.0) for k in ("llc_lines_in_flight", "dram_lines_in_flight")]
    if max(past_l2) > h["l2_mshrs"]:
        h["l2_mshrs"] = max(past_l2)
        m.notes["l2_mshrs"] += " (the chases'); the lookup loop kept more past the L2: its count"


def _derive_call(m: Measured) -> None:
    """A call's fixed cost and each extra thread's (:func:`nmp.measure.kernel.call_cost`)."""
    c = m.call
    m.host["call_ns"] = round(float(c.call_ns), 1)
    m.notes["call_ns"] = (
        f"embedding_bag on one bag of one lookup, one thread: median CPU ns per call "
        f"(loops' spread {c.spread:.2f})"
    )
    m.host["thread_sync_ns"] = round(float(c.thread_sync_ns), 1)
    m.notes["thread_sync_ns"] = (
        f"embedding_bag on 256 bags of one lookup: median CPU ns per call on {c.threads} "
        f"threads less on 1, per thread beyond the first"
        if c.threads > 1
        else "one usable CPU: no thread beyond the first"
    )


def preset_toml(m: Measured, name: str = "host-measured") -> str:
    """The host preset TOML of a measurement, every value with its source."""

    def value(v: Any) -> str:
        if isinstance(v, str):
            return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
        return repr(v)

    lines = [
        f"# Host CPU measured by `nmp measure host` on {m.cpu}, {m.date}.",
        "# Every value's source is its comment; the keys are documented in docs/host-model.md.",
        f'name = "{name}"',
        f'description = "Host CPU measured on {m.cpu}"',
        'policy = "host"',
        "",
        "[memory]",
        f'preset = "{MEMORY_PRESET}"  # chosen: sysfs does not name the DRAM; the kit\'s DDR5',
        f"channels = {m.channels}  # enough {MEMORY_CHANNEL_GBPS} GB/s channels for the "
        f"measured read bandwidth ({max(m.bandwidth_gbps['dram'].values()):.1f} GB/s), a power "
        "of two",
        "ranks = 1",
        "",
        "[host]",
    ]
    for key, v in m.host.items():
        note = m.notes.get(key)
        lines.append(f"{key} = {value(v)}" + (f"  # {note}" if note else ""))
    lines += [
        "",
        "# measurements (not read by the model): load latency per working set (2-MiB pages)",
    ]
    for b, ns in m.latency_ns.items():
        lines.append(f"#   latency {b / KIB:>10,.0f} KiB  {ns:8.2f} ns")
    for where, per in m.bandwidth_gbps.items():
        row = ", ".join(f"{t} thr {g:.2f} GB/s" for t, g in per.items())
        lines.append(f"#   read bandwidth ({where}): {row}")
    return "\n".join(lines) + "\n"


def summary(m: Measured) -> dict[str, Any]:
    """The measurements as JSON."""
    return {
        "cpu": m.cpu,
        "date": m.date,
        "cores": m.cores,
        "caches_kib": {f"l{lv}": c.kib for lv, c in m.caches.items()},
        "latency_ns": {str(b): ns for b, ns in m.latency_ns.items()},
        "chase_latency_ns": dict(m.chase_latency_ns),
        "lines_per_ns_by_chains": {w: {str(k): v for k, v in d.items()} for w, d in m.mlp.items()},
        "read_gbps_by_threads": {
            w: {str(k): v for k, v in d.items()} for w, d in m.bandwidth_gbps.items()
        },
        "lookup_loop_ns": dict(m.loop.ns) if m.loop else {},
        "call_ns": (
            {
                "call": m.call.call_ns,
                "thread_sync": m.call.thread_sync_ns,
                "threads": m.call.threads,
            }
            if m.call is not None
            else {}
        ),
        "host": dict(m.host),
        "memory": {"preset": MEMORY_PRESET, "channels": m.channels},
        "warnings": list(m.warnings),
    }


__all__ = ["Measured", "measure", "preset_toml", "summary"]
