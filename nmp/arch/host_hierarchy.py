"""The host CPU's cores and caches: which level serves each line a batch reads, and the time
each level costs (docs/host-model.md).

What the hardware does. ``threads`` cores (one thread each) split a batch's bags into equal
contiguous runs, as ``embedding_bag`` and FBGEMM's table-batched kernels parallelize over bags.
Each core reads its rows' 64-B lines through its private L1 and L2 and then the shared LLC;
what the LLC misses is read from DRAM. Every cache is a set-associative LRU
(:class:`~nmp.arch.lru_cache.LruCache`), warmed to steady state by the batches before the
timed one (:meth:`HostCaches.served_by` says which stream each one sees).

What each level costs. A core runs a lookup loop: its arithmetic (a fixed cost per lookup
plus a cost per SIMD vector of each row) and, on top of it, the stalls of the lines that
come from beyond its L1 (a CPI stack: a window full of waiting loads retires nothing). A line
from a level stalls the loop its latency over the lines the loop keeps in flight from that
level (Little's law); a TLB miss adds its walk over the walks in flight. Those counts are
the loop's own: its out-of-order window, its software
prefetches and the L2's prefetch of a row's trailing lines decide them, and
``nmp measure host`` measures them with ``embedding_bag`` on a table in each level; a preset
without them takes the L1's fill buffers (every demand miss holds one). Little's law caps
the L2's misses in flight at its MSHRs, and the page walks at the page walkers. A level's
bandwidth bounds it too: the L2 feeds a core at ``l2_bytes_per_cycle``, the LLC all cores
together at ``llc_gbps``, the DRAM channels as the engine replays the LLC's misses. The
batch takes the longest of these bounds on its busiest core, the shared LLC and the DRAM; the
batch is one kernel call, whose fixed cost (``call_ns``, and ``thread_sync_ns`` per thread
beyond the first) adds to every core's loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from nmp.arch.lru_cache import LruCache
from nmp.units import KIB, MIB

# Bytes of a CPU cache line (every x86 and Arm server core of the presets).
LINE_BYTES = 64
# Bytes of a page (chosen: the 4-KiB pages malloc gives a table without huge pages) and the
# ways of the TLB simulated over them (chosen: Golden Cove's STLB is 8-way per the Intel
# optimization manual; Zen 4's L2 DTLB too).
PAGE_BYTES = 4096
TLB_WAYS = 8
# The levels a line can be served from, nearest first (indices of served_by's result).
CACHE_LEVELS = ("l1", "l2", "llc", "dram")


@dataclass
class HostCaches:
    """The state of the host's caches: per-core L1 and L2 (one owner per thread), the shared
    LLC (None: the host has none)."""

    l1: LruCache | None  # None: no such cache (size 0: a host whose reads all reach DRAM)
    l2: LruCache | None
    llc: LruCache | None
    tlb: LruCache
    warmup_rates: list[float] = field(default_factory=list)

    @classmethod
    def empty(cls, host, threads: int) -> HostCaches:
        def cache(owners: int, size_bytes: float, ways: int) -> LruCache | None:
            return (
                LruCache.of_bytes(owners, size_bytes, LINE_BYTES, ways) if size_bytes > 0 else None
            )

        return cls(
            cache(threads, host.l1_kib * KIB, host.l1_ways),
            cache(threads, host.l2_kib * KIB, host.l2_ways),
            cache(1, host.llc_mib * MIB, host.llc_ways),
            LruCache(
                threads, max(host.tlb_entries // TLB_WAYS, 1), min(TLB_WAYS, host.tlb_entries)
            ),
        )

    def copy(self) -> HostCaches:
        return HostCaches(
            self.l1.copy() if self.l1 is not None else None,
            self.l2.copy() if self.l2 is not None else None,
            self.llc.copy() if self.llc is not None else None,
            self.tlb.copy(),
            list(self.warmup_rates),
        )

    def page_walks(self, core: np.ndarray, line: np.ndarray) -> np.ndarray:
        """Which reads of ``line`` by ``core`` miss the core's TLB (every read is translated,
        a cache hit too); the TLB's state advances."""
        page = line // (PAGE_BYTES // LINE_BYTES)
        return ~self.tlb.access(core, page)

    def served_by(self, core: np.ndarray, line: np.ndarray) -> np.ndarray:
        """The level (index into :data:`CACHE_LEVELS`) serving each read of cache line
        ``line`` by ``core``, in order; the caches' state advances.

        The L2 sees the L1's misses. The LLC sees every read: it holds the most recently used
        lines of all cores, as a non-inclusive LLC that takes the L2s' victims does together
        with the L2s (a line hot in an L2 is not aged out of the LLC by the other cores'
        misses, as a cache that only saw the L2s' misses would age it); a read counts as served
        by the nearest level that holds its line."""
        level = np.full(line.size, len(CACHE_LEVELS) - 1, dtype=np.int8)
        if self.llc is not None:
            in_llc = self.llc.access(np.zeros(line.size, np.int64), line)
            level[in_llc] = 2
        idx = np.arange(line.size)
        for i, cache in enumerate((self.l1, self.l2)):
            if cache is None:
                continue
            if not idx.size:
                break
            hit = cache.access(core[idx], line[idx])
            level[idx[hit]] = i
            idx = idx[~hit]
        return level


def threads_of(host) -> int:
    """The cores the batch runs on: ``threads``, or every core where it is 0."""
    return host.threads if host.threads > 0 else host.cores


def core_of_bag(global_bag: np.ndarray, bags: int, threads: int) -> np.ndarray:
    """The core of each lookup: bags (table-major) split into ``threads`` equal contiguous
    runs."""
    return (global_bag * threads) // max(bags, 1)


@dataclass(frozen=True)
class CoreLoad:
    """What one batch asks of each core (arrays over cores) and of the shared levels."""

    lines: np.ndarray  # int64 [threads, 4]: lines each core reads from l1, l2, llc, dram
    walks: np.ndarray  # int64 [threads]: TLB misses
    lookups: np.ndarray  # int64 [threads]
    adds: np.ndarray  # float [threads]: FP32 adds (x2 with per-sample weights)


def core_load(
    core_of_line: np.ndarray,
    level: np.ndarray,
    walks: np.ndarray,
    core_of_lookup: np.ndarray,
    adds_of_lookup: np.ndarray,
    threads: int,
) -> CoreLoad:
    """What each core asks of each level: ``level`` (the level serving each line),
    ``walks`` (its read misses the TLB)."""
    lines = np.zeros((threads, len(CACHE_LEVELS)), dtype=np.int64)
    lv = level.astype(np.int64)
    np.add.at(lines, (core_of_line, lv), 1)
    return CoreLoad(
        lines,
        np.bincount(core_of_line[walks], minlength=threads).astype(np.int64),
        np.bincount(core_of_lookup, minlength=threads).astype(np.int64),
        np.bincount(core_of_lookup, weights=adds_of_lookup, minlength=threads),
    )


def latencies_ns(host) -> np.ndarray:
    """Load-to-use latency of a line served by each level of :data:`CACHE_LEVELS`."""
    return np.array(
        [host.l1_latency_ns, host.l2_latency_ns, host.llc_latency_ns, host.dram_latency_ns]
    )


def lines_in_flight(host) -> np.ndarray:
    """Lines the lookup loop keeps in flight from each level of :data:`CACHE_LEVELS` past the
    L1 (the L1's own entry unused): the measured ``<level>_lines_in_flight``, or the L1's fill
    buffers where a preset gives none."""
    given = [host.l2_lines_in_flight, host.llc_lines_in_flight, host.dram_lines_in_flight]
    return np.array([np.inf] + [v if v > 0 else host.l1_fill_buffers for v in given])


def stall_ns_per_line(host) -> np.ndarray:
    """The time a line from each level stalls the lookup loop beyond its arithmetic: its
    latency over the lines in flight (Little's law; 0 for the L1, whose hits the arithmetic's
    loads cover)."""
    return latencies_ns(host) / lines_in_flight(host)


def walk_stall_ns(host) -> float:
    """The time a TLB miss stalls the lookup loop: a walk over the walks in flight (Little's
    law), on top of its line's own stall (the line's load waits for its address)."""
    return host.page_walk_ns / host.page_walkers


def call_overhead_ns(host, threads: int) -> float:
    """The batch's fixed cost: one kernel call (``call_ns``: dispatch, checks, the output's
    allocation) and each thread beyond the first woken and joined (``thread_sync_ns``). The
    calling core runs them before and after its share of the bags and the other cores wait
    for them (to be woken, to be joined): they add to every core's loop."""
    return host.call_ns + max(threads - 1, 0) * host.thread_sync_ns


def core_bounds_ns(host, load: CoreLoad) -> dict[str, np.ndarray]:
    """Per core (arrays over cores), the time each of its resources needs for its share."""
    lat = latencies_ns(host)
    bytes_past_l1 = load.lines[:, 1:].sum(axis=1) * LINE_BYTES
    cycles = load.lookups * host.lookup_cycles + load.adds / host.simd_lanes * host.vector_cycles
    compute_ns = cycles / host.clock_ghz
    # the stalls add to the arithmetic (a CPI stack): a lookup loop whose window is full of
    # misses retires nothing; a level's lines overlap one another as far as the loop keeps
    # them in flight (measured with the loop itself by nmp measure host: embedding_bag on one
    # table in that level, its time per lookup less its arithmetic and its page walks)
    stall_ns = load.lines @ stall_ns_per_line(host) + load.walks * walk_stall_ns(host)
    return {
        "host_compute": compute_ns,
        "compute_and_stalls": compute_ns + stall_ns + call_overhead_ns(host, load.lookups.size),
        # Little's law on the L2's misses in flight (and the walks), a cap on any loop
        "l2_mshrs": (load.lines[:, 2:] * lat[2:]).sum(axis=1) / host.l2_mshrs,
        "page_walkers": load.walks * host.page_walk_ns / host.page_walkers,
        "l2_bandwidth": bytes_past_l1 / (host.l2_bytes_per_cycle * host.clock_ghz),
    }


def llc_bandwidth_ns(host, load: CoreLoad) -> float:
    """The shared LLC's time to deliver every line past the L2s (hits and the misses it
    forwards from DRAM) at its bandwidth (0 without an LLC)."""
    if host.llc_mib <= 0:
        return 0.0
    return float(load.lines[:, 2:].sum()) * LINE_BYTES / host.llc_gbps


__all__ = [
    "CACHE_LEVELS",
    "LINE_BYTES",
    "PAGE_BYTES",
    "CoreLoad",
    "HostCaches",
    "call_overhead_ns",
    "core_bounds_ns",
    "core_load",
    "core_of_bag",
    "latencies_ns",
    "lines_in_flight",
    "llc_bandwidth_ns",
    "stall_ns_per_line",
    "threads_of",
    "walk_stall_ns",
]
