"""Occupancy and memory-level parallelism of the EmbeddingBag kernel under each variant.

Occupancy follows the CUDA occupancy calculator: registers are allocated per warp in units of
``reg_alloc_unit``; an SM holds as many whole blocks as its warp slots, block slots and register
file allow (the kernel uses no shared memory). Memory-level parallelism (MLP) is resident warps
x row loads each warp keeps in flight: ``loads_in_flight`` for the stock loop, plus
``prefetch_distance`` when the rows of the next lookups are prefetched into registers (which
costs ``prefetch_regs_per_lookup`` registers per prefetched lookup). ``-maxrregcount`` caps the
registers per thread (spills it would cause are not modeled).
"""

from __future__ import annotations

from dataclasses import dataclass

from nmp.gpu.spec import GpuSpec


@dataclass(frozen=True)
class KernelConfig:
    """What the variant compiles to on this GPU."""

    regs_per_thread: int
    warps_per_block: int
    blocks_per_sm: int
    resident_warps_per_sm: int
    occupancy: float
    loads_in_flight: int
    instructions_per_lookup: float
    limited_by: str

    def mlp_lines(self, sms: int) -> int:
        """Row loads in flight on the whole GPU when every slot is busy."""
        return sms * self.resident_warps_per_sm * self.loads_in_flight


def regs_per_thread(gpu: GpuSpec) -> int:
    k = gpu.kernel
    regs = k.regs_per_thread
    if gpu.uses_prefetch:
        regs += k.prefetch_distance * k.prefetch_regs_per_lookup
    if gpu.uses_maxrregcount:
        regs = min(regs, k.maxrregcount)
    return min(regs, gpu.sm.max_regs_per_thread)


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
        from nmp.errors import SpecError

        raise SpecError(
            f"a block of {warps_per_block} warps at {regs} registers/thread does not fit an SM",
            key="arch.kernel.regs_per_thread",
        )
    loads = k.loads_in_flight + (k.prefetch_distance if gpu.uses_prefetch else 0)
    instr = k.instructions_per_lookup + (
        k.prefetch_instructions_per_lookup if gpu.uses_prefetch else 0.0
    )
    return KernelConfig(
        regs_per_thread=regs,
        warps_per_block=warps_per_block,
        blocks_per_sm=blocks,
        resident_warps_per_sm=blocks * warps_per_block,
        occupancy=blocks * warps_per_block / sm.max_warps,
        loads_in_flight=loads,
        instructions_per_lookup=instr,
        limited_by=limited_by,
    )
