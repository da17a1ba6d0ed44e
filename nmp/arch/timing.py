"""Timing and energy of gather-reduce on a design: lower -> replay -> bounds -> combine.

:func:`time_gather_reduce` hands the batch to the design's policy (``time_batch``). For designs
whose units read rows near memory (:func:`time_near_memory`), the stages are:

* lower: each data level's lookups to per-node DRAM request streams (the policy's ``lower``);
* replay: each node's stream on the level's internal view of the memory (:mod:`nmp.arch.replay`),
  a level's replays running on the design point's threads (:mod:`nmp.arch.threads`) while the
  next level is lowered;
* bounds: one function per bound (:mod:`nmp.arch.bounds`): levels, activation window,
  instruction delivery, channel, host compute;
* combine: the slowest bound plus the reduction tail; energy from the replays' commands, the
  bytes that cross chip boundaries and the units' arithmetic.
"""

from __future__ import annotations

import contextlib
import dataclasses

import numpy as np

from nmp.arch import bounds as bnd
from nmp.arch import memview as mv
from nmp.arch.energy import near_memory_energy
from nmp.arch.placement import FlatLookups, Placement, pow2_shifts
from nmp.arch.replay import (
    SAMPLE_CHUNKS,
    dram_energy,
    replay_nodes,
    replay_stream,
    sample_index,
    scale_stats,
    start_replays,
)
from nmp.arch.spec import LEVELS
from nmp.arch.tree import TreeTraffic
from nmp.jit import njit
from nmp.results import OpResult


def time_gather_reduce(
    arch, flat: FlatLookups, plc: Placement, order: np.ndarray, traffic: TreeTraffic
) -> OpResult:
    """Latency, energy, bytes and breakdown of one batch on ``arch`` (its policy's timing)."""
    return arch.policy.time_batch(arch, flat, plc, order, traffic)


def time_near_memory(
    arch, flat: FlatLookups, plc: Placement, order: np.ndarray, traffic: TreeTraffic
) -> OpResult:
    """Near-memory units: lower and replay every level, then combine the bounds."""
    mem = arch.mem
    tck = mv.tck_ns(mem)
    n = flat.n
    dims = np.asarray([t.dim for t in arch.tables], dtype=np.int64)
    energy = {"dram_core": 0.0, "dram_io": 0.0, "units": 0.0, "sram": 0.0}
    psum_bytes = dims * 4  # partial sums are FP32
    lowered = _lower_and_start(arch, flat, plc, order)
    try:
        sums = _per_level_sums(arch, flat, plc, dims)  # while the replays run
        # means of integers over the lookups: exact sums, so equal to a mean over every lookup
        row_psum = float((psum_bytes * sums.table_lookups).sum() / n) if n else 0.0
        mean_dim = float((dims * sums.table_lookups).sum() / n) if n else 0.0
        means = (row_psum, mean_dim)
        levels = _time_levels(arch, flat, plc, traffic, lowered, sums, dims, means, energy)
    finally:
        _settle(lowered)
    bounds = levels.bounds
    bounds["act_window"] = bnd.act_window_bound(mem, levels.stats_list)
    t_shared = bnd.shared_bankgroup_bound(arch, levels.node_bytes)
    if t_shared > 0:
        bounds["bankgroup_column_path"] = t_shared
    host = _host_side(arch, flat, plc, traffic, sums, levels, row_psum, energy)
    bytes_by_level = {"channel": host.channel_bytes, **levels.bytes_by_level}
    tail = bnd.reduction_tail_ns(arch, psum_bytes)
    bottleneck, latency = bnd.combine(bounds, tail)
    energy["dram_core"], energy["dram_io"], where = near_memory_energy(
        arch, levels.level_stats, latency / tck, levels.rank_io_bytes, host.channel_bytes
    )
    bd = _breakdown(arch, plc, levels, host, bottleneck, latency, tail, where)
    return OpResult(latency / tck, latency, energy, bytes_by_level, bd, bd["load_imbalance"])


@dataclasses.dataclass
class _LevelsTimed:
    """Every data level timed: its bound and imbalance, its breakdown and bytes, its replays'
    statistics, the bytes over each node's data path, the bytes that leave the DRAM chips for
    the buffer chip, and the rank units' own command cycles per rank (None without them)."""

    bounds: dict[str, float] = dataclasses.field(default_factory=dict)
    imbalance: dict[str, float] = dataclasses.field(default_factory=dict)
    breakdown: dict[str, dict] = dataclasses.field(default_factory=dict)
    bytes_by_level: dict[str, float] = dataclasses.field(default_factory=dict)
    level_stats: dict[str, list] = dataclasses.field(default_factory=dict)
    stats_list: list = dataclasses.field(default_factory=list)
    node_bytes: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)
    rank_io_bytes: float = 0.0
    rank_cmd: np.ndarray | None = None


def _time_levels(
    arch,
    flat: FlatLookups,
    plc: Placement,
    traffic: TreeTraffic,
    lowered: dict,
    sums: _LevelSums,
    dims: np.ndarray,
    means: tuple[float, float],
    energy: dict[str, float],
) -> _LevelsTimed:
    """Each level's replays collected and its bound computed (``means``: a lookup's partial-sum
    bytes and its elements, over the lookups); its units' and SRAM's energy added to
    ``energy``."""
    spec, mem, policy = arch.spec, arch.mem, arch.policy
    row_psum, mean_dim = means
    weighted = flat.weight is not None
    out = _LevelsTimed()
    for li, lv in enumerate(LEVELS):
        if lv not in arch.layouts:
            continue
        unit = spec.level(lv)
        stream, replays = lowered[lv]
        node_stats = []
        if replays is not None:
            node_stats = replays.results()
            out.level_stats[lv] = [s_ for s_ in node_stats if s_ is not None]
            out.stats_list.extend(out.level_stats[lv])
            if lv == "rank":
                ranks_total = mv.org(mem, "channels") * mv.org(mem, "ranks")
                out.rank_cmd = bnd.rank_command_cycles(mem, node_stats, ranks_total)
        work = policy.level_work(arch, lv, stream, flat, sums, dims)
        recv = traffic.recv.get(lv, np.zeros(arch.layouts[lv].nodes, dtype=np.int64))
        lt = bnd.level_bound(arch, lv, stream, node_stats, work, recv, row_psum, mean_dim)
        out.bounds[lv] = lt.time_ns
        out.imbalance[lv] = lt.imbalance
        if stream is not None:
            out.node_bytes[lv] = stream.bytes_per_node + lt.recv_bytes
        out.breakdown[lv] = lt.breakdown
        recv_total = float(lt.recv_bytes.sum())
        out.bytes_by_level[lv] = lt.dram_bytes + recv_total
        if lv == "rank":
            # rank-level reads and the children's partial sums leave the DRAM chips
            out.rank_io_bytes += lt.dram_bytes + recv_total
        # unit energy: adds (and multiplies when weighted) + SRAM accumulator read/write
        level_dims = float(sums.dim_sum[li])  # elements the level's lookups add
        flops_add = work[3] + recv_total / 4
        energy["units"] += flops_add * unit.pj_per_add + (
            level_dims * unit.pj_per_mul if weighted else 0.0
        )
        energy["sram"] += 2 * flops_add * 32 * unit.sram_pj_per_bit
        if lv == "rank" and plc.hit.any():
            energy["sram"] += float(flat.row_bytes[plc.hit].sum()) * 8 * unit.sram_pj_per_bit
    return out


@dataclasses.dataclass(frozen=True)
class _HostSide:
    """The channel between the host and the units: the instructions' time on the host's side
    and on the DRAM's command/address pins, the channel's time and its results' part, and its
    bytes (instructions out, pooled partial sums back)."""

    t_ins_host: float
    t_ca: float
    t_channel: float
    t_result: float
    channel_bytes: float


def _host_side(
    arch,
    flat: FlatLookups,
    plc: Placement,
    traffic: TreeTraffic,
    sums: _LevelSums,
    levels: _LevelsTimed,
    row_psum: float,
    energy: dict[str, float],
) -> _HostSide:
    """The instruction, channel and host-compute bounds (into ``levels.bounds``), the results'
    bytes that leave the chips (into ``levels.rank_io_bytes``) and the host's adds (into
    ``energy``)."""
    spec, mem, policy = arch.spec, arch.mem, arch.policy
    bounds = levels.bounds
    # pooled partial sums returned to the host, per channel
    assert traffic.host_recv is not None  # (tree_reduce always sets it)
    result_bytes_chan = traffic.host_recv.astype(np.float64) * row_psum
    slices = policy.result_slices(arch)
    if slices != 1:
        result_bytes_chan = result_bytes_chan / slices
    if "rank" not in arch.layouts:
        # the in-DRAM units' results leave the chips for the buffer chip on their way out
        levels.rank_io_bytes += float(result_bytes_chan.sum())
    per_chan_lookups, per_rank_dram, any_in_dram = policy.instruction_lookups(arch, flat, plc, sums)
    t_ins_host, t_ca = bnd.instruction_bounds(
        spec, mem, per_chan_lookups, per_rank_dram, any_in_dram, levels.rank_cmd
    )
    t_channel, t_result = bnd.channel_bound(mem, t_ins_host, result_bytes_chan)
    bounds["instruction_ca"] = t_ca
    bounds["channel"] = t_channel
    bounds["host_compute"], host_adds = bnd.host_compute_bound(spec, result_bytes_chan)
    energy["units"] += host_adds * spec.host.pj_per_flop
    channel_bytes = float(per_chan_lookups.sum()) * spec.instruction.bits_per_lookup / 8 + float(
        result_bytes_chan.sum()
    )
    return _HostSide(t_ins_host, t_ca, t_channel, t_result, channel_bytes)


def _breakdown(
    arch,
    plc: Placement,
    levels: _LevelsTimed,
    host: _HostSide,
    bottleneck: str,
    latency: float,
    tail: float,
    where: dict[str, float],
) -> dict:
    """The result's breakdown: the bounds, each level's achieved bandwidth at the batch's
    latency, the instructions and the channel, the load imbalance of the bottleneck."""
    mem, rank_cmd = arch.mem, levels.rank_cmd
    levels_bd = levels.breakdown
    for d in levels_bd.values():
        d["achieved_gbps"] = d["bytes"] / latency if latency > 0 else 0.0
        d["utilization"] = d["achieved_gbps"] / d["peak_gbps"] if d["peak_gbps"] else 0.0
        d["node_achieved_gbps"] = d["max_node_bytes"] / latency if latency > 0 else 0.0
    imbalance = levels.imbalance
    li_b = imbalance.get(bottleneck, max(imbalance.values(), default=1.0))
    return dict(
        bottleneck=bottleneck,
        bounds_ns=dict(levels.bounds),
        tail_ns=tail,
        levels=levels_bd,
        instruction={
            "bits_per_lookup": arch.spec.instruction.bits_per_lookup,
            "host_ns": host.t_ins_host,
            "dram_ca_ns": host.t_ca,
            "rank_command_cycles": float(rank_cmd.sum()) if rank_cmd is not None else 0.0,
        },
        channel={
            "time_ns": host.t_channel,
            "result_ns": host.t_result,
            "bytes": host.channel_bytes,
            "achieved_gbps": host.channel_bytes / latency if latency > 0 else 0.0,
            "peak_gbps": mv.channel_peak_gbps(mem) * mv.org(mem, "channels"),
        },
        compute_ns={lv: d["compute_ns"] for lv, d in levels_bd.items()},
        load_imbalance=li_b,
        dram_energy=where,
        **plc.info,
        **arch.partition_info,
    )


def _lower_and_start(arch, flat: FlatLookups, plc: Placement, order: np.ndarray) -> dict:
    """Every level's stream (the policy's ``lower``), each level's node replays started on the
    point's threads as soon as it is lowered (the next level is lowered meanwhile): {level:
    (stream or None, started replays or None)}."""
    policy, spec = arch.policy, arch.spec
    split = policy.split(arch, flat, plc, order)
    lowered: dict[str, tuple] = {}
    try:
        for lv in LEVELS:
            if lv in arch.layouts:
                stream = policy.lower(arch, lv, flat, plc, order, split)
                replays = None
                if stream is not None and stream.addr.size:
                    nodes = arch.layouts[lv].nodes
                    replays = start_replays(stream, nodes, spec.replay_sample_requests)
                lowered[lv] = (stream, replays)
    except BaseException:
        _settle(lowered)
        raise
    return lowered


def _settle(lowered: dict) -> None:
    """Wait for every started replay (their errors are the caller's to raise): the streams
    live in this thread's work buffers, which nothing may still read when it lowers again."""
    for _, replays in lowered.values():
        if replays is not None:
            with contextlib.suppress(Exception):
                replays.results()


@dataclasses.dataclass
class _LevelSums:
    table_lookups: np.ndarray  # int64 [tables]
    node_lookups: np.ndarray  # int64 [levels, max nodes]
    lanes_cycles: np.ndarray  # float64 [levels, max nodes]: unit cycles of the node's lookups
    dim_sum: np.ndarray  # int64 [levels]: elements added by the level's lookups
    rank_lookups: np.ndarray | None  # int64 [ranks]: lookups per global rank (all levels)
    rank_dram_lookups: np.ndarray | None  # int64 [ranks]: those served inside the DRAM chips


@njit(cache=True)
def _level_sums_kernel(
    level, node, table, dims, cycles, units, nodes, ranks_total, dram_level
):  # pragma: no cover - compiled
    """One pass over the lookups: the per-table, per-level and per-node counts that the timing
    reads (all integers, so the sums are exact whatever their order), and whether every lookup
    has a level and a node (the per-rank counts are complete only then)."""
    nlev, max_nodes = cycles.shape[0], max(nodes, 1)
    for i in range(node.shape[0]):
        max_nodes = max(max_nodes, node[i] + 1)
    table_lookups = np.zeros(dims.shape[0], dtype=np.int64)
    node_lookups = np.zeros((nlev, max_nodes), dtype=np.int64)
    lanes = np.zeros((nlev, max_nodes), dtype=np.float64)
    dim_sum = np.zeros(nlev, dtype=np.int64)
    rank_all = np.zeros(ranks_total, dtype=np.int64)
    rank_dram = np.zeros(ranks_total, dtype=np.int64)
    shifts = pow2_shifts(units)
    placed = True
    for i in range(level.shape[0]):
        t, li, nd = table[i], level[i], node[i]
        table_lookups[t] += 1
        if li < 0:
            placed = False
            continue
        dim_sum[li] += dims[t]
        if nd < 0:
            placed = False
            continue
        node_lookups[li, nd] += 1
        lanes[li, nd] += cycles[li, t]
        u = units[li]
        rk = nd >> shifts[li] if shifts[li] >= 0 else nd // u
        if rk >= ranks_total:  # (not a node of this memory's ranks: no per-rank counts)
            placed = False
            continue
        rank_all[rk] += 1
        if li >= dram_level:
            rank_dram[rk] += 1
    return table_lookups, node_lookups, lanes, dim_sum, rank_all, rank_dram, placed


def _per_level_sums(arch, flat: FlatLookups, plc: Placement, dims: np.ndarray) -> _LevelSums:
    units = np.ones(len(LEVELS) + 1, dtype=np.int64)
    cycles = np.zeros((len(LEVELS), dims.size), dtype=np.float64)
    for li, lv in enumerate(LEVELS):
        if lv in arch.layouts:
            units[li] = arch.layouts[lv].units
            cycles[li] = -(-dims // arch.spec.level(lv).lanes)  # ceil(dim / lanes) per table
    ranks_total = mv.org(arch.mem, "channels") * mv.org(arch.mem, "ranks")
    # per-rank counts when every lookup has a level and a node (the kernel tells)
    tl, nl, lanes, dsum, r_all, r_dram, placed = _level_sums_kernel(
        np.ascontiguousarray(plc.level, dtype=np.int64),
        np.ascontiguousarray(plc.node, dtype=np.int64),
        np.ascontiguousarray(flat.table, dtype=np.int64),
        dims,
        cycles,
        units,
        max((lay.nodes for lay in arch.layouts.values()), default=1),
        ranks_total,
        LEVELS.index("bankgroup"),
    )
    with_ranks = bool(flat.n) and placed
    return _LevelSums(
        tl, nl, lanes, dsum, r_all if with_ranks else None, r_dram if with_ranks else None
    )


__all__ = [
    "SAMPLE_CHUNKS",
    "dram_energy",
    "replay_nodes",
    "replay_stream",
    "sample_index",
    "scale_stats",
    "time_gather_reduce",
    "time_near_memory",
]
