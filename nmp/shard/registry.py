"""Sharders behind one interface; each registers itself from its own module.

A sharder takes a :class:`ShardProblem` (the tables' statistics, the GPUs, their HBM budget and
the linearized costs) and returns a :class:`~nmp.shard.placement.Placement`. The lists of names
(CLI choices, studies, tests) come from :data:`SHARDERS`, which imports the sharders'
modules on its first lookup.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from nmp.errors import NmpError
from nmp.registry import Registry
from nmp.shard.cost import TableCoefficients
from nmp.shard.placement import Placement
from nmp.shard.stats import WorkloadStats


@dataclass(frozen=True, eq=False)
class ShardProblem:
    stats: WorkloadStats
    gpus: int
    hbm_bytes_per_gpu: int
    host_bytes: int
    coef: tuple[TableCoefficients, ...]
    time_limit_s: float = 60.0  # for sharders that search (the MILP)
    # how statistics-driven sharders weigh never-seen rows (stats.UNSEEN_ESTIMATORS)
    unseen: str = "zero"

    def check_capacity(self) -> None:
        """Raise unless the tables fit in HBM and host memory together."""
        need = sum(t.bytes_ for t in self.stats.tables)
        have = self.gpus * self.hbm_bytes_per_gpu + self.host_bytes
        if need > have:
            raise NmpError(
                f"capacity too small for any placement: the tables need {need / 2**30:.2f} GiB, "
                f"the topology has {self.gpus} x {self.hbm_bytes_per_gpu / 2**30:.2f} GiB HBM + "
                f"{self.host_bytes / 2**30:.2f} GiB host = {have / 2**30:.2f} GiB"
            )


class Sharder(Protocol):
    name: str
    description: str
    uses_row_stats: bool  # reads per-row statistics (then the unseen-row switch applies)
    # A sharder may also say ``memory_per_gpu_table_bytes``: the memory its search takes per GPU
    # and table (a solver's model), for the resource guard; none where it does not.

    def place(self, problem: ShardProblem) -> Placement: ...


#: The sharders by name (order = CLI order); each module registers its sharder when imported.
SHARDERS: Registry[Sharder] = Registry("sharder", package="nmp.shard.sharders")
register = SHARDERS.register


def sharder_names() -> list[str]:
    return list(SHARDERS.names())


def get_sharder(name: str) -> Sharder:
    return SHARDERS.get(name)
