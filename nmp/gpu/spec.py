"""GPU specs: SMs, sectored L1/L2, HBM, the EmbeddingBag kernel's resources, and the variant.

A GPU preset (``models/gpu/<name>.toml``) becomes a frozen :class:`GpuSpec`. Clocks: every
``*_cycles`` value counts cycles of the SM clock (``sm.clock_mhz``); HBM timing comes from the
``nmp.memory`` HBM preset named in ``hbm.memory_preset``, scaled to the part's data rate (see
:mod:`nmp.gpu.hbm`).

``variant`` selects what the embedding kernel does (``--set arch.variant=...``):

* ``baseline``: the stock PyTorch kernel at its own register count, one row load in flight.
* ``occupancy``: compiled with ``-maxrregcount`` (42): more resident warps.
* ``prefetch``: software prefetch of the next ``prefetch_distance`` lookups' rows.
* ``pinning``: the hottest ``pinning.rows`` rows persist in the L2 set-aside (see
  :class:`PinningSpec`).
* ``combined``: all three.

``layout`` says how each table's rows lie in memory: ``"drawn"`` (the workload's own order) or
``"hot_first"`` (the ``pinning.rows`` hottest rows of the profile batch first, the indices
remapped: :mod:`nmp.gpu.hot_layout`). ``pinning.mechanism = "access_window"`` implies the
hot-first layout; ``layout = "hot_first"`` with any variant that does not pin is the window's
control (the layout alone, no window: ``layout-hot-first`` in :mod:`nmp.gpu.kernels_real`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nmp.config import (
    KeyedValueError,
    apply_overrides,
    find_preset,
    from_mapping,
    load_toml,
    preset_names,
    require_at_least,
)
from nmp.design import KeyAssumption
from nmp.gpu.memory_spec import CacheSpec, HbmSpec
from nmp.gpu.options import (
    PINNING_MECHANISMS,
    PINNING_SCOPES,
    TABLE_LAYOUTS,
    PinningMechanism,
)
from nmp.gpu.variants import GPU_VARIANTS, KernelVariant

VARIANTS: tuple[str, ...] = GPU_VARIANTS.names()  # the kernel variants' names, in order


@dataclass(frozen=True)
class SmSpec:
    """Streaming multiprocessors: count, clock and the per-SM limits that set occupancy."""

    count: int
    clock_mhz: float
    max_warps: int = 64
    max_blocks: int = 32
    registers: int = 65536
    # Registers are allocated per warp in units of this many (CUDA occupancy calculator).
    reg_alloc_unit: int = 256
    max_regs_per_thread: int = 255
    schedulers: int = 4
    # L1 miss-status entries: sectors a warp, and an SM, may have outstanding (loads in flight
    # beyond them wait): the per-SM limit of Little's law.
    outstanding_sectors_per_warp: int = 8
    outstanding_sectors_per_sm: int = 512
    # A warp that waits for the loads it has in flight together waits for the slowest of them
    # (nmp.gpu.slowest.max_excess: the levels' mix and their latency spreads); False: Little's
    # law on the mean load, as before it was measured (a GPU whose probe has no K > 1 points).
    waits_for_slowest_load: bool = False

    def validate(self) -> None:
        require_at_least(
            self,
            1,
            "outstanding_sectors_per_warp",
            "outstanding_sectors_per_sm",
            "count",
            "max_warps",
            "max_blocks",
            "registers",
            "reg_alloc_unit",
            "max_regs_per_thread",
            "schedulers",
        )
        for name, most in MAX_SM_RESOURCES.items():
            if getattr(self, name) > most:
                raise KeyedValueError(
                    name, f"at most {most:,} (far above any GPU's), got {getattr(self, name):,}"
                )
        if self.reg_alloc_unit > self.registers:
            raise KeyedValueError(
                "reg_alloc_unit",
                also=("registers",),
                message=f"reg_alloc_unit ({self.reg_alloc_unit:,}) must be at most the SM's "
                f"registers ({self.registers:,})",
            )
        if self.count > MAX_SMS:
            raise KeyedValueError(
                "count",
                f"at most {MAX_SMS} SMs (the largest GPUs have 144; the model keeps each SM's "
                f"L1): got {self.count:,}",
            )
        if not MIN_CLOCK_MHZ <= self.clock_mhz <= MAX_CLOCK_MHZ:
            raise KeyedValueError(
                "clock_mhz",
                f"must lie in [{MIN_CLOCK_MHZ:g}, {MAX_CLOCK_MHZ:g}] MHz (GPUs clock at 1-2 GHz; "
                f"a time in cycles of a slower clock overflows), got {self.clock_mhz:g}",
            )

    @property
    def cycle_ns(self) -> float:
        return 1000.0 / self.clock_mhz


# Bounds on counts and clocks a spec may give, far beyond any part (chosen): the model keeps
# each SM's L1 state, and simulates every warp of the kernel's grid one by one (a grid of 2^20
# blocks took 200 s and 1.1 GB, 10^7 blocks past 7 GB; 2^16 blocks take 11 s); a clock far
# below any part's makes a time in its cycles overflow to infinity.
MAX_SMS = 1024
# An SM's resources (chosen: 16-64 times a Hopper SM's 64 warps, 32 blocks, 65,536 registers,
# 255 per thread, 4 schedulers; 10^12 warps passed and priced a meaningless occupancy)
MAX_SM_RESOURCES = {
    "max_warps": 4096,
    "max_blocks": 4096,
    "registers": 2**22,
    "max_regs_per_thread": 4096,
    "schedulers": 256,
}
# A warp's loads in flight and a loop's unrolling (chosen: 16 times the most a SASS reading
# gave, 16 rows in flight): 10^12 passed and priced a kernel with no memory wait
MAX_PER_WARP = 256
MIN_CLOCK_MHZ = 1.0
MAX_CLOCK_MHZ = 100_000.0
MAX_GRID_BLOCKS = 2**16
MAX_THREADS_PER_BLOCK = 1024  # CUDA's limit


@dataclass(frozen=True)
class KernelSpec:
    """The stock PyTorch EmbeddingBag forward kernel (sum/mean) and its variants' resources.

    ``EmbeddingBag_updateOutputKernel_sum_mean`` (aten/src/ATen/native/cuda/EmbeddingBag.cu):
    block (32, 8), grid 1024; warp ``threadIdx.y`` of block ``b`` handles "chunk"
    ``b*8 + y`` (grid-stride ``1024*8``), a chunk being one bag x 32 features; each thread sums
    one feature over the bag's lookups, so a warp loads one 32-element slice of a row per lookup.
    """

    block_x: int = 32
    block_y: int = 8
    grid_blocks: int = 1024
    regs_per_thread: int = 56
    # The build the register count was read from (torch / CUDA version, tool); "" or a text
    # starting "ASSUMED" where it was not read from a build. Register counts change with the
    # compiler: each build needs its own reading.
    regs_build: str = ""
    maxrregcount: int = 42
    # Row loads in flight per warp of the stock loop as built, and the build it was read from
    # (torch / CUDA version, how: the SASS's schedule); "" or "ASSUMED..." where not read from a
    # build. Like the registers, it changes with the compiler (its unrolling and scheduling).
    loads_in_flight: int = 1
    loads_in_flight_build: str = ""
    # The stock loop's unrolling as built (its SASS): 1 prices each lookup's index wait under
    # the previous row (a one-row loop); U > 1 prices an unrolled body's index waits
    # (nmp.gpu.timing.LoadPrices.index_in_body). The hand-written kernel is not unrolled.
    unroll: int = 1
    # Row loads per row wait of the hand-written kernel that the recompiled variants run
    # (register cap, prefetch), as its SASS schedules them, where the preset read one (0: the
    # stock kernel's ``loads_in_flight``: the variants are the stock loop recompiled). A body
    # of 16 lookups waiting for its rows 3 times keeps 16 / 3. Prefetch adds
    # ``prefetch_distance`` to it, unless ``handwritten_prefetch_loads_in_flight`` gives the
    # prefetching build's own figure.
    handwritten_loads_in_flight: float = 0.0
    # Lookups whose index loads the hand-written (non-prefetching) build issues together at the
    # head of its unrolled body, so the body waits for the slowest index once (1: one index
    # wait per lookup, the one-row rule).
    handwritten_index_batch: int = 1
    # The prefetching build's rows per row wait and index batch as its SASS has them (0: 1 +
    # ``prefetch_distance``, the source's intent: all of a body's rows in flight at once).
    handwritten_prefetch_loads_in_flight: float = 0.0
    handwritten_prefetch_index_batch: int = 0
    # The build these four were read from (compiler, options, how).
    handwritten_build: str = ""
    prefetch_distance: int = 2
    prefetch_regs_per_lookup: int = 3
    # Registers per thread of the prefetching kernel as built (0: the stock count plus the
    # prefetch ring's registers). A measured reading of a real prefetch kernel sets it.
    prefetch_regs_per_thread: int = 0
    instructions_per_lookup: float = 12.0
    prefetch_instructions_per_lookup: float = 4.0
    index_bytes: int = 8
    # The fewest registers the stock loop compiles to without spilling: ptxas fits the code
    # under a -maxrregcount cap at or above it (rematerializing, rescheduling); below it the
    # excess spills. Prefetch adds its ring's registers to it as to regs_per_thread.
    min_regs_per_thread: int = 42
    # Registers above the cap are spilled to local memory (cached in L1); each spilled register
    # is reloaded this many times per lookup (a store/reload of a loop-carried value is 2).
    spill_loads_per_reg_per_lookup: float = 1.0

    def validate(self) -> None:
        require_at_least(
            self,
            1,
            "block_x",
            "block_y",
            "grid_blocks",
            "regs_per_thread",
            "maxrregcount",
            "loads_in_flight",
            "unroll",
            "index_bytes",
        )
        if self.block_x != 32:
            raise KeyedValueError("block_x", "the modeled kernel maps one warp to 32 features")
        if self.block_x * self.block_y > MAX_THREADS_PER_BLOCK:
            raise KeyedValueError(
                "block_y",
                f"a block holds at most {MAX_THREADS_PER_BLOCK} threads (CUDA): block_y at "
                f"most {MAX_THREADS_PER_BLOCK // self.block_x}, got {self.block_y:,}",
            )
        if self.grid_blocks > MAX_GRID_BLOCKS:
            raise KeyedValueError(
                "grid_blocks",
                f"at most {MAX_GRID_BLOCKS:,} (the stock kernel's grid is 1,024; the model "
                f"simulates every warp of the grid), got {self.grid_blocks:,}",
            )
        for name in ("prefetch_distance", "prefetch_regs_per_lookup", "prefetch_regs_per_thread"):
            if getattr(self, name) < 0:
                raise KeyedValueError(name, "must be >= 0")
        if self.min_regs_per_thread < 1:
            raise KeyedValueError("min_regs_per_thread", "must be >= 1")
        if self.index_bytes not in (4, 8):
            raise KeyedValueError(
                "index_bytes", f"must be 4 or 8 (int32 or int64 indices), got {self.index_bytes:,}"
            )
        for name in ("loads_in_flight", "unroll", "prefetch_distance", "handwritten_index_batch"):
            if getattr(self, name) > MAX_PER_WARP:
                raise KeyedValueError(name, f"at most {MAX_PER_WARP}, got {getattr(self, name):,}")
        for name in (
            "handwritten_loads_in_flight",
            "handwritten_prefetch_loads_in_flight",
            "handwritten_prefetch_index_batch",
        ):
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0:
                raise KeyedValueError(name, "must be a finite number >= 0")
        if self.handwritten_index_batch < 1:
            raise KeyedValueError("handwritten_index_batch", "must be >= 1")
        if self.instructions_per_lookup <= 0 or self.prefetch_instructions_per_lookup < 0:
            raise KeyedValueError("instructions_per_lookup", "must be > 0")
        if self.spill_loads_per_reg_per_lookup < 0:
            raise KeyedValueError("spill_loads_per_reg_per_lookup", "must be >= 0")


@dataclass(frozen=True)
class PinningSpec:
    """L2 pinning as the hardware does it: a set-aside of ``set_aside_fraction`` of the L2
    (``cudaLimitPersistingL2CacheSize``; the same share of every set and partition) holds lines
    accessed with the persisting property (:mod:`nmp.gpu.cache`). How lines get it:

    * ``mechanism = "evict_last_prefetch"`` (the paper's): a pre-kernel issues
      ``prefetch.global.L2::evict_last`` over the ``rows`` hottest rows (by an offline profile),
      coldest first so that where a set overflows the hottest stay; the kernel's own loads are
      normal.
    * ``"access_window"``: the table is laid out with its ``rows`` hottest rows (by the same
      profile) first, the indices remapped (:mod:`nmp.gpu.hot_layout`), and the kernel runs
      with an access-policy window over those rows (``rows x row bytes``, at most
      ``max_window_bytes``, else an error) and ``hitRatio`` ``hit_ratio`` (0: min(1, set-aside
      bytes / window bytes), the CUDA guide's advice): that share of the window's lines, chosen
      pseudo-randomly, persist; the rest are normal. No pre-kernel: a line persists when the
      kernel itself first touches it.

    ``scope = "per_table"`` (the paper's pre-kernel, before each table's kernel): the previous
    table's persisting lines are reset to normal (``cudaCtxResetPersistingL2Cache``) and this
    table's hottest rows are prefetched; the pre-kernel's HBM traffic and time are charged.
    ``"global"``: the ``rows`` hottest rows over all tables are prefetched once and stay across
    batches (reported, not charged).

    ``prefetch_overlaps``: ``prefetch`` has no destination register, so a thread retires it
    without waiting for the data (PTX ISA) and the pre-kernel ends once its prefetches are
    issued: the fetches then share HBM with the table's kernel (their bytes raise its
    utilization and queueing) instead of running before it at full bandwidth (False). The kernel
    is modeled as finding the pinned rows in L2 from its start (optimistic for its first
    microseconds).
    """

    rows: int = 60_000
    set_aside_fraction: float = 0.75
    scope: str = "per_table"  # a name in nmp.gpu.options.PINNING_SCOPES
    mechanism: str = "evict_last_prefetch"  # a name in nmp.gpu.options.PINNING_MECHANISMS
    hit_ratio: float = 0.0
    prefetch_overlaps: bool = True
    # cudaDevAttrMaxAccessPolicyWindowSize; default the H200's 134,217,728 B (measured,
    # data/reference/GPU-H200.md), for presets that do not name their own.
    max_window_bytes: int = 134_217_728

    def validate(self) -> None:
        if self.rows < 0:
            raise KeyedValueError("rows", "must be >= 0")
        if not 0.0 <= self.set_aside_fraction <= 1.0:
            raise KeyedValueError("set_aside_fraction", "must lie in [0, 1]")
        if not 0.0 <= self.hit_ratio <= 1.0:
            raise KeyedValueError("hit_ratio", "must lie in [0, 1]")
        if self.max_window_bytes <= 0:
            raise KeyedValueError("max_window_bytes", "must be > 0")
        if self.scope not in PINNING_SCOPES:
            raise KeyedValueError("scope", PINNING_SCOPES.unknown_message(self.scope))
        if self.mechanism not in PINNING_MECHANISMS:
            raise KeyedValueError("mechanism", PINNING_MECHANISMS.unknown_message(self.mechanism))

    @property
    def how(self) -> PinningMechanism:
        """What the mechanism turns on (nmp.gpu.options)."""
        return PINNING_MECHANISMS.get(self.mechanism)

    @property
    def per_table(self) -> bool:
        """Whether each table's kernel pins its own hottest rows (nmp.gpu.options)."""
        return PINNING_SCOPES.get(self.scope).per_table


@dataclass(frozen=True)
class EnergySpec:
    """Energy per event (pJ) on chip, and static power; HBM energy comes from nmp.memory."""

    l1_pj_per_sector: float
    l2_pj_per_sector: float
    pj_per_instruction: float
    static_power_w: float

    def validate(self) -> None:
        require_at_least(
            self,
            0,
            "l1_pj_per_sector",
            "l2_pj_per_sector",
            "pj_per_instruction",
            "static_power_w",
        )


@dataclass(frozen=True)
class SimSpec:
    """How the caches are simulated. ``line_sample`` = k simulates only the lines whose L2 set
    index is a multiple of k: the L2 sees exactly the traffic of those sets (set sampling), and
    each SM's L1 is simulated with 1/k of its sets so that its sets see the real per-set
    traffic; hit rates and latencies of the sample stand for all requests. 1 = exact."""

    line_sample: int = 1

    def validate(self) -> None:
        if self.line_sample < 1:
            raise KeyedValueError("line_sample", "must be >= 1")


@dataclass(frozen=True)
class GpuSpec:
    """A GPU running the embedding stage (see the module docstring)."""

    name: str
    sm: SmSpec
    l1: CacheSpec
    l2: CacheSpec
    hbm: HbmSpec
    die_area_mm2: float
    kernel: KernelSpec = field(default_factory=KernelSpec)
    pinning: PinningSpec = field(default_factory=PinningSpec)
    energy: EnergySpec = field(
        default_factory=lambda: EnergySpec(
            l1_pj_per_sector=0.0,
            l2_pj_per_sector=0.0,
            pj_per_instruction=0.0,
            static_power_w=0.0,
        )
    )
    sim: SimSpec = field(default_factory=SimSpec)
    variant: str = "baseline"  # a name in nmp.gpu.variants.GPU_VARIANTS
    layout: str = "drawn"  # the tables' row order (module docstring; nmp.gpu.options)
    description: str = ""
    # What this GPU's standing rests on, each with the --set that tests it (reports re-run
    # points under them: nmp.evaluate.explain); not a model input.
    key_assumptions: tuple[KeyAssumption, ...] = ()

    def validate(self) -> None:
        if self.variant not in GPU_VARIANTS:
            raise KeyedValueError("variant", GPU_VARIANTS.unknown_message(self.variant))
        if self.layout not in TABLE_LAYOUTS:
            raise KeyedValueError("layout", TABLE_LAYOUTS.unknown_message(self.layout))
        if self.die_area_mm2 <= 0:
            raise KeyedValueError("die_area_mm2", "must be > 0")
        for name in ("regs_per_thread", "maxrregcount", "min_regs_per_thread"):
            # a thread holds at most the SM's limit (255 on every CUDA GPU): ptxas spills past it
            if getattr(self.kernel, name) > self.sm.max_regs_per_thread:
                raise KeyedValueError(
                    f"kernel.{name}",
                    also=("sm.max_regs_per_thread",),
                    message=f"kernel.{name} ({getattr(self.kernel, name):,}) must be at most "
                    f"sm.max_regs_per_thread ({self.sm.max_regs_per_thread:,})",
                )
        if self.l2.sector_bytes != self.l1.sector_bytes or self.l2.line_bytes != self.l1.line_bytes:
            raise KeyedValueError("l2.line_bytes", "L1 and L2 must share line and sector sizes")
        k = self.sim.line_sample
        l2_sets = self.l2.sets // self.l2.caches
        if l2_sets % k or self.l1.sets % k:
            raise KeyedValueError(
                "sim.line_sample",
                f"must divide the L1's {self.l1.sets} and each L2 cache's {l2_sets} sets",
            )

    # --- what the variant turns on -------------------------------------------------------

    @property
    def kernel_variant(self) -> KernelVariant:
        return GPU_VARIANTS.get(self.variant)

    @property
    def uses_maxrregcount(self) -> bool:
        return self.kernel_variant.maxrregcount

    @property
    def uses_prefetch(self) -> bool:
        return self.kernel_variant.prefetch

    @property
    def uses_pinning(self) -> bool:
        return self.kernel_variant.pinning

    @property
    def uses_access_window(self) -> bool:
        return self.uses_pinning and self.pinning.how.access_window

    @property
    def uses_pin_prefetch(self) -> bool:
        """A pre-kernel pins the hottest rows (a pinning variant, its mechanism's switch)."""
        return self.uses_pinning and self.pinning.how.pre_kernel

    @property
    def uses_hot_first_layout(self) -> bool:
        """Tables laid out hot rows first: asked for, or needed by the access-policy window."""
        return TABLE_LAYOUTS.get(self.layout).hot_first or self.uses_access_window

    @property
    def needs_profile(self) -> bool:
        """Whether the stage needs the profile batch (the hot rows it pins or lays out first)."""
        return self.uses_pinning or self.uses_hot_first_layout


def gpu_from_mapping(data: dict[str, Any], *, file: str | None = None) -> GpuSpec:
    return from_mapping(GpuSpec, data, file=file)


def load_gpu(name_or_path: str | Path, overrides: dict[str, Any] | None = None) -> GpuSpec:
    """Load GPU preset ``name`` (``models/gpu/<name>.toml``) or a TOML path, then apply
    ``overrides`` (dotted paths relative to the GPU: ``{"variant": "combined"}``)."""
    path = find_preset("gpu", str(name_or_path))
    data = load_toml(path)
    data.setdefault("name", path.stem)
    spec = gpu_from_mapping(data, file=str(path))
    return apply_overrides(spec, overrides or {}, root="arch")


def gpu_names() -> list[str]:
    return preset_names("gpu")
