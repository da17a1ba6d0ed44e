"""The readings of subarray-level parallelism (``arch.bank.salp``; Kim et al., ISCA'12), each a
registered :class:`SalpReading` that says what the models need of it: how a bank unit's rows
are replayed (:mod:`nmp.arch.lowering`), a bank's sustainable row rate
(:mod:`nmp.arch.placement`) and the rows a bank keeps open (:mod:`nmp.arch.first_principles`).
No stage tests a reading's name. Loaded with the spec: no numpy, no numba (the slots' kernels
are in :mod:`nmp.arch.salp`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from nmp.registry import Registry

SALP_TRACKED_SUBARRAYS = 8  # open subarrays tracked per bank (beyond this tCCD_L binds anyway)


@dataclass(frozen=True)
class SalpReading:
    """One reading of subarray-level parallelism in a bank unit."""

    name: str
    description: str
    # subarrays a bank keeps activated at once, replayed as the banks of a virtual bank group
    # (:func:`nmp.arch.salp.subarray_slots`); 0: the bank itself, its precharge hidden behind
    # the next activation (:func:`nmp.arch.salp.precharge_hidden`)
    activated_subarrays: int
    # rows a bank keeps open for later lookups (a first-principles bound's row reuse)
    open_rows: int
    # cycles per random row of ``lines`` lines from the timing (``nRC``, ``nRAS``, ``nRP``,
    # ``nCCDL``) and the row's column cycles (tRCD + lines x tCCD_L); None: the row rate is
    # not a bound, the column path's peak is
    per_row_cycles: Callable[[Mapping[str, int], float, int], float | None]


#: The readings by name, in the order the spec lists them.
SALP_READINGS_REGISTRY: Registry[SalpReading] = Registry("SALP reading")
SALP_READINGS_REGISTRY.register(
    SalpReading(
        "salp1",
        "one subarray's precharge hidden behind the next one's activation (a row every tRAS)",
        activated_subarrays=0,
        open_rows=1,
        per_row_cycles=lambda t, columns, lines: max(t["nRAS"], columns),
    )
)
SALP_READINGS_REGISTRY.register(
    SalpReading(
        "salp2",
        "two subarrays activated at once (two activations in flight: two rows per tRC)",
        activated_subarrays=2,
        open_rows=1,
        per_row_cycles=lambda t, columns, lines: max(t["nRC"] / 2, lines * t["nCCDL"]),
    )
)
SALP_READINGS_REGISTRY.register(
    SalpReading(
        "masa",
        f"up to {SALP_TRACKED_SUBARRAYS} subarrays' rows open at once (the column path's peak)",
        activated_subarrays=SALP_TRACKED_SUBARRAYS,
        open_rows=SALP_TRACKED_SUBARRAYS,
        per_row_cycles=lambda t, columns, lines: None,
    )
)


def no_salp_row_cycles(t: Mapping[str, int], columns: float) -> float:
    """A bank's cycles per random row without subarray parallelism: a row cycle, or the
    columns and the precharge where they take longer."""
    return max(t["nRC"], columns + t["nRP"])


__all__ = [
    "SALP_READINGS_REGISTRY",
    "SALP_TRACKED_SUBARRAYS",
    "SalpReading",
    "no_salp_row_cycles",
]
