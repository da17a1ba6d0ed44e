"""A GPU preset's named options, as data: how hot rows persist in the L2 (``pinning.mechanism``,
``pinning.scope``), how the L2's partitions share lines (``l2.partition_policy``) and how each
table's rows lie in memory (``layout``).

Each option says what it turns on; the model asks those switches, never the option's name (as
:mod:`nmp.gpu.variants` does for the kernel variants). Adding an option is one more
``register`` call here, and the spec accepts its name at once.
"""

from __future__ import annotations

from dataclasses import dataclass

from nmp.registry import Registry


@dataclass(frozen=True)
class PinningMechanism:
    name: str
    description: str
    # A pre-kernel prefetches the hottest rows with the persisting property before the table's
    # kernel (its HBM traffic and time charged under a per-table scope).
    pre_kernel: bool = False
    # The kernel runs under an access-policy window over the hottest rows, which therefore lie
    # first in the table (the indices remapped); a window line persists when first touched.
    access_window: bool = False


@dataclass(frozen=True)
class PinningScope:
    name: str
    description: str
    # Before each table's kernel the previous table's persisting lines are reset and this
    # table's hottest rows pinned (charged); else pinned once over every table (reported).
    per_table: bool


@dataclass(frozen=True)
class PartitionPolicy:
    name: str
    description: str
    # Each partition caches the data of the SMs attached to it (a line two halves read is held
    # twice), so the SMs see the partitions as separate caches; else one pool of every set.
    separate_caches: bool


@dataclass(frozen=True)
class TableLayout:
    name: str
    description: str
    hot_first: bool  # the profile's hottest rows first, the indices remapped (nmp.gpu.hot_layout)


PINNING_MECHANISMS: Registry[PinningMechanism] = Registry("L2 pinning mechanism")
PINNING_SCOPES: Registry[PinningScope] = Registry("L2 pinning scope")
PARTITION_POLICIES: Registry[PartitionPolicy] = Registry("L2 partition policy")
TABLE_LAYOUTS: Registry[TableLayout] = Registry("table layout")

PINNING_MECHANISMS.register(
    PinningMechanism(
        "evict_last_prefetch",
        "a pre-kernel issues prefetch.global.L2::evict_last over the hottest rows (the paper's)",
        pre_kernel=True,
    )
)
PINNING_MECHANISMS.register(
    PinningMechanism(
        "access_window",
        "an access-policy window over the hottest rows laid out first; hitRatio of its lines "
        "persist when the kernel first touches them",
        access_window=True,
    )
)
PINNING_SCOPES.register(
    PinningScope("per_table", "reset and pin before each table's kernel (charged)", True)
)
PINNING_SCOPES.register(
    PinningScope("global", "pinned once over every table, kept across batches (reported)", False)
)
PARTITION_POLICIES.register(
    PartitionPolicy("home", "every line lives in one partition all SMs share: one pool", False)
)
PARTITION_POLICIES.register(
    PartitionPolicy("near", "each partition caches its own SMs' data: separate caches", True)
)
TABLE_LAYOUTS.register(TableLayout("drawn", "the workload's own row order", hot_first=False))
TABLE_LAYOUTS.register(TableLayout("hot_first", "the profile's hottest rows first", hot_first=True))

__all__ = [
    "PARTITION_POLICIES",
    "PINNING_MECHANISMS",
    "PINNING_SCOPES",
    "TABLE_LAYOUTS",
    "PartitionPolicy",
    "PinningMechanism",
    "PinningScope",
    "TableLayout",
]
