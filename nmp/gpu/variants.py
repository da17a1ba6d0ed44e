"""The EmbeddingBag kernel's variants (``arch.variant`` of a GPU preset), as data.

Each variant says which of the three optimizations it turns on; the model asks those switches,
never the variant's name. Adding a variant is one more :func:`register` call here.
"""

from __future__ import annotations

from dataclasses import dataclass

from nmp.registry import Registry


@dataclass(frozen=True)
class KernelVariant:
    name: str
    description: str
    maxrregcount: bool = False  # compiled with -maxrregcount: more resident warps
    prefetch: bool = False  # software prefetch of the next lookups' rows
    pinning: bool = False  # the hottest rows persist in the L2 set-aside


GPU_VARIANTS: Registry[KernelVariant] = Registry("GPU kernel variant")
register = GPU_VARIANTS.register

register(KernelVariant("baseline", "the stock PyTorch kernel at its own register count"))
register(KernelVariant("occupancy", "compiled with -maxrregcount: more resident warps", True))
register(KernelVariant("prefetch", "software prefetch of the next lookups' rows", prefetch=True))
register(KernelVariant("pinning", "the hottest rows persist in the L2 set-aside", pinning=True))
register(KernelVariant("combined", "occupancy, prefetch and pinning together", True, True, True))

__all__ = ["GPU_VARIANTS", "KernelVariant", "register"]
