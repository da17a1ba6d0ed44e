"""Occupancy and memory-level parallelism of the EmbeddingBag kernel under each variant.

Occupancy follows the CUDA occupancy calculator: registers are allocated per warp in units of
``reg_alloc_unit``; an SM holds as many whole blocks as its warp slots, block slots and register
file allow (the kernel uses no shared memory). Memory-level parallelism (MLP) is resident warps
x row loads each warp keeps in flight: ``loads_in_flight`` for the stock loop (or
``handwritten_loads_in_flight`` for the hand-written kernel that the recompiled variants run, where
a preset measured one), plus
``prefetch_distance`` when the rows of the next lookups are prefetched into registers (which
costs ``prefetch_regs_per_lookup`` registers per prefetched lookup). The L1's miss-status
entries bound it: a warp may have ``sm.outstanding_sectors_per_warp`` sectors outstanding and an SM
``sm.outstanding_sectors_per_sm``, so loads beyond them wait (:meth:`KernelConfig.mlp_for`).

``-maxrregcount`` caps the registers per thread; ptxas fits the code in fewer registers down to
``min_regs_per_thread`` (plus the prefetch ring's), and the registers needed beyond the cap are
spilled to local memory (cached in L1): each is reloaded ``spill_loads_per_reg_per_lookup`` times
per lookup, which costs L1 traffic (a warp's reload is 32 x 4 B = 4 sectors), an instruction, and
an L1 hit's latency in each lookup's dependency chain.
"""

from __future__ import annotations

from dataclasses import dataclass

from nmp.errors import SpecError
from nmp.gpu.spec import GpuSpec


@dataclass(frozen=True)
class KernelConfig:
    """What the variant compiles to on this GPU."""

    regs_per_thread: int
    warps_per_block: int
    blocks_per_sm: int
    resident_warps_per_sm: int
    occupancy: float
    loads_in_flight: float
    instructions_per_lookup: float
    limited_by: str
    regs_wanted: int = 0
    spilled_regs: int = 0
    spill_loads_per_lookup: float = 0.0
    outstanding_sectors_per_warp: int = 8
    outstanding_sectors_per_sm: int = 512
    # The stock kernel writes offset2bag[emb] once per lookup; the hand-written kernel that the
    # recompiled variants run where a preset measured one writes none (nmp.gpu.kernels_real).
    stores_offset2bag: bool = True
    # The loop's unrolling as built: the stock loop's (kernel.unroll), 1 for the hand-written.
    unroll: int = 1
    # Lookups whose index loads leave together (the hand-written prefetch kernel's body).
    index_batch: int = 1

    def mlp_lines(self, sms: int) -> int:
        """Row loads the variant asks to keep in flight on the whole GPU (every slot busy)."""
        return round(sms * self.resident_warps_per_sm * self.loads_in_flight)

    def mlp_for(self, sectors_per_load: int, warps_per_sm: float | None = None) -> float:
        """Row loads in flight per warp once the L1 miss entries bound them (a load of
        ``sectors_per_load`` sectors needs that many entries): min(asked, per-warp entries /
        sectors, per-SM entries / (warps x sectors)); below 1 the warps of an SM take turns for
        the entries. ``warps_per_sm``: the warps an SM really runs (a partial wave, or a grid
        with fewer busy blocks than slots, runs fewer than the resident limit; default that
        limit)."""
        warps = self.resident_warps_per_sm if warps_per_sm is None else warps_per_sm
        per_warp = self.outstanding_sectors_per_warp / sectors_per_load
        per_sm = self.outstanding_sectors_per_sm / (max(warps, 1.0) * sectors_per_load)
        return min(float(self.loads_in_flight), per_warp, per_sm)


def _prefetch_regs(gpu: GpuSpec) -> int:
    """Registers per thread of the prefetch ring (0 without prefetch)."""
    k = gpu.kernel
    return k.prefetch_distance * k.prefetch_regs_per_lookup if gpu.uses_prefetch else 0


def regs_wanted(gpu: GpuSpec) -> int:
    """Registers per thread the variant's code needs without a cap (a prefetching kernel's
    measured count where the preset gives one)."""
    k = gpu.kernel
    if gpu.uses_prefetch and k.prefetch_regs_per_thread:
        return k.prefetch_regs_per_thread
    return k.regs_per_thread + _prefetch_regs(gpu)


def regs_needed(gpu: GpuSpec) -> int:
    """Fewest registers per thread the variant's code fits in without spilling."""
    k = gpu.kernel
    fewest = min(k.min_regs_per_thread, k.regs_per_thread) + _prefetch_regs(gpu)
    return min(fewest, regs_wanted(gpu))


def regs_per_thread(gpu: GpuSpec) -> int:
    """Registers per thread allocated: the wanted ones under the -maxrregcount / hardware cap."""
    regs = regs_wanted(gpu)
    if gpu.uses_maxrregcount:
        regs = min(regs, gpu.kernel.maxrregcount)
    return min(regs, gpu.sm.max_regs_per_thread)


def runs_handwritten(gpu: GpuSpec) -> bool:
    """The variant runs the hand-written kernel (``benchmarks/gpu_kernels.py``): a recompiled
    variant (register cap, prefetch) on a preset that measured that kernel
    (``kernel.handwritten_loads_in_flight`` > 0); else the stock loop, recompiled or not."""
    recompiled = gpu.uses_maxrregcount or gpu.uses_prefetch
    return recompiled and gpu.kernel.handwritten_loads_in_flight > 0


def rows_in_flight(gpu: GpuSpec) -> float:
    """Row loads a warp keeps in flight per row wait: the stock kernel's as built (plus the
    prefetch distance when the stock loop is recompiled with prefetch), or the hand-written
    kernel's build where the recompiled variants (register cap, prefetch) run one."""
    k = gpu.kernel
    prefetch = k.prefetch_distance if gpu.uses_prefetch else 0
    if not runs_handwritten(gpu):
        return k.loads_in_flight + prefetch
    if gpu.uses_prefetch and k.handwritten_prefetch_loads_in_flight > 0:
        return k.handwritten_prefetch_loads_in_flight
    return k.handwritten_loads_in_flight + prefetch


def index_batch(gpu: GpuSpec) -> int:
    """Lookups whose index loads leave together (one index wait per body): the hand-written
    build's, as its SASS has them; 1 for the stock loop (its unrolled body prices its own)."""
    k = gpu.kernel
    if not runs_handwritten(gpu):
        return 1
    if gpu.uses_prefetch:
        return k.handwritten_prefetch_index_batch or 1 + k.prefetch_distance
    return k.handwritten_index_batch


def kernel_config(gpu: GpuSpec) -> KernelConfig:
    """Occupancy and MLP of the EmbeddingBag kernel for ``gpu.variant``."""
    sm, k = gpu.sm, gpu.kernel
    regs = regs_per_thread(gpu)
    warps_per_block = -(-(k.block_x * k.block_y) // 32)
    unit = sm.reg_alloc_unit
    regs_per_warp = -(-(regs * 32) // unit) * unit
    limits = {
        "registers": (sm.registers // regs_per_warp) // warps_per_block,
        "warps": sm.max_warps // warps_per_block,
        "blocks": sm.max_blocks,
    }
    limited_by = min(limits, key=lambda name: limits[name])
    blocks = limits[limited_by]
    if blocks < 1:
        raise SpecError(
            f"a block of {warps_per_block} warps at {regs} registers/thread does not fit an SM",
            key="arch.kernel.regs_per_thread",
        )
    loads = rows_in_flight(gpu)
    instr = k.instructions_per_lookup + (
        k.prefetch_instructions_per_lookup if gpu.uses_prefetch else 0.0
    )
    spilled = max(0, regs_needed(gpu) - regs)
    instr += spilled * k.spill_loads_per_reg_per_lookup
    return KernelConfig(
        regs_wanted=regs_wanted(gpu),
        spilled_regs=spilled,
        spill_loads_per_lookup=spilled * k.spill_loads_per_reg_per_lookup,
        outstanding_sectors_per_warp=sm.outstanding_sectors_per_warp,
        outstanding_sectors_per_sm=sm.outstanding_sectors_per_sm,
        regs_per_thread=regs,
        warps_per_block=warps_per_block,
        blocks_per_sm=blocks,
        resident_warps_per_sm=blocks * warps_per_block,
        occupancy=blocks * warps_per_block / sm.max_warps,
        loads_in_flight=loads,
        instructions_per_lookup=instr,
        limited_by=limited_by,
        stores_offset2bag=not runs_handwritten(gpu),
        unroll=1 if runs_handwritten(gpu) else k.unroll,
        index_batch=index_batch(gpu),
    )
