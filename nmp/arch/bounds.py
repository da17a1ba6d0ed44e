"""The bounds of a near-memory batch, one function per bound.

The parts of a batch run concurrently (pipelined), so the slowest bound sets the batch time, and
the reduction tail follows it (:func:`combine`):

* :func:`level_bound`: each data level, its slowest node's DRAM replay plus the partial sums it
  receives over the same data path, or its units' arithmetic, whichever is longer;
* :func:`act_window_bound`: every level's units in a rank draw on the same chips' activation
  power budget (tRRD_S, tFAW) - the replays enforce it per level, this across levels;
* :func:`shared_bankgroup_bound`: a bank-group unit and a bank unit in one bank group share
  its column path (``arch.shared_bankgroup_column_path``) - each level's replay sees its own;
* :func:`instruction_bounds`: one instruction per lookup over the channel's C/A (+DQ), and on
  the rank's C/A, the instructions of lookups served inside the DRAM chips together with the
  rank unit's own DRAM commands (:func:`rank_command_cycles`);
* :func:`channel_bound`: instructions plus the pooled partial sums returned to the host;
* :func:`host_compute_bound`: the host's adds of the ranks' pooled partial sums;
* :func:`reduction_tail_ns`: the last partial sums climbing the tree after the slowest bound.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from nmp.arch import memview as mv
from nmp.arch.placement import level_node_peak_gbps
from nmp.arch.replay import hit_rate_many
from nmp.identity_cache import IdentityCache
from nmp.memory.standards import load_standard


@dataclass
class LevelTime:
    """One level's bound and the figures that explain it."""

    time_ns: float
    dram_bytes: float
    recv_bytes: np.ndarray  # partial-sum bytes received per node
    imbalance: float
    breakdown: dict = field(default_factory=dict)


def level_bound(
    arch, level: str, stream, node_stats: list, work: tuple, recv: np.ndarray, row_psum: float,
    mean_dim: float,
) -> LevelTime:  # fmt: skip
    """The time of ``level``: max(slowest node's DRAM replay + its received partial sums over
    the node's data path, its units' cycles). ``work`` is the policy's ``level_work``;
    ``recv`` the partial sums each node receives from its children."""
    mem, lay, unit = arch.mem, arch.layouts[level], arch.spec.level(level)
    tck, tx = mv.tck_ns(mem), mv.tx_bytes(mem)
    node_lookups, lanes_work, lookups, _ = work
    t_dram, hit, level_bytes = 0.0, None, 0.0
    node_t = np.zeros(lay.nodes)
    if stream is not None and stream.addr.size:
        node_t = np.array(
            [float(s.cycles_drained) * tck if s is not None else 0.0 for s in node_stats]
        )
        t_dram = float(node_t.max())
        hit = hit_rate_many([s for s in node_stats if s is not None])
        level_bytes = float(stream.addr.size * tx)
    node_peak = level_node_peak_gbps(level, lay, mem)
    # partial sums arriving from the children share this node's data path, and its lanes
    recv = recv.astype(np.float64)
    recv_bytes = recv * row_psum
    t_recv = float(recv_bytes.max()) / node_peak if recv.size else 0.0
    # arithmetic: a lookup (or a child's partial sum) takes ceil(dim / lanes) cycles
    cyc = lanes_work + recv * np.ceil(mean_dim / unit.lanes)
    t_comp = float(cyc.max()) * 1000.0 / unit.clock_mhz if cyc.size else 0.0
    t_level = max(t_dram + t_recv, t_comp)
    # load imbalance: slowest node over the mean node (DRAM time, else lookups)
    basis = node_t if node_t.max() > 0 else node_lookups
    mean = float(basis.mean()) if basis.size else 0.0
    imbalance = float(basis.max() / mean) if mean > 0 else 1.0
    node_bytes = stream.bytes_per_node if stream is not None else 0.0
    bd = {
        "nodes": lay.nodes,
        "lookups": lookups,
        "dram_ns": t_dram,
        "partial_sums_in_ns": t_recv,
        "compute_ns": t_comp,
        "time_ns": t_level,
        "dram_bytes": level_bytes,
        "partial_sum_bytes_in": float(recv_bytes.sum()),
        "bytes": level_bytes + float(recv_bytes.sum()),
        "peak_gbps": node_peak * lay.nodes,
        "node_peak_gbps": node_peak,
        "max_node_bytes": float((node_bytes + recv_bytes).max()),
        "load_imbalance": imbalance,
        "row_hit_rate": hit,
    }
    return LevelTime(t_level, level_bytes, recv_bytes, imbalance, bd)


def act_window_bound(mem, stats_list: list) -> float:
    """The rank's ACTs, whichever level issued them, fit max(tRRD_S, tFAW / 4) apart (ranks
    taken as balanced)."""
    ranks_total = mv.org(mem, "channels") * mv.org(mem, "ranks")
    acts = float(sum(st.cmd_counts.get("ACT", 0) for st in stats_list))
    act_gap = max(mv.timing(mem, "nRRDS"), mv.timing(mem, "nFAW") / 4)
    return acts / ranks_total * act_gap * mv.tck_ns(mem)


def rank_command_cycles(mem, node_stats: list, ranks: int) -> np.ndarray:
    """C/A cycles of the DRAM commands each rank's unit (buffer chip) issues to its chips: every
    command of its replay at its command-bus cycles (DDR5's ACT and column commands take two,
    ``multi_cycle`` of the standard). ``node_stats``: the rank level's replays, one per node
    (None: idle); a rank level has one unit per rank, so node = global rank."""
    cycles = load_standard(mem.standard).multi_cycle
    out = np.zeros(ranks)
    for k, st in enumerate(node_stats):
        if st is not None:
            out[k] = sum(n * cycles.get(cmd, 1) for cmd, n in st.cmd_counts.items())
    return out


def shared_bankgroup_bound(arch, node_bytes: dict[str, np.ndarray]) -> float:
    """With ``arch.shared_bankgroup_column_path``: the busiest bank group that holds both a
    bank-group unit and a bank unit carries both units' bursts (the bank-group unit's reads and
    the partial sums it receives, the bank unit's reads) at one per tCCD_L. ``node_bytes``:
    the bytes crossing each node's data path, per level (0 when the bound does not apply)."""
    spec, mem, lays = arch.spec, arch.mem, arch.layouts
    if not spec.shared_bankgroup_column_path or not {"bankgroup", "bank"} <= set(lays):
        return 0.0
    bgs = mv.org(mem, "bankgroups")
    ranks = mv.org(mem, "channels") * mv.org(mem, "ranks")
    spans, groups_of = _unit_spans(lays)
    held = [groups_of[lv] if node_bytes.get(lv) is not None else set() for lv in groups_of]
    shared = sorted(held[0] & held[1])
    if not shared:
        return 0.0
    load = np.zeros((ranks, bgs))
    for lv, g, nodes, rank, share in spans:
        nbytes = node_bytes.get(lv)
        if nbytes is not None:
            # a unit spanning several bank groups: its bytes spread evenly (one node a rank)
            load[rank, g] += nbytes[nodes] / share
    bursts = float(load[:, shared].max()) / mv.tx_bytes(mem)
    return bursts * mv.timing(mem, "nCCDL") * mv.tck_ns(mem)


def _unit_spans(lays: dict) -> tuple[list[tuple], dict[str, set[int]]]:
    """For the bank-group and bank levels holding rows: (level, bank group, the nodes of one
    unit spanning it, their ranks, how many bank groups the unit spans) in the order the loads
    are added up, and the bank groups each level's units span. Kept per design (its layouts
    are fixed)."""
    return _SPANS.get(lays, lambda: _build_unit_spans(lays))


def _build_unit_spans(lays: dict) -> tuple[list[tuple], dict[str, set[int]]]:
    spans: list[tuple] = []
    groups_of: dict[str, set[int]] = {}
    for lv in ("bankgroup", "bank"):
        lay = lays[lv]
        groups_of[lv] = set()
        if lay.capacity_banks <= 0:
            continue
        rank_of = np.arange(lay.nodes) // lay.units
        unit_of = np.arange(lay.nodes) % lay.units
        for u in range(lay.units):
            groups = np.unique(lay.unit_bg[u])
            groups_of[lv].update(int(g) for g in groups)
            mine = np.flatnonzero(unit_of == u)
            for g in groups:
                spans.append((lv, int(g), mine, rank_of[mine], groups.size))
    return spans, groups_of


_SPANS: IdentityCache[tuple] = IdentityCache(64)  # layouts -> (spans, bank groups per level)


def instruction_bounds(
    spec,
    mem,
    per_chan_lookups: np.ndarray,
    per_rank_dram: np.ndarray,
    any_in_dram: bool,
    rank_cmd_cycles: np.ndarray | None = None,
) -> tuple[float, float]:
    """(host -> buffer chip time of the busiest channel, buffer chip -> DRAM C/A time of the
    busiest rank) for one ``bits_per_lookup`` instruction per lookup. The rank's C/A carries
    the instructions of the lookups served inside the DRAM chips and the rank unit's own
    commands (``rank_cmd_cycles`` per rank, :func:`rank_command_cycles`)."""
    ins, tck = spec.instruction, mv.tck_ns(mem)
    t_host = float(per_chan_lookups.max()) * ins.bits_per_lookup / ins.host_bits_per_cycle * tck
    cycles = np.zeros(mv.org(mem, "channels") * mv.org(mem, "ranks"))
    if any_in_dram and ins.bits_per_lookup:
        cycles = cycles + per_rank_dram * ins.bits_per_lookup / ins.dram_ca_bits_per_cycle
    if rank_cmd_cycles is not None:
        cycles = cycles + rank_cmd_cycles
    return t_host, float(cycles.max()) * tck if cycles.size else 0.0


def channel_bound(mem, t_instructions_ns: float, result_bytes_chan: np.ndarray) -> tuple:
    """(channel time, of which returning results) of the busiest channel: its instructions
    and the pooled partial sums it returns to the host at the channel's peak rate."""
    t_result = float(result_bytes_chan.max()) / mv.channel_peak_gbps(mem)
    return t_instructions_ns + t_result, t_result


def host_compute_bound(spec, result_bytes_chan: np.ndarray) -> tuple[float, float]:
    """(time, FP32 adds) of the host adding the ranks' pooled partial sums on its SIMD lanes."""
    h = spec.host
    adds = float(result_bytes_chan.sum()) / 4
    return adds / (h.cores * h.simd_lanes * h.clock_ghz), adds


def reduction_tail_ns(arch, psum_bytes: np.ndarray) -> float:
    """The last partial sums climb the tree after the slowest bound: per hop one partial sum's
    transfer plus the CAS latency (one hop from the buffer chip, one more from inside DRAM)."""
    mem = arch.mem
    hops = 1 + (1 if any(lv in arch.layouts for lv in ("bankgroup", "bank")) else 0)
    lines = float(np.ceil(psum_bytes.max() / mv.tx_bytes(mem)))
    return hops * (lines * mv.timing(mem, "nBL") + mv.timing(mem, "nCL")) * mv.tck_ns(mem)


def combine(bounds: dict[str, float], tail_ns: float) -> tuple[str, float]:
    """(bottleneck, batch latency): the slowest bound plus the tail."""
    bottleneck = max(bounds, key=lambda k: bounds[k])
    return bottleneck, bounds[bottleneck] + tail_ns


__all__ = [
    "LevelTime",
    "act_window_bound",
    "channel_bound",
    "combine",
    "host_compute_bound",
    "instruction_bounds",
    "level_bound",
    "rank_command_cycles",
    "reduction_tail_ns",
    "shared_bankgroup_bound",
]
