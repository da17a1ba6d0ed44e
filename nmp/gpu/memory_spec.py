"""A GPU's memory side in its spec: the sectored L1/L2 caches and the HBM stacks.

Split from :mod:`nmp.gpu.spec` (which imports both classes into :class:`GpuSpec`): the two are
the parts of a preset the cache simulation and the HBM model read, each with its own ranges.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from nmp.config import KeyedValueError, require_at_least
from nmp.gpu.options import PARTITION_POLICIES

# A rate far below any part's makes a time in its cycles overflow to infinity (chosen bounds)
MIN_BYTES_PER_CYCLE = 1e-3  # per SM (L1) or in all (L2): A100's are 128 and about 5,000
MIN_DATA_RATE_GBPS = 0.1  # per pin: HBM1 ran at 1 Gb/s

# Bounds on sizes a spec may give, far beyond any part (an H200's L2 is 60 MiB, its HBM 141
# GB): past them a value is a slip, and a cache that large would not fit the model's memory
MAX_CACHE_BYTES = 2**32
MAX_HBM_GIB = 2**20


@dataclass(frozen=True)
class CacheSpec:
    """A sectored set-associative cache level (LRU): ``line_bytes`` lines of ``sector_bytes``
    sectors; a miss fetches only the missing sectors. ``hit_cycles`` is load-to-use latency of
    a hit (SM clock); ``bytes_per_cycle`` its bandwidth (per SM for L1, total for L2)."""

    size_bytes: int
    ways: int
    hit_cycles: float
    bytes_per_cycle: float
    line_bytes: int = 128
    sector_bytes: int = 32
    slices: int = 1
    # L2 only: ``partitions`` equal partitions. "near": each partition caches the data of the
    # SMs attached to it (a line two halves read is held twice); "home": every line lives in one
    # partition that all SMs share (one pool of all the sets).
    partitions: int = 1
    partition_policy: str = "home"  # a name in nmp.gpu.options.PARTITION_POLICIES
    # L2 only: bytes fetched from memory per sector miss (a miss of one sector brings this many
    # aligned bytes); used for the index stream (nmp.gpu.index_stream).
    fetch_bytes: int = 32
    # L2 only, "home" pool: latency of a hit served by the far partition (0: every hit costs
    # ``hit_cycles``). A hit on a line older than the most recent half of its set (its reuse
    # distance beyond one partition's share of the L2) is a far hit; the others cost
    # ``hit_cycles`` (nmp.gpu.cache.recency_rank, nmp.gpu.model).
    far_hit_cycles: float = 0.0
    # L2 only: line requests (hits and misses: a warp's load of one line, a store) the slices
    # serve per ns, all of them together (0: no limit beyond ``bytes_per_cycle``). A kernel's
    # requests queue at the slices at this rate (nmp.gpu.timing.SliceQueue).
    requests_per_ns: float = 0.0
    # L2 only: a hit's latency is ``hit_cycles`` plus an exponential wait of this mean (ns),
    # so a warp waiting for several loads at once waits for the slowest
    # (nmp.gpu.slowest.max_excess); 0: every hit takes exactly ``hit_cycles``.
    latency_spread_ns: float = 0.0

    def validate(self) -> None:
        if not math.isfinite(self.latency_spread_ns) or self.latency_spread_ns < 0:
            raise KeyedValueError("latency_spread_ns", "must be a finite number >= 0")
        if self.size_bytes < 1:
            raise KeyedValueError("size_bytes", "must be >= 1")
        if self.size_bytes > MAX_CACHE_BYTES:
            raise KeyedValueError(
                "size_bytes",
                f"at most 2^32 (4 GiB): the model keeps every line's state, and the largest "
                f"GPU caches hold 256 MiB; got {self.size_bytes:,}",
            )
        if self.ways < 1:
            raise KeyedValueError("ways", "must be >= 1")
        if self.line_bytes < 1 or self.sector_bytes < 1 or self.line_bytes % self.sector_bytes:
            raise KeyedValueError("sector_bytes", "must divide line_bytes")
        if self.line_bytes // self.sector_bytes > 8:
            raise KeyedValueError("sector_bytes", "at most 8 sectors per line are modeled")
        if self.size_bytes % (self.line_bytes * self.ways):
            raise KeyedValueError("size_bytes", "must be a multiple of line_bytes x ways")
        if self.hit_cycles < 0:
            raise KeyedValueError("hit_cycles", "must be >= 0")
        if self.far_hit_cycles and self.far_hit_cycles < self.hit_cycles:
            raise KeyedValueError("far_hit_cycles", "must be 0 or >= hit_cycles")
        if not self.bytes_per_cycle >= MIN_BYTES_PER_CYCLE:
            raise KeyedValueError(
                "bytes_per_cycle",
                f"must be >= {MIN_BYTES_PER_CYCLE:g} (far below any cache's), "
                f"got {self.bytes_per_cycle:g}",
            )
        if self.slices < 1:
            raise KeyedValueError("slices", "must be >= 1")
        if self.requests_per_ns != 0 and not self.requests_per_ns >= MIN_BYTES_PER_CYCLE:
            raise KeyedValueError(
                "requests_per_ns",
                f"must be 0 (no request limit) or >= {MIN_BYTES_PER_CYCLE:g}, "
                f"got {self.requests_per_ns:g}",
            )
        if self.fetch_bytes % self.sector_bytes or not 0 < self.fetch_bytes <= self.line_bytes:
            raise KeyedValueError("fetch_bytes", "must be a multiple of sector_bytes <= line_bytes")
        if self.partitions < 1 or self.sets % self.partitions:
            raise KeyedValueError("partitions", f"must divide the {self.sets} sets")
        if self.partition_policy not in PARTITION_POLICIES:
            raise KeyedValueError(
                "partition_policy", PARTITION_POLICIES.unknown_message(self.partition_policy)
            )

    @property
    def caches(self) -> int:
        """Separate caches the SMs see: the partitions under "near", else one pool."""
        separate = PARTITION_POLICIES.get(self.partition_policy).separate_caches
        return self.partitions if separate else 1

    @property
    def sets(self) -> int:
        return self.size_bytes // (self.line_bytes * self.ways)

    @property
    def sectors_per_line(self) -> int:
        return self.line_bytes // self.sector_bytes


@dataclass(frozen=True)
class HbmSpec:
    """The GPU's HBM: stacks, channels, pin rate, peak bandwidth and miss latency.

    ``memory_preset`` names the nmp.memory preset whose timing (in ns) is scaled to
    ``data_rate_gbps`` (:mod:`nmp.gpu.hbm`). The load-to-use latency of an L2 miss is
    ``fabric_latency_ns`` (L2 lookup, crossbar, memory controller: on chip) plus the DRAM part
    (tRCD + CL + BL) of that derived spec.
    """

    standard: str
    memory_preset: str
    data_rate_gbps: float
    stacks: int
    channels_per_stack: int
    pseudo_channels: int
    bus_bits_per_stack: int
    peak_bandwidth_gbps: float
    fabric_latency_ns: float
    capacity_gib: int
    # Memory-controller view used when calibrating on the DRAM engine (nmp.gpu.hbm).
    read_queue: int = 128
    channel_interleave_bytes: int = 128
    # Misses wait in the memory system's queues: their latency rises with utilization as the
    # DRAM engine's replays say (nmp.gpu.hbm). False: unloaded latency plus a bandwidth bound.
    queueing: bool = True
    # A measured random-read probe of this part (useful GB/s of random fetches of each size,
    # many loads in flight): where given, its throughput replaces the DRAM engine's saturated
    # efficiency (the engine keeps the shape of the latency-under-load curve). Must cover the
    # L2's miss sizes 32, 64 and 128 B.
    probe_fetch_bytes: tuple[int, ...] = ()
    probe_random_gbps: tuple[float, ...] = ()
    # A recorded loaded-latency probe (benchmarks/gpu_latency.py --record): a file name in
    # nmp/gpu/data/ or a path. Where given, its measured latency against loads in flight replaces
    # the HBM queue's and the L2 slices' modeled shapes (nmp.gpu.loaded_curve); "": modeled.
    loaded_latency_record: str = ""
    # A record of another GPU than this preset's is refused unless this is true.
    loaded_latency_any_gpu: bool = False
    # A miss's unloaded latency is ``fabric_latency_ns`` + the DRAM part + an exponential wait
    # of this mean (ns): a warp waiting for several misses at once waits for the slowest.
    latency_spread_ns: float = 0.0

    def validate(self) -> None:
        # a label of the part (the result's memory: "hbm3e-6250"), not a registered standard
        if not self.standard or len(self.standard) > 32 or not self.standard.isascii():
            raise KeyedValueError(
                "standard", "must be a short ASCII name (1 to 32 characters: 'hbm3e')"
            )
        from nmp.config import preset_names

        if not self.memory_preset.endswith(".toml") and self.memory_preset not in preset_names(
            "memory"
        ):
            known = ", ".join(preset_names("memory"))
            raise KeyedValueError(
                "memory_preset",
                f"unknown memory preset {self.memory_preset[:64]!r} (known: {known})",
            )
        if not math.isfinite(self.latency_spread_ns) or self.latency_spread_ns < 0:
            raise KeyedValueError("latency_spread_ns", "must be a finite number >= 0")
        if len(self.probe_fetch_bytes) != len(self.probe_random_gbps):
            raise KeyedValueError("probe_random_gbps", "needs one value per probe_fetch_bytes")
        if self.probe_fetch_bytes and not {32, 64, 128} <= set(self.probe_fetch_bytes):
            raise KeyedValueError("probe_fetch_bytes", "must include 32, 64 and 128")
        if any(g <= 0 or g > self.peak_bandwidth_gbps for g in self.probe_random_gbps):
            raise KeyedValueError("probe_random_gbps", "each must lie in (0, peak_bandwidth_gbps]")
        require_at_least(
            self,
            1,
            "stacks",
            "channels_per_stack",
            "pseudo_channels",
            "bus_bits_per_stack",
            "capacity_gib",
        )
        if self.capacity_gib > MAX_HBM_GIB:
            raise KeyedValueError(
                "capacity_gib", f"at most 2^20 (1 PiB), got {self.capacity_gib:,}"
            )
        if not self.data_rate_gbps >= MIN_DATA_RATE_GBPS:
            raise KeyedValueError(
                "data_rate_gbps",
                f"must be >= {MIN_DATA_RATE_GBPS:g} Gb/s per pin (HBM1 ran at 1), "
                f"got {self.data_rate_gbps:g}",
            )
        if self.read_queue < 1:
            raise KeyedValueError("read_queue", "must be >= 1")
        if self.channel_interleave_bytes < 32 or self.channel_interleave_bytes & (
            self.channel_interleave_bytes - 1
        ):
            raise KeyedValueError("channel_interleave_bytes", "must be a power of two >= 32")
        if self.fabric_latency_ns < 0:
            raise KeyedValueError("fabric_latency_ns", "must be >= 0")
        pins = self.stacks * self.bus_bits_per_stack
        computed = pins * self.data_rate_gbps / 8
        if not math.isclose(computed, self.peak_bandwidth_gbps, rel_tol=0.01):
            raise KeyedValueError(
                "peak_bandwidth_gbps",
                f"{self.peak_bandwidth_gbps} GB/s disagrees with stacks x bus x rate = "
                f"{computed:.1f} GB/s",
            )

    @property
    def channels(self) -> int:
        return self.stacks * self.channels_per_stack
