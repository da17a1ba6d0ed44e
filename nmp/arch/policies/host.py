"""The host CPU (no near-memory units): every row crosses the channel and the CPU adds it.

Its last-level cache (``host.llc_mib``, a set-associative LRU of 64-B lines simulated on the row
stream, :mod:`nmp.arch.lru_cache`) is at steady state when a batch starts: warmed by the batches
before it (seeded draws of the workload) until one batch's hit rate differs from the previous
one's by less than :data:`~nmp.arch.lru_cache.STEADY_TOL`. It serves what it holds: only its
misses cross the channel. The batch time is the replay of the
misses on the whole memory (the channel bound) or the CPU's FP32 adds
(``cores x simd_lanes x clock``), whichever is longer; they overlap."""

from __future__ import annotations

import numpy as np

from nmp.arch import memview as mv
from nmp.arch.functional import pool_tables
from nmp.arch.lowering import expand_lines
from nmp.arch.lru_cache import LruCache, warm_until_steady
from nmp.arch.placement import FlatLookups, Placement, flatten
from nmp.arch.policies import register
from nmp.arch.replay import dram_energy, hit_rate, replay_stream
from nmp.arch.spec import LEVELS
from nmp.arch.tree import TreeTraffic
from nmp.config import KeyedValueError
from nmp.results import OpResult
from nmp.units import MIB


def lower_host(
    mem, flat: FlatLookups, order: np.ndarray, table_rows: list[int], table_row_bytes: list[int]
) -> np.ndarray:
    """Physical addresses of a host CPU reading every row (tables packed line-aligned, one
    after another, folded into the memory's capacity), in issue order."""
    tx = mv.tx_bytes(mem)
    t_lpr = -(-np.asarray(table_row_bytes, dtype=np.int64) // tx)
    t_base = np.concatenate([[0], np.cumsum(np.asarray(table_rows, dtype=np.int64) * t_lpr)])
    lpr = t_lpr[flat.table[order]]
    item, within = expand_lines(lpr)
    src = order[item]
    line = t_base[flat.table[src]] + flat.row[src] * t_lpr[flat.table[src]] + within
    capacity_lines = mem.capacity_bytes // tx
    return ((line % capacity_lines) * tx).astype(np.uint64)


class Host:
    name = "host"
    near_memory = False

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
        tck, tx = mv.tck_ns(mem), mv.tx_bytes(mem)
        dims = np.asarray([t.dim for t in arch.tables], dtype=np.int64)
        weighted = flat.weight is not None
        io_pj_bit = mv.io_pj_per_bit(mem)
        dim_l = dims[flat.table]
        every = lower_host(mem, flat, order, arch.table_rows, arch.table_row_bytes)
        llc = llc_filter(arch, every)
        llc_hits, warmup_rates = llc if llc is not None else (None, [])
        addr = every[~llc_hits] if llc_hits is not None else every
        st = replay_stream(addr, mem, max_requests=spec.replay_sample_requests)
        t_mem = float(st.cycles_drained) * tck
        h = spec.host
        flops = float((dim_l * (2 if weighted else 1)).sum())
        t_cpu = flops / (h.cores * h.simd_lanes * h.clock_ghz)
        latency = max(t_mem, t_cpu)
        e = dram_energy(mem, [st], latency / tck)
        energy = {
            "dram_core": sum(v for k, v in e.items() if k != "io"),
            "dram_io": addr.size * tx * 8 * io_pj_bit,
            "units": flops * h.pj_per_flop,
            "sram": float(every.size - addr.size) * tx * 8 * h.llc_pj_per_bit,
        }
        bytes_by_level = {"channel": float(addr.size * tx)}
        bd = dict(
            bottleneck="channel" if t_mem >= t_cpu else "host_compute",
            bounds_ns={"channel": t_mem, "host_compute": t_cpu},
            dram_replay_ns=t_mem,
            host_compute_ns=t_cpu,
            channel={
                "time_ns": t_mem,
                "bytes": float(addr.size * tx),
                "achieved_gbps": addr.size * tx / latency,
                "peak_gbps": mv.channel_peak_gbps(mem) * mv.org(mem, "channels"),
                "row_hit_rate": hit_rate(st),
                "requests": int(addr.size),
            },
            load_imbalance=1.0,
        )
        if llc_hits is not None:
            bd["llc"] = {
                "mib": h.llc_mib,
                "ways": h.llc_ways,
                "hit_rate": float(llc_hits.mean()) if llc_hits.size else 0.0,
                "hits": int(llc_hits.sum()),
                "warmup_batches": len(warmup_rates),
                "warmup_hit_rates": warmup_rates,
            }
        return OpResult(latency / tck, latency, energy, bytes_by_level, bd, 1.0)


def llc_filter(arch, addr: np.ndarray) -> tuple[np.ndarray, list[float]] | None:
    """(which of the host's reads ``addr`` hit its LLC, the hit rates of the batches that
    warmed it): ``addr`` are byte addresses of 64-B bursts in issue order, run on a copy of the
    LLC at steady state (None: no LLC)."""
    h, mem = arch.spec.host, arch.mem
    if h.llc_mib <= 0:
        return None
    line = mv.tx_bytes(mem)
    cache = arch.warm_state("llc", lambda: _warm_llc(arch)).copy()
    keys = (addr // np.uint64(line)).astype(np.int64)
    return cache.access(np.zeros(keys.size, np.int64), keys), cache.warmup_rates


def _warm_llc(arch) -> LruCache:
    """The LLC after the batches before the timed one, at steady state (a cold LLC where
    there is no workload to draw them from)."""

    h, mem = arch.spec.host, arch.mem
    line = mv.tx_bytes(mem)
    cache = LruCache.of_bytes(1, h.llc_mib * MIB, line, h.llc_ways)
    batches = arch.warmup_batches()

    def step(_: int) -> float:
        flat = flatten(next(batches), arch.table_row_bytes, arch.table_rows)
        order = np.arange(flat.n, dtype=np.int64)
        addr = lower_host(mem, flat, order, arch.table_rows, arch.table_row_bytes)
        keys = (addr // np.uint64(line)).astype(np.int64)
        return float(cache.access(np.zeros(keys.size, np.int64), keys).mean())

    if arch.draws_batches:
        cache.warmup_rates = warm_until_steady(step)
    return cache


register(Host())
