"""Timing and energy of gather-reduce on a design: DRAM engine replays plus the bounds around them.

Per batch, these run concurrently (pipelined) and the slowest sets the latency:

* each data level: its merged request stream replayed on the level's internal view (the nodes
  run in parallel, so the replay's drain time is the slowest node's), or its units' arithmetic
  (lookups x ceil(dim / lanes) cycles of the unit clock), whichever is longer;
* the rank bus (buffer chip): the rank unit's own reads plus the partial sums that the bank-
  group and bank units of that rank return over it;
* instruction delivery: one ``bits_per_lookup`` instruction per lookup over the channel's C/A
  (+DQ) at ``host_bits_per_cycle``, and for lookups served inside the DRAM chips over the
  rank's C/A at ``dram_ca_bits_per_cycle``;
* the channel: instructions plus the ranks' pooled partial sums returned to the host.

Then the reduction tail: the last partial sums climb the tree (one row transfer plus CAS latency
per hop). The host CPU baseline is the replay of all its reads on the full memory (its FP32 adds
are overlapped; they are reported and would bound only if slower).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from numba import njit

from nmp.arch import memview as mv
from nmp.arch.lowering import (
    LevelStream,
    lower_host,
    lower_level,
    lower_vertical,
    split_levels,
)
from nmp.arch.placement import FlatLookups, Placement, level_node_peak_gbps, pow2_shifts
from nmp.arch.spec import LEVELS
from nmp.arch.tree import TreeTraffic
from nmp.results import OpResult

# A sampled replay times this many evenly spaced contiguous chunks of a long stream: contiguous
# so that each chunk keeps the stream's row locality and queue occupancy, spread so that every
# part of the batch (every table, in table-major order) is represented.
SAMPLE_CHUNKS = 16

_SCALED_FIELDS = (
    "cycles",
    "cycles_drained",
    "lines",
    "requests",
    "reads",
    "writes",
    "row_hits",
    "row_misses",
    "row_conflicts",
    "read_row_hits",
    "read_row_misses",
    "read_row_conflicts",
    "write_row_hits",
    "write_row_misses",
    "write_row_conflicts",
    "reads_forwarded",
    "writes_coalesced",
    "active_cycles",
)


def sample_index(n: int, max_requests: int, chunks: int = SAMPLE_CHUNKS) -> np.ndarray:
    """Indices of ``chunks`` contiguous runs, ``max_requests`` in all, spread evenly over ``n``."""
    chunks = max(1, min(chunks, max_requests))
    run = max_requests // chunks
    starts = np.linspace(0, n - run, chunks).astype(np.int64)
    return (starts[:, None] + np.arange(run, dtype=np.int64)[None, :]).ravel()


def scale_stats(st: Any, factor: float) -> Any:
    """Counts, cycles and energy of a sampled replay scaled to the whole stream.

    Rates (bandwidth, latency, hit rates) are those of the sample; the fixed drain tail is scaled
    with the rest, which overstates it by at most one queue's worth of requests.
    """
    changes: dict[str, Any] = {f: int(round(getattr(st, f) * factor)) for f in _SCALED_FIELDS}
    changes["t_ns"] = st.t_ns * factor
    changes["t_drained_ns"] = st.t_drained_ns * factor
    changes["cmd_counts"] = {k: int(round(v * factor)) for k, v in st.cmd_counts.items()}
    changes["energy_pj"] = st.energy_pj * factor
    changes["energy_breakdown_pj"] = {k: v * factor for k, v in st.energy_breakdown_pj.items()}
    changes["at_cycles"] = {}
    changes["timeline"] = None
    return dataclasses.replace(st, **changes)


def replay_stream(
    addr: np.ndarray, view: Any, write: np.ndarray | bool = False, max_requests: int = 0
):
    """Replay ``addr`` on ``view``; streams over ``max_requests`` (when > 0) are timed on a
    sample of that many requests (:func:`sample_index`) and scaled (:func:`scale_stats`)."""
    from nmp.memory import make_requests, replay_lines

    if addr.dtype != np.uint64:
        addr = make_requests(addr)["addr"]  # checks: non-negative integers
    if max_requests <= 0 or addr.size <= max_requests:
        return replay_lines(addr, view, write)
    idx = sample_index(addr.size, max_requests)
    sampled_write = write if isinstance(write, bool | np.bool_) else np.asarray(write)[idx]
    st = replay_lines(addr[idx], view, sampled_write)
    return scale_stats(st, addr.size / idx.size)


def dram_energy(mem: Any, stats_list: list, latency_cycles: float) -> dict[str, float]:
    """DRAM energy of the replays' commands, with background and refresh counted once for the
    whole memory over the batch (the replays overlap in time)."""
    from nmp.memory import command_energy_pj

    counts: dict[str, float] = {}
    for st in stats_list:
        for k, v in st.cmd_counts.items():
            if k.upper().startswith("REF"):
                continue
            counts[k] = counts.get(k, 0) + v
    ranks = mv.org(mem, "channels") * mv.org(mem, "ranks")
    counts["REF"] = ranks * latency_cycles / mv.timing(mem, "nREFI")
    return command_energy_pj(mem, counts, latency_cycles)


def _ns(cycles: float, mem: Any) -> float:
    return float(cycles) * mv.tck_ns(mem)


def time_gather_reduce(
    arch, flat: FlatLookups, plc: Placement, order: np.ndarray, traffic: TreeTraffic
) -> OpResult:
    spec, mem = arch.spec, arch.mem
    tck = mv.tck_ns(mem)
    tx = mv.tx_bytes(mem)
    ch_peak = mv.channel_peak_gbps(mem)
    channels = mv.org(mem, "channels")
    n = flat.n
    dims = np.asarray([t.dim for t in arch.tables], dtype=np.int64)
    weighted = flat.weight is not None
    bd: dict[str, Any] = {}
    levels_bd: dict[str, dict] = {}
    energy = {"dram_core": 0.0, "dram_io": 0.0, "units": 0.0, "sram": 0.0}
    bytes_by_level: dict[str, float] = {}
    io_pj_bit = float(mem.energy.io_pj_per_bit) if mem.energy is not None else 0.0

    if spec.policy == "host":
        dim_l = dims[flat.table]
        addr = lower_host(mem, flat, order, arch.table_rows, arch.table_row_bytes)
        st = replay_stream(addr, mem, max_requests=spec.replay_sample_requests)
        t_mem = _ns(st.cycles_drained, mem)
        h = spec.host
        flops = float((dim_l * (2 if weighted else 1)).sum())
        t_cpu = flops / (h.cores * h.simd_lanes * h.clock_ghz)
        latency = max(t_mem, t_cpu)
        e = dram_energy(mem, [st], latency / tck)
        energy["dram_core"] = sum(v for k, v in e.items() if k != "io")
        energy["dram_io"] = addr.size * tx * 8 * io_pj_bit
        energy["units"] = flops * h.pj_per_flop
        bytes_by_level["channel"] = float(addr.size * tx)
        bd.update(
            bottleneck="channel" if t_mem >= t_cpu else "host_compute",
            bounds_ns={"channel": t_mem, "host_compute": t_cpu},
            dram_replay_ns=t_mem,
            host_compute_ns=t_cpu,
            channel={
                "time_ns": t_mem,
                "bytes": float(addr.size * tx),
                "achieved_gbps": addr.size * tx / latency,
                "peak_gbps": ch_peak * channels,
                "row_hit_rate": _hit_rate(st),
                "requests": int(addr.size),
            },
            load_imbalance=1.0,
        )
        return OpResult(latency / tck, latency, energy, bytes_by_level, bd, 1.0)

    bounds: dict[str, float] = {}
    stats_list = []
    crossing_bytes = 0.0  # bytes that leave a DRAM chip (chip I/O energy)
    ranks_total = channels * mv.org(mem, "ranks")
    imbalance = {}
    psum_bytes = dims * 4  # partial sums are FP32
    sums = _per_level_sums(arch, flat, plc, dims)
    # means of integers over the lookups: exact sums, so equal to a mean over every lookup
    row_psum = float((psum_bytes * sums.table_lookups).sum() / n) if n else 0.0
    mean_dim = float((dims * sums.table_lookups).sum() / n) if n else 0.0
    split = None
    if spec.policy != "vertical":
        data = tuple(lv for lv, lay in arch.layouts.items() if lay.capacity_banks > 0)
        split = split_levels(arch.layouts, mem, flat, plc, order, data, scratch=True)
    for li, lv in enumerate(LEVELS):
        if lv not in arch.layouts:
            continue
        lay = arch.layouts[lv]
        unit = spec.level(lv)
        if spec.policy == "vertical":
            stream: LevelStream | None = lower_vertical(spec, lay, mem, flat, order)
            node_lookups = stream.lookups_per_node.astype(np.float64)
            dim_l = dims[flat.table]
            lanes_work = np.full(lay.nodes, float((-(-dim_l // (lay.nodes * unit.lanes))).sum()))
        elif lay.capacity_banks > 0:
            stream = lower_level(spec, lv, lay, mem, flat, plc, order, split, scratch=True)
            node_lookups = sums.node_lookups[li, : lay.nodes].astype(np.float64)
            # a lookup takes ceil(dim / lanes) cycles of its unit
            lanes_work = sums.lanes_cycles[li, : lay.nodes].copy()
        else:
            stream = None
            node_lookups = np.zeros(lay.nodes)
            lanes_work = np.zeros(lay.nodes)
        t_dram = 0.0
        hit_rate = None
        level_bytes = 0.0
        node_t = np.zeros(lay.nodes)
        if stream is not None and stream.addr.size:
            node_stats = replay_nodes(stream, lay.nodes, spec.replay_sample_requests)
            stats_list.extend(s_ for s_ in node_stats if s_ is not None)
            node_t = np.array(
                [_ns(s_.cycles_drained, mem) if s_ is not None else 0.0 for s_ in node_stats]
            )
            t_dram = float(node_t.max())
            hit_rate = _hit_rate_many([s_ for s_ in node_stats if s_ is not None])
            level_bytes = float(stream.addr.size * tx)
        node_peak = level_node_peak_gbps(lv, lay, mem)
        # partial sums arriving from the children share this node's data path, and its lanes
        recv = traffic.recv.get(lv, np.zeros(lay.nodes, dtype=np.int64)).astype(np.float64)
        recv_bytes = recv * row_psum
        t_recv = float(recv_bytes.max()) / node_peak if recv.size else 0.0
        # arithmetic: a lookup (or a child's partial sum) takes ceil(dim / lanes) cycles
        cyc = lanes_work + recv * np.ceil(mean_dim / unit.lanes)
        t_comp = float(cyc.max()) * 1000.0 / unit.clock_mhz if cyc.size else 0.0
        t_level = max(t_dram + t_recv, t_comp)
        bounds[lv] = t_level
        # load imbalance: slowest node over the mean node (DRAM time, else lookups)
        basis = node_t if node_t.max() > 0 else node_lookups
        mean = float(basis.mean()) if basis.size else 0.0
        imbalance[lv] = float(basis.max() / mean) if mean > 0 else 1.0
        levels_bd[lv] = {
            "nodes": lay.nodes,
            "lookups": int(node_lookups.sum()) if spec.policy != "vertical" else int(n),
            "dram_ns": t_dram,
            "partial_sums_in_ns": t_recv,
            "compute_ns": t_comp,
            "time_ns": t_level,
            "dram_bytes": level_bytes,
            "partial_sum_bytes_in": float(recv_bytes.sum()),
            "bytes": level_bytes + float(recv_bytes.sum()),
            "peak_gbps": node_peak * lay.nodes,
            "node_peak_gbps": node_peak,
            "max_node_bytes": float(
                ((stream.bytes_per_node if stream is not None else 0.0) + recv_bytes).max()
            ),
            "load_imbalance": imbalance[lv],
            "row_hit_rate": hit_rate,
        }
        bytes_by_level[lv] = level_bytes + float(recv_bytes.sum())
        if lv == "rank":
            # rank-level reads and the children's partial sums leave the DRAM chips
            crossing_bytes += level_bytes + float(recv_bytes.sum())
        # unit energy: adds (and multiplies when weighted) + SRAM accumulator read/write
        level_dims = float(sums.dim_sum[li])  # elements the level's lookups add
        flops_add = level_dims if spec.policy != "vertical" else float(sums.dim_sum.sum())
        flops_add += float(recv_bytes.sum()) / 4
        energy["units"] += flops_add * unit.pj_per_add + (
            level_dims * unit.pj_per_mul if weighted else 0.0
        )
        energy["sram"] += 2 * flops_add * 32 * unit.sram_pj_per_bit
        if lv == "rank" and plc.hit.any():
            energy["sram"] += float(flat.row_bytes[plc.hit].sum()) * 8 * unit.sram_pj_per_bit
    # activation power window: every level's units in a rank draw from the same chips, so the
    # rank's ACTs, whichever level issued them, fit max(tRRD_S, tFAW / 4) apart (the replays
    # enforce it per level only; here it is enforced across levels, ranks taken as balanced)
    acts = float(sum(st.cmd_counts.get("ACT", 0) for st in stats_list))
    act_gap = max(mv.timing(mem, "nRRDS"), mv.timing(mem, "nFAW") / 4)
    bounds["act_window"] = acts / ranks_total * act_gap * tck
    # pooled partial sums returned to the host, per channel
    result_bytes_chan = traffic.host_recv.astype(np.float64) * row_psum
    if spec.policy == "vertical":
        result_bytes_chan = result_bytes_chan / arch.layouts["rank"].nodes
    if "rank" not in arch.layouts:
        crossing_bytes += float(result_bytes_chan.sum())
    # instruction delivery
    ins = spec.instruction
    if sums.rank_lookups is not None:
        ranks = mv.org(mem, "ranks")
        per_chan_lookups = sums.rank_lookups.reshape(channels, ranks).sum(axis=1)
        any_in_dram = bool(sums.rank_dram_lookups.any())
        per_rank_dram = sums.rank_dram_lookups
    else:
        lookup_rank = _lookup_rank(arch, flat, plc)
        per_chan_lookups = np.bincount(_lookup_channel(arch, flat, lookup_rank), minlength=channels)
        in_dram = plc.level >= LEVELS.index("bankgroup")
        any_in_dram = bool(in_dram.any())
        per_rank_dram = np.bincount(lookup_rank[in_dram], minlength=ranks_total)
    t_ins_host = float(per_chan_lookups.max()) * ins.bits_per_lookup / ins.host_bits_per_cycle * tck
    if any_in_dram and ins.bits_per_lookup:
        per_rank_lookups = per_rank_dram
        t_ca = (
            float(per_rank_lookups.max()) * ins.bits_per_lookup / ins.dram_ca_bits_per_cycle * tck
        )
    else:
        t_ca = 0.0
    t_result = float(result_bytes_chan.max()) / ch_peak
    t_channel = t_ins_host + t_result
    bounds["instruction_ca"] = t_ca
    bounds["channel"] = t_channel
    # the host adds the ranks' pooled partial sums
    h = spec.host
    host_adds = float(result_bytes_chan.sum()) / 4
    t_host = host_adds / (h.cores * h.simd_lanes * h.clock_ghz)
    bounds["host_compute"] = t_host
    energy["units"] += host_adds * h.pj_per_flop
    channel_bytes = float(per_chan_lookups.sum()) * ins.bits_per_lookup / 8 + float(
        result_bytes_chan.sum()
    )
    bytes_by_level = {"channel": channel_bytes, **bytes_by_level}
    crossing_bytes += channel_bytes
    # the reduction tail: last partial sums climb the tree
    hops = 1 + (1 if any(lv in arch.layouts for lv in ("bankgroup", "bank")) else 0)
    lines = float(np.ceil(psum_bytes.max() / tx))
    tail = hops * (lines * mv.timing(mem, "nBL") + mv.timing(mem, "nCL")) * tck
    bottleneck = max(bounds, key=lambda k: bounds[k])
    latency = bounds[bottleneck] + tail
    e = dram_energy(mem, stats_list, latency / tck)
    energy["dram_core"] = sum(v for k, v in e.items() if k != "io")
    energy["dram_io"] = crossing_bytes * 8 * io_pj_bit
    for d in levels_bd.values():
        d["achieved_gbps"] = d["bytes"] / latency if latency > 0 else 0.0
        d["utilization"] = d["achieved_gbps"] / d["peak_gbps"] if d["peak_gbps"] else 0.0
        d["node_achieved_gbps"] = d["max_node_bytes"] / latency if latency > 0 else 0.0
    li_b = imbalance.get(bottleneck, max(imbalance.values(), default=1.0))
    bd.update(
        bottleneck=bottleneck,
        bounds_ns=dict(bounds),
        tail_ns=tail,
        levels=levels_bd,
        instruction={
            "bits_per_lookup": ins.bits_per_lookup,
            "host_ns": t_ins_host,
            "dram_ca_ns": t_ca,
        },
        channel={
            "time_ns": t_channel,
            "result_ns": t_result,
            "bytes": channel_bytes,
            "achieved_gbps": channel_bytes / latency if latency > 0 else 0.0,
            "peak_gbps": ch_peak * channels,
        },
        compute_ns={lv: d["compute_ns"] for lv, d in levels_bd.items()},
        load_imbalance=li_b,
        **plc.info,
        **arch.partition_info,
    )
    return OpResult(latency / tck, latency, energy, bytes_by_level, bd, li_b)


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
    level, node, table, dims, cycles, units, nodes, ranks_total, dram_level, with_ranks
):  # pragma: no cover - compiled
    """One pass over the lookups: the per-table, per-level and per-node counts that the timing
    reads (all integers, so the sums are exact whatever their order)."""
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
    for i in range(level.shape[0]):
        t, li, nd = table[i], level[i], node[i]
        table_lookups[t] += 1
        if li < 0:
            continue
        dim_sum[li] += dims[t]
        if nd < 0:
            continue
        node_lookups[li, nd] += 1
        lanes[li, nd] += cycles[li, t]
        if with_ranks:
            u = units[li]
            rk = nd >> shifts[li] if shifts[li] >= 0 else nd // u
            rank_all[rk] += 1
            if li >= dram_level:
                rank_dram[rk] += 1
    return table_lookups, node_lookups, lanes, dim_sum, rank_all, rank_dram


def _per_level_sums(arch, flat: FlatLookups, plc: Placement, dims: np.ndarray) -> _LevelSums:
    spec = arch.spec
    units = np.ones(len(LEVELS) + 1, dtype=np.int64)
    cycles = np.zeros((len(LEVELS), dims.size), dtype=np.float64)
    for li, lv in enumerate(LEVELS):
        if lv in arch.layouts:
            units[li] = arch.layouts[lv].units
            cycles[li] = -(-dims // spec.level(lv).lanes)  # ceil(dim / lanes) per table
    ranks_total = mv.org(arch.mem, "channels") * mv.org(arch.mem, "ranks")
    # per-rank counts when every lookup has a node (as _lookup_rank computes them)
    with_ranks = spec.policy != "vertical" and bool(flat.n) and int(plc.level.min()) >= 0
    tl, nl, lanes, dsum, r_all, r_dram = _level_sums_kernel(
        np.ascontiguousarray(plc.level, dtype=np.int64),
        np.ascontiguousarray(plc.node, dtype=np.int64),
        np.ascontiguousarray(flat.table, dtype=np.int64),
        dims,
        cycles,
        units,
        max((lay.nodes for lay in arch.layouts.values()), default=1),
        ranks_total,
        LEVELS.index("bankgroup"),
        with_ranks,
    )
    return _LevelSums(
        tl, nl, lanes, dsum, r_all if with_ranks else None, r_dram if with_ranks else None
    )


def replay_nodes(stream: LevelStream, nodes: int, max_requests: int = 0) -> list:
    """Replay each node's requests on its own (units run concurrently); None for idle nodes.
    A node's stream longer than ``max_requests`` (when > 0) is timed on a sample."""
    if stream.node_lines is not None:
        # lower_level emits the requests grouped by node: each node's are then a slice
        counts, addr = stream.node_lines, stream.addr
    else:
        counts = np.bincount(stream.node, minlength=nodes)
        grouped = bool((stream.node[1:] >= stream.node[:-1]).all())
        addr = stream.addr if grouped else stream.addr[np.argsort(stream.node, kind="stable")]
    starts = np.concatenate([[0], np.cumsum(counts)])
    out = []
    if max_requests <= 0 or int(counts.max(initial=0)) <= max_requests:
        # no node is sampled: each node replays its slice of the addresses
        from nmp.memory import replay_lines

        for k in range(nodes):
            a, b = int(starts[k]), int(starts[k + 1])
            out.append(replay_lines(addr[a:b], stream.view) if b > a else None)
        return out
    for k in range(nodes):
        a, b = int(starts[k]), int(starts[k + 1])
        out.append(
            replay_stream(addr[a:b], stream.view, max_requests=max_requests) if b > a else None
        )
    return out


def _hit_rate_many(stats: list) -> float:
    hits = sum(s.row_hits for s in stats)
    total = sum(s.row_hits + s.row_misses + s.row_conflicts for s in stats)
    return float(hits / total) if total else 0.0


def _hit_rate(st) -> float:
    total = st.row_hits + st.row_misses + st.row_conflicts
    return float(st.row_hits / total) if total else 0.0


def _lookup_rank(arch, flat: FlatLookups, plc: Placement) -> np.ndarray:
    """Global rank id (channel * ranks + rank) serving each lookup."""
    if arch.spec.policy == "vertical":
        return np.zeros(flat.n, dtype=np.int64)  # every rank; the channel bound uses channels
    # node ids count units rank by rank at every level: rank id = node // units of its level
    units = np.ones(len(LEVELS) + 1, dtype=np.int64)
    for li, lv in enumerate(LEVELS):
        if lv in arch.layouts:
            units[li] = arch.layouts[lv].units
    placed = plc.level >= 0
    if placed.all():
        return plc.node // units[plc.level]
    return np.where(placed, np.maximum(plc.node, 0) // units[plc.level], 0)


def _lookup_channel(arch, flat: FlatLookups, lookup_rank: np.ndarray) -> np.ndarray:
    if arch.spec.policy == "vertical":
        # an instruction per lookup reaches every channel (each holds a slice)
        channels = mv.org(arch.mem, "channels")
        return np.tile(np.arange(channels), flat.n)
    return lookup_rank // mv.org(arch.mem, "ranks")


__all__ = ["dram_energy", "replay_stream", "time_gather_reduce"]
