"""The compressed all-to-all's error bounds (SC'24, PAPERS.md): how the bound moves over the run
(``train.eb_schedule``) and how it differs between tables (``train.eb_tables``). Two small
families, registered here; the exchange asks them for a factor of the base bound ``train.eb``.

- ``constant``: the base bound at every step. ``decay``: 2x at the start, linearly down to 1x
  at half the run (PAPERS.md: 2x -> 1x; the half-run length is chosen), then 1x.
- ``uniform``: every table at the base bound. ``adaptive``: SC'24's 0.01 / 0.03 / 0.05 for
  sensitive, normal and tolerant tables, i.e. ``eb/3``, ``eb`` and ``5 eb/3``
  (:data:`CLASS_FACTOR`); which table is which, :func:`nmp.train.alltoall.exchange.classify_tables`
  decides on the first batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from nmp.registry import Registry

if TYPE_CHECKING:
    import numpy as np

SENSITIVE, NORMAL, TOLERANT = "sensitive", "normal", "tolerant"
# PAPERS.md (SC'24): 0.01 / 0.03 / 0.05 -> factors of the base bound 0.03.
CLASS_FACTOR = {SENSITIVE: 1.0 / 3.0, NORMAL: 1.0, TOLERANT: 5.0 / 3.0}


@dataclass(frozen=True)
class EbSchedule:
    """The bound's factor at ``step`` of a run of ``steps``."""

    name: str
    description: str
    start: float  # the factor at step 0
    decay_share: float  # the share of the run over which it falls linearly to 1 (0: at once)

    @property
    def holds_base(self) -> bool:
        """The base bound at every step."""
        return self.start == 1.0 or self.decay_share <= 0

    def scale(self, step: int, steps: int) -> float:
        if self.decay_share <= 0:
            return 1.0
        span = max(1, int(steps * self.decay_share))
        return self.start - (self.start - 1.0) * min(1.0, step / span)


@dataclass(frozen=True)
class EbTableRule:
    """Each table's factor of the bound, from the tables' sensitivity classes."""

    name: str
    description: str
    class_factors: bool  # each table at its class's factor; else every table at 1

    def factors(self, classes: Sequence[str] | None, num_tables: int) -> np.ndarray:
        import numpy as np  # (nmp train --help reads the names without numpy)

        if self.class_factors and classes:
            return np.array([CLASS_FACTOR[c] for c in classes])
        return np.ones(num_tables)


EB_SCHEDULES: Registry[EbSchedule] = Registry("error-bound schedule")
EB_SCHEDULES.register(EbSchedule("constant", "the base bound at every step", 1.0, 0.0))
EB_SCHEDULES.register(
    EbSchedule("decay", "2x the base bound, falling linearly to 1x at half the run", 2.0, 0.5)
)

EB_TABLE_RULES: Registry[EbTableRule] = Registry("table error-bound rule")
EB_TABLE_RULES.register(EbTableRule("uniform", "every table at the base bound", False))
EB_TABLE_RULES.register(
    EbTableRule("adaptive", "sensitive tables eb/3, tolerant 5 eb/3, the rest eb (SC'24)", True)
)
