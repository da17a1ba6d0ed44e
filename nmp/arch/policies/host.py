"""The host CPU (no near-memory units): every row is read by its cores through their caches,
and the cores add it.

Its cores and caches (:mod:`nmp.arch.host_hierarchy`, docs/host-model.md): ``threads`` cores
split the batch's bags; each reads its rows' 64-B lines through a private L1 and L2 and the
shared LLC (``host.llc_mib``), every one a set-associative LRU simulated on the line stream and
at steady state when a batch starts: warmed by the batches before it (seeded draws of the
workload) until the share of one batch's reads the caches serve differs from the previous
one's by less than
:data:`~nmp.arch.lru_cache.STEADY_TOL`. Only the LLC's misses cross the channel. Every level
costs time: the batch takes the longest of its busiest core's bounds (its lookup loop's
arithmetic plus its lines' stalls, each level's latency over the lines the loop keeps in flight
from it; its L2's misses in flight, by Little's law; its L2's bandwidth), the shared LLC's
bandwidth and the replay of the misses on the whole memory (the channel bound).
"""

from __future__ import annotations

import numpy as np

from nmp.arch import memview as mv
from nmp.arch.functional import pool_tables
from nmp.arch.host_hierarchy import (
    LINE_BYTES,
    HostCaches,
    core_bounds_ns,
    core_load,
    core_of_bag,
    llc_bandwidth_ns,
    threads_of,
)
from nmp.arch.lowering import expand_lines
from nmp.arch.lru_cache import warm_until_steady
from nmp.arch.placement import FlatLookups, Placement, flatten
from nmp.arch.policies import register
from nmp.arch.replay import dram_energy, hit_rate, replay_stream
from nmp.arch.spec import LEVELS
from nmp.arch.tree import TreeTraffic
from nmp.config import KeyedValueError
from nmp.results import OpResult


def lower_host(
    mem, flat: FlatLookups, order: np.ndarray, table_rows: list[int], table_row_bytes: list[int]
) -> np.ndarray:
    """Physical addresses of a host CPU reading every row (tables packed line-aligned, one
    after another, folded into the memory's capacity), in issue order."""
    return lower_host_lines(mem, flat, order, table_rows, table_row_bytes)[0]


def lower_host_lines(
    mem, flat: FlatLookups, order: np.ndarray, table_rows: list[int], table_row_bytes: list[int]
) -> tuple[np.ndarray, np.ndarray]:
    """(:func:`lower_host`'s addresses, the lookup each one reads a line of)."""
    tx = mv.tx_bytes(mem)
    t_lpr = -(-np.asarray(table_row_bytes, dtype=np.int64) // tx)
    t_base = np.concatenate([[0], np.cumsum(np.asarray(table_rows, dtype=np.int64) * t_lpr)])
    lpr = t_lpr[flat.table[order]]
    item, within = expand_lines(lpr)
    src = order[item]
    line = t_base[flat.table[src]] + flat.row[src] * t_lpr[flat.table[src]] + within
    capacity_lines = mem.capacity_bytes // tx
    return ((line % capacity_lines) * tx).astype(np.uint64), src


class Host:
    """The host CPU: its cores read every row through their caches and add it."""

    name = "host"
    near_memory = False
    slices_rows = False

    def validate(self, spec) -> None:
        for lv in LEVELS:
            if spec.level(lv).units:
                raise KeyedValueError(f"{lv}.units", "policy 'host' has no NMP units")
        if spec.bandwidth_aware_partition:
            raise KeyedValueError(
                "bandwidth_aware_partition", "only a 'cross-level' design partitions by level"
            )

    def needs_profile(self, spec) -> bool:
        return spec.replicate_hot_rows > 0

    def partitions(self, spec) -> bool:
        return False

    def issue_order(self, spec, flat: FlatLookups) -> np.ndarray:
        return np.arange(flat.n, dtype=np.int64)  # host code walks table by table

    def place(self, arch, flat: FlatLookups, order: np.ndarray) -> Placement:
        n = flat.n
        return Placement(
            np.full(n, -1, dtype=np.int64),
            np.full(n, -1, dtype=np.int64),
            flat.grow.copy(),
            np.zeros(n, dtype=bool),
            np.zeros(n, dtype=bool),
            {},
        )

    def tree_traffic(self, arch, flat: FlatLookups, plc: Placement) -> TreeTraffic:
        return TreeTraffic({}, {}, np.zeros(mv.org(arch.mem, "channels"), dtype=np.int64))

    def execute(self, arch, flat: FlatLookups, plc: Placement) -> list[np.ndarray]:
        """The CPU adds every row of a bag (one node: the host)."""
        assert arch.store is not None
        base = np.zeros(len(LEVELS) + 1, dtype=np.int64)
        parent = np.full(1, -1, np.int64)
        level, node = np.full(flat.n, len(LEVELS), np.int64), np.zeros(flat.n, np.int64)
        return pool_tables(arch.store, flat, arch.table_rows, base, parent, level, node)

    def time_batch(self, arch, flat, plc, order, traffic) -> OpResult:
        spec, mem = arch.spec, arch.mem
        h = spec.host
        tck, tx = mv.tck_ns(mem), mv.tx_bytes(mem)
        dims = np.asarray([t.dim for t in arch.tables], dtype=np.int64)
        weighted = flat.weight is not None
        every, src = lower_host_lines(mem, flat, order, arch.table_rows, arch.table_row_bytes)
        threads = threads_of(h)
        core_of_lookup = core_of_bag(
            flat.table * flat.batch + flat.bag, flat.num_tables * flat.batch, threads
        )
        core_of_line = core_of_lookup[src]
        caches = arch.warm_state("host_caches", lambda: _warm_caches(arch)).copy()
        line = (every // np.uint64(LINE_BYTES)).astype(np.int64)
        level = caches.served_by(core_of_line, line)
        walks = caches.page_walks(core_of_line, line)
        adds = (dims[flat.table] * (2 if weighted else 1)).astype(np.float64)
        load = core_load(core_of_line, level, walks, core_of_lookup, adds, threads)
        miss = level == 3
        addr = every[miss][cores_interleaved(core_of_line[miss], src[miss], threads)]
        st = replay_stream(addr, mem, max_requests=spec.replay_sample_requests)
        t_mem = float(st.cycles_drained) * tck
        per_core = core_bounds_ns(h, load)
        busiest = int(np.argmax(np.max(np.stack(list(per_core.values())), axis=0)))
        bounds = {k: float(v[busiest]) for k, v in per_core.items()}
        bounds["llc_bandwidth"] = llc_bandwidth_ns(h, load)
        bounds["channel"] = t_mem
        bottleneck = max(bounds, key=lambda k: bounds[k])
        latency = bounds[bottleneck]
        flops = float(adds.sum())
        e = dram_energy(mem, [st], latency / tck)
        served = load.lines.sum(axis=0)
        energy = {
            "dram_core": sum(v for k, v in e.items() if k != "io"),
            "dram_io": addr.size * tx * 8 * mv.io_pj_per_bit(mem),
            "units": flops * h.pj_per_flop,
            # every cache hit reads its array (the L1's, the L2's, the LLC's)
            "sram": float(served[:3] @ [h.l1_pj_per_bit, h.l2_pj_per_bit, h.llc_pj_per_bit])
            * LINE_BYTES
            * 8,
        }
        bd = dict(
            bottleneck=bottleneck,
            bounds_ns=bounds,
            dram_replay_ns=t_mem,
            host_compute_ns=bounds["host_compute"],
            channel={
                "time_ns": t_mem,
                "bytes": float(addr.size * tx),
                "achieved_gbps": addr.size * tx / latency,
                "peak_gbps": mv.channel_peak_gbps(mem) * mv.org(mem, "channels"),
                "row_hit_rate": hit_rate(st),
                "requests": int(addr.size),
            },
            host={
                "threads": threads,
                "busiest_core": busiest,
                "lines_served": {
                    lv: int(n) for lv, n in zip(("l1", "l2", "llc", "dram"), served, strict=True)
                },
                "core_bounds_ns": bounds,
                "page_walks": int(load.walks.sum()),
            },
            load_imbalance=float(load.lookups.max() / max(load.lookups.mean(), 1e-9)),
        )
        if caches.llc is not None:
            # as the warm-up's rates: the share of reads a cache (L1, L2 or LLC) serves
            cached = int(every.size - served[3])
            bd["llc"] = {
                "mib": h.llc_mib,
                "ways": h.llc_ways,
                "hit_rate": cached / every.size if every.size else 0.0,
                "hits": cached,
                "llc_served": int(served[2]),
                "warmup_batches": len(caches.warmup_rates),
                "warmup_hit_rates": caches.warmup_rates,
            }
        return OpResult(latency / tck, latency, energy, {"channel": float(addr.size * tx)}, bd, 1.0)


def cores_interleaved(core: np.ndarray, lookup: np.ndarray, threads: int) -> np.ndarray:
    """The order in which the memory sees the misses of ``threads`` cores that run at once:
    each core's lookups in its own order, the cores taking turns lookup by lookup (a lookup's
    lines together). ``core``, ``lookup``: each miss line's core and lookup, in stream order.

    The cores split the bags into contiguous runs (:func:`core_of_bag`: each core on tables
    of its own, as a table-batched embedding operator splits them), so the batch's stream in
    lookup order is the cores one after another. Replayed so, a DRAM-bound host read one
    table at a time: more row hits, fewer banks at work at once (recross-eval without caches:
    1077.9 us at a row-hit rate of 0.87, against 979.1 us at 0.76 with the cores
    interleaved)."""
    by_core = np.argsort(core, kind="stable")
    c, lk = core[by_core], lookup[by_core]
    new = np.ones(c.size, bool)
    new[1:] = (c[1:] != c[:-1]) | (lk[1:] != lk[:-1])
    seen = np.cumsum(new)  # lookups counted core after core
    first = np.searchsorted(c, c, side="left")  # where each line's core starts
    turn = np.empty(c.size, np.int64)
    turn[by_core] = seen - seen[first]  # the line's lookup's place among its core's
    return np.argsort(turn * threads + core, kind="stable")


def _warm_caches(arch) -> HostCaches:
    """The host's caches after the batches before the timed one, at steady state (the share of
    reads the caches serve settled; cold caches where there is no workload to draw them from)."""
    h, mem = arch.spec.host, arch.mem
    threads = threads_of(h)
    caches = HostCaches.empty(h, threads)
    batches = arch.warmup_batches()

    def step(_: int) -> float:
        flat = flatten(next(batches), arch.table_row_bytes, arch.table_rows)
        order = np.arange(flat.n, dtype=np.int64)
        addr, src = lower_host_lines(mem, flat, order, arch.table_rows, arch.table_row_bytes)
        core = core_of_bag(
            flat.table * flat.batch + flat.bag, flat.num_tables * flat.batch, threads
        )[src]
        line = (addr // np.uint64(LINE_BYTES)).astype(np.int64)
        caches.page_walks(core, line)
        level = caches.served_by(core, line)
        return float((level < 3).mean()) if level.size else 1.0  # the caches' share of reads

    if arch.draws_batches:
        caches.warmup_rates = warm_until_steady(step)
    return caches


register(Host())
